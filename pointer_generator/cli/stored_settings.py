"""The experiment remembers how it was made: `<log_root>/<exp_name>/settings.json`.

Training writes the flags that decide the model's shape, the vocabulary (its path and
the SHA-256 of its content) and the sequence lengths into the experiment when it starts.
Every later command on the experiment (eval, decode, `summarize`, a resumed training
run) takes each of them from there unless the flag is given on the command line:

* the model's shape (`model_flags()`: the generic ones and every model family's own)
  and the vocabulary must then agree: a flag that
  contradicts the stored value is one error naming both values (a checkpoint would not
  load anyway, after a longer wait and with a less direct message);
* the sequence lengths (`LENGTH_FLAGS`) are defaults only: decoding with longer
  summaries than training used is normal;
* so is the batches' padding (`PADDING_FLAGS`): the experiment's commands pad to the
  lengths its training compiled, and an experiment stored before these flags existed
  gets today's defaults (its data position stays valid: `training.train`).

Repeating every flag, as the original required, keeps working. Coverage is a model flag
for eval and decode; in train mode an explicit `--coverage` may change it (the paper
converts a model to coverage half way), and the new value is stored.
"""

from __future__ import annotations

import os

from pointer_generator.cli.family_flags import family_registry
from pointer_generator.cli.flag_bounds import check_numbers
from pointer_generator.errors import FlagError
from pointer_generator.runtime import experiment_settings

# What the experiment stores and which flags must agree with it: runtime/
# experiment_settings.py, where the one resolver that the command line and the Python
# API share (`resolve`) lives; what the model families add to them (their own flags, the
# values of flags an experiment's settings predate) the family registry says.
LENGTH_FLAGS = experiment_settings.LENGTH_FLAGS
PADDING_FLAGS = experiment_settings.PADDING_FLAGS


def model_flags() -> tuple[str, ...]:
    """The flags that decide the model's shape: the generic ones and every registered
    family's own (`runtime.experiment_settings.model_flags`)."""
    return experiment_settings.model_flags(family_registry())


def settings_path(fv) -> str:
    return experiment_settings.settings_path(_root(fv))


def _root(fv) -> str:
    return os.path.join(fv.log_root, fv.exp_name)


def require_experiment(fv, command: str):
    """FlagError unless `<log_root>/<exp_name>` exists: a command that uses a trained
    experiment (summarize, export, tune_features) says so before asking for flags the
    experiment would have supplied. Returns the `Experiment`."""
    from pointer_generator.runtime.experiment import open_experiment

    if not fv.log_root or not fv.exp_name:
        raise FlagError(f"{command} needs --log_root and --exp_name of a trained experiment")
    return open_experiment(fv.log_root, fv.exp_name, "decode")  # decode mode's check


def apply_trained(fv, command: str):
    """What a command that uses a trained experiment (summarize, export) does with its
    flags first: the experiment must exist; its stored model flags and vocabulary fill
    the flags not given; the model family's defaults apply; a vocabulary is known.
    Returns the `Experiment`."""
    from pointer_generator.cli.flag_checks import apply_model_family, check_decode_lengths

    exp = require_experiment(fv, command)
    apply(fv, "decode", saved_search=True)  # the experiment's saved search too, unless given
    apply_model_family(fv)
    check_decode_lengths(fv)
    if not fv.vocab_path:
        raise FlagError(
            f"{command} needs --vocab_path: this experiment does not record its vocabulary "
            "(it was trained before experiments kept their settings)"
        )
    return exp


def search_line(fv) -> str:
    """One line naming the search the flags now hold (after `apply_trained`) and where it
    came from: the experiment's search.json, the defaults, the flags given."""
    from pointer_generator.search.settings import SEARCH_FLAGS

    values = {name: fv[name].value for name in experiment_settings.SAVED_SEARCH}
    given = [name for name in SEARCH_FLAGS if fv[name].present]
    source = experiment_settings.read_saved_search(_root(fv))[1] if fv.log_root else None
    return experiment_settings.describe_search(values, source, given)


def read(fv) -> dict | None:
    """The stored settings of the flags' experiment, or None (no file: an experiment of
    an older version, or none yet). An unreadable or malformed file is an error naming
    it (`runtime.experiment_settings.read`)."""
    if not fv.log_root or not fv.exp_name:
        return None
    return experiment_settings.read(_root(fv), family_registry())


def apply(fv, mode: str, saved_search: bool = False) -> dict | None:
    """Fill the flags not given on the command line from the experiment's settings as
    `experiment_settings.resolve` gives them (with `saved_search`, the experiment's saved
    search too: `search_line` says which); FlagError for a given one that contradicts
    them. Returns the stored settings (None: the experiment keeps none)."""
    if not fv.log_root or not fv.exp_name:
        return None
    given = {name: fv[name].value for name in fv if fv[name].present}
    resolved = experiment_settings.resolve(
        _root(fv),
        given,
        families=family_registry(),
        mode=mode,
        vocab_path=fv.vocab_path if fv["vocab_path"].present else None,
        saved_search=saved_search,
    )

    for name, value in resolved.values.items():
        if name in fv:
            fv[name].value = value
    if resolved.stored is None:
        return None
    fv.vocab_path = resolved.vocab_path
    check_numbers(fv, list(resolved.stored["flags"]))  # (a hand-edited file)
    return resolved.stored


def _family_flags(model: str) -> tuple[str, ...]:
    """The model flags of family `model` an experiment stores: its own (`model_flags`),
    and the settings it fixes (ABS's pointer_gen=false, as a reader of the file expects)."""
    family = family_registry().get(model)
    return family.model_flags() + tuple(
        n for n in family.fixed_settings if n not in family.model_flags()
    )


def content(fv) -> dict:
    """What a training run stores (`runtime.experiment.write_settings` writes it once the
    run holds train/'s lock)."""
    return {
        "flags": {
            name: getattr(fv, name)
            for name in experiment_settings.GENERIC_MODEL_FLAGS
            + _family_flags(fv.model)
            + LENGTH_FLAGS
            + PADDING_FLAGS
            if hasattr(fv, name)
        },
        "vocab": {
            "path": os.path.abspath(fv.vocab_path),
            "sha256": experiment_settings.file_digest(fv.vocab_path),
        },
    }
