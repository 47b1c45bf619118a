"""Ending a command-line process quickly once everything it wrote is on disk.

A Python process that has imported TensorFlow and traced models spends seconds at exit
tearing down modules and their C++ objects (4-5 s on an idle 2-core machine, over a
minute under load, measured with a tiny model after Ctrl-C/SIGTERM). Nothing of value
happens then: checkpoints, event files and decode outputs are closed before the mode's
main returns. So the command-line entry points end with `os._exit` after flushing the
standard streams and the logging handlers. Library callers (tests, notebooks) never get
here; they call the modes' `main` functions, which return or raise normally.
"""

from __future__ import annotations

import logging
import os
import sys


def status_of(exit_request: SystemExit) -> int:
    """The process exit status `sys.exit(code)` would give (a message prints, status 1)."""
    code = exit_request.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def exit_now(status: int) -> None:
    """Flush what the process printed or logged, then end it with `status` at once.

    Standard output that cannot take what is left (a full disk, `> /dev/full`) turns a
    successful status into the `error:` line and status of `exit_codes`; a reader that
    went away (`| head`) into 141, quietly."""
    from pointer_generator import exit_codes

    status = exit_codes.finish_standard_output(status)
    try:
        sys.stderr.flush()
    except (OSError, ValueError):  # closed or broken pipe: nothing more to save
        pass
    logging.shutdown()
    os._exit(status)


def run_and_exit(entry, *args) -> None:
    """Call `entry(*args)` (which may `sys.exit`), then `exit_now` with its status.

    Every Ctrl-C of the process is remembered (`interrupts`), so a press that a finalizer
    swallowed still ends the mode's loop at its next check."""
    from pointer_generator import exit_codes
    from pointer_generator.runtime import interrupts

    interrupts.install()
    try:
        status = status_of(SystemExit(entry(*args)))  # a return value counts as sys.exit's
    except SystemExit as e:
        status = status_of(e)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        status = 130
    except exit_codes.Terminated:
        print(exit_codes.terminated_line("interrupted"), file=sys.stderr)
        status = exit_codes.TERMINATED
    exit_now(status)
