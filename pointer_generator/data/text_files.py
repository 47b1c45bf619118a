"""Reading a user's text file: the text, or one DataError naming the file and why."""

from __future__ import annotations

from pointer_generator.errors import DataError


def read_text(path: str) -> str:
    """The UTF-8 text of `path`; DataError for a missing, unreadable or non-UTF-8 file."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text ({e})") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read ({e.strerror})") from None
