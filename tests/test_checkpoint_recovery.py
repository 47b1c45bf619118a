"""No complete checkpoint is ever removed or lost (docs/reliability.md): a `checkpoint`
state file deleted, emptied or garbled is rebuilt from the checkpoints on disk; deleting
the newest checkpoint rolls back to the one before; a complete checkpoint the state file
does not name is adopted, a save's `_temp` folder removed; a damaged checkpoint is
skipped by every mode (and set aside by the training job, never deleted); only damaged
ones is one error. Runs are in process (`helpers.run_main_in_process`: the command line
minus the interpreter start).
"""

from __future__ import annotations

import logging
import os
import shutil

import pytest

import pointer_generator as pg
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


def test_a_restarted_job_removes_only_what_is_provably_incomplete(tmp_path, caplog):
    """A save killed after its files were merged but before the state file named them
    leaves a complete checkpoint nobody tracks: the restarted job resumes from it (it is
    the newest complete one) instead of deleting it. A `_temp` folder is a save cut
    shorter, never a complete checkpoint: removed."""
    import logging

    directory = str(tmp_path)
    trainer = pg.Trainer(helpers.hparams(), 100)
    ckpts = checkpointing.TrainCheckpoints(directory, trainer.checkpoint(), trainer.step)
    for step in (1, 2):
        trainer.step.assign(step)
        ckpts.save()
    trainer.step.assign(3)
    trainer.checkpoint().write(os.path.join(directory, "model.ckpt-3"))  # no state update
    os.makedirs(os.path.join(directory, "model.ckpt-4_temp"))
    caplog.set_level(logging.INFO)

    assert checkpointing.recover_train_dir(directory).endswith("model.ckpt-3")
    restarted = checkpointing.TrainCheckpoints(directory, trainer.checkpoint(), trainer.step)

    assert "model.ckpt-4_temp, left by a save that did not finish" in caplog.text
    assert sorted(os.listdir(directory)) == [
        "checkpoint",
        *[f"model.ckpt-{s}.{e}" for s in (1, 2, 3) for e in ("data-00000-of-00001", "index")],
    ]
    assert checkpointing.latest_checkpoint(directory).endswith("model.ckpt-3")
    trainer.step.assign(4)
    assert restarted.save().endswith("model.ckpt-4")


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
