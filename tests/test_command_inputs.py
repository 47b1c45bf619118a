"""Inputs a command cannot use are one `error:` line (exit status 2), never a traceback:
`summarize` of an endless input (/dev/zero) or with standard input closed, a truncated
`.gz` into `convert`, a beam too large for the vocabulary, an --exp_name that is a path;
`summarize --help` answers (docs/reliability.md). Runs are in process
(`helpers.run_main_in_process`) where the command line itself is not the point.
"""

from __future__ import annotations

import os
import struct

import pytest

import pointer_generator as pg
from pointer_generator.data import binfile
from pointer_generator.runtime import checkpointing
from pointer_generator.runtime.experiment import Experiment
from tests import helpers


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny experiment trained to step 3 (model.ckpt-0 and -3)."""
    data = helpers.tiny_setup(tmp_path_factory.mktemp("round3"), n_train=12, n_val=5)
    assert helpers.run_main_in_process(helpers.run_args(data, "exp", max_steps=3)) == 0
    return data


def test_summarize_of_an_endless_input_is_one_error(trained):
    proc = helpers.run_python(
        ["-m", "pointer_generator.cli.entry", "summarize", f"--log_root={trained.log_root}",
         "--exp_name=exp", "/dev/zero"], timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "error: /dev/zero: larger than 16 MiB" in proc.stderr


def _record(payload: bytes) -> bytes:
    return struct.pack("q", len(payload)) + payload


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
    trainer = pg.Trainer(helpers.hparams(), 100)
    trainer.step.assign(4)
    checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step).save()
    return str(path), exp


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
