"""Checkpoints of the experiment layout (spec 1.3-1.7), written so that none is lost.

* train/: `model.ckpt-<step>` through a `tf.train.CheckpointManager` (newest 3 kept).
  TensorFlow writes a checkpoint's files first and only then rewrites the `checkpoint`
  state file (atomically, by rename), so a job killed mid-save leaves the state file
  pointing at the previous, complete checkpoint. A prefix that already exists is never
  written again (an overwrite would not be atomic).
* eval/: `bestmodel-<train step>` with the state file `checkpoint_best` (3 kept).
* one-off conversions: `model.ckpt-<step>_cov_init` (convert_to_coverage_model) and
  `model-<step>` (restore_best_model), added to train/'s state file so that the next
  training run resumes from them.

What a checkpoint holds: `model` (the weights), `step` (the global step), and for
training checkpoints `optimizer` (Adagrad accumulators) and `data` (the tf.data iterator
position, when it could be saved).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time

import tensorflow as tf

from pointer_generator.errors import CheckpointError, OutputError
from pointer_generator.runtime import checkpoint_scan, json_files, owned_files

log = logging.getLogger(__name__)

TRAIN_CHECKPOINT_NAME = "model.ckpt"
BEST_CHECKPOINT_NAME = "bestmodel"
TRAIN_STATE_FILE = "checkpoint"
BEST_STATE_FILE = "checkpoint_best"
MAX_TO_KEEP = 3

# Errors that mean "this checkpoint is being written or deleted right now": readers
# (eval, decode) wait and retry instead of crashing.
TRANSIENT_ERRORS = (
    tf.errors.NotFoundError,
    tf.errors.DataLossError,
    tf.errors.FailedPreconditionError,
    tf.errors.OutOfRangeError,
    OSError,
)


# --------------------------------------------------------------------------- finding
def latest_checkpoint(directory: str, state_file: str = TRAIN_STATE_FILE) -> str | None:
    """Newest checkpoint of `directory` that reads completely, or None.

    The state file is consulted first; a missing, garbled or stale one, or a damaged
    newest checkpoint, falls back to what is on disk (`checkpoint_scan`). Never raises
    for a missing directory or a checkpoint that vanishes while it is checked.
    """
    return checkpoint_scan.newest_intact(directory, state_file, _names_of(state_file))


def _names_of(state_file: str):
    """The checkpoint names of the folder kind that keeps `state_file`."""
    return (
        checkpoint_scan.BEST_NAMES if state_file == BEST_STATE_FILE else checkpoint_scan.TRAIN_NAMES
    )


def none_intact_note(directory: str) -> str:
    """ " (its checkpoints are all damaged: ...)" when that is why `latest_checkpoint`
    found none, else ""."""
    return checkpoint_scan.none_intact_note(directory)


def recover_train_dir(directory: str) -> str | None:
    """For the training job (train/'s one writer): the checkpoint to resume from, with a
    missing or wrong state file rebuilt and damaged newer checkpoints set aside."""
    return checkpoint_scan.recover(directory, TRAIN_STATE_FILE, checkpoint_scan.TRAIN_NAMES)


def step_of(path: str) -> str:
    """The text after the last '-' of a checkpoint path (`230000`, `230000_cov_init`)."""
    return os.path.basename(path).rsplit("-", 1)[-1]


def variable_shapes(path: str) -> dict[str, list[int]]:
    """{checkpoint key: shape} of every tensor in the checkpoint at prefix `path`."""
    try:
        return tf.train.load_checkpoint(path).get_variable_to_shape_map()
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError(
            f"cannot read checkpoint {path!r}: {_first_line(getattr(e, 'message', str(e)))}"
        ) from None


def is_tf1_checkpoint(shapes: dict) -> bool:
    """True for the original release's name-keyed checkpoints (`seq2seq/...`)."""
    return any(k.startswith("seq2seq/") for k in shapes)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def write_failure_reason(error: Exception) -> str:
    """The operating system's reason in a failed write ("No space left on device").

    TensorFlow's messages look like `{{function_node ...}} /path/file.tempstate123; No space
    left on device [Op:SaveV2]`; the text after the last "; " is the reason.
    """
    if isinstance(error, OSError):
        return error.strerror or str(error)
    text = _first_line(getattr(error, "message", None) or str(error))
    text = re.sub(r"\s*\[Op:[^\]]*\].*$", "", text)
    return text.rsplit("; ", 1)[-1].strip() or type(error).__name__


def _remove_partial_write(prefix: str) -> None:
    """Remove what a failed save of `prefix` left behind (its `_temp` directory and any
    files of the unfinished checkpoint), freeing the space it took on a full disk."""
    leftover = prefix + "_temp"
    if checkpoint_scan.is_unfinished_save(leftover):
        try:
            tf.io.gfile.rmtree(leftover)
        except tf.errors.OpError:
            pass
    delete_checkpoint_files(prefix)


# --------------------------------------------------------------------------- matching
def check_compatible(path: str, model) -> dict:
    """Raise CheckpointError (one line per problem) if `path` does not fit `model`.

    Returns the checkpoint's {key: shape} map.
    """
    shapes = variable_shapes(path)
    if is_tf1_checkpoint(shapes):
        raise CheckpointError(
            f"{path} is an original (TF1) checkpoint; start from it with "
            "--tf1_checkpoint instead of placing it in train/"
        )
    # The model's family knows what its flags expect (models/family.py).
    problems = model.checkpoint_mismatches(shapes)
    if problems:
        raise CheckpointError(f"checkpoint {path} does not match the flags: " + "; ".join(problems))
    return shapes


def restore(checkpoint: tf.train.Checkpoint, path: str, model):
    """Restore `checkpoint` (whose `model` is `model`) from `path` after checking it.

    Every object of `checkpoint` must get a value (a renamed layer would otherwise keep
    its fresh initial weights without notice); the checkpoint may hold more (a training
    checkpoint's optimizer and data position when an eval job reads it).
    Raises:
      CheckpointError naming the checkpoint and what does not match.
    """
    check_compatible(path, model)
    try:
        status = checkpoint.restore(path)
        status.assert_existing_objects_matched()
        # The checkpoint may hold more than `checkpoint` (see above): no warnings for that.
        status.expect_partial()
    except (ValueError, AssertionError) as e:
        raise CheckpointError(
            f"checkpoint {path} does not match the model: {_first_line(str(e))}"
        ) from None


DATA_CONFIG_KEY = "data_config/.ATTRIBUTES/VARIABLE_VALUE"


def saved_data_config(path: str) -> dict | None:
    """The data settings stored with a checkpoint's data position, or None if it has none."""
    try:
        reader = tf.train.load_checkpoint(path)
        if not reader.has_tensor(DATA_CONFIG_KEY):
            return None
        value = reader.get_tensor(DATA_CONFIG_KEY)
        return json_files.loads(value.decode("utf-8") if isinstance(value, bytes) else value)
    except (tf.errors.OpError, ValueError, IndexError):
        return None


def restore_data_position(iterator, path: str) -> bool:
    """Restore the tf.data iterator position saved as `data` in `path`, if possible.

    Returns False (and logs why) when the checkpoint has none or it does not fit the
    current input pipeline (e.g. other data files); training then continues from a
    fresh shuffle.
    """
    if not any(k.startswith("data/") for k in variable_shapes(path)):
        log.info("%s holds no data position; the input pipeline starts afresh", path)
        return False
    try:
        tf.train.Checkpoint(data=iterator).restore(path).expect_partial()
        return True
    except (tf.errors.OpError, ValueError, AssertionError) as e:
        log.warning(
            "Could not restore the data position from %s (%s); the input pipeline starts afresh",
            path,
            _first_line(str(e)),
        )
        return False


# --------------------------------------------------------------------------- writing
class TrainCheckpoints:
    """The training checkpoints of one directory: `model.ckpt-<step>`, newest 3 kept.

    Args:
      directory: train/ (or, for a non-chief multi-worker replica, a scratch directory).
      checkpoint: the tf.train.Checkpoint to save (model, optimizer, step, data).
      step: the global step variable (the checkpoint number).
    """

    def __init__(
        self,
        directory: str,
        checkpoint: tf.train.Checkpoint,
        step: tf.Variable,
        max_to_keep: int = MAX_TO_KEEP,
        fallback: tf.train.Checkpoint | None = None,
    ):
        self.directory = directory
        self.step = step
        self.max_to_keep = max_to_keep
        self._fallback = fallback
        self._use(checkpoint)
        self.last_save_time = time.time()
        self._remove_unfinished_saves()

    def _remove_unfinished_saves(self) -> None:
        """Remove the `<prefix>_temp/` folders of saves a kill cut short: provably
        incomplete (only this job writes here). A complete checkpoint is never removed,
        named by the state file or not (`recover_train_dir` adopts those)."""
        checkpoint_scan.remove_unfinished_saves(self.directory)

    def _use(self, checkpoint: tf.train.Checkpoint) -> None:
        self.checkpoint = checkpoint
        self.manager = tf.train.CheckpointManager(
            checkpoint,
            self.directory,
            max_to_keep=self.max_to_keep,
            checkpoint_name=TRAIN_CHECKPOINT_NAME,
        )

    @property
    def latest(self) -> str | None:
        return latest_checkpoint(self.directory)

    def prefix_for(self, step: int) -> str:
        return os.path.join(self.directory, f"{TRAIN_CHECKPOINT_NAME}-{step}")

    def save(self) -> str | None:
        """Save at the current step; returns the path, or None if that step is saved.

        Raises OutputError when the checkpoint cannot be written (disk full, read-only
        file system); the earlier checkpoints and the state file are left as they were.
        """
        step = int(self.step.numpy())
        self.last_save_time = time.time()
        prefix = self.prefix_for(step)
        refuse_links(prefix)
        if tf.io.gfile.exists(prefix + ".index"):
            return None
        try:
            try:
                path = self.manager.save(checkpoint_number=step)
            except (tf.errors.FailedPreconditionError, tf.errors.UnimplementedError) as e:
                if self._fallback is None:
                    raise
                # Typically an input pipeline whose position cannot be serialised.
                log.warning(
                    "Cannot save the data position (%s); checkpoints will hold the "
                    "model, optimizer and step only",
                    _first_line(str(e)),
                )
                self._use(self._fallback)
                self._fallback = None
                path = self.manager.save(checkpoint_number=step)
        except (tf.errors.OpError, OSError) as e:
            reason = write_failure_reason(e)
            newest = self.latest
            if newest == prefix:  # written and recorded; removing older ones failed
                raise OutputError(
                    f"saved checkpoint {prefix} but could not remove older "
                    f"ones in {self.directory}: {reason}"
                ) from None
            _remove_partial_write(prefix)  # the state file still names the older ones
            raise OutputError(
                f"cannot write checkpoint {prefix}: {reason}; the earlier "
                f"checkpoints are intact (newest: {newest})"
            ) from None
        log.info("Saved checkpoint %s", path)
        return path

    def seconds_since_save(self) -> float:
        return time.time() - self.last_save_time


def add_to_state_file(
    directory: str, prefix: str, state_file: str = TRAIN_STATE_FILE, max_to_keep: int | None = None
) -> list[str]:
    """Make `prefix` the newest checkpoint of `directory/state_file` (atomic rewrite).

    Earlier entries are kept (up to `max_to_keep` in all, if given). Returns the prefixes
    dropped from the list (the caller deletes their files).
    """
    # A missing or unreadable state file starts a new list (the files stay on disk);
    # entries that are not this folder's own are dropped, never rotated away.
    names = _names_of(state_file)
    paths = checkpoint_scan.listed(directory, state_file) or []
    paths = checkpoint_scan.own_entries(directory, state_file, paths, names)
    paths = [p for p in paths if p != os.path.normpath(os.path.abspath(prefix))] + [prefix]
    dropped = []
    if max_to_keep is not None and len(paths) > max_to_keep:
        dropped, paths = paths[:-max_to_keep], paths[-max_to_keep:]
    now = time.time()
    # Relative names keep the experiment directory movable. Timestamps equal to the
    # "last preserved" time make a later CheckpointManager keep these files for good
    # (a converted or restored model is never rotated away by the next training run).
    # An absolute directory keeps the bare names as written (see checkpoint_scan).
    # (Deprecated in favour of CheckpointManager, which cannot write another state file
    # name or keep timestamps; its notice says nothing a user acts on.)
    from tensorflow.python.util import deprecation

    with deprecation.silence(), _state_write(directory):
        tf.compat.v1.train.update_checkpoint_state(
            os.path.abspath(directory),
            os.path.basename(prefix),
            [os.path.basename(p) for p in paths],
            latest_filename=state_file,
            all_model_checkpoint_timestamps=[now] * len(paths),
            last_preserved_timestamp=now,
        )
    return dropped


@contextlib.contextmanager
def _state_write(directory: str):
    """A failed state-file rewrite leaves no temporary behind (TensorFlow's stays)."""
    try:
        yield
    except BaseException:
        checkpoint_scan.remove_state_temporaries(directory)
        raise


def refuse_links(prefix: str) -> None:
    """OutputError if a file of the checkpoint about to be written at `prefix` (or its
    save's `_temp` folder) is a symbolic link: TensorFlow would write through it."""
    for path in [prefix + "_temp"] + tf.io.gfile.glob(prefix + ".*"):
        owned_files.refuse_link(path)


def delete_checkpoint_files(prefix: str) -> None:
    """Remove `prefix.index` and `prefix.data-*` (missing files are fine)."""
    for f in tf.io.gfile.glob(prefix + ".index") + tf.io.gfile.glob(prefix + ".data-*"):
        try:
            tf.io.gfile.remove(f)
        except tf.errors.NotFoundError:
            pass


def write_named(
    checkpoint: tf.train.Checkpoint,
    prefix: str,
    state_file: str = TRAIN_STATE_FILE,
    max_to_keep: int | None = None,
) -> str:
    """Write `checkpoint` at `prefix`, then point the directory's state file at it.

    Refuses to overwrite an existing checkpoint (the overwrite would not be atomic).
    """
    refuse_links(prefix)
    if tf.io.gfile.exists(prefix + ".index"):
        raise CheckpointError(f"{prefix} already exists; remove it first if it should be replaced")
    directory = os.path.dirname(prefix)
    checkpoint.save_counter  # noqa: B018  (created on access; `write` saves it only then)
    try:
        path = checkpoint.write(prefix)
    except (tf.errors.OpError, OSError) as e:
        _remove_partial_write(prefix)
        raise OutputError(
            f"cannot write checkpoint {prefix}: {write_failure_reason(e)}; "
            "the earlier checkpoints are intact"
        ) from None
    try:
        dropped = add_to_state_file(directory, path, state_file, max_to_keep)
    except (tf.errors.OpError, OSError) as e:
        raise OutputError(
            f"wrote {path} but cannot update {os.path.join(directory, state_file)}"
            f": {write_failure_reason(e)}"
        ) from None
    for old in dropped:
        delete_checkpoint_files(old)
    return path


class BestModels:
    """The eval job's best models: `eval/bestmodel-<train step>` + `checkpoint_best`.

    `checkpoint` holds what an eval job has (model weights and step; no optimizer, as in
    the original's eval graph).
    """

    def __init__(
        self, eval_dir: str, checkpoint: tf.train.Checkpoint, max_to_keep: int = MAX_TO_KEEP
    ):
        self.eval_dir = eval_dir
        self.checkpoint = checkpoint
        self.max_to_keep = max_to_keep
        # The caller holds eval/'s lock, so a save's `_temp` folder here is the leftover
        # of a killed one (86 MB at the paper's size), never a save in progress.
        checkpoint_scan.remove_unfinished_saves(eval_dir)

    def prefix_for(self, train_step: int) -> str:
        return os.path.join(self.eval_dir, f"{BEST_CHECKPOINT_NAME}-{train_step}")

    def save(self, train_step: int) -> str:
        """Save the current weights as the best model of `train_step`.

        The weights of one train step are always the same, so an existing
        `bestmodel-<step>` is kept and only moved to the end of the list.
        """
        prefix = self.prefix_for(train_step)
        if tf.io.gfile.exists(prefix + ".index"):
            for old in add_to_state_file(self.eval_dir, prefix, BEST_STATE_FILE, self.max_to_keep):
                delete_checkpoint_files(old)
            return prefix
        path = write_named(self.checkpoint, prefix, BEST_STATE_FILE, self.max_to_keep)
        log.info("Saved best model %s", path)
        return path

    @property
    def latest(self) -> str | None:
        return latest_checkpoint(self.eval_dir, BEST_STATE_FILE)
