"""What a single-pass decode folder was made from, so that a resume never mixes inputs.

A single-pass decode resumes after the examples its folder already holds. That is only
right when the folder was made from the same inputs: the same data files, vocabulary,
checkpoint and every setting that changes a summary. The folder's name (spec 1.3) holds
some of them but not the data files, so each folder records all of them in
`decode_inputs.json` when it is created. A run whose inputs differ from a folder's
record decodes into the next free folder `<name>-2`, `<name>-3`, ... (with a warning
that says what differs) instead of resuming; nothing in the old folder is touched.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import os

from pointer_generator.decoding import folder
from pointer_generator.runtime import json_files, owned_files, staging

log = logging.getLogger(__name__)

RECORD_FILE = "decode_inputs.json"
# The model and search settings a decoded summary depends on (HParams fields, and the
# search's beam and lengths, SearchSettings fields).
MODEL_FIELDS = (
    "hidden_dim",
    "emb_dim",
    "max_enc_steps",
    "max_dec_steps",
    "min_dec_steps",
    "beam_size",
    "pointer_gen",
    "coverage",
    "decode_attention",
    "mixed_precision",
    "max_oovs",
)


def _file_digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def describe(data_path: str, vocab, hps, checkpoint: str, settings) -> dict:
    """The record of one decode's inputs (JSON-ready): the files, the model's settings
    and the search's (`settings`, a SearchSettings; its beam and lengths are recorded
    with the model's, as before they were separate).

    Files are identified by content (SHA-256): the data files, the vocabulary's words in
    order, and the checkpoint's `.index` file, which holds every tensor's checksum.
    """
    words = "\n".join(vocab.words).encode("utf-8")
    index = checkpoint + ".index"
    return {
        "data": {os.path.abspath(p): _file_digest(p) for p in sorted(glob.glob(data_path))},
        "vocab": hashlib.sha256(words).hexdigest(),
        "checkpoint": {
            "path": os.path.abspath(checkpoint),
            "index_sha256": _file_digest(index) if os.path.exists(index) else None,
        },
        "model": {
            **{
                f: getattr(settings if hasattr(settings, f) else hps, f)
                for f in MODEL_FIELDS
                if hasattr(settings, f) or hasattr(hps, f)
            },
            # A family's own settings, where it has any. A record of a model without them
            # (the pointer-generator) stays as it was, so its older decode folders still
            # resume; an ABS or RAS folder made before these were recorded starts anew.
            **({"model": hps.model, "options": dict(hps.options)} if hps.options else {}),
        },
        "search": settings.record(),
    }


def _read(directory: str) -> dict | None:
    """The folder's record; None when it has none or none that can be read (a record
    edited into a list, nested too deeply, not JSON): treated as no record."""
    try:
        with open(os.path.join(directory, RECORD_FILE), encoding="utf-8") as f:
            record = json_files.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def differences(old: dict | None, new: dict) -> list[str]:
    """The top-level parts of two records that differ (`data`, `checkpoint`, ...)."""
    if old is None:
        return ["no record of its inputs"]
    return [k for k in new if old.get(k) != new[k]]


def folder_for(base: str, record: dict) -> str:
    """The folder to decode into: `base` or the first `base-N` that is new or was made
    from the same inputs. Writes the record into a new folder."""
    n = 1
    while True:
        directory = base if n == 1 else f"{base}-{n}"
        old = _read(directory)
        fresh = not os.path.isdir(directory) or (
            old is None and folder.count_complete(directory) == 0
        )
        if fresh:
            _write(directory, record)
            return directory
        if old == record:
            return directory
        log.warning(
            "%s holds a decode of other inputs (%s differ); decoding into %s-%d instead",
            directory,
            ", ".join(differences(old, record)),
            base,
            n + 1,
        )
        n += 1


def _write(directory: str, record: dict) -> None:
    owned_files.make_dir(directory)
    # Shards of one decode write the same record at once: each through its own temporary.
    staging.replace_file(
        os.path.join(directory, RECORD_FILE), json.dumps(record, indent=1, sort_keys=True)
    )
