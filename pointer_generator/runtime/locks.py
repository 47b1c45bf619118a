"""One writer per output directory: an advisory lock that a killed job cannot leave stuck.

Two training jobs on one experiment would rotate each other's checkpoints away; two
eval jobs would race on the best models; two single-pass decodes into one folder would
interleave files. Each writer therefore takes an exclusive `flock` on `<dir>/.lock`
before it writes. The kernel releases the lock when the process ends, however it ends
(`kill -9` included), so a stale lock is impossible; the file itself stays, holding the
last holder's pid, host and start time, which the refusal message quotes. Readers (an
eval job reading train/, a decode reading checkpoints) take no lock.

Where `flock` is unavailable (Windows, some network file systems) the lock is skipped
with a warning: the job runs as before.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import socket
import sys

from pointer_generator.errors import FlagError

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
_held: dict[str, int] = {}  # directory -> open descriptor (kept for the process lifetime)


class DirectoryBusyError(FlagError):
    """Another live job holds the directory's lock."""


def _holder(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
        return "pid {pid} on {host}, started {started}: {command}".format(**info)
    except (OSError, ValueError, KeyError, TypeError):
        return "a process whose details could not be read"


def acquire(directory: str, role: str, fix: str) -> None:
    """Take `directory`'s writer lock for this process, or raise DirectoryBusyError.

    role: what the holder does ("training job"), for the message; fix: what the user can
    do instead ("give another --exp_name"). Taking a lock this process holds is a no-op.
    """
    directory = os.path.abspath(directory)
    if directory in _held or fcntl is None:
        if fcntl is None:
            log.warning("No file locking on this platform: nothing stops a second %s", role)
        return
    path = os.path.join(directory, LOCK_FILE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise DirectoryBusyError(
            f"another {role} is writing {directory} ({_holder(path)}); wait for it to end, "
            f"stop it, or {fix}"
        ) from None
    except OSError as e:  # e.g. ENOLCK on a network file system
        os.close(fd)
        log.warning("Cannot lock %s (%s): nothing stops a second %s", path, e.strerror, role)
        return
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv)),
    }
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps(info).encode("utf-8"))
    _held[directory] = fd


def release(directory: str) -> None:
    """Give up the lock on `directory` early (it is released at exit anyway)."""
    fd = _held.pop(os.path.abspath(directory), None)
    if fd is not None:
        os.close(fd)
