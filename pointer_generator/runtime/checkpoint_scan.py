"""Finding the newest checkpoint that reads completely, whatever the state file says.

TensorFlow's `tf.train.latest_checkpoint` trusts the `checkpoint` state file: deleted,
emptied or garbled, it hides every checkpoint; naming a file that was deleted (a user
rolling back) or damaged (a truncated copy, a flipped byte), it sends every job into a
traceback. Here the state file is a hint:

* readers (eval, decode, summarize, inspect) take the newest checkpoint named by the
  state file that reads completely (every tensor, checksums included), then, if none
  does or the state file is unusable, the newest such checkpoint found on disk; each
  damaged one is named once in a warning;
* the writer (the training job, which holds the directory's lock) also repairs: it
  rewrites a missing or wrong state file from what is on disk, moves damaged
  checkpoints newer than the one it resumes from into `damaged/` (never deleting them),
  and removes only what is provably incomplete: the `<prefix>_temp/` folder of a save
  that was cut short.

A checkpoint's check reads all of its tensors once; the result is remembered for as
long as its files keep their sizes and modification times.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time

import tensorflow as tf

from pointer_generator.errors import CheckpointError
from pointer_generator.runtime import owned_files

log = logging.getLogger(__name__)

DAMAGED_SUBDIR = "damaged"
# The suffix of a one-off conversion's checkpoint (`_cov_init`: a model family's
# `Conversion.suffix`, which the registry holds to this form).
CONVERSION_SUFFIX = r"_[a-z][a-z0-9]*_init"
# Checkpoint names of the two kinds of directory: train/ (training checkpoints, the
# one-off conversions `<...>_cov_init` and `model-<step>`) and eval/ (best models).
TRAIN_NAMES = re.compile(rf"^(?:model\.ckpt|model)-(\d+)(?:{CONVERSION_SUFFIX})?$")
BEST_NAMES = re.compile(r"^bestmodel-(\d+)$")

_verified: dict[tuple, str | None] = {}  # file signature -> None (intact) or the reason
_warned: set[tuple] = set()
_damaged: dict[str, list[tuple[str, str]]] = {}  # directory -> [(prefix, reason)] last seen


def _signature(prefix: str) -> tuple | None:
    """(prefix, (file, size, mtime)...) of a checkpoint's files; None if it has no index."""
    files = sorted(tf.io.gfile.glob(prefix + ".index") + tf.io.gfile.glob(prefix + ".data-*"))
    if prefix + ".index" not in files:
        return None
    stats = []
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            return None
        stats.append((f, st.st_size, st.st_mtime_ns))
    return (prefix, tuple(stats))


def damage(prefix: str) -> str | None:
    """Why the checkpoint at `prefix` cannot be read completely, or None when it can.

    Reads every tensor (TensorFlow checks each one's length and CRC32C). A checkpoint
    whose files vanish while it is read (rotated away by the training job) reads as
    "missing", which callers treat as absent rather than damaged.
    """
    sig = _signature(prefix)
    if sig is None:
        return "missing"
    if sig in _verified:
        return _verified[sig]
    try:
        reader = tf.train.load_checkpoint(prefix)
        for name, dtype in reader.get_variable_to_dtype_map().items():
            # RestoreV2 reads any dtype (the tf.data position is a variant tensor, which
            # get_tensor cannot return) and checks length and checksum the same way.
            tf.raw_ops.RestoreV2(
                prefix=prefix, tensor_names=[name], shape_and_slices=[""], dtypes=[dtype]
            )
        reason = None
    except (tf.errors.OpError, ValueError, IndexError, OSError) as e:
        if _signature(prefix) != sig:
            return "missing"  # changed or removed under us: not a verdict on the file
        reason = _reason(e)
    _verified[sig] = reason
    return reason


def _reason(error: Exception) -> str:
    """TensorFlow's message without its `{{function_node ...}}` and `[Op:...]` wrapping."""
    text = (getattr(error, "message", None) or str(error)).strip()
    text = re.sub(r"\{\{[^}]*\}\}\s*", "", text)
    text = re.sub(r"\s*\[Op:[^\]]*\]", "", text).strip()
    return text.splitlines()[0] if text else type(error).__name__


def listed(directory: str, state_file: str) -> list[str] | None:
    """The prefixes the state file names, oldest first (its latest last); None when the
    state file is missing, empty or unreadable."""
    path = os.path.join(directory, state_file)
    if not tf.io.gfile.exists(path):
        return None
    try:
        state = tf.train.get_checkpoint_state(directory, latest_filename=state_file)
    except (tf.errors.OpError, ValueError, UnicodeDecodeError, OSError):
        state = None
    if state is None or not state.model_checkpoint_path:
        return None
    # TensorFlow has already joined relative entries to `directory` (joining them again
    # named files outside it when `directory` was relative).
    paths = [p for p in state.all_model_checkpoint_paths if p != state.model_checkpoint_path]
    paths.append(state.model_checkpoint_path)
    return [os.path.normpath(os.path.abspath(p)) for p in paths]


def foreign(directory: str, prefixes: list[str], names: re.Pattern) -> list[str]:
    """The entries of a state file that are not checkpoints of `directory` (another
    folder, a name no save of this project gives, or files that are links to elsewhere):
    readers ignore them (they would load another model's weights with this experiment's
    vocabulary), and the writer drops them from the list and never touches their files."""
    home = os.path.normpath(os.path.abspath(directory))
    return [
        p
        for p in prefixes
        if os.path.dirname(p) != home or not names.match(os.path.basename(p)) or _linked(p)
    ]


def own_entries(directory: str, state_file: str, prefixes: list[str], names: re.Pattern):
    """For the writer of `directory`: `prefixes` (a state file's entries) without those
    that are not this folder's checkpoints, which are named in a warning and never
    touched (a rotation would delete their files)."""
    outside = foreign(directory, prefixes, names)
    if outside:
        log.warning(
            "%s named %s, which %s not a checkpoint of this folder; dropped from its list "
            "(the files are left alone)",
            os.path.join(directory, state_file),
            ", ".join(outside),
            "is" if len(outside) == 1 else "are",
        )
    return [p for p in prefixes if p not in outside]


def _linked(prefix: str) -> bool:
    """True when one of the checkpoint's files is a symbolic link (its weights would be
    read from, and a rotation would act on, wherever the link points)."""
    files = tf.io.gfile.glob(prefix + ".index") + tf.io.gfile.glob(prefix + ".data-*")
    return any(os.path.islink(f) for f in files)


def on_disk(directory: str, names: re.Pattern) -> list[str]:
    """The checkpoint prefixes in `directory` (those with an `.index` file) whose names
    match `names` and whose files are not links, oldest first."""
    directory = os.path.normpath(os.path.abspath(directory))
    prefixes = [i[: -len(".index")] for i in tf.io.gfile.glob(os.path.join(directory, "*.index"))]
    return oldest_first(
        [p for p in prefixes if names.match(os.path.basename(p)) and not _linked(p)]
    )


def oldest_first(prefixes) -> list[str]:
    """Checkpoint prefixes by the time their `.index` was written (the step in the name
    breaks ties): "newest" means last written, so a model put back by
    `--restore_best_model` (an older step, written later) counts as newest."""

    def key(prefix):
        m = re.search(r"-(\d+)", os.path.basename(prefix))
        return (_mtime(prefix), int(m.group(1)) if m else -1, prefix)

    return sorted(set(prefixes), key=key)


def _warn_once(key: tuple, message: str, *args) -> None:
    if key not in _warned:
        _warned.add(key)
        log.warning(message, *args)


def newest_intact(directory: str, state_file: str, names: re.Pattern) -> str | None:
    """The newest checkpoint of `directory` that reads completely, or None (see module).

    Checks the state file's entries newest first; when it is unusable, or none of its
    entries is intact, every checkpoint on disk whose name matches `names`.
    """
    if not tf.io.gfile.isdir(directory):
        return None
    named = listed(directory, state_file)
    if named:
        outside = foreign(directory, named, names)
        if outside:
            _warn_once(
                ("foreign", directory, state_file, tuple(outside)),
                "%s names %s, which %s not a checkpoint of this folder; ignored (only this "
                "folder's own checkpoints are loaded)",
                os.path.join(directory, state_file),
                ", ".join(outside),
                "is" if len(outside) == 1 else "are",
            )
            named = [p for p in named if p not in outside]
    disk = on_disk(directory, names)
    if named is None and disk:
        _warn_once(
            ("state", directory, state_file),
            "%s is missing or unreadable; using the checkpoints found on disk",
            os.path.join(directory, state_file),
        )
    candidates = list(reversed(named or []))
    candidates += [p for p in reversed(disk) if p not in candidates]
    _damaged[directory] = []
    for prefix in candidates:
        reason = damage(prefix)
        if reason is None:
            return prefix
        if reason != "missing":
            _damaged[directory].append((prefix, reason))
            _warn_once(
                ("damaged", prefix, reason),
                "Checkpoint %s is damaged (%s); using an older one",
                prefix,
                reason,
            )
    return None


def recover(directory: str, state_file: str, names: re.Pattern) -> str | None:
    """For the one job that writes `directory`: the newest intact checkpoint, with the
    directory repaired around it (see module). Returns its prefix, or None."""
    directory = os.path.normpath(os.path.abspath(directory))
    remove_unfinished_saves(directory)
    named = listed(directory, state_file)
    own = own_entries(directory, state_file, named or [], names)
    outside = len(own) != len(named or [])
    named = own or None
    newest = None
    damaged = []
    for prefix in reversed(oldest_first(on_disk(directory, names) + (named or []))):
        reason = damage(prefix)
        if reason is None:
            newest = prefix
            break
        if reason != "missing":
            damaged.append((prefix, reason))
    if newest is None and damaged:
        raise CheckpointError(
            f"every checkpoint in {directory} is damaged ({describe(damaged)}); put back an "
            "intact copy, or move them away to start training afresh"
        )
    for prefix, reason in damaged:
        _set_aside(prefix, reason)
    if newest is not None and (outside or named is None or named[-1] != newest):
        _rewrite_state(directory, state_file, named, newest)
    return newest


def describe(damaged: list[tuple[str, str]]) -> str:
    """`model.ckpt-6: <reason>; ...` for an error message."""
    return "; ".join(f"{os.path.basename(p)}: {r}" for p, r in damaged)


def none_intact_note(directory: str) -> str:
    """For a "no checkpoint" message: the damaged checkpoints the last search of
    `directory` found, if any (else "")."""
    damaged = _damaged.get(directory)
    return f" (its checkpoints are all damaged: {describe(damaged)})" if damaged else ""


# What a save cut short leaves: TensorFlow writes a checkpoint's shards into
# `<prefix>_temp/part-*` before merging them into `<prefix>.index` / `.data-*`.
UNFINISHED_SAVE = re.compile(rf"^(?:model\.ckpt|model|bestmodel)-\d+(?:{CONVERSION_SUFFIX})?_temp$")
# The temporary of TensorFlow's atomic rewrite of a state file (`checkpoint`,
# `checkpoint_best`): `<name>.tmp<uuid4 hex>`, left behind when its write failed.
UNFINISHED_STATE = re.compile(r"^checkpoint(?:_best)?\.tmp[0-9a-f]{32}$")
# The shards' files, and the `.tempstate<N>` files of a shard being written.
_SAVE_PART = re.compile(r"^part-\d+-of-\d+(?:\.index|\.data-\d+-of-\d+)?(?:\.tempstate-?\d+)?$")


def is_unfinished_save(path: str) -> bool:
    """True only for a folder that is provably a save's leftover: named
    `<checkpoint prefix>_temp` and holding nothing but TensorFlow's `part-*` shards."""
    if not UNFINISHED_SAVE.match(os.path.basename(path)) or not os.path.isdir(path):
        return False
    if os.path.islink(path):
        return False
    try:
        entries = list(os.scandir(path))
    except OSError:
        return False
    return all(e.is_file(follow_symlinks=False) and _SAVE_PART.match(e.name) for e in entries)


def remove_unfinished_saves(directory: str) -> None:
    """Remove the `<prefix>_temp/` folders of saves that were cut short, and the
    temporaries of state-file rewrites that failed (only the directory's one writer
    calls this, so no save is in progress). Nothing else is touched: a folder of the
    user's whose name merely contains `_temp` stays."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in sorted(names):
        leftover = os.path.join(directory, name)
        if UNFINISHED_STATE.match(name):
            if _remove_state_temporary(leftover):
                log.info("Removing %s, left by a state-file update that did not finish", leftover)
            continue
        if not is_unfinished_save(leftover):
            continue
        log.info("Removing %s, left by a save that did not finish", leftover)
        try:
            tf.io.gfile.rmtree(leftover)
        except tf.errors.OpError:
            pass


def remove_state_temporaries(directory: str) -> None:
    """Remove what a failed rewrite of a state file left in `directory` (TensorFlow
    leaves its temporary when the write fails, on a full disk say); for the writer."""
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            if UNFINISHED_STATE.match(name):
                _remove_state_temporary(os.path.join(directory, name))


def _remove_state_temporary(path: str) -> bool:
    """Remove `path` if it is a plain file (never a link); True when removed."""
    if os.path.islink(path) or not os.path.isfile(path):
        return False
    with contextlib.suppress(OSError):
        os.remove(path)
        return True
    return False


def _set_aside(prefix: str, reason: str) -> None:
    """Move a damaged checkpoint's files into `damaged/` next to it (never deleted)."""
    target = owned_files.make_dir(os.path.join(os.path.dirname(prefix), DAMAGED_SUBDIR))
    for f in tf.io.gfile.glob(prefix + ".index") + tf.io.gfile.glob(prefix + ".data-*"):
        dest = os.path.join(target, os.path.basename(f))
        if os.path.exists(dest):
            dest += ".%d" % time.time_ns()
        os.replace(f, dest)
    log.warning(
        "Checkpoint %s is damaged (%s); moved its files to %s and resuming from an older one",
        prefix,
        reason,
        target,
    )


def _rewrite_state(directory: str, state_file: str, named: list[str] | None, newest: str) -> None:
    """Point the state file at `newest`, keeping the entries that still exist."""
    keep = [p for p in named or [] if p != newest and tf.io.gfile.exists(p + ".index")]
    paths = keep + [newest]
    if named is None:
        log.warning(
            "%s was missing or unreadable; rebuilt it from the checkpoints on disk (newest "
            "intact: %s)",
            os.path.join(directory, state_file),
            newest,
        )
    elif named[-1] != newest:
        log.warning(
            "%s named %s, which is missing or damaged; it now names %s",
            os.path.join(directory, state_file),
            named[-1],
            newest,
        )
    # Training checkpoints stay subject to the usual rotation (timestamps after the
    # "last preserved" time); one-off conversions are kept, as when they were written.
    stamps = [_mtime(p) for p in paths]
    rotating = [t for p, t in zip(paths, stamps, strict=True) if _is_rotating(p)]
    preserved_until = (min(rotating) if rotating else time.time()) - 1.0
    stamps = [t if _is_rotating(p) else preserved_until for p, t in zip(paths, stamps, strict=True)]
    # An absolute directory: TensorFlow stores the bare names as they are (with a
    # relative one it rewrites them relative to it, as if they were relative to the
    # working directory).
    try:
        tf.compat.v1.train.update_checkpoint_state(
            os.path.abspath(directory),
            os.path.basename(newest),
            [os.path.basename(p) for p in paths],
            latest_filename=state_file,
            all_model_checkpoint_timestamps=stamps,
            last_preserved_timestamp=preserved_until,
        )
    except BaseException:
        remove_state_temporaries(directory)
        raise


def _is_rotating(prefix: str) -> bool:
    return re.match(r"^model\.ckpt-\d+$", os.path.basename(prefix)) is not None


def _mtime(prefix: str) -> float:
    try:
        return os.stat(prefix + ".index").st_mtime
    except OSError:
        return 0.0
