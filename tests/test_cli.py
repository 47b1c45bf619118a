"""The `pointer-generator` console script and the run_summarization entry point."""

import os
import shutil
import subprocess
import sys

import pytest

from pointer_generator import exit_codes
from pointer_generator.cli import entry as cli
from pointer_generator.cli import run_summarization
from pointer_generator.errors import DataError
from tests import helpers


def test_console_script_runs_run_summarization(tmp_path):
    script = shutil.which("pointer-generator")
    if script is None:
        pytest.skip("the console script is not installed (pip install -e .)")
    proc = subprocess.run(
        [script, "--mode=bogus", f"--log_root={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=60,
        env=helpers.subprocess_env(),
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: --mode must be one of train, eval, decode, got 'bogus'"


def test_a_bare_command_prints_the_usage_not_a_missing_flag():
    """Issue 45 item 6: `pointer-generator` alone says what it does and how."""
    proc = helpers.run_python(["-m", "pointer_generator.cli.entry"], timeout=60)
    assert proc.returncode == 2 and proc.stdout == "", proc
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("pointer-generator: train, evaluate and decode"), lines
    assert "  pointer-generator summarize [flags] [FILE ...]   summaries of your own text" in lines
    assert lines[-1] == "Every flag: pointer-generator --help"
    assert not [ln for ln in lines if ln.startswith("error:")]


def test_help_lists_the_flags():
    proc = helpers.run_python(["-m", "pointer_generator.cli.entry", "--helpfull"], timeout=60)
    for name in ("--max_steps", "--distribution_strategy", "--coverage", "--flagfile"):
        assert name in proc.stdout + proc.stderr


@pytest.fixture
def fake_subcommand(monkeypatch):
    calls = []

    def main(argv):
        calls.append(argv)
        if argv and argv[0] == "--bad":
            raise DataError("story.txt is empty")
        if argv and argv[0] == "--bug":
            raise ZeroDivisionError("division by zero")
        return 0

    monkeypatch.setitem(cli.SUBCOMMANDS, "summarize", main)
    return calls


def test_subcommands_get_the_arguments_after_their_name(fake_subcommand, monkeypatch):
    from pointer_generator.runtime import process_exit

    # The real one ends the process (os._exit); tests/test_process_exit.py checks it.
    monkeypatch.setattr(process_exit, "exit_now", lambda status: sys.exit(status))
    with pytest.raises(SystemExit) as done:
        cli.run(["pointer-generator", "summarize", "--text", "a b c"])
    assert done.value.code == 0
    assert fake_subcommand == [["--text", "a b c"]]


def test_subcommand_errors_are_one_line_with_status_2(fake_subcommand, capsys):
    assert cli.run_subcommand("summarize", ["--bad"]) == 2
    assert capsys.readouterr().err == "error: story.txt is empty\n"


def test_a_bug_is_one_line_with_status_3_and_its_traceback_in_a_file(
    fake_subcommand, capsys, monkeypatch
):
    monkeypatch.delenv(exit_codes.TRACEBACK_ENV, raising=False)
    assert cli.run_subcommand("summarize", ["--bug"]) == exit_codes.INTERNAL_ERROR
    err = capsys.readouterr().err
    assert err.startswith("internal error: ZeroDivisionError: division by zero (traceback in ")
    assert err.count("\n") == 1 and "Traceback" not in err
    path = err.split("traceback in ")[1].split(";")[0]
    try:
        with open(path, encoding="utf-8") as f:
            saved = f.read()
        assert saved.startswith("Traceback") and "ZeroDivisionError" in saved
    finally:
        os.remove(path)
    monkeypatch.setenv(exit_codes.TRACEBACK_ENV, "1")
    assert cli.run_subcommand("summarize", ["--bug"]) == exit_codes.INTERNAL_ERROR
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_every_mode_has_its_job():
    from pointer_generator.decoding import job
    from pointer_generator.evaluation import evaluate
    from pointer_generator.training import train

    assert run_summarization.mode_job_of("train") is train.run_train_mode
    assert run_summarization.mode_job_of("eval") is evaluate.run_eval_mode
    assert run_summarization.mode_job_of("decode") is job.run_decode_mode


def test_eval_single_pass_from_the_command_line(tmp_path, capsys):
    """Flags to result through run_summarization: eval --single_pass on a checkpoint."""
    from pointer_generator.runtime import checkpointing
    from pointer_generator.runtime.experiment import Experiment
    from pointer_generator.training import train

    data = helpers.tiny_setup(tmp_path, n_train=4, n_val=6)
    exp = Experiment(os.path.join(data.log_root, data.exp_name))
    trainer = train.Trainer(helpers.hparams(), 100)
    trainer.step.assign(12)
    checkpointing.TrainCheckpoints(exp.train_dir, trainer.checkpoint(), trainer.step).save()
    args = helpers.cli_args(
        mode="eval",
        single_pass=True,
        data_path=data.val_path,
        vocab_path=data.vocab_path,
        log_root=data.log_root,
        exp_name=data.exp_name,
    )
    assert helpers.run_main_in_process(args) == 0
    out = capsys.readouterr().out
    assert "Single-pass eval of model.ckpt-12 (step 12) over 6 examples" in out
    assert os.path.isfile(exp.single_pass_loss)


@pytest.mark.parametrize("command", ["summarize", "serve", "export"])
def test_a_subcommand_refuses_mode_in_one_line(command, capsys):
    """`pointer-generator summarize --mode=train` used to run, ignoring --mode."""
    from pointer_generator.cli import flags as flags_lib

    try:
        assert cli.run_subcommand(command, ["--mode=train"]) == 2
    finally:
        flags_lib.FLAGS.unparse_flags()
    err = capsys.readouterr().err.strip()
    assert err == (
        "error: --mode is for the main command (pointer-generator --mode=train|eval|decode); "
        f"`pointer-generator {command}` has no mode: drop it"
    )
