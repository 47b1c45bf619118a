"""The experiment remembers how it was made: `<log_root>/<exp_name>/settings.json`.

Training writes the flags that decide the model's shape, the vocabulary (its path and
the SHA-256 of its content) and the sequence lengths into the experiment when it starts.
Every later command on the experiment (eval, decode, `summarize`, a resumed training
run) takes each of them from there unless the flag is given on the command line:

* the model's shape (`MODEL_FLAGS`) and the vocabulary must then agree: a flag that
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

from pointer_generator.cli.flag_bounds import BOUNDS, check_numbers
from pointer_generator.errors import FlagError
from pointer_generator.runtime import experiment_settings

MODEL_FLAGS = (
    "model",
    "hidden_dim",
    "emb_dim",
    "vocab_size",
    "pointer_gen",
    "coverage",
    "abs_encoder",
    "context_window",
    "smoothing_window",
    "conv_width",
    "max_positions",
    "abs_namas",
    "ras_initial_state",  # a weight more or less: older experiments have zeros
    "ras_attention",  # no weight of its own: only the settings say (BEFORE_FLAGS)
    "ras_attention_scale",
    "optimizer",
)
# What an experiment whose settings predate a flag ran with, where the flag's default
# has changed since: RAS attended with the paper's dot product before --ras_attention.
BEFORE_FLAGS = {"ras_attention": "dot"}
LENGTH_FLAGS = ("max_enc_steps", "max_dec_steps")
PADDING_FLAGS = ("static_shapes", "length_buckets")


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
    apply(fv, "decode")
    for name, value in experiment_settings.read_decode_settings(_root(fv)).items():
        if not fv[name].present:  # the last decode's search, unless given
            fv[name].value = value
    apply_model_family(fv)
    check_decode_lengths(fv)
    if not fv.vocab_path:
        raise FlagError(
            f"{command} needs --vocab_path: this experiment does not record its vocabulary "
            "(it was trained before experiments kept their settings)"
        )
    return exp


def read(fv) -> dict | None:
    """The stored settings of the flags' experiment, or None (no file: an experiment of
    an older version, or none yet). An unreadable or malformed file is an error naming
    it (`runtime.experiment_settings.read`)."""
    if not fv.log_root or not fv.exp_name:
        return None
    return experiment_settings.read(_root(fv))


def apply(fv, mode: str) -> dict | None:
    """Fill the flags not given on the command line from the stored settings; raise
    FlagError for a given one that contradicts them. Returns the stored settings."""
    stored = read(fv)
    if stored is None:
        return None
    path = settings_path(fv)
    contradictions = []
    before = {k: v for k, v in BEFORE_FLAGS.items() if k not in stored["flags"]}
    for name, value in {**stored["flags"], **before}.items():
        if name not in fv:
            continue
        flag = fv[name]
        if not flag.present:
            flag.value = value
            continue
        sticky = name in MODEL_FLAGS and not (mode == "train" and name == "coverage")
        if sticky and flag.value != value:
            contradictions.append(
                f"--{name}={_show(flag.value)} contradicts this experiment's {name}={_show(value)}"
            )
    if contradictions:
        raise FlagError(
            "; ".join(contradictions) + f" (stored in {path} when it was trained); drop the "
            "flag, or train a new experiment (another --exp_name)"
        )
    _apply_vocab(fv, stored)
    check_numbers(fv, [n for n in stored["flags"] if n in BOUNDS])  # hand-edited values
    return stored


def _apply_vocab(fv, stored: dict) -> None:
    """The vocabulary: the experiment's own (checked against its digest), or a given
    --vocab_path, which must have the same content."""
    if fv["vocab_path"].present:
        experiment_settings.check_given_vocabulary(_root(fv), stored, fv.vocab_path)
    else:
        fv.vocab_path = experiment_settings.vocabulary(_root(fv), stored)


def _show(value) -> str:
    return str(int(value)) if isinstance(value, bool) else str(value)


def content(fv) -> dict:
    """What a training run stores (`runtime.experiment.write_settings` writes it once the
    run holds train/'s lock)."""
    return {
        "flags": {name: getattr(fv, name) for name in MODEL_FLAGS + LENGTH_FLAGS + PADDING_FLAGS},
        "vocab": {
            "path": os.path.abspath(fv.vocab_path),
            "sha256": experiment_settings.file_digest(fv.vocab_path),
        },
    }
