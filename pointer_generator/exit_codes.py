"""The exit status of every command of this project, and the one wrapper that maps what
ended a command to it.

  0    done
  1    a checking command ran and found a problem: `python -m pointer_generator.data.binfile`
       found a malformed file, `python -m pointer_generator.cli.inspect_checkpoint` found
       non-finite values (it prints `CHECK FAILED`)
  2    bad input, flags or environment: one `error: ...` line names the file or flag and
       the fix (argparse's usage errors use 2 as well)
  3    internal error, a bug: one `internal error: ...` line names the exception and a file
       holding its traceback (POINTER_GENERATOR_TRACEBACK=1 prints it instead)
  130  interrupted (Ctrl-C)
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import traceback
from collections.abc import Callable

from pointer_generator.errors import PointerGeneratorError

OK = 0
CHECK_FAILED = 1
BAD_INPUT = 2
INTERNAL_ERROR = 3
INTERRUPTED = 130

TRACEBACK_ENV = "POINTER_GENERATOR_TRACEBACK"


def print_error(message) -> int:
    """Print `error: <message>` on stderr; returns BAD_INPUT."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    return BAD_INPUT


def report_internal_error(error: BaseException) -> int:
    """One line about an unexpected exception, its traceback saved to a file (or printed
    with POINTER_GENERATOR_TRACEBACK=1); returns INTERNAL_ERROR."""
    text = "".join(traceback.format_exception(error))
    if os.environ.get(TRACEBACK_ENV):
        print(text, file=sys.stderr, end="")
        where = "traceback above"
    else:
        try:
            fd, path = tempfile.mkstemp(prefix="pointer-generator-traceback-", suffix=".txt")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            where = f"traceback in {path}"
        except OSError:  # no place to write it: show it rather than lose it
            print(text, file=sys.stderr, end="")
            where = "traceback above"
    print(
        f"internal error: {type(error).__name__}: {error} ({where}; this is a bug, please "
        "report it with that traceback)",
        file=sys.stderr,
        flush=True,
    )
    return INTERNAL_ERROR


def run_command(main: Callable[..., int | None], *args, interrupted: str = "interrupted") -> int:
    """Call `main(*args)` and return the exit status its ending gives (table above).

    A returned None counts as OK; `interrupted` is printed on Ctrl-C; `SystemExit`
    (argparse's usage errors, `--help`) passes through unchanged.
    """
    try:
        return int(main(*args) or OK)
    except PointerGeneratorError as e:
        return print_error(e)
    except KeyboardInterrupt:
        print(interrupted, file=sys.stderr, flush=True)
        return INTERRUPTED
    except Exception as e:  # the one place that turns a bug into status 3
        return report_internal_error(e)


def command(main=None, *, interrupted: str = "interrupted"):
    """Decorator for a command's `main(argv)`: it returns the exit status `run_command`
    gives. `@command` or `@command(interrupted="...")` (what Ctrl-C prints)."""

    def decorate(fn: Callable[..., int | None]) -> Callable[..., int]:
        @functools.wraps(fn)
        def wrapper(*args):
            return run_command(fn, *args, interrupted=interrupted)

        return wrapper

    return decorate(main) if main is not None else decorate
