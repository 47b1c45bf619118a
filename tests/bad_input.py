"""What the bad-input tests share (test_command_inputs, test_data_errors,
test_checkpoint_mismatch, test_vocab_errors, test_write_failures): a tiny setup, a mode
run in this process with its `error:` lines, and a test file of good and bad records."""

from __future__ import annotations

import os
import struct

import pointer_generator as pg
from pointer_generator.data import binfile
from pointer_generator.runtime import checkpointing
from pointer_generator.runtime.experiment import Experiment
from tests import helpers


def record(payload: bytes) -> bytes:
    """One .bin record: its length, then its bytes."""
    return struct.pack("q", len(payload)) + payload


def errors(stderr: str) -> list[str]:
    """The `error: ` lines of a command's standard error."""
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


def tiny(tmp_path_factory):
    """A tiny setup (8 training and 6 validation pairs) in a folder of its own."""
    return helpers.tiny_setup(tmp_path_factory.mktemp("bad_input"), n_train=8, n_val=6)


def run_mode(capture, setup, mode="train", **flags):
    """A mode of the command line on `setup`'s data, in this process: (status, error
    lines, standard error, standard output); never a traceback."""
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
    return status, errors(captured.err), captured.err, captured.out


def mixed_data(setup, directory) -> tuple[str, Experiment]:
    """A test file in `directory` with an empty article (record 1) and non-UTF-8 text
    (record 3) among good records, and an experiment with a checkpoint to evaluate."""
    records = [
        ("w1 w2 w3 .", "<s> w1 w2 . </s>"),
        ("", "<s> w3 . </s>"),
        ("w4 w5 w6 .", "<s> w5 . </s>"),
    ]
    data = b"".join(binfile.encode_record(a, b) for a, b in records)
    data += record(
        binfile.encode_example({"article": b"w7 \xff\xfe w8 .", "abstract": b"<s> w7 \xc3 . </s>"})
    )
    data += binfile.encode_record("w9 w10 .", "<s> w9 . </s>")
    path = directory / "test_000.bin"
    path.write_bytes(data)
    exp = Experiment(os.path.join(setup.log_root, "mixed"))
    trainer = pg.Trainer(helpers.hparams(), 100)
    trainer.step.assign(4)
    checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step).save()
    return str(path), exp
