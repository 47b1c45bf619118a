"""JSON that a person or another program may have written, read so that nesting too
deep for Python's parser is a `ValueError` like any other malformed JSON.

`json.loads` recurses once per nested array or object, so a file or a request body of
100,000 `[` raised `RecursionError` ("maximum recursion depth exceeded"), which no reader
expected: `serve` answered 500 and `data_tools.convert --format json` ended in exit 3.
Every reader of the project already turns `ValueError` into its own error (a 400 JSON
answer, an `error:` line naming the file), so `load` and `loads` raise `NestingError`, a
`ValueError`, instead.
"""

from __future__ import annotations

import json
import sys


class NestingError(ValueError):
    """JSON whose arrays and objects are nested deeper than the parser can follow."""


def loads(text: str | bytes):
    """`json.loads(text)`; NestingError (a ValueError) where it would recurse too deep."""
    try:
        return json.loads(text)
    except RecursionError:
        raise NestingError(
            "arrays or objects nested too deeply: the parser follows about "
            f"{sys.getrecursionlimit():,} levels"
        ) from None


def load(f):
    """`json.load(f)` for an open file, with `loads`'s NestingError."""
    return loads(f.read())


def read_object(path: str) -> dict:
    """The JSON object in the file `path`; ValueError saying why there is none (the file
    cannot be read, is not JSON, is nested too deeply, or holds something else)."""
    try:
        with open(path, encoding="utf-8") as f:
            value = load(f)
    except OSError as e:
        raise ValueError(e.strerror or str(e)) from None
    if not isinstance(value, dict):
        raise ValueError("it holds no JSON object")
    return value
