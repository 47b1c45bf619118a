"""The exit status of every command of this project, and the one wrapper that maps what
ended a command to it.

  0    done
  1    a checking command ran and found a problem: `python -m
       pointer_generator.cli.check_bin_files` found a malformed file, `python -m
       pointer_generator.cli.inspect_checkpoint` found non-finite values (it prints
       `CHECK FAILED`)
  2    bad input, flags or environment: one `error: ...` line names the file or flag and
       the fix (argparse's usage errors use 2 as well)
  3    internal error, a bug: one `internal error: ...` line names the exception and a file
       holding its traceback (POINTER_GENERATOR_TRACEBACK=1 prints it instead)
  130  interrupted (Ctrl-C)
  141  the reader of standard output went away (`... | head`): no message, the status of
       a program that SIGPIPE ended (128 + 13)
  143  stopped by SIGTERM while it ran other processes (they are stopped first:
       `runtime/child_processes.py`); 128 + 15, what a shell reports for a process that
       SIGTERM ended

A full disk or an unwritable place (`OSError` ENOSPC, EDQUOT, EFBIG, EROFS, EACCES) is
bad environment, not a bug: one `error:` line naming the file, or standard output (also
when the output fails at the final flush), status 2. `WatchedStdout` tells a failed write
to standard output apart from one to a file (the `OSError` of a `write()` names no file
either way); `writing()` lets a command name what it was writing (a dataset's folder
rather than one staged file of it).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sys
import tempfile
import traceback
from collections.abc import Callable

from pointer_generator.errors import OutputError, PointerGeneratorError

OK = 0
CHECK_FAILED = 1
BAD_INPUT = 2
INTERNAL_ERROR = 3
INTERRUPTED = 130
BROKEN_PIPE = 141
TERMINATED = 143

TRACEBACK_ENV = "POINTER_GENERATOR_TRACEBACK"


class Terminated(BaseException):
    """SIGTERM asked the command to stop (raised by `runtime/child_processes.py` while the
    command runs other processes). A BaseException, as KeyboardInterrupt: no `except
    Exception` of the command may swallow it."""


def print_error(message) -> int:
    """Print `error: <message>` on stderr; returns BAD_INPUT."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    return BAD_INPUT


def command_moved(module: str) -> None:
    """End a `python -m <old module>` whose command moved to `module` (into cli/): one
    error line saying where, exit status 2 (not a silent exit 0)."""
    sys.exit(print_error(f"this command moved: run python -m {module} (same arguments)"))


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


# ------------------------------------------------- outputs that cannot be written
# The disk is full, a quota or the file-size limit (`ulimit -f`) is reached.
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# The place cannot be written at all.
NOT_WRITABLE = frozenset({errno.EROFS, errno.EACCES})
# What `error:` reports; EPIPE only counts on standard output (a reader that went away).
WRITE_FAILURES = DISK_FULL | NOT_WRITABLE
FREE_SPACE = "free space (or fix the permissions) and run the same command again"


def is_write_failure(error: BaseException) -> bool:
    """True for an OSError that says an output cannot be written (full, read-only, denied)."""
    return isinstance(error, OSError) and error.errno in WRITE_FAILURES


def write_failure_message(error: OSError, where: str | None = None) -> str:
    """`cannot write <where>: <reason>`; `where` defaults to the file the error names."""
    reason = error.strerror or str(error)
    name = where or error.filename
    if name is None:
        return f"cannot write an output file: {reason}; {FREE_SPACE}"
    if error.errno == errno.EACCES and where is None:
        # Also raised when opening an input: say what happened, not that it was a write.
        return f"{name}: {reason}"
    return f"cannot write {name}: {reason}; {FREE_SPACE}"


@contextlib.contextmanager
def writing(where: str, after: str = ""):
    """Turn a full disk or an unwritable place met inside the block into an OutputError
    `cannot write <where>: <reason><after>` (the caller says what it was writing and
    what was kept: the OSError of a `write()` names no file)."""
    try:
        yield
    except OSError as e:
        if not is_write_failure(e):
            raise
        reason = e.strerror or str(e)
        raise OutputError(f"cannot write {where}: {reason}{after}; {FREE_SPACE}") from None


class WatchedStdout:
    """Stands in for `sys.stdout` while a command runs and remembers the error of a write
    or flush that failed, so that the command's ending can say it was standard output.

    Everything but `write`, `writelines` and `flush` goes to the stream itself. After
    `silence()` writes are dropped: the command has reported the failure, and the lines
    its clean-up still prints must not fail again.
    """

    def __init__(self, stream):
        self.stream = stream
        self.failure: OSError | None = None
        self._silenced = False

    def __getattr__(self, name):
        return getattr(self.stream, name)

    def _guarded(self, call, *args):
        if self._silenced:
            return None
        try:
            return call(*args)
        except OSError as e:
            self.failure = e
            raise

    def write(self, text):
        """The stream's write; a failure is remembered and raised."""
        result = self._guarded(self.stream.write, text)
        return len(text) if result is None else result

    def writelines(self, lines):
        """The stream's writelines; a failure is remembered and raised."""
        self._guarded(self.stream.writelines, lines)

    def flush(self):
        """The stream's flush; a failure is remembered and raised."""
        self._guarded(self.stream.flush)

    def failed_with(self, error: BaseException) -> bool:
        """True if `error` is the one a write to standard output raised."""
        return error is self.failure or (
            self.failure is not None and error.__context__ is self.failure
        )

    def unreported(self) -> OSError | None:
        """The error of a failed write that no one reported yet (`silence()` does)."""
        return None if self._silenced else self.failure

    def silence(self) -> None:
        """Drop further output, and point file descriptor 1 at /dev/null when the stream is
        the process's own standard output: what is still buffered would fail again when
        the interpreter flushes it at exit ("Exception ignored ... BrokenPipeError")."""
        self._silenced = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            if self.stream.fileno() == 1:
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.close(null)


@contextlib.contextmanager
def watched_stdout():
    """`sys.stdout` as a `WatchedStdout` for the block (the one already there when
    commands nest; None when the process has no standard output)."""
    current = sys.stdout
    if current is None or isinstance(current, WatchedStdout):
        yield current
        return
    watched = WatchedStdout(current)
    sys.stdout = watched
    try:
        yield watched
    finally:
        if sys.stdout is watched:
            sys.stdout = current


# ------------------------------------------------------------------- the wrapper
def run_command(main: Callable[..., int | None], *args, interrupted: str = "interrupted") -> int:
    """Call `main(*args)` and return the exit status its ending gives (table above).

    A returned None counts as OK; `interrupted` is printed on Ctrl-C (on SIGTERM with
    "interrupted" read as "interrupted by SIGTERM"); `SystemExit` (argparse's usage
    errors, `--help`) passes through. Standard output is flushed before the status is
    returned, so that a write that fails only then is reported too.
    """
    with watched_stdout() as stdout:
        try:
            status = _status_of(main, args, interrupted, stdout)
        except SystemExit as e:
            clean = e.code in (None, 0)
            status = finish_standard_output(OK if clean else BAD_INPUT, stdout)
            if clean and status != OK:  # `--help > /dev/full`
                raise SystemExit(status) from None
            raise
        return finish_standard_output(status, stdout)


def _status_of(main, args, interrupted: str, stdout) -> int:
    try:
        return int(main(*args) or OK)
    except PointerGeneratorError as e:
        return print_error(e)
    except KeyboardInterrupt:
        print(interrupted, file=sys.stderr, flush=True)
        return INTERRUPTED
    except Terminated:
        print(terminated_line(interrupted), file=sys.stderr, flush=True)
        return TERMINATED
    except OSError as e:
        return _os_error_status(e, stdout)
    except Exception as e:  # the one place that turns a bug into status 3
        return report_internal_error(e)


def terminated_line(interrupted: str) -> str:
    """The line for SIGTERM: the command's Ctrl-C line, its first word "interrupted" read
    as "interrupted by SIGTERM" (or the line with " (SIGTERM)" added)."""
    word = "interrupted"
    if interrupted.startswith(word):
        return f"{word} by SIGTERM{interrupted[len(word) :]}"
    return f"{interrupted} (SIGTERM)"


def _os_error_status(error: OSError, stdout) -> int:
    """A failed write to standard output, a full disk or an unwritable place is an
    `error:` line (status 2); any other OSError is a bug."""
    if stdout is not None and stdout.failed_with(error):
        return _stdout_failed(error, stdout)
    if is_write_failure(error):
        return print_error(write_failure_message(error))
    return report_internal_error(error)


def _stdout_failed(error: OSError, stdout) -> int:
    stdout.silence()
    if error.errno == errno.EPIPE:
        return BROKEN_PIPE  # the reader has all it wanted: nothing to report
    return print_error(write_failure_message(error, "to standard output"))


def finish_standard_output(status: int, stdout=None) -> int:
    """Flush standard output; if that fails, the status that says so (unless `status`
    already reports a failure: its message stands, the output is dropped)."""
    stdout = stdout if stdout is not None else sys.stdout
    if stdout is None:
        return status
    watched = isinstance(stdout, WatchedStdout)
    try:
        stdout.flush()
        # A write that failed earlier, though its caller went on (argparse's --help does).
        error = stdout.unreported() if watched else None
    except (OSError, ValueError) as e:  # ValueError: the stream was closed
        error = e
    if error is None:
        return status
    if not watched:
        stdout = WatchedStdout(stdout)
    if status != OK or not isinstance(error, OSError):
        stdout.silence()
        return status
    return _stdout_failed(error, stdout)


def command(main=None, *, interrupted: str = "interrupted"):
    """Decorator for a command's `main(argv)`: it returns the exit status `run_command`
    gives. `@command` or `@command(interrupted="...")` (what Ctrl-C prints)."""

    def decorate(fn: Callable[..., int | None]) -> Callable[..., int]:
        @functools.wraps(fn)
        def wrapper(*args):
            return run_command(fn, *args, interrupted=interrupted)

        return wrapper

    return decorate(main) if main is not None else decorate
