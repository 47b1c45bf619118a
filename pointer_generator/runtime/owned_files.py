"""Writing the project's own files without writing through links someone planted.

An experiment folder may be shared (a teammate's, a copy from elsewhere, a folder on a
shared disk). A symbolic link planted there in place of a file the project writes
(`train/.lock -> ~/.bashrc`) would make an ordinary run overwrite the file it points to;
a linked folder (`eval -> /elsewhere`) would make it write, rotate and delete files in
another place. So every file and folder the project writes inside an experiment, a
decode folder or an output folder goes through this module:

* a file replaced whole is written to a temporary of this call's own beside it and
  renamed into place (`replace_file`, `copy_file`): a rename replaces a link, it never
  writes through it, and the file is either the old one or complete, never partial;
* a file written in place (appended to, locked) is opened with `O_NOFOLLOW` and must be
  a plain file with no other hard link (`open_in_place`);
* a folder is refused when it is a link (`make_dir`);
* a file is removed only when it is still the one this process opened
  (`remove_if_same`), never through a link.

Each refusal is an OutputError naming the link and the fix. Everything created here
follows the umask, as files made with `open()` do (`mkstemp` and `mkdtemp` would make
them private, which locked a TensorFlow Serving account or a teammate out of an export).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat

from pointer_generator import exit_codes
from pointer_generator.errors import OutputError

_FIX = (
    "the project never writes through a link in its folders (it could overwrite or delete "
    "the file it points to): remove the link (what it points to is left alone)"
)


def umask() -> int:
    """The process's umask (read without changing it where /proc says it)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no way to read it without setting it
    os.umask(mask)
    return mask


def follow_umask(path: str, directory: bool = False) -> None:
    """Give `path` (made private by mkstemp/mkdtemp) the mode `open()`/`mkdir()` would."""
    os.chmod(path, (0o777 if directory else 0o666) & ~umask())


def _link_target(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


def refuse_link(path: str) -> None:
    """OutputError if `path` is a symbolic link (a missing path is fine)."""
    if os.path.islink(path):
        raise OutputError(f"{path} is a symbolic link (to {_link_target(path)}); {_FIX}")


def make_dir(path: str, root: str | None = None) -> str:
    """Create the folder `path` (and missing parents) unless it exists; OutputError if it
    is a link (writing there would write wherever it points), or, with `root` (a folder
    above `path`), if any folder between `root` and `path` is one. Returns `path`."""
    levels = [path]
    if root is not None:
        rel = os.path.relpath(path, root)
        if rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
            raise ValueError(f"make_dir: {path} is not below {root}")  # a caller's bug
        if rel != ".":
            parts = rel.split(os.sep)
            levels = [os.path.join(root, *parts[: i + 1]) for i in range(len(parts))]
    for level in levels:
        refuse_link(level)
        os.makedirs(level, exist_ok=True)
        refuse_link(level)  # made a link meanwhile
    return path


def _temporary(path: str) -> tuple[int, str]:
    """A new file `.<name>.<pid>-<8 hex digits>.tmp` beside `path`, open for writing.

    The name is this call's own: a fixed name such as `path.tmp` is raced by processes
    that write the same file at once (decode shards, their shared `decode_inputs.json`),
    and one's rename then finds the other's file gone. It starts with "." so that it never
    matches the `(\\d+)_decoded.txt` / `#ID#_reference.txt` patterns pyrouge uses.
    O_EXCL never follows a link; os.open rather than mkstemp keeps the umask."""
    directory, name = os.path.split(path)
    while True:
        tmp = os.path.join(directory, f".{name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue


def _write_through_temporary(path: str, write) -> None:
    """`write(binary file)` into a temporary beside `path`, then rename it into place;
    the temporary is removed whatever interrupts the write (Ctrl-C included)."""
    fd, tmp = _temporary(path)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is None:
            e.filename = path  # a failed write() names no file: the error message should
        raise


def replace_file(path: str, text: str | bytes) -> None:
    """Write `text` (str as UTF-8) to `path` atomically, replacing what is there: `path`
    is either absent/old or complete, never partial; a link at `path` is replaced by the
    file, and what it pointed to is not touched."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    _write_through_temporary(path, lambda f: f.write(data))


def copy_file(src: str, dst: str) -> None:
    """Copy `src`'s bytes to `dst` the way `replace_file` writes."""
    with open(src, "rb") as source:
        _write_through_temporary(dst, lambda f: shutil.copyfileobj(source, f))


def open_fd_in_place(path: str, flags: int) -> int:
    """`os.open(path, flags | O_NOFOLLOW, 0o666)` of a file to write in place (flags such
    as `O_RDWR | O_CREAT`): OutputError if it is a link, not a plain file (a FIFO, a
    device), or a file with other hard links (writing would change the other names' file
    too). Returns the descriptor."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    except OSError:
        refuse_link(path)  # ELOOP: say what it is
        raise
    try:
        check_plain(fd, path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_in_place(path: str, mode: str = "a", encoding: str | None = "utf-8"):
    """`open(path, mode)` for "a", "ab" (created if missing) or "r+b", through
    `open_fd_in_place`'s checks."""
    flags = {
        "a": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
        "ab": os.O_WRONLY | os.O_APPEND | os.O_CREAT,
        "r+b": os.O_RDWR,
    }[mode]
    return os.fdopen(
        open_fd_in_place(path, flags), mode, encoding=None if "b" in mode else encoding
    )


def check_plain(fd: int, path: str) -> None:
    """OutputError unless the open `fd` is a plain file with one name."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(
            f"{path} is not a plain file; the project writes only its own plain files "
            "there: remove it"
        )
    if st.st_nlink > 1:
        raise OutputError(
            f"{path} has {st.st_nlink - 1} other hard link(s); writing it would change "
            "the file of those names too: remove it (the other names keep their file)"
        )


def remove_if_same(path: str, fd: int) -> None:
    """Remove `path` only if it is still the file open as `fd` (not a link, not a file
    put in its place); anything else there is left alone."""
    with contextlib.suppress(OSError):
        opened, there = os.fstat(fd), os.lstat(path)
        if (opened.st_dev, opened.st_ino) == (there.st_dev, there.st_ino):
            os.remove(path)


# The operating system's words for a write failure (`exit_codes.WRITE_FAILURES`) inside
# the message of a TensorFlow error, which wraps the OSError and keeps only its text.
_WRITE_REASONS = tuple(os.strerror(code) for code in sorted(exit_codes.WRITE_FAILURES))


def write_failure(error: BaseException) -> str | None:
    """The reason, when `error` (an OSError, or a TensorFlow error that wraps one) says a
    file could not be written because of the disk or its permissions; else None."""
    if isinstance(error, OSError):
        return (error.strerror or str(error)) if exit_codes.is_write_failure(error) else None
    text = str(getattr(error, "message", None) or error)
    return next((r for r in _WRITE_REASONS if r in text), None)
