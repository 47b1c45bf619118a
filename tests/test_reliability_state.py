"""Reliability, second round: the experiment's state on disk (docs/reliability.md).

No complete checkpoint is ever removed or lost to a broken `checkpoint` state file; a
damaged checkpoint is skipped (and set aside by the training job, never deleted); one
writer per directory; a single-pass decode resumes only a folder made from the same
inputs. Runs are in process (`helpers.run_main_in_process`: the command line minus the
interpreter start) unless a second process is the point.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from pointer_generator.cli import inspect_checkpoint
from pointer_generator.runtime import checkpoint_scan, checkpointing
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


# ------------------------------------------------------------------------ state file
@pytest.mark.parametrize("state", ["deleted", "empty", "garbage"])
def test_a_broken_state_file_loses_no_checkpoint_and_is_rebuilt(trained, state, caplog):
    name = f"state_{state}"
    train_dir = _copy(trained, name)
    before = _checkpoint_files(train_dir)
    path = os.path.join(train_dir, "checkpoint")
    if state == "deleted":
        os.remove(path)
    else:
        with open(path, "wb") as f:
            f.write(b"" if state == "empty" else b"\x00garbage{{ not a state file\xff")
    # Readers find the newest complete checkpoint without it.
    assert checkpointing.latest_checkpoint(train_dir).endswith("model.ckpt-6")
    caplog.set_level(logging.INFO)

    assert helpers.run_main_in_process(helpers.run_args(trained, name, max_steps=8)) == 0

    assert "Resuming from" in caplog.text and "model.ckpt-6 (step 6)" in caplog.text
    assert "rebuilt it from the checkpoints on disk" in caplog.text
    assert before <= _checkpoint_files(train_dir)  # nothing removed
    assert checkpointing.latest_checkpoint(train_dir).endswith("model.ckpt-8")


def test_rolling_back_by_deleting_the_newest_checkpoint_resumes_from_the_one_before(
    trained, caplog
):
    train_dir = _copy(trained, "rollback")
    for f in os.listdir(train_dir):
        if f.startswith("model.ckpt-6."):
            os.remove(os.path.join(train_dir, f))
    caplog.set_level(logging.INFO)
    assert helpers.run_main_in_process(helpers.run_args(trained, "rollback", max_steps=4)) == 0
    assert "model.ckpt-3 (step 3)" in caplog.text
    assert checkpointing.latest_checkpoint(train_dir).endswith("model.ckpt-4")


def test_a_complete_checkpoint_the_state_file_does_not_name_is_adopted(trained, caplog):
    """A save killed after its files were complete but before the state file named them:
    the checkpoint is complete, so it is used, not removed. The `_temp` folder of a save
    cut shorter is provably incomplete and is removed."""
    train_dir = _copy(trained, "unlisted")
    state = os.path.join(train_dir, "checkpoint")
    with open(state, encoding="utf-8") as f:
        text = f.read()
    with open(state, "w", encoding="utf-8") as f:  # as it was before step 6's save
        f.write(
            text.replace(
                'model_checkpoint_path: "model.ckpt-6"', 'model_checkpoint_path: "model.ckpt-3"'
            )
        )
    os.makedirs(os.path.join(train_dir, "model.ckpt-7_temp"))
    caplog.set_level(logging.INFO)
    assert helpers.run_main_in_process(helpers.run_args(trained, "unlisted", max_steps=7)) == 0
    assert "model.ckpt-6 (step 6)" in caplog.text
    assert "model.ckpt-7_temp, left by a save that did not finish" in caplog.text
    assert {"model.ckpt-6.index", "model.ckpt-7.index"} <= _checkpoint_files(train_dir)


# ------------------------------------------------------------------- damaged checkpoint
def _damage(train_dir: str, step: int, how: str) -> str:
    prefix = os.path.join(train_dir, f"model.ckpt-{step}")
    data = prefix + ".data-00000-of-00001"
    with open(data, "rb") as f:
        content = bytearray(f.read())
    if how == "truncated":
        content = content[: len(content) // 2]
    else:
        content[len(content) // 3] ^= 0x55
    with open(data, "wb") as f:
        f.write(bytes(content))
    return prefix


@pytest.mark.parametrize("how", ["truncated", "byte_flipped"])
def test_a_damaged_newest_checkpoint_falls_back_in_every_mode(trained, how, capfd, caplog):
    name = f"damaged_{how}"
    train_dir = _copy(trained, name)
    bad = _damage(train_dir, 6, how)
    caplog.set_level(logging.WARNING)

    assert checkpointing.latest_checkpoint(train_dir).endswith("model.ckpt-3")
    assert f"Checkpoint {bad} is damaged" in caplog.text
    # inspect: the directory gives the intact one; the damaged prefix one error line.
    assert inspect_checkpoint.main([train_dir]) == 0
    assert "model.ckpt-3" in capfd.readouterr().out
    with pytest.raises(Exception, match="cannot read checkpoint"):
        inspect_checkpoint.inspect(bad)
    # eval (single pass) and decode read model.ckpt-3.
    args = helpers.run_args(trained, name, mode="eval", single_pass=True)
    assert helpers.run_main_in_process(args) == 0
    assert "Single-pass eval of model.ckpt-3 (step 3)" in capfd.readouterr().out
    args = helpers.run_args(trained, name, mode="decode", single_pass=True)
    assert helpers.run_main_in_process(args) == 0
    decoded = [d for d in os.listdir(os.path.dirname(train_dir)) if d.startswith("decode_")]
    assert decoded and all(d.endswith("ckpt-3") for d in decoded), decoded
    # train resumes from model.ckpt-3 and sets the damaged one aside (kept, not deleted).
    caplog.clear()
    caplog.set_level(logging.INFO)
    assert helpers.run_main_in_process(helpers.run_args(trained, name, max_steps=4)) == 0
    assert "model.ckpt-3 (step 3)" in caplog.text
    aside = os.path.join(train_dir, checkpoint_scan.DAMAGED_SUBDIR)
    assert sorted(os.listdir(aside)) == ["model.ckpt-6.data-00000-of-00001", "model.ckpt-6.index"]
    assert "Traceback" not in capfd.readouterr().err


def test_only_damaged_checkpoints_is_one_error_and_nothing_is_moved(trained, capfd):
    train_dir = _copy(trained, "all_damaged")
    for step in (0, 3, 6):
        _damage(train_dir, step, "truncated")
    before = _checkpoint_files(train_dir)
    for mode, flags in (("train", {"max_steps": 7}), ("decode", {"single_pass": True})):
        assert (
            helpers.run_main_in_process(helpers.run_args(trained, "all_damaged", mode, **flags))
            == 2
        )
        err = capfd.readouterr().err
        errors = _errors(err)
        assert len(errors) == 1 and "Traceback" not in err, err[-2000:]
        assert "damaged" in errors[0] and "model.ckpt-6" in errors[0], errors
    assert _checkpoint_files(train_dir) == before


# --------------------------------------------------------------------------- one writer
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


# ------------------------------------------------------------------------ decode resume
def test_single_pass_decode_never_resumes_a_folder_made_from_other_inputs(trained, capfd, caplog):
    train_dir = _copy(trained, "resume")
    exp_dir = os.path.dirname(train_dir)
    other = helpers.write_data(os.path.join(exp_dir, "other"), "val", 3, trained.words, seed=5)
    first = helpers.run_args(trained, "resume", mode="decode", single_pass=True)
    assert helpers.run_main_in_process(first) == 0
    (folder,) = [d for d in os.listdir(exp_dir) if d.startswith("decode_")]
    folder = os.path.join(exp_dir, folder)
    n_first = len(os.listdir(os.path.join(folder, "decoded")))
    assert n_first == 6
    snapshot = {f: os.path.getmtime(os.path.join(folder, f)) for f in os.listdir(folder)}
    caplog.set_level(logging.WARNING)

    # Same folder name (same split name, settings, checkpoint), other data files.
    second = helpers.run_args(trained, "resume", mode="decode", single_pass=True, data_path=other)
    assert helpers.run_main_in_process(second) == 0
    assert f"{folder} holds a decode of other inputs (data differ)" in caplog.text
    assert len(os.listdir(os.path.join(folder + "-2", "decoded"))) == 3
    assert "decoded: 3/3 articles" in capfd.readouterr().err.splitlines()[-1]
    assert {f: os.path.getmtime(os.path.join(folder, f)) for f in os.listdir(folder)} == snapshot
    # The original's attention at decode time is a setting a summary depends on, too.
    third = helpers.run_args(
        trained, "resume", mode="decode", single_pass=True, decode_attention="train_consistent"
    )
    assert helpers.run_main_in_process(third) == 0
    assert os.path.isdir(folder + "-3")
    # Rerunning with the first inputs resumes the first folder (nothing left to decode).
    caplog.clear()
    caplog.set_level(logging.INFO)
    assert helpers.run_main_in_process(first) == 0
    assert f"Resuming single-pass decode in {folder} after 6 complete examples" in caplog.text


def test_single_pass_decode_without_any_checkpoint_is_an_error_at_once(trained, capfd):
    os.makedirs(os.path.join(trained.log_root, "untrained", "train"))
    start = time.monotonic()
    args = helpers.run_args(trained, "untrained", mode="decode", single_pass=True)
    assert helpers.run_main_in_process(args) == 2
    assert time.monotonic() - start < 60
    errors = _errors(capfd.readouterr().err)
    assert len(errors) == 1 and errors[0].startswith("error: no checkpoint in "), errors
