"""`python -m pointer_generator.cli.inspect_checkpoint <checkpoint prefix or directory>`.

Reads every tensor of a checkpoint (this implementation's or an original TF1 one) and
prints its step, its size (parameters of the model, values of the optimizer), the model
flags its shapes imply (vocab_size, emb_dim, hidden_dim, pointer_gen, coverage), then the
floating-point variables with their shapes that are all finite, all non-finite, and
partly non-finite, then `CHECK PASSED` (exit status 0) if none holds an inf or NaN, else
`CHECK FAILED` (exit status 1). A directory means its newest intact checkpoint (see
`runtime/checkpoint_scan.py`). Unreadable input: `error: ...`, exit status 2.
"""

from __future__ import annotations

import dataclasses
import os
import sys

from pointer_generator import exit_codes


@dataclasses.dataclass
class Report:
    """Variable names of one checkpoint by finiteness (non-float tensors are skipped)."""

    path: str
    finite: list[str] = dataclasses.field(default_factory=list)
    shapes: dict = dataclasses.field(default_factory=dict)
    step: int | None = None
    all_nonfinite: list[str] = dataclasses.field(default_factory=list)
    partly_nonfinite: list[str] = dataclasses.field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.all_nonfinite and not self.partly_nonfinite


def resolve(path: str) -> str:
    """A checkpoint prefix from a prefix, a `.index`/`.data-*` file name, or a directory."""
    import tensorflow as tf

    from pointer_generator.errors import CheckpointError
    from pointer_generator.runtime.checkpointing import (
        BEST_STATE_FILE,
        latest_checkpoint,
        none_intact_note,
    )

    if os.path.isdir(path):
        found = latest_checkpoint(path) or latest_checkpoint(path, BEST_STATE_FILE)
        if found is None:
            raise CheckpointError(
                f"no intact checkpoint in directory {path!r}{none_intact_note(path)}"
            )
        return found
    for suffix in (".index", ".meta"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    if ".data-" in os.path.basename(path):
        path = path[: path.rindex(".data-")]
    if not tf.io.gfile.exists(path + ".index"):
        raise CheckpointError(f"no checkpoint at {path!r} (expected {path}.index)")
    return path


def inspect(path: str) -> Report:
    """Read every tensor of the checkpoint at prefix `path` and classify it."""
    import numpy as np
    import tensorflow as tf

    from pointer_generator.errors import CheckpointError
    from pointer_generator.runtime import checkpoint_scan

    # Every tensor, the non-float ones (step, data position) too, must read intact.
    reason = checkpoint_scan.damage(path)
    if reason is not None:
        raise CheckpointError(f"cannot read checkpoint {path!r}: {reason}")
    report = Report(path)
    try:
        reader = tf.train.load_checkpoint(path)
        report.shapes = reader.get_variable_to_shape_map()
        names = sorted(report.shapes)
        dtypes = reader.get_variable_to_dtype_map()
        for key in ("step/.ATTRIBUTES/VARIABLE_VALUE", "global_step"):
            if key in report.shapes:
                report.step = int(reader.get_tensor(key))
        for name in names:
            if not dtypes[name].is_floating:
                continue
            finite = np.isfinite(np.asarray(reader.get_tensor(name)))
            if finite.all():
                report.finite.append(name)
            elif not finite.any():
                report.all_nonfinite.append(name)
            else:
                report.partly_nonfinite.append(name)
    except (tf.errors.OpError, ValueError, IndexError) as e:  # IndexError: a short file
        raise CheckpointError(
            f"cannot read checkpoint {path!r}: {getattr(e, 'message', e)}"
        ) from None
    return report


def _size(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _is_model(name: str) -> bool:
    """A model weight (not an optimizer slot, the step or the data position)."""
    if name.startswith("seq2seq/"):
        return not name.endswith("/Adagrad")
    return name.startswith("model/")


def summary_lines(report: Report) -> list[str]:
    """Step, sizes and the model flags the shapes imply."""
    from pointer_generator.models.family_registry import implied_settings

    model = [n for n in report.shapes if _is_model(n)]
    params = sum(_size(report.shapes[n]) for n in model)
    other = sum(_size(s) for n, s in report.shapes.items() if n not in model)
    implied = " ".join(
        f"--{k}={int(v) if isinstance(v, bool) else v}"
        for k, v in implied_settings(report.shapes).items()
    )
    return [
        f"  step: {report.step if report.step is not None else 'not stored'}",
        f"  model: {params:,} parameters in {len(model)} tensors; other values "
        f"(optimizer, step, data position): {other:,}",
        f"  implied flags: {implied}",
    ]


def format_report(report: Report) -> str:
    lines = [f"Checkpoint {report.path}", *summary_lines(report)]
    for title, names in (
        ("Finite variables", report.finite),
        ("Variables that are entirely inf/NaN", report.all_nonfinite),
        ("Variables that are partly inf/NaN", report.partly_nonfinite),
    ):
        lines.append(f"{title} ({len(names)}):")
        lines += [f"  {n}  {list(report.shapes.get(n, []))}" for n in names]
    lines.append("CHECK PASSED" if report.passed else "CHECK FAILED")
    return "\n".join(lines)


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("-h", "--help", "--helpfull"):
        print(__doc__.strip())
        return exit_codes.OK
    if len(argv) != 1:
        print("usage: " + __doc__.strip().splitlines()[0].strip("`"), file=sys.stderr)
        return exit_codes.BAD_INPUT
    from pointer_generator.cli import console

    console.import_tensorflow()

    report = inspect(resolve(argv[0]))
    print(format_report(report))
    return exit_codes.OK if report.passed else exit_codes.CHECK_FAILED


if __name__ == "__main__":
    sys.exit(main())
