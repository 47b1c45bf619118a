"""Bad data files through the command line (docs/reliability.md): a damaged `.bin`
file is one `error:` line (exit status 2) naming the file and record; a glob that
matches nothing names the flag; files without a usable article are an error, not an
endless wait; empty and whitespace-only articles, text that is not UTF-8 and abstracts
without sentence tags are reported while every other example is used; empty references
skip ROUGE in decode and are an error for the ROUGE command. Good data is never skipped
silently. (The fuzz tests are in test_fuzz.py.)

The runs are in process (`helpers.run_main_in_process`), which is the command line minus
the interpreter start; most of them stop before any TensorFlow tracing.
"""

from __future__ import annotations

import logging
import struct

import pytest

import pointer_generator as pg
from pointer_generator.cli import check_bin_files
from pointer_generator.data import binfile
from tests import bad_input
from tests.bad_input import record as _record
from tests.bad_input import run_mode as _run

GOOD = binfile.encode_record("w1 w2 w3 w4 .", "<s> w1 w2 . </s>")


def _field(number: int, payload: bytes) -> bytes:
    return binfile._len_field(number, payload)


# An Example whose `article` feature holds int64 values (Feature field 3) instead of bytes.
INT64_ARTICLE = _field(
    1,
    _field(1, _field(1, b"article") + _field(2, _field(3, _field(1, b"\x05"))))
    + _field(1, _field(1, b"abstract") + _field(2, _field(1, _field(1, b"<s> a </s>")))),
)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return bad_input.tiny(tmp_path_factory)


BAD_BIN = [
    (
        "truncated_record",
        GOOD * 3 + GOOD[:-5],
        f"record 3 claims {len(GOOD) - 8} bytes but only {len(GOOD) - 13} remain in the file "
        "(truncated, or not a .bin file)",
    ),
    (
        "prefix_larger_than_file",
        GOOD * 2 + struct.pack("q", 10**12) + b"xyz",
        "record 2 claims 1000000000000 bytes but only 3 remain in the file",
    ),
    (
        "negative_prefix",
        GOOD + struct.pack("q", -5) + b"xyz",
        "record 1 claims -5 bytes but only 3 remain in the file",
    ),
    (
        "truncated_prefix",
        GOOD + b"\x05\x00\x00",
        "record 1 is truncated: 3 bytes left where an 8-byte length prefix was expected",
    ),
    (
        "not_an_example",
        GOOD + _record(b"\x0a\x05not an example at all") + GOOD,
        "record 1 is not a serialized tf.train.Example",
    ),
    ("text_file", b"this is a plain text file, not a .bin file\n" * 3, "record 0 claims"),
    (
        "no_article",
        GOOD + _record(binfile.encode_example({"abstract": b"<s> a </s>"})),
        "record 1 has no 'article' bytes feature",
    ),
    (
        "no_abstract",
        GOOD + _record(binfile.encode_example({"article": b"w1 w2"})),
        "record 1 has no 'abstract' bytes feature",
    ),
    ("empty_record", GOOD + _record(b""), "record 1 has no 'article' bytes feature"),
    (
        "int64_article",
        GOOD + _record(INT64_ARTICLE),
        "a .bin record's 'article' feature is not a bytes feature (record 1 of its file",
    ),
]


@pytest.mark.parametrize("name, content, problem", BAD_BIN, ids=[c[0] for c in BAD_BIN])
def test_bad_bin_file_is_one_error_naming_file_and_record(
    setup, capfd, tmp_path, name, content, problem
):
    path = tmp_path / f"{name}_000.bin"
    path.write_bytes(content)
    status, errors, err, out = _run(capfd, setup, data_path=str(path), exp_name=f"bin_{name}")
    assert status == 2 and len(errors) == 1, err[-3000:]
    assert problem in errors[0]
    if name != "int64_article":  # TensorFlow's parse error does not say which file
        assert errors[0].startswith(f"error: {path}: ")


def test_glob_matching_nothing_names_the_flag(setup, capfd, tmp_path):
    pattern = str(tmp_path / "nothing" / "train_*")
    status, errors, _, _ = _run(capfd, setup, data_path=pattern)
    assert status == 2 and errors == [f"error: --data_path {pattern!r} matches no files"]


def test_files_without_a_usable_article_are_an_error_not_an_endless_wait(setup, capfd, tmp_path):
    path = tmp_path / "empty_articles_000.bin"
    path.write_bytes(binfile.encode_record("", "<s> a </s>") * 3)
    status, errors, _, _ = _run(capfd, setup, data_path=str(path), exp_name="no_articles")
    assert status == 2
    assert errors == [f"error: --data_path {str(path)!r}: no example with a non-empty article"]


@pytest.fixture(scope="module")
def mixed_data(setup, tmp_path_factory):
    return bad_input.mixed_data(setup, tmp_path_factory.mktemp("mixed_test"))


def test_empty_article_and_non_utf8_text_are_reported_and_the_rest_is_used(
    setup, capfd, mixed_data
):
    path, exp = mixed_data
    status, errors, err, out = _run(
        capfd, setup, mode="eval", data_path=path, exp_name="mixed", single_pass=True
    )
    assert status == 0 and errors == [], err[-3000:]
    assert (
        f'WARNING: pointer_generator input pipeline: "{path}" : skipped 1 example(s) '
        "with an empty article"
    ) in err
    assert (
        f"WARNING: pointer_generator input pipeline: {path}: 1 example(s) whose text is "
        "not valid UTF-8 (first: record 3)"
    ) in err
    # 5 records: the empty article is skipped (as in the original), all others are used.
    assert "(step 4) over 4 examples" in out
    assert "examples: 4\n" in open(exp.single_pass_loss, encoding="utf-8").read()


def test_abstracts_without_sentence_tags_are_an_error_or_a_counted_warning(setup, capfd, tmp_path):
    untagged = tmp_path / "untagged_000.bin"
    untagged.write_bytes(b"".join(binfile.encode_record(f"w{i} w2 .", "w1 w2 .") for i in range(4)))
    status, errors, err, _ = _run(capfd, setup, data_path=str(untagged), exp_name="untagged")
    assert status == 2 and len(errors) == 1, err[-2000:]
    assert errors[0].startswith(f"error: {untagged}: no abstract has <s> ... </s> sentence tags")
    mixed = tmp_path / "mixed_tags_000.bin"
    mixed.write_bytes(GOOD * 3 + binfile.encode_record("w5 w6 .", "w5 w6 .") * 2)
    status, errors, err, _ = _run(capfd, setup, data_path=str(mixed), exp_name="mixed_tags")
    assert status == 0 and errors == [], err[-2000:]
    assert (
        f"{mixed}: 2 example(s) whose abstract has no <s> ... </s> sentence tags "
        "(first: record 3): their target is only [STOP]"
    ) in err


def test_whitespace_only_articles_are_skipped_and_the_checker_names_them(
    setup, capfd, tmp_path, mixed_data
):
    path = tmp_path / "blank_000.bin"
    path.write_bytes(GOOD * 3 + binfile.encode_record(" \t\n ", "<s> w1 . </s>") + GOOD)
    status, errors, err, _ = _run(capfd, setup, data_path=str(path), exp_name="blank")
    assert status == 0 and errors == [], err[-2000:]
    assert "skipped 1 example(s) with an empty article (no words)" in err
    assert check_bin_files.main([str(path)]) == 1
    out = capfd.readouterr().out
    assert out.strip() == (
        f"{path}: 5 records; CHECK FAILED: 1 with an article of no words (first: record 3; "
        "skipped when read)"
    )
    only_blank = tmp_path / "only_blank_000.bin"
    only_blank.write_bytes(binfile.encode_record("   ", "<s> w1 . </s>") * 2)
    for mode, flags in (("train", {}), ("decode", {"single_pass": True})):
        status, errors, _, _ = _run(
            capfd, setup, mode=mode, data_path=str(only_blank), exp_name="mixed", **flags
        )
        assert status == 2 and len(errors) == 1, errors
        assert "no example with a non-empty article" in errors[0], errors


def test_empty_references_skip_rouge_in_decode_and_are_an_error_for_rouge(
    setup, capfd, mixed_data, tmp_path, caplog
):
    from pointer_generator.evaluation.rouge import RougeError

    path = tmp_path / "no_abstracts_000.bin"
    path.write_bytes(binfile.encode_record("w1 w2 w3 .", "") * 2 + GOOD)
    caplog.set_level(logging.WARNING)
    status, errors, err, _ = _run(
        capfd, setup, mode="decode", data_path=str(path), exp_name="mixed", single_pass=True
    )
    assert status == 0 and errors == [], err[-2000:]
    assert "ROUGE not run: 2 of the references are empty (e.g. 000000_reference.txt)" in caplog.text
    ref, dec = tmp_path / "ref", tmp_path / "dec"
    ref.mkdir(), dec.mkdir()
    (ref / "000000_reference.txt").write_text("\n")
    (dec / "000000_decoded.txt").write_text("w1 .\n")
    with pytest.raises(RougeError, match="reference summaries in .* are empty .*000000_"):
        pg.rouge_eval(str(ref), str(dec), rouge_dir="/nonexistent")  # fails before Perl
