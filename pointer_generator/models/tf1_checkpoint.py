"""Read and write checkpoints of the original TF1 release.

A TF1 checkpoint is read tensor by tensor with `tf.train.load_checkpoint` (no TF1 graph is
built) and converted into the Keras model's parameterisation by the name and layout
map of `tf1_names.py`; writing does the reverse, so the original's code can load it.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tensorflow as tf

from pointer_generator.errors import CheckpointError
from pointer_generator.models import tf1_names
from pointer_generator.models.tf1_names import (
    ADAGRAD_SUFFIX,
    GLOBAL_STEP,
    detect_tf1_version,
)
from pointer_generator.runtime import owned_files


# --------------------------------------------------------------------------- reading
def resolve_checkpoint_path(path: str) -> str:
    """A checkpoint prefix from a prefix or a directory with a `checkpoint` state file."""
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise CheckpointError(
                f"no checkpoint found in directory {path!r} (it has no "
                "'checkpoint' state file naming one)"
            )
        return latest
    if not tf.io.gfile.exists(path + ".index"):
        raise CheckpointError(
            f"no checkpoint at {path!r} (expected {path}.index and "
            f"{path}.data-*; give the prefix without a suffix)"
        )
    return path


def read_tf1_checkpoint(path: str, include_slots: bool = True) -> dict[str, np.ndarray]:
    """The tensors of a TF1 (or any name-keyed V2) checkpoint as {name: numpy array}.

    include_slots=False skips the `<name>/Adagrad` accumulators (half the file).
    """
    prefix = resolve_checkpoint_path(path)
    try:
        reader = tf.train.load_checkpoint(prefix)
        names = sorted(
            n
            for n in reader.get_variable_to_shape_map()
            if include_slots or not n.endswith(ADAGRAD_SUFFIX)
        )
        return {n: np.asarray(reader.get_tensor(n)) for n in names}
    except (tf.errors.OpError, ValueError, IndexError) as e:  # IndexError: a short file
        raise CheckpointError(
            f"cannot read checkpoint {prefix!r}: {getattr(e, 'message', e)}"
        ) from None


@dataclasses.dataclass
class Tf1Checkpoint:
    """What `load_tf1_checkpoint` found besides the weights it assigned.

    tf_version: naming scheme of the checkpoint ("1.2.1" or "1.0").
    global_step: the checkpoint's `global_step`, or None if it has none.
    adagrad_slots: with include_optimizer=True, {model variable path: accumulator array}
      in the Keras layout (for the optimizer's accumulators); otherwise None.
    ignored: names in the checkpoint that were not loaded (e.g. Adagrad slots).
    kept_initial: model variable paths left at their current values (allowed missing).
    """

    path: str
    tf_version: str
    global_step: int | None = None
    adagrad_slots: dict[str, np.ndarray] | None = None
    ignored: list[str] = dataclasses.field(default_factory=list)
    kept_initial: list[str] = dataclasses.field(default_factory=list)


def _fmt(shape) -> str:
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def _hints(arrays: dict[str, np.ndarray], hps, vocab_size: int) -> list[str]:
    """Explain a mismatch in terms of the flags the user can change."""
    hints = []
    emb = arrays.get("seq2seq/embedding/embedding")
    if emb is not None and emb.ndim == 2:
        if emb.shape[0] != vocab_size:
            hints.append(
                f"the checkpoint's vocabulary has {emb.shape[0]} words but the model "
                f"{vocab_size} (--vocab_size / vocab file)"
            )
        if emb.shape[1] != hps.emb_dim:
            hints.append(f"the checkpoint has emb_dim {emb.shape[1]}, the model {hps.emb_dim}")
    red = arrays.get("seq2seq/reduce_final_st/bias_reduce_c")
    if red is not None and red.ndim == 1 and red.shape[0] != hps.hidden_dim:
        hints.append(f"the checkpoint has hidden_dim {red.shape[0]}, the model {hps.hidden_dim}")
    has_cov = f"{tf1_names.DEC}/coverage/w_c" in arrays
    if has_cov != hps.coverage:
        hints.append(
            "the checkpoint was trained "
            + ("with" if has_cov else "without")
            + f" coverage but the model has coverage={hps.coverage}"
            + ("" if has_cov else " (convert it with --convert_to_coverage_model)")
        )
    has_ptr = f"{tf1_names.DEC}/calculate_pgen/Linear/Matrix" in arrays
    if has_ptr != hps.pointer_gen:
        hints.append(
            "the checkpoint is a "
            + ("pointer-generator" if has_ptr else "baseline")
            + f" model but the model has pointer_gen={hps.pointer_gen}"
        )
    return hints


def tf1_arrays_to_model(
    model,
    arrays: dict[str, np.ndarray],
    *,
    include_optimizer=False,
    allow_missing_coverage=False,
    allow_unexpected=False,
    path: str = "<arrays>",
) -> Tf1Checkpoint:
    """Check TF1-named arrays against a built model and assign them (all or nothing).

    Args:
      model: a built `PointerGeneratorModel`.
      arrays: {TF1 name: array}, e.g. from `read_tf1_checkpoint`.
      include_optimizer: also convert the `<name>/Adagrad` slots (then they must exist).
      allow_missing_coverage: a coverage model may load a checkpoint trained without
        coverage; `w_c` keeps its current (initial) value, like the original's
        --convert_to_coverage_model.
      allow_unexpected: ignore tensors the model has no place for (listed in `ignored`)
        instead of failing; missing and mis-shaped tensors still fail.
      path: shown in error messages.
    Raises:
      CheckpointError naming every missing, mis-shaped and unexpected tensor.
    """
    tf_version = detect_tf1_version(arrays)
    entries = tf1_names.entries(model.hps, model.vocab_size, tf_version)
    expected = {en.name for en in entries}
    missing, wrong, kept = _check_entries(
        model, entries, arrays, include_optimizer, allow_missing_coverage
    )
    extra = sorted(
        n
        for n in arrays
        if n not in expected and n != GLOBAL_STEP and not n.endswith(ADAGRAD_SUFFIX)
    )
    unexpected = [] if allow_unexpected else [f"{n} {_fmt(arrays[n].shape)}" for n in extra]
    if missing or wrong or unexpected:
        raise _mismatch_error(model, arrays, path, tf_version, missing, wrong, unexpected)
    slots = _assign_entries(model, entries, arrays, include_optimizer)
    step = arrays.get(GLOBAL_STEP)
    ignored = extra + (
        [] if include_optimizer else sorted(n for n in arrays if n.endswith(ADAGRAD_SUFFIX))
    )
    return Tf1Checkpoint(
        path=path,
        tf_version=tf_version,
        global_step=None if step is None else int(step),
        adagrad_slots=slots,
        ignored=ignored,
        kept_initial=kept,
    )


def _check_entries(
    model, entries, arrays, include_optimizer: bool, allow_missing_coverage: bool
) -> tuple[list, list, list]:
    """(missing, wrongly shaped, kept at their initial value) of the model's tensors."""
    missing, wrong, kept = [], [], []
    for en in entries:
        if en.name not in arrays:
            if allow_missing_coverage and en.name.endswith("/coverage/w_c"):
                kept.append(en.targets[0](model).path)
                continue
            missing.append(f"{en.name} (expected shape {_fmt(en.shape)})")
        elif tuple(arrays[en.name].shape) != en.shape:
            wrong.append(
                f"{en.name} has shape {_fmt(arrays[en.name].shape)}, expected {_fmt(en.shape)}"
            )
        if include_optimizer and en.name in arrays:
            slot = arrays.get(en.name + ADAGRAD_SUFFIX)
            if slot is None:
                missing.append(f"{en.name}{ADAGRAD_SUFFIX} (include_optimizer=True)")
            elif tuple(slot.shape) != en.shape:
                wrong.append(
                    f"{en.name}{ADAGRAD_SUFFIX} has shape {_fmt(slot.shape)}, "
                    f"expected {_fmt(en.shape)}"
                )
    return missing, wrong, kept


def _mismatch_error(model, arrays, path, tf_version, missing, wrong, unexpected) -> CheckpointError:
    """One error listing every missing, mis-shaped and unexpected tensor, with hints."""
    hps, vocab_size = model.hps, model.vocab_size
    lines = [
        f"TF1 checkpoint {path} does not match the model (vocab_size={vocab_size}, "
        f"hidden_dim={hps.hidden_dim}, emb_dim={hps.emb_dim}, "
        f"pointer_gen={hps.pointer_gen}, coverage={hps.coverage}; "
        f"checkpoint naming TF {tf_version}):"
    ]
    lines += [f"  missing: {m}" for m in missing]
    lines += [f"  wrong shape: {w}" for w in wrong]
    lines += [f"  unexpected: {u}" for u in unexpected]
    lines += [f"  hint: {h}" for h in _hints(arrays, hps, vocab_size)]
    return CheckpointError("\n".join(lines))


def _assign_entries(
    model, entries, arrays, include_optimizer: bool
) -> dict[str, np.ndarray] | None:
    """Assign every checked tensor (all or nothing); returns the converted Adagrad slots
    {variable path: array} with `include_optimizer`, else None."""
    assignments = []
    slots: dict[str, np.ndarray] | None = {} if include_optimizer else None
    for en in entries:
        if en.name not in arrays:
            continue
        variables = [t(model) for t in en.targets]
        values = tf1_names.to_keras(en, arrays[en.name])
        if include_optimizer:
            acc = tf1_names.to_keras(en, arrays[en.name + ADAGRAD_SUFFIX], accumulator=True)
            for var, a in zip(variables, acc, strict=True):
                slots[var.path] = a.astype(var.dtype)
        for var, val in zip(variables, values, strict=True):
            if tuple(var.shape) != val.shape:  # the model itself disagrees with its hps
                raise CheckpointError(
                    f"model variable {var.path} has shape "
                    f"{_fmt(var.shape)} but {en.name} converts to "
                    f"{_fmt(val.shape)}"
                )
            assignments.append((var, val))
    for var, val in assignments:
        var.assign(val.astype(var.dtype))
    return slots


def load_tf1_checkpoint(
    model,
    path: str,
    *,
    include_optimizer: bool = False,
    allow_missing_coverage: bool = False,
    allow_unexpected: bool = False,
) -> Tf1Checkpoint:
    """Load an original-release checkpoint (prefix or directory) into a built model.

    Adagrad slots are ignored (not even read) unless `include_optimizer=True`; then they
    are returned, converted to the Keras layout, as `result.adagrad_slots`
    {model variable path: array}. See `tf1_arrays_to_model` for the checks made before
    anything is assigned.
    """
    prefix = resolve_checkpoint_path(path)
    result = tf1_arrays_to_model(
        model,
        read_tf1_checkpoint(prefix, include_optimizer),
        include_optimizer=include_optimizer,
        allow_missing_coverage=allow_missing_coverage,
        allow_unexpected=allow_unexpected,
        path=prefix,
    )
    if not include_optimizer:
        slots = [n for n, _ in tf.train.list_variables(prefix) if n.endswith(ADAGRAD_SUFFIX)]
        result.ignored = sorted(result.ignored + slots)
    return result


# --------------------------------------------------------------------------- writing
def model_to_tf1_arrays(
    model, tf_version: str = "1.2.1", adagrad_slots: dict[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """The model's weights (and optional Keras-layout accumulators) under TF1 names.

    adagrad_slots: {model variable path: accumulator}, one per trainable variable; they
      become `<TF1 name>/Adagrad`.
    """
    out = {}
    missing_slots = []
    for en in tf1_names.entries(model.hps, model.vocab_size, tf_version):
        variables = [t(model) for t in en.targets]
        out[en.name] = tf1_names.to_tf1(en, [v.numpy() for v in variables]).astype(np.float32)
        if adagrad_slots is not None:
            absent = [v.path for v in variables if v.path not in adagrad_slots]
            if absent:
                missing_slots += absent
                continue
            acc = [np.asarray(adagrad_slots[v.path]) for v in variables]
            out[en.name + ADAGRAD_SUFFIX] = tf1_names.to_tf1(en, acc, accumulator=True).astype(
                np.float32
            )
    if missing_slots:
        raise CheckpointError(
            "adagrad_slots lacks the accumulators of: " + ", ".join(missing_slots)
        )
    return out


def save_tf1_arrays(
    arrays: dict[str, np.ndarray], prefix: str, update_state_file: bool = True
) -> str:
    """Write {name: array} as a name-keyed V2 checkpoint at `prefix` (exact names kept).

    With update_state_file the directory's `checkpoint` file is pointed at it, so
    `tf.train.latest_checkpoint(dir)` (and the original's loader) find it.
    """
    directory = os.path.dirname(os.path.abspath(prefix))
    os.makedirs(directory, exist_ok=True)
    names = sorted(arrays)
    try:
        tf.raw_ops.SaveV2(
            prefix=prefix,
            tensor_names=names,
            shape_and_slices=[""] * len(names),
            tensors=[np.asarray(arrays[n]) for n in names],
        )
    except tf.errors.OpError as e:
        raise CheckpointError(f"cannot write checkpoint {prefix!r}: {e.message}") from None
    if update_state_file:
        base = os.path.basename(prefix).replace("\\", "\\\\").replace('"', '\\"')
        owned_files.replace_file(
            os.path.join(directory, "checkpoint"),
            f'model_checkpoint_path: "{base}"\nall_model_checkpoint_paths: "{base}"\n',
        )
    return prefix


def write_tf1_checkpoint(
    model,
    path: str,
    tf_version: str = "1.2.1",
    global_step: int | None = None,
    adagrad_slots: dict[str, np.ndarray] | None = None,
    update_state_file: bool = True,
) -> str:
    """Export the model as a checkpoint with the original release's names and layouts.

    Args:
      model: a built `PointerGeneratorModel`.
      path: checkpoint prefix to write (e.g. `.../train/model.ckpt-1234`), used as given.
      tf_version: "1.2.1" (lstm_cell/kernel|bias) or "1.0" (lstm_cell/weights|biases).
      global_step: stored as the int32 `global_step` tensor when given.
      adagrad_slots: {model variable path: Keras-layout accumulator} to store as
        `<name>/Adagrad` slots (all trainable variables needed).
    Returns:
      the prefix written.
    """
    arrays = model_to_tf1_arrays(model, tf_version, adagrad_slots)
    if global_step is not None:
        arrays[GLOBAL_STEP] = np.int32(global_step)
    return save_tf1_arrays(arrays, path, update_state_file)
