"""Bad input through the command line: one clear `error:` line (exit status 2) naming the
file or flag and the problem, or a warning where the data is still used; good data is
never skipped silently. (The fuzz tests are in test_fuzz.py; the table of what each
problem gives is in docs/reliability.md.)

The runs are in process (`helpers.run_main_in_process`), which is the command line minus
the interpreter start; most of them stop before any TensorFlow tracing.
"""

from __future__ import annotations

import logging
import os
import struct

import pytest

from pointer_generator.data import binfile
from pointer_generator.data.vocab import Vocab
from pointer_generator.errors import VocabError
from pointer_generator.runtime import checkpointing
from pointer_generator.runtime.experiment import Experiment
from pointer_generator.training import train
from tests import helpers

GOOD = binfile.encode_record("w1 w2 w3 w4 .", "<s> w1 w2 . </s>")


def _record(payload: bytes) -> bytes:
    return struct.pack("q", len(payload)) + payload


def _field(number: int, payload: bytes) -> bytes:
    return binfile._len_field(number, payload)


# An Example whose `article` feature holds int64 values (Feature field 3) instead of bytes.
INT64_ARTICLE = _field(
    1,
    _field(1, _field(1, b"article") + _field(2, _field(3, _field(1, b"\x05"))))
    + _field(1, _field(1, b"abstract") + _field(2, _field(1, _field(1, b"<s> a </s>")))),
)


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad_input")
    return helpers.tiny_setup(root, n_train=8, n_val=6)


def _run(capture, setup, mode="train", **flags):
    values = dict(
        data_path=setup.train_path,
        vocab_path=setup.vocab_path,
        log_root=setup.log_root,
        exp_name=setup.exp_name,
        max_steps=1,
    )
    values.update(flags)
    status = helpers.run_main_in_process(helpers.cli_args(mode=mode, **values))
    captured = capture.readouterr()
    assert "Traceback" not in captured.err, captured.err[-3000:]
    return status, _errors(captured.err), captured.err, captured.out


# ------------------------------------------------------------------------------ .bin files
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
    """A test file with an empty article (record 1) and non-UTF-8 text (record 3) among
    good records, and an experiment with a checkpoint to evaluate."""
    d = tmp_path_factory.mktemp("mixed_test")
    records = [
        ("w1 w2 w3 .", "<s> w1 w2 . </s>"),
        ("", "<s> w3 . </s>"),
        ("w4 w5 w6 .", "<s> w5 . </s>"),
    ]
    data = b"".join(binfile.encode_record(a, b) for a, b in records)
    data += _record(
        binfile.encode_example({"article": b"w7 \xff\xfe w8 .", "abstract": b"<s> w7 \xc3 . </s>"})
    )
    data += binfile.encode_record("w9 w10 .", "<s> w9 . </s>")
    path = d / "test_000.bin"
    path.write_bytes(data)
    exp = Experiment(os.path.join(setup.log_root, "mixed"))
    trainer = train.Trainer(helpers.hparams(), 100)
    trainer.step.assign(4)
    checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step).save()
    return str(path), exp


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


# ------------------------------------------------------------------------------ vocab
def _vocab_file(tmp_path, lines, name="vocab") -> str:
    path = tmp_path / name
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return str(path)


GOOD_LINES = [f"w{i} {1000 - i}".encode() for i in range(120)]


BAD_VOCAB = [
    (GOOD_LINES[:5] + [b"w3 7"] + GOOD_LINES[5:], ":6: duplicate word 'w3'"),
    (
        GOOD_LINES[:2] + [b"[UNK] 50"] + GOOD_LINES[2:],
        ":3: the reserved token '[UNK]' must not appear in the vocab file",
    ),
    (
        GOOD_LINES[:2] + [b"<s> 50"] + GOOD_LINES[2:],
        ":3: the reserved token '<s>' must not appear in the vocab file",
    ),
    (GOOD_LINES[:2] + [b"caf\xe9 12"] + GOOD_LINES[2:], ": not valid UTF-8"),
]


@pytest.mark.parametrize(
    "lines, problem", BAD_VOCAB, ids=["duplicate", "special_token", "sentence_tag", "not_utf8"]
)
def test_bad_vocab_file_is_one_error_naming_file_and_line(setup, capfd, tmp_path, lines, problem):
    path = _vocab_file(tmp_path, lines)
    status, errors, err, out = _run(capfd, setup, vocab_path=path, exp_name="vocab_errors")
    assert status == 2 and len(errors) == 1, err[-3000:]
    assert errors[0].startswith(f"error: {path}") and problem in errors[0]


def test_missing_vocab_file_names_the_flag(setup, capfd, tmp_path):
    path = str(tmp_path / "no_vocab")
    status, errors, _, _ = _run(capfd, setup, vocab_path=path)
    assert status == 2 and errors == [f"error: --vocab_path {path!r} is not a file"]


def test_vocab_lines_without_count_and_a_short_file_are_warned_about(tmp_path, caplog):
    path = _vocab_file(
        tmp_path, GOOD_LINES[:3] + [b"lonely"] + GOOD_LINES[3:10] + [b"too many fields 3"]
    )
    caplog.set_level(logging.WARNING)
    vocab = Vocab(path, 50)
    assert vocab.size() == 14 and vocab.skipped_lines == 2
    assert f"{path}:4: expected 'word count', got 'lonely'; line skipped" in caplog.text
    assert f"{path}:12: expected 'word count', got 'too many fields 3'" in caplog.text
    assert (
        f"{path} holds only 14 words (with the 4 specials), fewer than vocab_size=50; "
        "using all of them"
    ) in caplog.text


def test_short_vocab_against_a_checkpoint_names_both_sizes(setup, capfd, caplog, tmp_path):
    """A vocab file shorter than --vocab_size is a warning; with a checkpoint trained on
    the full vocabulary it is also an error naming the sizes (not a shape traceback)."""
    exp = Experiment(os.path.join(setup.log_root, "short_vocab"))
    trainer = train.Trainer(helpers.hparams(), 100)
    checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step).save()
    path = _vocab_file(tmp_path, GOOD_LINES[:60])
    caplog.set_level(logging.WARNING)
    status, errors, err, out = _run(capfd, setup, vocab_path=path, exp_name="short_vocab")
    assert status == 2 and len(errors) == 1, err[-3000:]
    assert "fewer than vocab_size=100" in caplog.text
    assert (
        "it has a vocabulary of 100 words but the vocab file and --vocab_size give 64" in errors[0]
    )


def test_vocab_size_flag_larger_than_the_file_uses_the_whole_file(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    vocab = Vocab(_vocab_file(tmp_path, GOOD_LINES[:20]), 50000)
    assert vocab.size() == 24 and "fewer than vocab_size=50000" in caplog.text


def test_vocab_errors_are_the_projects_error_type(tmp_path):
    with pytest.raises(VocabError, match="does not exist"):
        Vocab(str(tmp_path / "absent"), 10)
    with pytest.raises(VocabError, match="--vocab_size must be >= 0"):
        Vocab(_vocab_file(tmp_path, GOOD_LINES[:3]), -1)


# ------------------------------------------------------------------------------ flags
@pytest.fixture(scope="module")
def checkpoints(setup):
    """Experiments holding one checkpoint each: without and with coverage, baseline."""
    made = {}
    for name, hp in (
        ("plain", {}),
        ("covered", {"coverage": True}),
        ("baseline", {"pointer_gen": False}),
    ):
        exp = Experiment(os.path.join(setup.log_root, f"ckpt_{name}"))
        trainer = train.Trainer(helpers.hparams(**hp), 100)
        trainer.step.assign(2)
        checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step).save()
        made[name] = exp
    return made


MISMATCHES = [
    (
        "plain",
        {"coverage": True},
        "it was trained without coverage; convert it first with "
        "--convert_to_coverage_model=1 --coverage=1 (or drop "
        "--coverage)",
    ),
    ("covered", {"coverage": False}, "it was trained with coverage; add --coverage=1"),
    ("baseline", {}, "it is a baseline model but --pointer_gen=1"),
    ("plain", {"hidden_dim": 12}, "it has hidden_dim=8 but --hidden_dim=12"),
    (
        "plain",
        {"emb_dim": 6, "vocab_size": 90},
        "it has a vocabulary of 100 words but the vocab file and --vocab_size give 90; it has "
        "emb_dim=8 but --emb_dim=6",
    ),
]


@pytest.mark.parametrize("mode", ["train", "eval", "decode"])
@pytest.mark.parametrize(
    "exp_name, flags, problem",
    MISMATCHES,
    ids=[
        "coverage_added",
        "coverage_dropped",
        "pointer_gen",
        "hidden_dim",
        "vocab_size_and_emb_dim",
    ],
)
def test_flags_that_do_not_match_the_checkpoint_name_the_flag(
    setup, checkpoints, capfd, mode, exp_name, flags, problem
):
    exp = checkpoints[exp_name]
    data = setup.val_path if mode != "train" else setup.train_path
    # The test data is labelled by its path for decode: it contains "val".
    status, errors, err, out = _run(
        capfd,
        setup,
        mode=mode,
        exp_name=f"ckpt_{exp_name}",
        data_path=data,
        single_pass=mode != "train",
        max_eval_iterations=1,
        **flags,
    )
    assert status == 2 and len(errors) == 1, err[-3000:]
    assert errors[0] == (
        f"error: checkpoint {checkpointing.latest_checkpoint(exp.train_dir)} "
        f"does not match the flags: {problem}"
    )


# ------------------------------------------------------------------------------ the table
def test_reliability_doc_names_only_tests_that_exist():
    """Every test docs/reliability.md cites (`file.py::test_name`, or `::test_name` for
    the file cited last in the same row) is defined in that file."""
    import re

    with open(os.path.join(helpers.REPO_ROOT, "docs", "reliability.md"), encoding="utf-8") as f:
        rows = [line for line in f if line.startswith("|")]
    cited = []
    for row in rows:
        current = None
        for cell in row.split("|"):
            for file, name in re.findall(r"`(test_\w+\.py)?::(test_\w+|\*)", cell):
                current = file or current
                cited.append((current, name))
    assert len(cited) > 40
    for file, name in cited:
        assert file is not None, name
        with open(os.path.join(helpers.REPO_ROOT, "tests", file), encoding="utf-8") as f:
            source = f.read()
        assert name == "*" or f"def {name}(" in source, f"{file}::{name} does not exist"


# ------------------------------------------------------------- round 2 (docs/reliability.md)
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


def test_an_empty_vocab_is_an_error_and_a_byte_order_mark_is_not_a_word(setup, capfd, tmp_path):
    empty = _vocab_file(tmp_path, [], name="empty_vocab")
    status, errors, _, _ = _run(capfd, setup, vocab_path=empty, exp_name="empty_vocab")
    assert status == 2
    assert errors == [
        f"error: {empty}: no 'word count' line: a model needs a vocabulary (make one with "
        "python -m data_tools.make_datafiles or data_tools.convert)"
    ]
    bom = tmp_path / "bom_vocab"
    bom.write_bytes("\ufeffthe 10\ncat 5\n".encode())
    vocab = Vocab(str(bom), 0)
    assert vocab.word2id("the") == 4 and vocab.word2id("cat") == 5


def test_whitespace_only_articles_are_skipped_and_the_checker_names_them(
    setup, capfd, tmp_path, mixed_data
):
    path = tmp_path / "blank_000.bin"
    path.write_bytes(GOOD * 3 + binfile.encode_record(" \t\n ", "<s> w1 . </s>") + GOOD)
    status, errors, err, _ = _run(capfd, setup, data_path=str(path), exp_name="blank")
    assert status == 0 and errors == [], err[-2000:]
    assert "skipped 1 example(s) with an empty article (no words)" in err
    assert binfile.main([str(path)]) == 1
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


def test_a_full_disk_while_decoding_is_one_error(setup, capfd, mixed_data, monkeypatch):
    from pointer_generator.decoding import decode_output

    path, _ = mixed_data

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(decode_output, "write_for_rouge", full)
    status, errors, err, _ = _run(
        capfd, setup, mode="decode", data_path=path, exp_name="mixed", single_pass=True
    )
    assert status == 2 and len(errors) == 1, err[-2000:]
    assert errors[0].startswith("error: cannot write the decode outputs in ")
    assert errors[0].endswith(
        "No space left on device; free space (or fix the permissions) and run the same "
        "command again: it resumes"
    )


def test_empty_references_skip_rouge_in_decode_and_are_an_error_for_rouge(
    setup, capfd, mixed_data, tmp_path, caplog
):
    from pointer_generator.evaluation import rouge
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
        rouge.rouge_eval(str(ref), str(dec), rouge_dir="/nonexistent")  # fails before Perl


def test_closed_stdin_help_truncated_gzip_and_a_huge_beam(
    setup, capfd, tmp_path, monkeypatch, mixed_data
):
    # mixed_data: the trained "mixed" experiment the huge beam is refused for (the test
    # failed alone, when no other test had made it).
    import gzip
    import sys

    from data_tools import convert
    from pointer_generator.cli import entry, summarize
    from pointer_generator.errors import FlagError

    monkeypatch.setattr(sys, "stdin", None)
    with pytest.raises(FlagError, match="standard input is closed"):
        summarize.read_inputs([])
    monkeypatch.undo()
    assert entry.run_subcommand("summarize", ["--help"]) == 0
    out = capfd.readouterr().out
    assert "pointer-generator summarize" in out and "--beam_size" in out
    gz = tmp_path / "cut.jsonl.gz"
    with gzip.open(gz, "wt") as f:
        for i in range(300):
            f.write(f'{{"article": "w{i} {os.urandom(40).hex()}", "highlights": "w1"}}\n')
    gz.write_bytes(gz.read_bytes()[: gz.stat().st_size // 2])
    out_dir = tmp_path / "converted"
    status = convert.main(["--input", str(gz), "--format", "jsonl", "--out_dir", str(out_dir)])
    err = capfd.readouterr().err
    assert status == 2 and "Traceback" not in err
    assert f"error: {gz}: the compressed file is truncated or damaged" in err
    assert not [n for n in os.listdir(out_dir) if n.startswith(".staging")]
    status, errors, _, _ = _run(
        capfd, setup, mode="decode", exp_name="mixed", single_pass=True, beam_size=60
    )
    assert status == 2
    assert errors == [
        "error: --beam_size=60 is too large for a vocabulary of 100 words: beam search "
        "takes the top 2*beam_size words each step; use --beam_size <= 50"
    ]


def test_exp_name_is_a_name_not_a_path(setup, capfd, tmp_path):
    for mode in ("train", "decode"):
        status, errors, _, _ = _run(capfd, setup, mode=mode, exp_name="../../escape")
        assert status == 2
        assert errors[0].startswith("error: --exp_name '../../escape' must be a name, not a path")
    assert not os.path.exists(os.path.join(setup.log_root, "..", "..", "escape"))


def test_a_killed_converters_staging_folder_is_removed_by_the_next_run(tmp_path):
    import socket
    import subprocess
    import sys

    from data_tools import finished_files

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "out"
    stale = out / f".staging-{socket.gethostname()}-{dead.pid}-abc_1"
    live = out / f".staging-{socket.gethostname()}-{os.getpid()}-def_2"
    for d in (stale, live):
        (d / "chunked").mkdir(parents=True)
        (d / "chunked" / "train_000.bin").write_bytes(b"x" * 1000)
    with finished_files.FinishedFilesWriter(str(out)) as writer:
        writer.write_set("train", [("w1 w2 .", "<s> w1 . </s>")])
    assert not stale.exists() and live.exists()
    assert sorted(os.listdir(out)) == sorted([live.name, "chunked", "train.bin"]) or sorted(
        os.listdir(out)
    ) == sorted([live.name, "chunked"])
