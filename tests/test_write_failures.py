"""A write that fails is one clear `error:` line (exit status 2) and earlier checkpoints
stay intact (docs/reliability.md): a full disk before training starts, when a checkpoint
is saved, while event files are written and while decoding; a read-only log directory;
a --log_root below a regular file. Full disks are small tmpfs mounts where the tests may
mount (root with CAP_SYS_ADMIN), else a file-size limit (RLIMIT_FSIZE) in a child
process; RELIABILITY_NO_MOUNT=1 tries the fall-backs.
"""

from __future__ import annotations

import contextlib
import glob
import os
import resource
import shutil
import signal
import subprocess
import sys

import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.cli import inspect_checkpoint
from pointer_generator.runtime import checkpointing
from pointer_generator.runtime.experiment import Experiment
from tests import bad_input, helpers
from tests.bad_input import run_mode as _run

STARTUP_TIMEOUT = 150  # seconds for a job to start training (TensorFlow import, tracing)


def _checkpoint_step(prefix: str) -> int:
    reader = tf.train.load_checkpoint(prefix)
    return int(reader.get_tensor("step/.ATTRIBUTES/VARIABLE_VALUE"))


def disk_problems(train_dir: str) -> list[str]:
    """Everything wrong with the checkpoints on disk after a kill.

    Every `model.ckpt-<step>.index` must be a complete checkpoint (every tensor readable,
    the step inside equal to the name). The state file must name a readable newest
    checkpoint; an older entry may lack its files only while being rotated away.
    """
    problems = []
    for index in sorted(glob.glob(os.path.join(train_dir, "model.ckpt-*.index"))):
        prefix = index[: -len(".index")]
        try:
            reader = tf.train.load_checkpoint(prefix)
            for key, dtype in reader.get_variable_to_dtype_map().items():
                if dtype == tf.variant:  # the data position: no NumPy form, read it raw
                    tf.raw_ops.RestoreV2(
                        prefix=prefix, tensor_names=[key], shape_and_slices=[""], dtypes=[dtype]
                    )
                else:
                    reader.get_tensor(key)
            if _checkpoint_step(prefix) != int(prefix.rsplit("-", 1)[1]):
                problems.append(f"{prefix}: step inside does not match the name")
        except Exception as e:  # anything here is a finding
            problems.append(f"{prefix}: unreadable ({type(e).__name__}: {e})")
    state = tf.train.get_checkpoint_state(train_dir)
    if state is None:
        return problems + ["no readable 'checkpoint' state file"]
    newest = os.path.join(train_dir, os.path.basename(state.model_checkpoint_path))
    if not os.path.exists(newest + ".index"):
        problems.append(f"the state file names {newest}, which is not on disk")
    newest_step = int(newest.rsplit("-", 1)[1])
    for path in state.all_model_checkpoint_paths:
        step = int(path.rsplit("-", 1)[1])
        if (
            not os.path.exists(os.path.join(train_dir, os.path.basename(path)) + ".index")
            and step >= newest_step
        ):
            problems.append(f"the state file lists {path}, which is not on disk")
    return problems


@pytest.fixture
def tmpfs():
    """mount(path, size) -> True if a tmpfs of that size is now mounted at path (needs
    root with CAP_SYS_ADMIN); unmounted at the end of the test."""
    mounted = []

    def mount(path: str, size: str) -> bool:
        os.makedirs(path, exist_ok=True)
        if os.environ.get("RELIABILITY_NO_MOUNT"):  # to try the fall-backs
            return False
        try:
            proc = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", path],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except OSError:
            return False
        if proc.returncode == 0:
            mounted.append(path)
        return proc.returncode == 0

    yield mount
    for path in reversed(mounted):
        subprocess.run(["umount", "-l", path], capture_output=True, timeout=30)


def _earlier_checkpoint(train_dir: str, step: int = 3) -> str:
    trainer = pg.Trainer(helpers.hparams(), 100)
    trainer.step.assign(step)
    return checkpointing.TrainCheckpoints(train_dir, trainer.checkpoint(), trainer.step).save()


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error: ")]


@pytest.mark.parametrize(
    "free, where",
    [
        (0, "cannot write "),  # full before it starts: the first file it writes
        (60_000, "cannot write checkpoint"),  # room for a few steps, not for a checkpoint
    ],
)
def test_full_disk_is_a_clear_error_and_keeps_earlier_checkpoints(
    tmp_path, tmpfs, capsys, free, where
):
    data = helpers.tiny_setup(tmp_path)
    disk = str(tmp_path / "small_disk")
    if tmpfs(disk, "1m"):
        # A real full disk: a 1 MiB tmpfs, filled up to `free` bytes.
        reason = "No space left on device"
        exp = Experiment(os.path.join(disk, "exp"))
        earlier = _earlier_checkpoint(exp.train_dir)
        with open(os.path.join(disk, "filler"), "wb") as f:
            f.write(b"\0" * (shutil.disk_usage(disk).free - free))
        args = helpers.cli_args(
            mode="train",
            data_path=data.train_path,
            vocab_path=data.vocab_path,
            log_root=disk,
            exp_name="exp",
            max_steps=6,
            save_checkpoint_secs=3600,
        )
        status = helpers.run_main_in_process(args)
        stderr = capsys.readouterr().err
    else:
        # No mount without CAP_SYS_ADMIN: a file-size limit in the child gives EFBIG
        # where the disk would give ENOSPC (same code path, another reason).
        reason = "File too large"
        exp = Experiment(os.path.join(str(tmp_path), "exp"))
        earlier = _earlier_checkpoint(exp.train_dir)
        limit = free + 1  # the checkpoint (~220 kB with the data position) never fits

        def limit_file_size():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        args = helpers.cli_args(
            mode="train",
            data_path=data.train_path,
            vocab_path=data.vocab_path,
            log_root=str(tmp_path),
            exp_name="exp",
            max_steps=6,
            save_checkpoint_secs=3600,
        )
        proc = subprocess.run(
            [sys.executable, "-m", "pointer_generator.run_summarization", *args],
            capture_output=True,
            text=True,
            timeout=STARTUP_TIMEOUT,
            cwd=helpers.REPO_ROOT,
            env=helpers.subprocess_env(),
            preexec_fn=limit_file_size,
        )
        status, stderr = proc.returncode, proc.stderr
    errors = _error_lines(stderr)
    assert status == 2 and len(errors) == 1 and "Traceback" not in stderr, stderr[-3000:]
    assert errors[0].startswith(f"error: {where}") and reason in errors[0]
    if free:
        assert "model.ckpt-6" in errors[0] and "earlier checkpoints are intact" in errors[0]
        assert "training stopped at step 6" in errors[0]
    # The earlier checkpoint is intact and still the newest; nothing half-written is left.
    assert checkpointing.latest_checkpoint(exp.train_dir) == earlier
    assert disk_problems(exp.train_dir) == []
    assert inspect_checkpoint.inspect(earlier).passed
    assert glob.glob(os.path.join(exp.train_dir, "*_temp*")) == []
    assert helpers.checkpoint_steps(exp.train_dir) == [3]


def test_log_root_below_a_regular_file_is_a_clear_error(tmp_path, capsys):
    data = helpers.tiny_setup(tmp_path, n_train=4, n_val=4)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    args = helpers.cli_args(
        mode="train",
        data_path=data.train_path,
        vocab_path=data.vocab_path,
        log_root=str(blocker / "logs"),
        exp_name="exp",
    )
    assert helpers.run_main_in_process(args) == 2
    err = capsys.readouterr().err
    assert _error_lines(err) == [
        f"error: cannot create {str(blocker / 'logs' / 'exp' / 'train')!r} (Not a "
        "directory); check --log_root and --exp_name"
    ], err


@pytest.mark.parametrize("mode, directory", [("train", "train"), ("eval", "eval"), ("decode", "")])
def test_read_only_log_dir_is_a_clear_error_and_keeps_checkpoints(
    tmp_path, tmpfs, capsys, mode, directory
):
    # Permission bits do not stop root (these tests may run as root): a read-only file
    # system does.
    data = helpers.tiny_setup(tmp_path, n_train=4, n_val=4)
    disk = str(tmp_path / "ro")
    if not tmpfs(disk, "2m"):
        pytest.skip("mounting a read-only file system needs root with CAP_SYS_ADMIN")
    exp = Experiment(os.path.join(disk, "exp"))
    earlier = _earlier_checkpoint(exp.train_dir)
    subprocess.run(["mount", "-o", "remount,ro", disk], check=True, timeout=30)
    args = helpers.cli_args(
        mode=mode,
        data_path=data.val_path,
        vocab_path=data.vocab_path,
        log_root=disk,
        exp_name="exp",
        single_pass=mode == "decode",
    )
    assert helpers.run_main_in_process(args) == 2
    err = capsys.readouterr().err
    target = os.path.join(exp.root, directory) if directory else exp.root
    errors = _error_lines(err)
    assert len(errors) == 1 and "Traceback" not in err, err
    assert errors[0] in (
        f"error: cannot write in {target!r} (Read-only file system); check --log_root and "
        "--exp_name",
        f"error: cannot create {target!r} (Read-only file system); check --log_root and --exp_name",
    )
    assert checkpointing.latest_checkpoint(exp.train_dir) == earlier
    assert inspect_checkpoint.inspect(earlier).passed


def test_a_save_that_fails_leaves_the_state_and_older_checkpoints_alone(tmp_path, tmpfs):
    """Function level: TrainCheckpoints.save on a full disk (no training needed)."""
    disk = str(tmp_path / "small")
    if not tmpfs(disk, "256k"):
        pytest.skip("mounting a small file system needs root with CAP_SYS_ADMIN")
    trainer = pg.Trainer(helpers.hparams(), 100)
    ckpts = checkpointing.TrainCheckpoints(disk, trainer.checkpoint(), trainer.step)
    trainer.step.assign(1)
    first = ckpts.save()
    with open(os.path.join(disk, "filler"), "wb") as f, contextlib.suppress(OSError):
        f.write(b"\0" * shutil.disk_usage(disk).free)
    trainer.step.assign(2)
    from pointer_generator.errors import OutputError

    with pytest.raises(
        OutputError,
        match=r"cannot write checkpoint .*model\.ckpt-2: No space "
        r"left on device; the earlier checkpoints are "
        r"intact \(newest: .*model\.ckpt-1\)",
    ):
        ckpts.save()
    assert checkpointing.latest_checkpoint(disk) == first
    assert sorted(os.listdir(disk)) == [
        "checkpoint",
        "filler",
        "model.ckpt-1.data-00000-of-00001",
        "model.ckpt-1.index",
    ]
    # Space again: the same step saves normally.
    os.remove(os.path.join(disk, "filler"))
    assert ckpts.save().endswith("model.ckpt-2")
    assert disk_problems(disk) == []


def test_event_files_on_a_full_disk_are_an_output_error(tmp_path, tmpfs):
    from pointer_generator.errors import OutputError
    from pointer_generator.runtime import tensorboard

    disk = str(tmp_path / "small")
    if not tmpfs(disk, "64k"):
        pytest.skip("mounting a small file system needs root with CAP_SYS_ADMIN")
    writer = tensorboard.ScalarWriter(disk)
    with open(os.path.join(disk, "filler"), "wb") as f, contextlib.suppress(OSError):
        f.write(b"\0" * shutil.disk_usage(disk).free)
    with pytest.raises(
        OutputError, match=f"cannot write TensorBoard summaries in {disk}: No space left on device"
    ):
        for step in range(2000):
            writer.write({"loss": 1.0, "global_norm": 2.0}, step)
        writer.flush()
    writer.close_quietly()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return bad_input.tiny(tmp_path_factory)


@pytest.fixture(scope="module")
def mixed_data(setup, tmp_path_factory):
    return bad_input.mixed_data(setup, tmp_path_factory.mktemp("mixed_test"))


def test_a_full_disk_while_decoding_is_one_error(setup, capfd, mixed_data, monkeypatch):
    from pointer_generator.decoding import folder

    path, _ = mixed_data

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(folder, "write_for_rouge", full)
    status, errors, err, _ = _run(
        capfd, setup, mode="decode", data_path=path, exp_name="mixed", single_pass=True
    )
    assert status == 2 and len(errors) == 1, err[-2000:]
    assert errors[0].startswith("error: cannot write the decode outputs in ")
    assert errors[0].endswith(
        "No space left on device; free space (or fix the permissions) and run the same "
        "command again: it resumes"
    )
