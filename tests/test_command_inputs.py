"""Inputs a command cannot use are one `error:` line (exit status 2), never a traceback:
`summarize` of an endless input (/dev/zero) or with standard input closed, a truncated
`.gz` into `convert`, a beam too large for the vocabulary, an --exp_name that is a path;
`summarize --help` answers (docs/reliability.md). Runs are in process
(`helpers.run_main_in_process`) where the command line itself is not the point.
"""

from __future__ import annotations

import os

import pytest

from tests import bad_input, helpers
from tests.bad_input import run_mode as _run


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


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return bad_input.tiny(tmp_path_factory)


@pytest.fixture(scope="module")
def mixed_data(setup, tmp_path_factory):
    return bad_input.mixed_data(setup, tmp_path_factory.mktemp("mixed_test"))


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
