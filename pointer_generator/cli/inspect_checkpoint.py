"""`python -m pointer_generator.cli.inspect_checkpoint <checkpoint prefix or directory>`.

Reads every tensor of a checkpoint (this implementation's or an original TF1 one), prints
the floating-point variables that are all finite, all non-finite, and partly non-finite,
then `CHECK PASSED` (exit status 0) if none holds an inf or NaN, else `CHECK FAILED`
(exit status 1). A directory means its newest checkpoint (`checkpoint` state file, or
`checkpoint_best` in an eval directory). Unreadable input: `error: ...`, exit status 2.
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
        names = sorted(reader.get_variable_to_shape_map())
        dtypes = reader.get_variable_to_dtype_map()
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


def format_report(report: Report) -> str:
    lines = [f"Checkpoint {report.path}"]
    for title, names in (
        ("Finite variables", report.finite),
        ("Variables that are entirely inf/NaN", report.all_nonfinite),
        ("Variables that are partly inf/NaN", report.partly_nonfinite),
    ):
        lines.append(f"{title} ({len(names)}):")
        lines += [f"  {n}" for n in names]
    lines.append("CHECK PASSED" if report.passed else "CHECK FAILED")
    return "\n".join(lines)


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip().splitlines()[0].strip("`"), file=sys.stderr)
        return exit_codes.BAD_INPUT
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

    report = inspect(resolve(argv[0]))
    print(format_report(report))
    return exit_codes.OK if report.passed else exit_codes.CHECK_FAILED


if __name__ == "__main__":
    sys.exit(main())
