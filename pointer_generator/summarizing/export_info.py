"""`assets/export_info.json` of a model written by `pointer-generator export`, read back
and checked entry by entry.

The file says where the model came from and which article lengths its graph pads to
(`encoder_lengths`, run once each by `serve --saved_model` before it serves). It is a
file a person can edit, and a hand-edited `{"encoder_lengths": "abc"}` made serve end in
a TypeError (exit 3). `read` checks every entry as `runtime/experiment_settings.py`
checks `settings.json`, and a bad one is one FlagError naming the file and the entry.
"""

from __future__ import annotations

import itertools
import json
import math
import os

from pointer_generator.errors import FlagError
from pointer_generator.runtime import json_files

# The signatures of an exported model (`serving/saved_model.py`): raw text in, and
# tokenized articles in (also the whole of a kept search, `kept_search.py`).
SIGNATURE_RAW = "serving_default"
SIGNATURE_TOKENS = "summarize_tokens"

# The entries `cli/export.py` writes as strings (paths, names, the time of export).
_TEXT_ENTRIES = ("experiment", "checkpoint", "model", "exported")
# The decode settings fixed at export (`cli/export.py`'s decoding flags) and their types.
DECODE_TYPES = {
    "beam_size": "positive",
    "min_dec_steps": "count",
    "max_dec_steps": "positive",
    "max_enc_steps": "positive",
    "trigram_blocking": "bool",
    "length_penalty": "number",
    "block_unk": "bool",
    "feature_weights": "text",
    "full_final_dist": "bool",
    "namas_features": "bool",
    "decode_attention": "text",
}
# No more lengths than this: each is a compile before serving.
MAX_LENGTHS = 64


def read(path: str) -> dict:
    """The checked entries of the export_info.json at `path` ({} when there is none: an
    export of an earlier version). FlagError naming the file and the entry otherwise."""
    if not os.path.exists(path):
        return {}
    try:
        info = json_files.read_object(path)
    except ValueError as e:
        raise _bad(path, str(e)) from None
    for name, value in info.items():
        problem = _entry_problem(name, value, info)
        if problem:
            raise _bad(path, problem)
    return info


def _entry_problem(name: str, value, info: dict) -> str | None:
    """Why entry `name` of the file is wrong, or None."""
    if name in _TEXT_ENTRIES:
        return None if isinstance(value, str) else _got(name, "a string", value)
    if name == "vocab_size":
        return None if _is_int(value) and value > 0 else _got(name, "a positive integer", value)
    if name == "decode":
        return _decode_problem(value)
    if name == "encoder_lengths":
        return _lengths_problem(value, info.get("decode"))
    return f"{json.dumps(name)} is not an entry of this file"


def _decode_problem(decode) -> str | None:
    if not isinstance(decode, dict):
        return _got("decode", "an object of decode settings", decode)
    for name, value in decode.items():
        kind = DECODE_TYPES.get(name)
        if kind is None:
            return f'"decode" holds {json.dumps(name)}, which is not a decode setting'
        ok, want = {
            "positive": (_is_int(value) and value > 0, "a positive integer"),
            "count": (_is_int(value) and value >= 0, "an integer >= 0"),
            "bool": (isinstance(value, bool), "true or false"),
            "number": (_is_number(value) and value >= 0, "a finite number >= 0"),
            "text": (isinstance(value, str), "a string"),
        }[kind]
        if not ok:
            return _got(f"decode.{name}", want, value)
    return None


def _lengths_problem(lengths, decode) -> str | None:
    """`encoder_lengths`: null (each batch its own longest article) or increasing
    positive integers, none over the exported max_enc_steps."""
    if lengths is None:
        return None
    longest = decode.get("max_enc_steps") if isinstance(decode, dict) else None
    limit = longest if _is_int(longest) and longest > 0 else None
    want = "null or a list of positive integers in increasing order" + (
        f", none over max_enc_steps ({limit})" if limit else ""
    )
    ok = (
        isinstance(lengths, list)
        and 0 < len(lengths) <= MAX_LENGTHS
        and all(_is_int(n) and n > 0 and (limit is None or n <= limit) for n in lengths)
        and all(a < b for a, b in itertools.pairwise(lengths))
    )
    return None if ok else _got("encoder_lengths", want, lengths)


def _is_int(value) -> bool:
    # JSON has one number type, and true is no integer here.
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    # A JSON integer of any size is finite (math.isfinite would overflow on 10**400).
    return _is_int(value) or (isinstance(value, float) and math.isfinite(value))


def _got(name: str, want: str, value) -> str:
    shown = json.dumps(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f'"{name}" must be {want}, got {shown}'


def _bad(path: str, why: str) -> FlagError:
    return FlagError(
        f"{path} is unreadable ({why}); restore the file, or export the model again "
        "(pointer-generator export) and serve the new folder"
    )
