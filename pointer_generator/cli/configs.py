"""The one place where flags become configs: `HParams` and each mode's frozen config
dataclass are built here from parsed flags (absl FlagValues, or any object with the flag
attributes, as tests pass); no module outside `cli/` reads flags."""

from __future__ import annotations

import dataclasses

from pointer_generator.cli import stored_settings
from pointer_generator.cli.family_flags import family_registry
from pointer_generator.cli.flag_checks import conversion_given, given
from pointer_generator.cli.flags import strategy_name
from pointer_generator.decoding.config import DecodeConfig
from pointer_generator.evaluation.config import EvalConfig
from pointer_generator.hparams import HParams
from pointer_generator.search.settings import SEARCH_FLAGS, SearchSettings
from pointer_generator.training.config import TrainConfig


def _fields(cls, fv, **computed):
    """`cls` with every field read from the flag of the same name (or `computed`)."""
    values = {
        f.name: getattr(fv, f.name)
        for f in dataclasses.fields(cls)
        if f.name not in computed and hasattr(fv, f.name)
    }
    return cls(**values, **computed)


def hparams(fv) -> HParams:
    """The model and data hyper-parameters of the flags, checked by their model family
    (`ModelFamily.check`) before anything runs."""
    family = family_registry().get(fv.model)
    options = {o.name: fv[o.name].value for o in family.options if o.name in fv}
    hps = _fields(HParams, fv, options=options)
    family.check(hps)
    return hps


def train_config(fv) -> TrainConfig:
    return _fields(
        TrainConfig,
        fv,
        distribution_strategy=strategy_name(fv),
        settings=stored_settings.content(fv),
        conversion=conversion_given(fv),
    )


def eval_config(fv) -> EvalConfig:
    return _fields(EvalConfig, fv, distributed=strategy_name(fv) != "default")


def search_settings(fv) -> SearchSettings:
    """The beam search the flags ask for, every field of `SearchSettings` from the flag
    of its name: what decode mode, `summarize`, `export`, `serve` and `tune_features`
    all search with (--length_penalty 0 = none; --feature_weights is read here: the
    settings hold the weights, not the file)."""
    from pointer_generator.search.extractive_features import read_weights

    values = {name: getattr(fv, name) for name in SEARCH_FLAGS}
    values["length_penalty"] = values["length_penalty"] or None
    path = values["feature_weights"]
    values["feature_weights"] = read_weights(path) if path else None
    return SearchSettings(**values)


def given_search_flags(fv) -> list[str]:
    """The search flags given on the command line, as `--name`, in `SEARCH_FLAGS`' order
    (for a command that cannot change its search: `serve --saved_model`)."""
    return [f"--{name}" for name in SEARCH_FLAGS if given(fv, name)]


def decode_config(fv) -> DecodeConfig:
    return _fields(
        DecodeConfig, fv, distribution_strategy=strategy_name(fv), search=search_settings(fv)
    )


def mode_config(fv):
    """The config of the mode the flags ask for."""
    return {"train": train_config, "eval": eval_config, "decode": decode_config}[fv.mode](fv)
