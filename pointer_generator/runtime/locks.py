"""One writer per output directory: an advisory lock that a killed job cannot leave stuck.

Two training jobs on one experiment would rotate each other's checkpoints away; two
eval jobs would race on the best models; two single-pass decodes into one folder would
interleave files. Each writer therefore takes an exclusive `flock` on `<dir>/.lock`
before it writes. The kernel releases the lock when the process ends, however it ends
(`kill -9` included), so a stale lock is impossible. The directory itself is locked
the same way, so deleting `.lock` while a job runs lets no second writer in. The file
holds the holder's pid,
host and start time, which the refusal message quotes; a job that ends normally removes
it (a killed one leaves it, unlocked, for the next job to take). Readers (an
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

from pointer_generator.errors import FlagError, OutputError
from pointer_generator.runtime import json_files, owned_files

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
# directory -> open descriptors of the lock file and of the directory (kept while held)
_held: dict[str, tuple[int, int | None]] = {}


class DirectoryBusyError(FlagError):
    """Another live job holds the directory's lock."""


def _holder(path: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            info = json_files.load(f)
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
    owned_files.refuse_link(directory)
    dir_fd = _lock_directory(directory, path, role, fix)
    while True:
        try:
            # In place, so never through a link or into a file with other names: the
            # lock's file is truncated and rewritten below.
            fd = owned_files.open_fd_in_place(path, os.O_RDWR | os.O_CREAT)
        except OutputError:
            _close(dir_fd)
            raise
        except OSError as e:
            _close(dir_fd)
            raise OutputError(
                f"cannot create {path} ({e.strerror or e}); check --log_root and --exp_name"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            _close(dir_fd)
            raise DirectoryBusyError(
                f"another {role} is writing {directory} ({_holder(path)}); wait for it to "
                f"end, stop it, or {fix}"
            ) from None
        except OSError as e:  # e.g. ENOLCK on a network file system
            os.close(fd)
            log.warning("Cannot lock %s (%s): nothing stops a second %s", path, e.strerror, role)
            _close(dir_fd)
            return
        # The holder before us may have removed the file on release after we opened it:
        # a lock on a removed file protects nothing, so take the one at the path.
        try:
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    info = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "command": " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv)),
    }
    try:
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(info).encode("utf-8"))
    except OSError:
        pass  # a full disk: the lock holds all the same, the refusal just says less
    _held[directory] = (fd, dir_fd)


def _lock_directory(directory: str, path: str, role: str, fix: str) -> int | None:
    """Lock the directory's own descriptor (None where that cannot be done: the lock
    file's lock still holds)."""
    try:
        dir_fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return None
    try:
        fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(dir_fd)
        raise DirectoryBusyError(
            f"another {role} is writing {directory} ({_holder(path)}); wait for it to "
            f"end, stop it, or {fix}"
        ) from None
    except OSError:
        os.close(dir_fd)
        return None
    return dir_fd


def _close(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


def release(directory: str) -> None:
    """Give up the lock on `directory` and remove its file (a job that ends without
    calling this, killed say, leaves the file, but not the lock)."""
    directory = os.path.abspath(directory)
    held = _held.pop(directory, None)
    if held is not None:
        fd, dir_fd = held
        # While still holding it, and only if the file at the path is still ours.
        owned_files.remove_if_same(os.path.join(directory, LOCK_FILE), fd)
        os.close(fd)
        _close(dir_fd)
