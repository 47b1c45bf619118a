"""Staging folders: where a command writes its output before renaming it into place.

A staging folder's name says whose it is, `.<kind>-<host>-<pid>-<random>` in the folder
the output goes to, so the next writer there can remove the folders of writers that were
killed (`kill -9` runs no cleanup) and leave those of live ones alone: only folders that
are provably the project's own leftovers are ever deleted.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import tempfile

from pointer_generator.runtime import owned_files

log = logging.getLogger(__name__)


def prefix(kind: str, pid: int | None = None) -> str:
    """`.<kind>-<host>-<pid>-` (mkdtemp adds a suffix without '-')."""
    return f".{kind}-{socket.gethostname()}-{os.getpid() if pid is None else pid}-"


def make(directory: str, kind: str) -> str:
    """A new staging folder of this process in `directory` (which must exist), with the
    mode `mkdir` gives (mkdtemp's is private: an export renamed from it was unreadable
    to a TensorFlow Serving account)."""
    path = tempfile.mkdtemp(prefix=prefix(kind), dir=directory)
    owned_files.follow_umask(path, directory=True)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def remove_stale(directory: str, kind: str) -> None:
    """Remove the staging folders of `kind` in `directory` left by writers on this host
    that no longer run; they hold only unfinished copies of output."""
    host_prefix = f".{kind}-{socket.gethostname()}-"
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not name.startswith(host_prefix):
            continue
        pid = name[len(host_prefix) :].split("-", 1)[0]
        path = os.path.join(directory, name)
        if (
            pid.isdigit()
            and not _alive(int(pid))
            and os.path.isdir(path)
            and not os.path.islink(path)  # a link is never a staging folder of ours
        ):
            log.info("Removing %s, left by a writer that was killed", path)
            shutil.rmtree(path, ignore_errors=True)


def check_new_file(path: str, flag: str) -> None:
    """FlagError unless `path` names a file that can be created: it must not exist
    (outputs never overwrite) and its folder must exist and take a new file. Checked
    before the work starts, so no result is lost to a bad output path at the end."""
    from pointer_generator.errors import FlagError

    if os.path.isdir(path):
        raise FlagError(f"--{flag} {path} is a folder; give the path of a new file")
    if os.path.lexists(path):
        raise FlagError(
            f"--{flag} {path} exists already; choose a new file (nothing is overwritten)"
        )
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FlagError(f"--{flag}: folder {folder} does not exist")
    try:
        fd, probe = tempfile.mkstemp(prefix=".write_test_", dir=folder)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise FlagError(f"--{flag}: cannot write in {folder} ({e.strerror or e})") from None


def write_new_file(path: str, text: str, flag: str) -> None:
    """Write `text` to the new file `path` atomically, never replacing a file that
    appeared there meanwhile (it is linked into place, which fails if the name exists);
    FlagError then, naming where the text was kept instead."""
    from pointer_generator.errors import FlagError

    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    owned_files.follow_umask(tmp)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: check, then rename
            if os.path.lexists(path):
                raise FileExistsError(path) from None
            os.replace(tmp, path)
            return
    except FileExistsError:
        kept = f"{path}.{os.getpid()}.new"
        os.replace(tmp, kept)
        raise FlagError(
            f"--{flag} {path} appeared while this ran; it is left as it is and the result "
            f"was written to {kept}"
        ) from None
    os.remove(tmp)


# Kept under its old name: every file the project replaces is written this one way.
replace_file = owned_files.replace_file
