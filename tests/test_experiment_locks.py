"""One writer per directory (docs/reliability.md): a second training job on an
experiment is refused before it touches anything, also after the lock file was deleted;
a killed holder leaves no lock; readers take none; two eval jobs on one experiment are
refused likewise. A second process really holds the lock.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys

import pytest

from tests import helpers


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("error: ")]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tiny experiment trained to step 6 in two runs: model.ckpt-0, -3 and -6."""
    root = tmp_path_factory.mktemp("state")
    data = helpers.tiny_setup(root, n_train=12, n_val=6)
    for steps in (3, 6):
        args = helpers.run_args(data, "exp", max_steps=steps)
        assert helpers.run_main_in_process(args) == 0
    train_dir = os.path.join(data.log_root, "exp", "train")
    assert helpers.checkpoint_steps(train_dir) == [0, 3, 6]
    return data


def _copy(data, name: str) -> str:
    """A copy of the trained experiment named `name`; returns its train/ directory."""
    shutil.copytree(os.path.join(data.log_root, "exp"), os.path.join(data.log_root, name))
    return os.path.join(data.log_root, name, "train")


def _checkpoint_files(train_dir: str) -> set[str]:
    return {f for f in os.listdir(train_dir) if f.startswith("model.ckpt-")}


HOLD_LOCK = """
import sys, time
from pointer_generator.runtime import locks
locks.acquire(sys.argv[1], "training job", "give this run another --exp_name")
print("locked", flush=True)
time.sleep(120)
"""


def _lock_holder(directory: str) -> subprocess.Popen:
    """Another process that holds `directory`'s writer lock (until killed)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, directory],
        stdout=subprocess.PIPE,
        text=True,
        env=helpers.subprocess_env(),
        cwd=helpers.REPO_ROOT,
    )
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_one_training_job_per_experiment_and_a_killed_one_leaves_no_lock(trained, capfd):
    train_dir = _copy(trained, "locked")
    holder = _lock_holder(train_dir)
    try:
        before = _checkpoint_files(train_dir)
        for flags in ({"max_steps": 8}, {"restore_best_model": True}):
            assert helpers.run_main_in_process(helpers.run_args(trained, "locked", **flags)) == 2
            errors = _errors(capfd.readouterr().err)
            assert len(errors) == 1, errors
            assert errors[0].startswith(f"error: another training job is writing {train_dir}")
            assert f"pid {holder.pid} on " in errors[0] and "--exp_name" in errors[0]
        assert _checkpoint_files(train_dir) == before
        # Readers take no lock: a single-pass eval runs beside the writer.
        args = helpers.run_args(trained, "locked", mode="eval", single_pass=True)
        assert helpers.run_main_in_process(args) == 0
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    assert helpers.run_main_in_process(helpers.run_args(trained, "locked", max_steps=7)) == 0


def test_two_eval_jobs_on_one_experiment(tmp_path):
    from pointer_generator.errors import FlagError
    from pointer_generator.runtime import locks

    holder = _lock_holder(str(tmp_path))
    try:
        with pytest.raises(FlagError, match="another eval job is writing"):
            locks.acquire(str(tmp_path), "eval job", "x")
    finally:
        holder.kill()
        holder.wait(timeout=30)
    locks.acquire(str(tmp_path), "eval job", "x")  # free again once the holder is gone
    locks.release(str(tmp_path))


def test_deleting_the_lock_file_lets_no_second_writer_in(tmp_path):
    from pointer_generator.runtime import locks

    directory = str(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom pointer_generator.runtime import locks\n"
         "locks.acquire(sys.argv[1], 'training job', 'x')\nprint('locked', flush=True)\n"
         "time.sleep(600)\n", directory],
        stdout=subprocess.PIPE, text=True, env=helpers.subprocess_env(), cwd=helpers.REPO_ROOT,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        os.remove(os.path.join(directory, locks.LOCK_FILE))
        with pytest.raises(locks.DirectoryBusyError, match="another training job is writing"):
            locks.acquire(directory, "training job", "x")
    finally:
        holder.kill()
        holder.wait(timeout=30)
    locks.acquire(directory, "training job", "x")
    locks.release(directory)
