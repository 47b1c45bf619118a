"""The registry of model families behind `--model`: every question about a family goes
through here by its name, and the family answers (models/family.py, `ModelFamily`).

The built-in families are the table below. Others join by `register(family)` (from
Python, before the command or the API uses them), or as plugins: a package's entry point
in the group `pointer_generator.families`, or `POINTER_GENERATOR_FAMILIES=module:attr[,...]`
in the environment (for scripts and tests), each naming a `ModelFamily` object or class.
Nothing outside `models/` lists the families or compares their names.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping

from pointer_generator.errors import FlagError
from pointer_generator.models.family import ModelFamily

# --model value -> "module:attribute" of its family object (imported when first used).
FAMILIES = {
    "pointer_generator": "pointer_generator.models.pointer_generator_family:FAMILY",
    "abs": "pointer_generator.models.sentence_family:ABS",
    "ras_elman": "pointer_generator.models.sentence_family:ELMAN",
    "ras_lstm": "pointer_generator.models.sentence_family:LSTM",
}
DEFAULT = "pointer_generator"
PLUGINS_ENV = "POINTER_GENERATOR_FAMILIES"
ENTRY_POINT_GROUP = "pointer_generator.families"

_registered: dict[str, ModelFamily] = {}
_plugins_loaded = False


def _load(spec: str, where: str):
    module, _, attr = spec.partition(":")
    try:
        found = getattr(importlib.import_module(module), attr or "FAMILY")
    except (ImportError, AttributeError) as e:
        raise FlagError(
            f"{where} names the model family {spec!r}, which cannot be loaded ({e}); "
            "fix the name (module:attribute) or remove it"
        ) from None
    return found() if isinstance(found, type) else found


def register(family: ModelFamily) -> ModelFamily:
    """Make `family` a `--model` choice (and return it). Registering a family again
    under its name is allowed; another family under a taken name is a FlagError."""
    if not isinstance(family, ModelFamily):
        raise TypeError(f"{family!r} is not a ModelFamily (pointer_generator.models.family)")
    name = family.name
    if not name or not name.isidentifier():
        raise FlagError(f"a model family needs a name like my_model (got {name!r})")
    if name in FAMILIES and family is not get(name):
        raise FlagError(f"{name!r} is a built-in model family: give yours another name")
    known = _registered.get(name)
    if known is not None and known is not family and type(known) is not type(family):
        raise FlagError(f"a model family named {name!r} is registered already ({known!r})")
    _check_options(family)
    _check_conversions(family)
    _registered[name] = family
    return family


def _check_conversions(family: ModelFamily) -> None:
    """FlagError where `family`'s conversions cannot work: a flag name that is a setting
    of every model, or a checkpoint suffix training's scan of train/ would not know
    (runtime/checkpoint_scan.CONVERSION_SUFFIX, `_<word>_init`)."""
    import dataclasses
    import re

    from pointer_generator.hparams import HParams
    from pointer_generator.runtime.checkpoint_scan import CONVERSION_SUFFIX

    fields = {f.name for f in dataclasses.fields(HParams)}
    for conversion in family.CONVERSIONS:
        if not conversion.flag.isidentifier() or conversion.flag in fields:
            raise FlagError(
                f"{family!r}'s conversion flag {conversion.flag!r} must be a new flag name"
            )
        if not re.fullmatch(CONVERSION_SUFFIX, conversion.suffix):
            raise FlagError(
                f"{family!r}'s conversion --{conversion.flag} writes checkpoints with the "
                f"suffix {conversion.suffix!r}; it must look like _<word>_init (as "
                "_cov_init), or training would not resume from them"
            )


def _check_options(family: ModelFamily) -> None:
    """FlagError where `family`'s options cannot be flags: a name taken by a setting that
    is not an option, or by another family's option of another default or type (families
    may share an option, as ABS and RAS share --family_init)."""
    import dataclasses

    from pointer_generator.hparams import HParams
    from pointer_generator.models.family import OPTION_TYPES

    fields = {f.name for f in dataclasses.fields(HParams)}
    for option in family.options:
        if option.type not in OPTION_TYPES or not option.name.isidentifier():
            raise FlagError(
                f"{family!r}'s option {option.name!r} must be a name with a bool, int, float "
                f"or str default (got {option.default!r})"
            )
        if option.name in fields:
            raise FlagError(
                f"{family!r}'s option {option.name!r} is a setting of every model already: "
                "give it another name"
            )
        known = option_table(exclude=family.name).get(option.name)
        if known is not None and (known.type, known.default) != (option.type, option.default):
            raise FlagError(
                f"{family!r}'s option {option.name!r} is another family's option with "
                f"default {known.default!r}: give it another name"
            )


register_family = register  # (its name in the public API: `pg.register_family`)


def unregister(name: str) -> None:
    """Remove a family `register` added (tests); the built-in ones stay."""
    if name not in FAMILIES:
        _registered.pop(name, None)


def _entry_points():
    from importlib import metadata

    return metadata.entry_points(group=ENTRY_POINT_GROUP)


def has_plugins() -> bool:
    """Whether plugin families are named (and not loaded yet): loading them runs their
    modules' code."""
    return not _plugins_loaded and bool(os.environ.get(PLUGINS_ENV, "").strip() or _entry_points())


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry in _entry_points():
        register(_load(entry.value, f"the entry point {entry.name!r} ({ENTRY_POINT_GROUP})"))
    for spec in filter(None, (s.strip() for s in os.environ.get(PLUGINS_ENV, "").split(","))):
        register(_load(spec, f"${PLUGINS_ENV}"))


def names() -> tuple[str, ...]:
    """Every --model value: the built-in families, then the registered ones."""
    _load_plugins()
    return tuple(FAMILIES) + tuple(n for n in _registered if n not in FAMILIES)


def get(name: str) -> ModelFamily:
    """The family behind `--model=name` (FlagError naming the choices if none)."""
    if name in FAMILIES:
        if name not in _registered:
            _registered[name] = _load(FAMILIES[name], "models/family_registry.py")
        return _registered[name]
    _load_plugins()
    if name not in _registered:
        raise FlagError(f"--model must be one of {', '.join(names())}, got {name!r}")
    return _registered[name]


def of(hps) -> ModelFamily:
    """The family of the hyper-parameters `hps` (its `model`)."""
    return get(hps.model)


def all_families() -> list[ModelFamily]:
    return [get(n) for n in names()]


# What every family's model provides besides `model(batch)` (models/family.py).
MODEL_METHODS = ("search_start", "checkpoint_mismatches", "parameter_summary")


def build_model(hps, vocab_size: int):
    """The built model of `hps.model` (checked by its family), every weight created;
    FlagError when it lacks a method of the contract (`MODEL_METHODS`)."""
    family = of(hps)
    family.check(hps)
    model = family.build(hps, vocab_size)
    missing = [m for m in MODEL_METHODS if not callable(getattr(model, m, None))]
    if missing or not callable(model):
        raise FlagError(
            f"--model={family.name}: its build() returned {type(model).__name__}, which "
            f"lacks {', '.join(missing or ['__call__'])} (models/family.py says what a "
            "family's model provides)"
        )
    return model


def family_class(name: str) -> type | None:
    """The model class of family `name`, where it declares one."""
    return get(name).model_class


def settings(values: Mapping) -> tuple[dict, dict]:
    """(fixed, defaults) of the family that `values["model"]` names: the settings it
    cannot change, and where its defaults differ from the flags' given `values`."""
    family = get(values.get("model", DEFAULT))
    return dict(family.fixed_settings), family.defaults(values)


def model_flags() -> tuple[str, ...]:
    """Every family's own model flags (`ModelFamily.model_flags`: its HParams fields and
    options), each once."""
    seen: list[str] = []
    for family in all_families():
        seen += [f for f in family.model_flags() if f not in seen]
    return tuple(seen)


def option_table(exclude: str = "") -> dict:
    """{name: FamilyOption} of every registered family's options (one per name: families
    that share an option declare it alike), but those of the family `exclude`."""
    table: dict = {}
    for name in names():
        if name != exclude and (name in _registered or name in FAMILIES):
            for option in get(name).options:
                table.setdefault(option.name, option)
    return table


def option_types() -> dict:
    """{name: type} of every family option (how settings.json's values are checked)."""
    return {name: option.type for name, option in option_table().items()}


def conversion_table() -> dict:
    """{flag: Conversion} of every registered family's one-off conversions (the first
    family that declares a flag gives its help)."""
    table: dict = {}
    for family in all_families():
        for conversion in family.CONVERSIONS:
            table.setdefault(conversion.flag, conversion)
    return table


def conversion_flags() -> tuple[str, ...]:
    """The flags of every family's one-off conversions (`ModelFamily.conversions`)."""
    seen: list[str] = []
    for family in all_families():
        seen += sorted(f for f in family.conversions if f not in seen)
    return tuple(seen)


def changed_in_training(values: Mapping) -> tuple[str, ...]:
    """The model flags a training run may change on an experiment of the family
    `values["model"]` names (`ModelFamily.changed_in_training`)."""
    return tuple(get(values.get("model", DEFAULT)).changed_in_training)


def predating(values: Mapping) -> dict:
    """{flag: value} an experiment of the family `values["model"]` names, whose settings
    predate the flag, ran with (`ModelFamily.predating`)."""
    return dict(get(values.get("model", DEFAULT)).predating)


def implied_settings(shapes: dict) -> dict:
    """The model flags a checkpoint's {key: shape} implies, by the family it belongs to
    ({} when it is none of theirs)."""
    for family in all_families():
        found = family.implied_settings(shapes)
        if found is not None:
            return found
    return {}


def embedding_key(shapes: dict) -> str | None:
    """The checkpoint key of a checkpoint's word embedding (the projector's), if any."""
    for family in all_families():
        key = family.embedding_key(shapes)
        if key is not None:
            return key
    return None
