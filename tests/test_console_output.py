"""What the console shows (issue 19): the library starts as quietly as the command line, a
training run prints the project's lines once and nothing of TensorFlow's, and the
TensorBoard command the project suggests finds the event files."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests import helpers, trained_experiment


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return trained_experiment.build(tmp_path_factory)


def test_the_library_is_as_quiet_as_the_command_line():
    """`pg.<name>` starts TensorFlow with its start-up notices (CUDA drivers, cuInit, CPU
    instructions) held back, as the command line does."""
    env = helpers.subprocess_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    code = "import pointer_generator as pg; pg.Vocab; pg.BeamSearchDecoder; print('ok')"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env
    )
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr[-2000:]
    assert proc.stderr == ""


def test_a_training_run_prints_the_projects_lines_once_and_nothing_of_tensorflows(tmp_path):
    data = helpers.tiny_setup(tmp_path, n_train=8, n_val=4)
    # The default progress: the first and the last step, and every 10 s (here: never).
    args = helpers.run_args(data, "quiet", max_steps=3, log_every_secs=3600)
    env = helpers.subprocess_env()
    env.pop("TF_CPP_MIN_LOG_LEVEL")
    proc = subprocess.run(
        [sys.executable, "-m", "pointer_generator.run_summarization", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=helpers.REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    err = proc.stderr
    for noise in ("I0000", "E0000", "absl::InitializeLog", "oneDNN", "cuda", "Sharding callback"):
        assert noise not in err, err[-3000:]
    steps = [line for line in err.splitlines() if " step " in f" {line}" and "| loss" in line]
    shown = [line.split(" step ", 1)[1].split(" |")[0] for line in steps]
    assert shown == ["1/3", "3/3"], err
    assert "compiling (a new batch shape)" in steps[0] and "ETA" not in steps[0]
    assert "Compiling the training step" in err


def test_the_suggested_tensorboard_command_finds_the_event_files(trained):
    tensorboard = shutil.which("tensorboard")
    assert tensorboard, "tensorboard is a dependency of the package (setup.py)"
    proc = subprocess.run(
        [tensorboard, "--inspect", "--logdir", trained.exp_dir],
        capture_output=True,
        text=True,
        timeout=180,
        env=helpers.subprocess_env(),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "seq2seq/loss/loss" in proc.stdout and "global_norm" in proc.stdout
