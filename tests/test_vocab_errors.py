"""Bad vocabulary files (docs/reliability.md): a duplicate word, a reserved token, text
that is not UTF-8, a missing or empty file are one `error:` line naming the file (and
line); lines without a count and a file shorter than --vocab_size are warnings, and the
whole file is used; against a checkpoint trained on more words the sizes are named; a
UTF-8 byte-order mark is not part of the first word. Runs are in process
(`helpers.run_main_in_process`).
"""

from __future__ import annotations

import logging
import os

import pytest

import pointer_generator as pg
from pointer_generator.errors import VocabError
from pointer_generator.runtime import checkpointing
from pointer_generator.runtime.experiment import Experiment
from tests import bad_input, helpers
from tests.bad_input import run_mode as _run


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return bad_input.tiny(tmp_path_factory)


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
    vocab = pg.Vocab(path, 50)
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
    trainer = pg.Trainer(helpers.hparams(), 100)
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
    vocab = pg.Vocab(_vocab_file(tmp_path, GOOD_LINES[:20]), 50000)
    assert vocab.size() == 24 and "fewer than vocab_size=50000" in caplog.text


def test_vocab_errors_are_the_projects_error_type(tmp_path):
    with pytest.raises(VocabError, match="does not exist"):
        pg.Vocab(str(tmp_path / "absent"), 10)
    with pytest.raises(VocabError, match="--vocab_size must be >= 0"):
        pg.Vocab(_vocab_file(tmp_path, GOOD_LINES[:3]), -1)


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
    vocab = pg.Vocab(str(bom), 0)
    assert vocab.word2id("the") == 4 and vocab.word2id("cat") == 5
