"""convert: CSV / JSON / JSONL / text inputs to .bin files, on the shared samples and by hand."""

import csv
import gzip
import io
import json
import os

import pytest

from data_tools import convert as cv
from pointer_generator import exit_codes
from pointer_generator.data import stories
from pointer_generator.data.binfile import read_records
from pointer_generator.errors import DataError, FlagError


def run(input_path, fmt, out_dir, **kw):
    stream = io.StringIO()
    summary = cv.convert(input_path, fmt, str(out_dir), stream=stream, **kw)
    return summary, stream.getvalue()


def test_tokenized_jsonl_round_trips_exactly(cnndm_sample_path, tmp_path):
    # The first 30 pairs of the real sample, re-packed as a smaller .jsonl.gz.
    with gzip.open(cnndm_sample_path, "rt", encoding="utf-8") as f:
        lines = [next(f) for _ in range(30)]
    src = tmp_path / "sample.jsonl.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:
        f.writelines(lines)
    summary, _ = run(
        str(src), "jsonl", tmp_path / "out", set_name="test", tokenized=True, chunk_size=8
    )
    got = list(read_records(str(tmp_path / "out" / "test.bin")))
    want = [json.loads(line) for line in lines]
    assert len(got) == 30 and summary.written == 30
    for (article, abstract), obj in zip(got, want, strict=True):
        assert article == obj["article"]
        assert abstract == " ".join("<s> %s </s>" % s for s in obj["abstract"])
    assert sorted(os.listdir(tmp_path / "out" / "chunked")) == [
        "test_000.bin",
        "test_001.bin",
        "test_002.bin",
        "test_003.bin",
    ]
    assert not (tmp_path / "out" / "vocab").exists()  # not training data


def test_raw_csv_goes_through_the_story_pipeline(raw_csv_path, tmp_path):
    # The first 3 raw stories of the real sample.
    with open(raw_csv_path, encoding="utf-8", newline="") as f:
        reader = csv.reader(f)
        rows = [next(reader) for _ in range(4)]
    src = tmp_path / "three.csv"
    with open(src, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)
    summary, log = run(str(src), "csv", tmp_path / "out")
    got = list(read_records(str(tmp_path / "out" / "train.bin")))
    assert summary.read == 3 and len(got) == 3
    article, abstract = got[1]
    assert article.startswith(
        "-lrb- cnn -rrb- -- ralph mata was an internal affairs "
        "lieutenant for the miami-dade police department , working in"
    )
    assert abstract == (
        "<s> criminal complaint : cop used his role to help cocaine "
        "traffickers . </s> <s> ralph mata , an internal affairs lieutenant , "
        "allegedly helped group get guns . </s> <s> he also arranged to pay "
        "two assassins in a murder plot , a complaint alleges . </s>"
    )
    assert (
        "<s> crashed head-on into 28-year-old rachel titley 's car , who died in "
        "hospital . </s>" in got[2][1]
    )
    vocab = (tmp_path / "out" / "vocab").read_text(encoding="utf-8").splitlines()
    assert vocab[0].split(" ")[0] in {".", "the"} and "summary: 3 articles read" in log


def test_json_list_and_gzip(tmp_path):
    data = [
        {"article": "It's here. (Really)", "highlights": "It is here\nReally"},
        {"article": "  ", "highlights": "nothing"},
        {"article": ["First para", "Second para."], "highlights": ["Two paras"]},
    ]
    src = tmp_path / "in.json.gz"
    with gzip.open(src, "wt", encoding="utf-8") as f:
        json.dump(data, f)
    summary, log = run(str(src), "json", tmp_path / "out", set_name="val")
    got = list(read_records(str(tmp_path / "out" / "val.bin")))
    assert got == [
        ("it 's here . -lrb- really -rrb- .", "<s> it is here . </s> <s> really . </s>"),
        ("first para . second para .", "<s> two paras . </s>"),
    ]
    assert summary.issues["empty"].count == 1 and "empty articles (dropped): 1" in log


def test_text_folder_and_file_give_articles_without_abstracts(tmp_path):
    folder = tmp_path / "articles"
    folder.mkdir()
    (folder / "b.txt").write_text("Second \u201cstory\u201d here", encoding="utf-8")
    (folder / "a.txt").write_text("First story.\nIt has two lines", encoding="utf-8")
    (folder / "ignored.md").write_text("not an article", encoding="utf-8")
    summary, _ = run(str(folder), "text", tmp_path / "out", set_name="decode")
    assert list(read_records(str(tmp_path / "out" / "decode.bin"))) == [
        ("first story . it has two lines .", ""),
        ("second `` story '' here .", ""),
    ]
    assert not summary.issues.get("no_highlights")  # expected for text, not a problem


def test_texts_to_examples():
    texts = ["The U.S. Army didn't say (yet)", "Anna.\n\n@highlight\n\nBob"]
    assert stories.texts_to_examples(texts) == [
        ("the u.s. army did n't say -lrb- yet -rrb- .", ""),
        ("anna .", "<s> bob . </s>"),
    ]


def test_missing_highlights_are_dropped_from_training_only(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text(
        json.dumps({"article": "Has none."})
        + "\n"
        + json.dumps({"article": "Has one.", "highlights": "One"})
        + "\n"
    )
    summary, _ = run(str(src), "jsonl", tmp_path / "train")
    assert list(read_records(str(tmp_path / "train" / "train.bin"))) == [
        ("has one .", "<s> one . </s>")
    ]
    assert summary.issues["no_highlights"].count == 1
    run(str(src), "jsonl", tmp_path / "test", set_name="test")
    assert len(list(read_records(str(tmp_path / "test" / "test.bin")))) == 2


@pytest.mark.parametrize(
    "fmt,content,message",
    [
        ("csv", "id,text\n1,hello\n", "must have an 'article' column"),
        ("jsonl", '{"article": "ok", "highlights": "x"}\n{not json\n', "line 2 is not valid JSON"),
        ("json", '{"article": "x"}', "expected a JSON list"),
        ("jsonl", '{"article": 5}\n', "'article' must be a string"),
        ("jsonl", '{"article": "", "highlights": "x"}\n', "no usable articles"),
    ],
)
def test_bad_input_is_a_clear_error_and_writes_nothing(tmp_path, fmt, content, message):
    src = tmp_path / f"bad.{fmt}"
    src.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=message) as e:
        run(str(src), fmt, tmp_path / "out")
    assert str(src) in str(e.value)
    assert [f for f in os.listdir(tmp_path / "out") if not f.startswith(".")] == []


def test_set_name_must_be_a_plain_name(tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("An article.")
    with pytest.raises(FlagError, match="set name"):
        run(str(src), "text", tmp_path / "out", set_name="../evil")
    assert not (tmp_path / "evil.bin").exists()


def test_non_utf8_bytes_are_counted_and_replaced(tmp_path):
    src = tmp_path / "latin1.txt"
    src.write_bytes(b"Caf\xe9 open.")
    summary, log = run(str(src), "text", tmp_path / "out", set_name="decode")
    assert list(read_records(str(tmp_path / "out" / "decode.bin"))) == [("caf open .", "")]
    assert summary.bad_bytes == 1 and "not UTF-8" in log


def test_command_line(tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"article": "a b", "abstract": ["c d"]}) + "\n")
    assert (
        cv.main(
            [
                "--input",
                str(src),
                "--format",
                "jsonl",
                "--out_dir",
                str(tmp_path / "out"),
                "--tokenized",
                "--no-write_vocab",
            ]
        )
        == 0
    )
    assert list(read_records(str(tmp_path / "out" / "train.bin"))) == [("a b", "<s> c d </s>")]
    assert not (tmp_path / "out" / "vocab").exists()
    capsys.readouterr()
    assert (
        cv.main(
            [
                "--input",
                str(tmp_path / "none.csv"),
                "--format",
                "csv",
                "--out_dir",
                str(tmp_path / "out2"),
            ]
        )
        == exit_codes.BAD_INPUT
    )
    assert capsys.readouterr().err.startswith("error: ")
