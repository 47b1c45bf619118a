"""Reading a user's text file: the text, or one DataError naming the file and why."""

from __future__ import annotations

from pointer_generator.errors import DataError


def read_text(path: str, max_bytes: int | None = None) -> str:
    """The UTF-8 text of `path`; DataError for a missing, unreadable or non-UTF-8 file,
    and for one over `max_bytes` (only that much is ever read: `/dev/zero` or a huge
    file given by mistake is one error, not an exhausted memory)."""
    try:
        with open(path, "rb") as f:
            data = f.read() if max_bytes is None else f.read(max_bytes + 1)
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise DataError(f"{path}: a folder, not a text file") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror})") from None
    return decode_text(data, path, max_bytes)


def decode_text(data: bytes, name: str, max_bytes: int | None = None) -> str:
    """`data` as UTF-8 text; DataError naming `name` when it is not, or is too long."""
    if max_bytes is not None and len(data) > max_bytes:
        raise DataError(
            f"{name}: larger than {max_bytes >> 20} MiB; one article per file (split the "
            "text into articles)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{name}: not UTF-8 text ({e})") from None


def text_lines(text: str) -> list[str]:
    """The lines of a line-oriented file's text: split at "\\n" only ("\\r\\n" too), as
    the files' writers meant them. `str.splitlines()` also breaks at U+2028, U+2029,
    U+0085, "\\v", "\\f" and "\\x1c"-"\\x1e", which can sit inside a line of real text: one
    such character shifted every later line of parallel files against the other."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no other
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def read_lines(path: str) -> list[str]:
    """`text_lines` of a file read with `read_text` (same errors)."""
    return text_lines(read_text(path))
