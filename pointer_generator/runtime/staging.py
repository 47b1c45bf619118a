"""Staging folders: where a command writes its output before renaming it into place.

A staging folder's name says whose it is, `.<kind>-<host>-<pid>-<random>` in the folder
the output goes to, so the next writer there can remove the folders of writers that were
killed (`kill -9` runs no cleanup) and leave those of live ones alone: only folders that
are provably the project's own leftovers are ever deleted.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import socket
import tempfile

log = logging.getLogger(__name__)


def prefix(kind: str, pid: int | None = None) -> str:
    """`.<kind>-<host>-<pid>-` (mkdtemp adds a suffix without '-')."""
    return f".{kind}-{socket.gethostname()}-{os.getpid() if pid is None else pid}-"


def make(directory: str, kind: str) -> str:
    """A new staging folder of this process in `directory` (which must exist)."""
    return tempfile.mkdtemp(prefix=prefix(kind), dir=directory)


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
        if pid.isdigit() and not _alive(int(pid)) and os.path.isdir(path):
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


def replace_file(path: str, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically, replacing what is there: `path` is
    either absent/old or complete, never partial.

    The temporary beside it is this call's own, `.<name>.<pid>-<8 hex digits>.tmp`: a
    fixed name such as `path.tmp` is raced by processes that write the same file at once
    (decode shards, their shared `decode_inputs.json`), and one's rename then finds the
    other's file gone. It starts with "." so that it never matches the
    `(\\d+)_decoded.txt` / `#ID#_reference.txt` patterns pyrouge uses (anchored at the
    start only), and it is removed whatever interrupts the write (Ctrl-C included)."""
    directory, name = os.path.split(path)
    while True:
        tmp = os.path.join(directory, f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        try:
            # os.open rather than mkstemp: mkstemp's 0600 would ignore the umask.
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
