"""make_datafiles on a tiny fake DMQA layout: output files, order, chunks, vocab, bad input."""

import hashlib
import io
import os

import pytest

import pointer_generator as pg
from data_tools import make_datafiles as md
from pointer_generator import exit_codes
from pointer_generator.data.binfile import read_records
from pointer_generator.errors import DataError


def sha1(url: str) -> str:
    return hashlib.sha1(url.encode("utf-8")).hexdigest()


# url -> (folder, raw story). Expected outputs below are written out by hand.
STORIES = {
    "http://cnn.com/one": (
        "cnn",
        "(CNN) -- The U.S. team wasn't ready.\n\nIt lost 2-1\n\n"
        "@highlight\n\nTeam lost\n\n@highlight\n\nNot ready (again)",
    ),
    "http://cnn.com/two": ("cnn", "Prices rose 5% on Monday.\n\n@highlight\n\nPrices rose"),
    "http://dm.co.uk/three": (
        "dm",
        "By . Daily Mail Reporter .\n\n'It's great,' she said\n\n@highlight\n\nShe said it's great",
    ),
    "http://dm.co.uk/four": ("dm", "Rain fell.\n\n@highlight\n\nRain"),
    "http://dm.co.uk/five": ("dm", "Snow fell.\n\n@highlight\n\nSnow"),
}
EXPECTED = {
    "http://cnn.com/one": (
        "-lrb- cnn -rrb- -- the u.s. team was n't ready . it lost 2-1 .",
        "<s> team lost . </s> <s> not ready -lrb- again -rrb- . </s>",
    ),
    "http://cnn.com/two": ("prices rose 5 % on monday .", "<s> prices rose . </s>"),
    "http://dm.co.uk/three": (
        "by . daily mail reporter . ` it 's great , ' she said .",
        "<s> she said it 's great . </s>",
    ),
    "http://dm.co.uk/four": ("rain fell .", "<s> rain . </s>"),
    "http://dm.co.uk/five": ("snow fell .", "<s> snow . </s>"),
}
TRAIN = [
    "http://cnn.com/one",
    "http://cnn.com/two",
    "http://dm.co.uk/three",
    "http://dm.co.uk/four",
    "http://dm.co.uk/five",
]
VAL = ["http://dm.co.uk/four"]
TEST = ["http://cnn.com/two", "http://dm.co.uk/three"]


def write_story(root, folder, url, text):
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    with open(os.path.join(root, folder, sha1(url) + ".story"), "wb") as f:
        f.write(data)


@pytest.fixture
def dmqa(tmp_path):
    """A fake DMQA layout: cnn/ and dm/ story folders and the three url lists."""
    root = str(tmp_path)
    for d in ("cnn", "dm", "lists"):
        os.mkdir(os.path.join(root, d))
    for url, (folder, text) in STORIES.items():
        write_story(root, folder, url, text)
    for name, urls in (("train", TRAIN), ("val", VAL), ("test", TEST)):
        with open(os.path.join(root, "lists", f"all_{name}.txt"), "w") as f:
            f.write("".join(u + "\n" for u in urls))
    return root


def run(root, out="out", **kw):
    stream = io.StringIO()
    kw.setdefault("num_workers", 1)
    summary = md.make_datafiles(
        os.path.join(root, "cnn"),
        os.path.join(root, "dm"),
        os.path.join(root, "lists"),
        os.path.join(root, out),
        stream=stream,
        **kw,
    )
    return summary, stream.getvalue()


def records(path):
    return list(read_records(path))


def test_url_hash_is_sha1_of_the_stripped_url():
    assert md.url_hash("  http://x.com/a \r\n") == hashlib.sha1(b"http://x.com/a").hexdigest()


def test_sets_are_written_in_list_order_with_chunks_and_vocab(dmqa):
    summary, log = run(dmqa, chunk_size=2)
    out = os.path.join(dmqa, "out")
    assert records(os.path.join(out, "train.bin")) == [EXPECTED[u] for u in TRAIN]
    assert records(os.path.join(out, "val.bin")) == [EXPECTED[u] for u in VAL]
    assert records(os.path.join(out, "test.bin")) == [EXPECTED[u] for u in TEST]
    chunks = sorted(os.listdir(os.path.join(out, "chunked")))
    assert chunks == [
        "test_000.bin",
        "train_000.bin",
        "train_001.bin",
        "train_002.bin",
        "val_000.bin",
    ]
    rejoined = sum(
        (records(os.path.join(out, "chunked", f"train_{i:03d}.bin")) for i in range(3)), []
    )
    assert rejoined == [EXPECTED[u] for u in TRAIN]
    assert [len(records(os.path.join(out, "chunked", f"train_{i:03d}.bin"))) for i in range(3)] == [
        2,
        2,
        1,
    ]
    assert summary.written == {"test": 2, "val": 1, "train": 5}
    assert "train: 5 listed, 5 written (3 chunk files)" in log
    assert "tokenizing train: 5/5" in log


def test_vocab_counts_come_from_the_training_set_only(dmqa):
    run(dmqa)
    with open(os.path.join(dmqa, "out", "vocab"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    counts = dict(line.split(" ") for line in lines)
    # '.': articles 2 (one) + 1 (two) + 3 (three) + 1 + 1 (four, five); abstracts 2+1+1+1+1
    assert counts["."] == "14"
    assert counts["rain"] == "2" and counts["snow"] == "2" and counts["prices"] == "2"
    assert "<s>" not in counts and "</s>" not in counts
    # most frequent first, ties in code point order
    assert lines[0] == ". 14"
    values = [(-int(c), w) for w, c in (line.split(" ") for line in lines)]
    assert values == sorted(values)
    assert pg.Vocab(os.path.join(dmqa, "out", "vocab"), 0).size() == 4 + len(lines)


def test_parallel_workers_keep_list_order(dmqa):
    run(dmqa, num_workers=2)
    assert records(os.path.join(dmqa, "out", "train.bin")) == [EXPECTED[u] for u in TRAIN]


def test_a_missing_story_fails_before_anything_is_written(dmqa):
    with open(os.path.join(dmqa, "lists", "all_val.txt"), "a") as f:
        f.write("http://nowhere.com/gone\n")
    stream = io.StringIO()
    with pytest.raises(DataError) as e:
        md.make_datafiles(
            *(os.path.join(dmqa, d) for d in ("cnn", "dm", "lists", "out")), stream=stream
        )
    msg = str(e.value)
    assert "(val: 1 of 2; the first are listed above)" in msg and "nothing was written" in msg
    assert "\n" not in msg and len(msg) < 300
    listed = f"missing (val): {sha1('http://nowhere.com/gone')}.story  http://nowhere.com/gone"
    assert listed in stream.getvalue().splitlines()
    assert not os.path.exists(os.path.join(dmqa, "out"))


def test_missing_stories_folder_is_a_clear_error(dmqa):
    with pytest.raises(DataError, match="does not exist"):
        md.make_datafiles(
            os.path.join(dmqa, "nope"),
            None,
            os.path.join(dmqa, "lists"),
            os.path.join(dmqa, "out"),
            stream=io.StringIO(),
        )


def test_check_counts_refuses_a_subset(dmqa):
    with pytest.raises(DataError, match="holds 2 .story files.*92579"):
        run(dmqa, check_counts=True)


def test_missing_training_list_skips_train_and_vocab(dmqa):
    os.remove(os.path.join(dmqa, "lists", "all_train.txt"))
    summary, log = run(dmqa)
    out = os.listdir(os.path.join(dmqa, "out"))
    assert "train.bin" not in out and "vocab" not in out
    assert "test.bin" in out and "val.bin" in out
    assert summary.skipped_sets == ["train"] and "all_train.txt" in log
    assert "vocab: not written" in log


def test_problem_stories_are_reported_and_handled(dmqa):
    extra = {
        "http://dm.co.uk/nohl": "Just an article, no highlights.",
        "http://dm.co.uk/empty": "",
        "http://dm.co.uk/bytes": b"Caf\xe9 \xff open.\n\n@highlight\n\nOpen",
    }
    for url, text in extra.items():
        write_story(dmqa, "dm", url, text)
    for name in ("train", "test"):
        with open(os.path.join(dmqa, "lists", f"all_{name}.txt"), "a") as f:
            f.write("".join(u + "\n" for u in extra))
    summary, log = run(dmqa)
    train = records(os.path.join(dmqa, "out", "train.bin"))
    test = records(os.path.join(dmqa, "out", "test.bin"))
    # No @highlight: dropped from train, kept (empty abstract) in test.
    assert ("just an article , no highlights .", "") not in train
    assert ("just an article , no highlights .", "") in test
    # Bad bytes: replaced and the story kept; empty file: dropped everywhere.
    assert ("caf open .", "<s> open . </s>") in train
    assert len(train) == 6 and len(test) == 4
    assert summary.issues["utf8"].count == 2  # one story, listed in train and in test
    assert summary.issues["empty_file"].count == 2
    assert summary.issues["no_highlight_train"].count == 1
    assert "2 bytes" in log and sha1("http://dm.co.uk/nohl") in log


def test_rerun_replaces_stale_chunks(dmqa):
    run(dmqa, chunk_size=1)
    assert os.path.exists(os.path.join(dmqa, "out", "chunked", "train_004.bin"))
    run(dmqa, chunk_size=1000)
    assert sorted(os.listdir(os.path.join(dmqa, "out", "chunked"))) == [
        "test_000.bin",
        "train_000.bin",
        "val_000.bin",
    ]
    assert not [f for f in os.listdir(os.path.join(dmqa, "out")) if f.startswith(".")]


def test_command_line_errors_are_one_line(dmqa, capsys):
    rc = md.main(
        [
            "--cnn_stories_dir",
            os.path.join(dmqa, "missing"),
            "--url_lists_dir",
            os.path.join(dmqa, "lists"),
            "--out_dir",
            os.path.join(dmqa, "out"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == exit_codes.BAD_INPUT and err.startswith("error: ") and "Traceback" not in err
