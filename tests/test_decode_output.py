"""Decode outputs: sentence split, ROUGE files, resume count, decode-dir name, OOV marks."""

import os

import pytest

import pointer_generator as pg
from pointer_generator.decoding import folder as do
from pointer_generator.errors import FlagError


@pytest.mark.parametrize(
    "words, sents",
    [
        ([], []),
        (["no", "period", "here"], ["no period here"]),
        (["a", "b", "."], ["a b ."]),
        (["a", ".", "b", "c", ".", "d"], ["a .", "b c .", "d"]),
        (["a", ".", ".", "b"], ["a .", ".", "b"]),
        ([".", "x"], [".", "x"]),
        # Only the token "." ends a sentence, not "..." or a word ending in a period.
        (["u.s.", "wins", "...", "ok"], ["u.s. wins ... ok"]),
    ],
)
def test_split_sentences(words, sents):
    assert do.split_sentences(words) == sents


def test_write_for_rouge_layout_and_bytes(tmp_path):
    do.write_for_rouge(
        ["first ref sentence .", "second one ."],
        ["gen", "one", ".", "gen", "two", ".", "tail"],
        7,
        str(tmp_path),
    )
    ref = tmp_path / "reference" / "000007_reference.txt"
    dec = tmp_path / "decoded" / "000007_decoded.txt"
    assert ref.read_bytes() == b"first ref sentence .\nsecond one ."  # no trailing newline
    assert dec.read_bytes() == b"gen one .\ngen two .\ntail"
    # Nothing else (no temporaries) in either directory.
    assert os.listdir(tmp_path / "reference") == ["000007_reference.txt"]
    assert os.listdir(tmp_path / "decoded") == ["000007_decoded.txt"]


def test_write_for_rouge_unicode_and_empty_decode(tmp_path):
    do.write_for_rouge(["caf\u00e9 \u00a0x"], [], 0, str(tmp_path))
    assert (
        tmp_path / "reference/000000_reference.txt"
    ).read_bytes() == "caf\u00e9 \u00a0x".encode()
    assert (tmp_path / "decoded/000000_decoded.txt").read_bytes() == b""


def test_angle_brackets_kept_by_default_escaped_on_request(tmp_path):
    do.write_for_rouge(["a <b> c"], ["x", "<", "y", "."], 0, str(tmp_path / "orig"))
    assert (tmp_path / "orig/reference/000000_reference.txt").read_text() == "a <b> c"
    assert (tmp_path / "orig/decoded/000000_decoded.txt").read_text() == "x < y ."
    do.write_for_rouge(["a <b> c"], ["x", "<", "y", "."], 0, str(tmp_path / "safe"), html_safe=True)
    assert (tmp_path / "safe/reference/000000_reference.txt").read_text() == "a &lt;b&gt; c"
    assert (tmp_path / "safe/decoded/000000_decoded.txt").read_text() == "x &lt; y ."


def test_interrupted_write_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "000003_decoded.txt"
    target.write_text("old complete text")

    def fail(src, dst):
        raise KeyboardInterrupt  # e.g. Ctrl-C between writing and renaming

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(KeyboardInterrupt):
        do.atomic_write_text(str(target), "new text")
    monkeypatch.undo()
    assert target.read_text() == "old complete text"
    assert os.listdir(tmp_path) == ["000003_decoded.txt"]  # temporary removed


def test_written_files_follow_umask(tmp_path):
    old = os.umask(0o027)
    try:
        do.atomic_write_text(str(tmp_path / "f.txt"), "x")
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "f.txt").st_mode & 0o777 == 0o640


def test_count_complete(tmp_path):
    assert do.count_complete(str(tmp_path / "missing")) == 0
    assert do.count_complete(str(tmp_path)) == 0
    for k in (0, 1, 2, 5):
        do.write_for_rouge(["r"], ["d"], k, str(tmp_path))
    assert do.count_complete(str(tmp_path)) == 3
    # Example 3 interrupted after its reference file: still not complete.
    (tmp_path / "reference" / "000003_reference.txt").write_text("r")
    assert do.count_complete(str(tmp_path)) == 3
    (tmp_path / "decoded" / "000003_decoded.txt").write_text("d")
    (tmp_path / "decoded" / ".000004_decoded.txt.1-ab.tmp").write_text("d")
    (tmp_path / "reference" / "000004_reference.txt").write_text("r")
    assert do.count_complete(str(tmp_path)) == 4


def test_decode_dir_name_matches_original_layout():
    hps = pg.HParams()  # 400 maxenc
    search = pg.SearchSettings()  # 4 beam, 35 mindec, 100 maxdec
    assert (
        do.decode_dir_name(
            "/data/finished_files/chunked/test_*", hps, search, "/log/myexp/train/model.ckpt-238410"
        )
        == "decode_test_400maxenc_4beam_35mindec_100maxdec_ckpt-238410"
    )
    paper = search.replace(max_dec_steps=120)
    assert (
        do.decode_dir_name("val.bin", hps, paper, "model.ckpt-230000_cov_init")
        == "decode_val_400maxenc_4beam_35mindec_120maxdec_ckpt-230000_cov_init"
    )
    assert (
        do.decode_dir_name("chunked/train_000.bin", hps, search, "/a/eval/bestmodel-12")
        == "decode_train_400maxenc_4beam_35mindec_100maxdec_ckpt-12"
    )


def test_decode_dir_name_keeps_original_substring_rule():
    hps, search = pg.HParams(), pg.SearchSettings()
    # "train" is tested first, then "val", then "test", anywhere in the path.
    name = do.decode_dir_name("/x/test_from_train/test_*", hps, search, "m-1")
    assert name.startswith("decode_train_")
    assert do.decode_dir_name("/interval/test_*", hps, search, "m-1").startswith("decode_val_")
    with pytest.raises(FlagError, match="none of 'train', 'val', 'test'"):
        do.decode_dir_name("/data/cnndm/chunk_*", hps, search, "m-1")
    with pytest.raises(FlagError, match="no '-<step>' part"):
        do.decode_dir_name("test.bin", hps, search, "/runs/exp-2/train/model")


def test_decode_dir_name_suffixes_for_options_the_original_lacked():
    hps, search = pg.HParams(), pg.SearchSettings()
    base = "decode_test_400maxenc_4beam_35mindec_100maxdec_ckpt-5"

    def name(hps=hps, **options):
        return do.decode_dir_name("test.bin", hps, search.replace(**options), "m-5")

    assert name(trigram_blocking=True) == base + "_triblock"
    assert name(length_penalty=1) == base + "_lp1.0"
    assert name(trigram_blocking=True, length_penalty=0.6) == base + "_triblock_lp0.6"
    assert name(trigram_blocking=False, length_penalty=None) == base
    assert name(hps.replace(mixed_precision=True), trigram_blocking=True) == base + "_triblock_bf16"
    assert name(block_unk=True) == base + "_blockunk"


@pytest.fixture
def small_vocab(tmp_path):
    path = tmp_path / "vocab"
    path.write_text("the 10\ncat 5\nsat 4\n. 3\n")
    return pg.Vocab(str(path), 0)


def test_mark_oovs(small_vocab):
    assert do.mark_oovs("the zebra sat .", small_vocab) == "the __zebra__ sat ."
    assert do.mark_oovs("cat", small_vocab) == "cat"


def test_show_abs_oovs_pointer_and_baseline(small_vocab):
    abstract = "the zebra sat on a cat ."
    # Pointer mode: "zebra" can be copied from the article; "on", "a" cannot.
    assert (
        do.show_abs_oovs(abstract, small_vocab, ["zebra"])
        == "the __zebra__ sat !!__on__!! !!__a__!! cat ."
    )
    # Baseline: every OOV is simply marked.
    assert do.show_abs_oovs(abstract, small_vocab, None) == "the __zebra__ sat __on__ __a__ cat ."


def test_example_log_text(small_vocab):
    text = do.example_log_text(
        "the zebra sat .",
        "the zebra sat on a cat .",
        ["the", "zebra", "sat", "."],
        small_vocab,
        ["zebra"],
    )
    assert text.split("\n") == [
        "ARTICLE:  the __zebra__ sat .",
        "REFERENCE SUMMARY: the __zebra__ sat !!__on__!! !!__a__!! cat .",
        "GENERATED SUMMARY: the zebra sat .",
    ]


def test_a_decode_that_repeats_a_few_summaries_is_flagged(tmp_path):
    """Issue 29's ABS wrote 3 summaries for 200 articles: the decode says so."""
    from pointer_generator.decoding.job import repeated_summaries

    def decode_dir(name, summaries):
        d = str(tmp_path / name)
        for i, words in enumerate(summaries):
            do.write_for_rouge(["a reference ."], words.split(), i, d)
        return d

    few = decode_dir("few", ["the [UNK] said .", "a man was hurt .", "it rained ."] * 4)
    assert repeated_summaries(few) == (
        "only 3 distinct summaries for 12 articles: the model may ignore its input "
        "(measure it with --mode=eval --single_pass --input_gap; docs/families.md)"
    )
    varied = decode_dir("varied", [f"summary number {i} ." for i in range(10)] + ["x ."] * 2)
    assert repeated_summaries(varied) is None
    assert repeated_summaries(decode_dir("small", ["same ."] * 5)) is None  # too few to say
    assert repeated_summaries(str(tmp_path / "nothing")) is None
