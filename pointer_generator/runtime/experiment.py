"""The experiment directory layout of the original release (spec 1.3).

<log_root>/<exp_name>/
    train/   checkpoint, model.ckpt-<step>.*, events.out.tfevents.*,
             vocab_metadata.tsv, projector_config.pbtxt
    eval/    checkpoint_best, bestmodel-<step>.*, events.out.tfevents.*,
             single_pass_loss.txt (eval --single_pass)
    decode*/ written by decode mode
    settings.json, vocab   how it was made (runtime/experiment_settings.py)
"""

from __future__ import annotations

import dataclasses
import os
import tempfile

from pointer_generator.errors import FlagError, OutputError
from pointer_generator.runtime import owned_files

TRAIN_SUBDIR = "train"
EVAL_SUBDIR = "eval"
# Embedding projector files in train/ (spec 1.3).
VOCAB_METADATA = "vocab_metadata.tsv"
PROJECTOR_CONFIG = "projector_config.pbtxt"
SINGLE_PASS_LOSS = "single_pass_loss.txt"


@dataclasses.dataclass(frozen=True)
class Experiment:
    """Paths of one experiment, `<log_root>/<exp_name>`."""

    root: str

    @property
    def train_dir(self) -> str:
        return os.path.join(self.root, TRAIN_SUBDIR)

    @property
    def eval_dir(self) -> str:
        return os.path.join(self.root, EVAL_SUBDIR)

    @property
    def vocab_metadata(self) -> str:
        return os.path.join(self.train_dir, VOCAB_METADATA)

    @property
    def projector_config(self) -> str:
        return os.path.join(self.train_dir, PROJECTOR_CONFIG)

    @property
    def single_pass_loss(self) -> str:
        return os.path.join(self.eval_dir, SINGLE_PASS_LOSS)


def check_exp_name(exp_name: str) -> None:
    """Raise FlagError unless `exp_name` is a plain name: an experiment lives directly in
    --log_root, so a name with a path separator, or `.` / `..`, could write anywhere."""
    seps = [s for s in (os.sep, os.altsep, "/", "\0") if s]
    if any(s in exp_name for s in seps) or exp_name in (".", ".."):
        raise FlagError(
            f"--exp_name {exp_name!r} must be a name, not a path (no '/', not '.' or '..'): "
            "experiments are folders directly in --log_root"
        )


def open_experiment(log_root: str, exp_name: str, mode: str) -> Experiment:
    """The experiment of `log_root/exp_name`; created in train mode, else it must exist.

    Raises FlagError ("run in train mode to create it") for eval/decode of a missing
    experiment, like the original's start-up (spec 1.2 step 3), and OutputError when the
    directory the mode writes to cannot be created.
    """
    check_exp_name(exp_name)
    exp = Experiment(os.path.join(log_root, exp_name))
    if mode != "train" and not os.path.isdir(exp.root):
        raise FlagError(
            f"experiment directory {exp.root!r} does not exist; run in train mode to create it"
        )
    check_own_folders(exp.root)
    made = {"train": exp.train_dir, "eval": exp.eval_dir}.get(mode)
    if made:
        try:
            owned_files.make_dir(made)
        except OSError as e:
            raise OutputError(
                f"cannot create {made!r} ({e.strerror or e}); check --log_root and --exp_name"
            ) from None
    return exp


def check_own_folders(root: str) -> None:
    """OutputError if the experiment's train/ or eval/ is a symbolic link: with one, a run
    would read another experiment's checkpoints with this one's vocabulary, or write,
    rotate and delete checkpoints wherever it points. (The experiment folder itself may
    be a link: that path is the user's own, given on the command line.)"""
    for sub in (TRAIN_SUBDIR, EVAL_SUBDIR):
        path = os.path.join(root, sub)
        if os.path.islink(path):
            raise OutputError(
                f"{path} is a symbolic link (to {os.readlink(path)}); an experiment's "
                "folders must be its own (a link would make this run use or change the "
                "files of another folder): replace the link by the folder it points to "
                "(mv), or give the run that experiment's --log_root/--exp_name"
            )


def output_dir(exp: Experiment, mode: str) -> str:
    """Where a mode writes: train/ (checkpoints), eval/ (best models), or the experiment
    directory itself (decode directories)."""
    return {"train": exp.train_dir, "eval": exp.eval_dir}.get(mode, exp.root)


def check_writable(directory: str) -> None:
    """Create `directory` if needed and make sure a file can be created in it.

    Raises OutputError naming the directory and the reason (read-only file system, a path
    component that is a file, no permission). Permission bits are not consulted: a file is
    really created and removed, which also gives the right answer for root.
    """
    try:
        os.makedirs(directory, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write_test_", dir=directory)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise OutputError(
            f"cannot write in {directory!r} ({e.strerror or e}); check --log_root and --exp_name"
        ) from None
