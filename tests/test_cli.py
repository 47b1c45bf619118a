"""The `pointer-generator` console script and the run_summarization entry point."""

import os
import shutil
import subprocess
import sys
import types

import pytest

from pointer_generator.cli import entry as cli
from pointer_generator.cli import run_summarization
from pointer_generator.errors import DataError, FlagError
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


def test_help_lists_the_flags():
    proc = helpers.run_python(["-m", "pointer_generator.cli.entry", "--helpfull"], timeout=60)
    for name in ("--max_steps", "--distribution_strategy", "--coverage", "--flagfile"):
        assert name in proc.stdout + proc.stderr


@pytest.fixture
def fake_subcommand(monkeypatch):
    module = types.ModuleType("pointer_generator._fake_subcommand")
    calls = []

    def main(argv):
        calls.append(argv)
        if argv and argv[0] == "--bad":
            raise DataError("story.txt is empty")
        return 0

    module.main = main
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(cli.SUBCOMMANDS, "summarize", module.__name__)
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


def test_missing_subcommand_module_is_a_clear_error(monkeypatch, capsys):
    monkeypatch.setitem(cli.SUBCOMMANDS, "quickstart", "pointer_generator._not_there")
    assert cli.run_subcommand("quickstart", []) == 2
    assert "the 'quickstart' command is not available" in capsys.readouterr().err


def test_missing_mode_module_is_a_flag_error(monkeypatch):
    real_import = run_summarization.importlib.import_module

    def fake_import(name, package=None):  # importlib's own signature: others call it too
        if name == "pointer_generator.decoding.decode":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, package)

    monkeypatch.setattr(run_summarization.importlib, "import_module", fake_import)
    with pytest.raises(FlagError, match="--mode=decode is not available"):
        run_summarization.mode_main("decode")
    assert callable(run_summarization.mode_main("train"))


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
