"""The command-line entry points end with os._exit after flushing (process_exit)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests import helpers

CHILD = r"""
import logging, sys
from pointer_generator.runtime.process_exit import run_and_exit
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(message)s")

def entry(how):
    sys.stdout.write("unflushed stdout")  # no newline, no flush: exit_now must flush
    logging.getLogger("x").info("logged line")
    if how == "exit3":
        sys.exit(3)
    if how == "message":
        sys.exit("a message")
    if how == "interrupt":
        raise KeyboardInterrupt
    if how == "return2":
        return 2
    return None

# An atexit handler would run on a normal exit; os._exit skips it (the slow teardown).
import atexit
atexit.register(lambda: print("ATEXIT RAN", file=sys.stderr, flush=True))
run_and_exit(entry, sys.argv[1])
"""


@pytest.mark.parametrize(
    "how, status, extra",
    [
        ("none", 0, ""),
        ("exit3", 3, ""),
        ("return2", 2, ""),
        ("message", 1, "a message"),
        ("interrupt", 130, "interrupted"),
    ],
)
def test_run_and_exit_flushes_and_keeps_the_status(how, status, extra):
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, how],
        capture_output=True,
        text=True,
        timeout=60,
        env=helpers.subprocess_env(),
        cwd=helpers.REPO_ROOT,
    )
    assert proc.returncode == status, proc.stderr
    assert proc.stdout == "unflushed stdout"
    assert "logged line" in proc.stderr and extra in proc.stderr
    assert "ATEXIT RAN" not in proc.stderr
