"""The model families behind `--model`, and what is asked of all of them at once.

Each family is one model class keeping the contract of `models/family.py`; this table
is the only place that lists them. Adding a family means its module (with its layers
and flags) and a line here: nothing in `decoding/`, `runtime/` or `training/` asks
which family it holds.
"""

from __future__ import annotations

import importlib

from pointer_generator.hparams import HParams

# --model value -> "module:class" (imported when used).
FAMILIES = {
    "pointer_generator": "pointer_generator.models.pointer_generator:PointerGeneratorModel",
    "abs": "pointer_generator.models.abs_model:ABSModel",
    "ras_elman": "pointer_generator.models.ras_model:RASModel",
    "ras_lstm": "pointer_generator.models.ras_model:RASModel",
}


def family_class(name: str) -> type:
    """The model class of family `name` (a --model value)."""
    module, cls = FAMILIES[name].split(":")
    return getattr(importlib.import_module(module), cls)


def build_model(hps: HParams, vocab_size: int):
    """The built model of `hps.model`, with every weight created."""
    return family_class(hps.model).from_hparams(hps, vocab_size).build_weights()


def _classes() -> list[type]:
    seen = []
    for name in FAMILIES:
        cls = family_class(name)
        if cls not in seen:
            seen.append(cls)
    return seen


def implied_settings(shapes: dict) -> dict:
    """The model flags a checkpoint's {key: shape} implies, by the family it belongs to
    ({} when it is none of theirs)."""
    for cls in _classes():
        found = cls.implied_settings(shapes)
        if found is not None:
            return found
    return {}


def embedding_key(shapes: dict) -> str | None:
    """The checkpoint key of a checkpoint's word embedding (the projector's), if any."""
    for cls in _classes():
        key = cls.embedding_key(shapes)
        if key is not None:
            return key
    return None
