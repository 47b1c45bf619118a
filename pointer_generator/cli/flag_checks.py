"""The checks of the parsed flags (spec 1.2): contradictions, missing paths, bad numbers,
each one `FlagError` with one line naming the flag, before TensorFlow is imported."""

from __future__ import annotations

import glob
import os

from pointer_generator.cli import family_flags
from pointer_generator.cli.flag_bounds import check_numbers
from pointer_generator.cli.flags import experiment_dir, strategy_name
from pointer_generator.errors import FlagError
from pointer_generator.hparams import DECODE_ATTENTION_MODES, MODES, HParams
from pointer_generator.runtime.experiment import check_exp_name
from pointer_generator.search.settings import SEARCH_FLAGS
from pointer_generator.training.config import EARLY_STOP_NEEDS_VALIDATION


def validate(fv, argv: list[str] | None = None) -> None:
    """Reject missing, unknown or contradictory flags with one FlagError line.

    Args:
      fv: parsed FlagValues (or any object with the flag attributes).
      argv: leftover positional arguments after flag parsing (argv[0] is the program).
    """
    if argv is not None and len(argv) > 1:
        raise FlagError(
            f"unexpected command-line arguments {argv[1:]!r} (flags are written --name=value)"
        )
    if fv.mode not in MODES:
        raise FlagError(f"--mode must be one of {', '.join(MODES)}, got {fv.mode!r}")
    _validate_mode_options(fv)
    _validate_paths(fv)
    _validate_numbers(fv)
    _validate_distribution(fv)
    if fv.tf1_checkpoint:
        path = fv.tf1_checkpoint
        if not (os.path.isdir(path) or os.path.isfile(path + ".index")):
            raise FlagError(
                f"--tf1_checkpoint {path!r} is neither a checkpoint prefix "
                f"(no {path}.index) nor a directory"
            )
    if fv.debug and fv.xla:
        raise FlagError(
            "--debug cannot be combined with --xla (numeric checks are not "
            "available inside XLA clusters)"
        )


def _validate_mode_options(fv) -> None:
    """Options that belong to one mode, and one-off operations that exclude each other."""
    mode = fv.mode
    if fv.single_pass and mode == "train":
        raise FlagError(
            "--single_pass is for decode (and eval) mode; it cannot be used in train mode"
        )
    if getattr(fv, "input_gap", False) and not (mode == "eval" and fv.single_pass):
        raise FlagError("--input_gap is for eval mode with --single_pass")
    one_offs = [n for n in (*_conversion_flags(), "restore_best_model") if getattr(fv, n, False)]
    for name in one_offs:
        if mode != "train":
            raise FlagError(f"--{name} runs in train mode only (got --mode={mode})")
    if len(one_offs) > 1:
        raise FlagError(
            f"{' and '.join('--' + n for n in one_offs)} are separate one-off operations; "
            "run them one at a time"
        )
    _check_conversion_targets(fv)
    check_no_search(fv)
    check_mode_only(fv)


# The search flags that are no hyper-parameter of the model: only a command that searches
# reads them (--max_dec_steps is also the summary length training and eval read).
SEARCH_ONLY_FLAGS = tuple(n for n in SEARCH_FLAGS if n not in HParams.__dataclass_fields__)
# The commands that search, as the refusal names them.
SEARCHING_COMMANDS = "--mode=decode, summarize, export, serve, tune_features"


# Flags that only one mode reads: given to another, they would be ignored.
MODE_ONLY_FLAGS = {
    "save_search": "decode",
    "decode_batch_size": "decode",
    "attention_pages": "decode",
    "max_decode_examples": "decode",
    "readable_summaries": "decode",
    "rouge_per_document": "decode",
    "eval_idle_secs": "eval",
    "log_every_secs": "train",
}


def check_mode_only(fv) -> None:
    """One error for a flag of `MODE_ONLY_FLAGS` given to a mode that does not read it."""
    for name, mode in MODE_ONLY_FLAGS.items():
        if fv.mode != mode and given(fv, name, unknown=False):
            raise FlagError(f"--{name} is for --mode={mode}; --mode={fv.mode} ignores it: drop it")


def check_no_search(fv) -> None:
    """Train and eval mode run no search: a search flag given on the command line would be
    ignored, so it is one error naming it. A value the experiment stored, or a plain
    namespace's (which cannot say what was given), is not refused."""
    if fv.mode not in ("train", "eval"):
        return
    for name in SEARCH_ONLY_FLAGS:
        if given(fv, name, unknown=False):
            raise FlagError(
                f"--{name} sets the search, which --mode={fv.mode} does not run "
                f"(it is for {SEARCHING_COMMANDS}); drop it"
            )


def _validate_paths(fv) -> None:
    """The experiment, vocabulary and data paths exist where the mode needs them."""
    if not fv.log_root:
        raise FlagError("--log_root is required (the root directory of experiments)")
    check_exp_name(fv.exp_name)
    exp_dir = experiment_dir(fv)
    if fv.mode != "train" and not os.path.isdir(exp_dir):
        raise FlagError(
            f"experiment directory {exp_dir!r} does not exist; run in train mode "
            "to create it (check --log_root and --exp_name)"
        )
    if not fv.vocab_path:
        raise FlagError("--vocab_path is required")
    if not os.path.isfile(fv.vocab_path):
        raise FlagError(f"--vocab_path {fv.vocab_path!r} is not a file")
    one_off = conversion_given(fv) or fv.restore_best_model
    if not one_off:
        if not fv.data_path:
            raise FlagError(
                "--data_path is required (a glob of .bin files, e.g. "
                "'finished_files/chunked/train_*')"
            )
        if not [f for f in glob.glob(fv.data_path) if os.path.isfile(f)]:
            raise FlagError(f"--data_path {fv.data_path!r} matches no files")
    _validate_epochs(fv)
    _validate_shards(fv)


def _validate_shards(fv) -> None:
    if fv.decode_shards < 1 or not 0 <= fv.decode_shard < fv.decode_shards:
        raise FlagError(
            f"--decode_shard must be in [0, --decode_shards) and --decode_shards >= 1, got "
            f"{fv.decode_shard} of {fv.decode_shards}"
        )
    if fv.decode_shards > 1 and not (fv.mode == "decode" and fv.single_pass):
        raise FlagError(
            "--decode_shards splits a single-pass decode: add --mode=decode --single_pass"
        )


def _validate_epochs(fv) -> None:
    """The in-training validation and what depends on it (train mode only)."""
    if fv.mode != "train":
        for name in ("valid_data_path", "epoch_steps", "early_stop_epochs"):
            if getattr(fv, name):
                raise FlagError(f"--{name} is a train mode flag (got --mode={fv.mode})")
        return
    if fv.valid_data_path and not [f for f in glob.glob(fv.valid_data_path) if os.path.isfile(f)]:
        raise FlagError(f"--valid_data_path {fv.valid_data_path!r} matches no files")
    if fv.lr_decay != "none" and fv.optimizer != "sgd":
        raise FlagError(
            f"--lr_decay={fv.lr_decay} anneals plain SGD's rate: add --optimizer=sgd "
            "(Adagrad adapts its own step sizes)"
        )
    if fv.lr_decay != "none" and not fv.valid_data_path:
        raise FlagError(
            f"--lr_decay={fv.lr_decay} decides on validation perplexity: give "
            "--valid_data_path (validation .bin files)"
        )
    if fv.epoch_steps < 0:
        raise FlagError(f"--epoch_steps must be >= 0 (0 = one pass), got {fv.epoch_steps}")
    if fv.early_stop_epochs > 0 and not fv.valid_data_path:
        raise FlagError(EARLY_STOP_NEEDS_VALIDATION.format(fv.early_stop_epochs))


def _validate_numbers(fv) -> None:
    check_numbers(fv)
    if fv.mode == "decode":
        check_decode_lengths(fv)
    if 0 < fv.vocab_size < 5:
        raise FlagError(
            f"--vocab_size {fv.vocab_size} leaves no room for words after the 4 "
            "special tokens (use 0 for the whole file)"
        )
    if fv.static_shapes and fv.max_oovs <= 0:
        raise FlagError(f"--max_oovs must be positive with --static_shapes, got {fv.max_oovs}")
    if fv.static_shapes and fv.decoder_buckets > 1:
        raise FlagError(
            f"--decoder_buckets={fv.decoder_buckets} pads summaries to several lengths, "
            "--static_shapes=1 to max_dec_steps only: give one of them"
        )
    if fv.decode_attention not in DECODE_ATTENTION_MODES:
        raise FlagError(
            f"--decode_attention must be one of "
            f"{', '.join(DECODE_ATTENTION_MODES)}, got {fv.decode_attention!r}"
        )


def _validate_distribution(fv) -> None:
    name = strategy_name(fv)
    if fv.mode == "decode" and name not in ("default", "mirrored"):
        raise FlagError(
            f"decode runs on the devices of one machine (--distribution_strategy=mirrored), "
            f"not {name}; across machines, run one process per machine with "
            "--decode_shards=N --decode_shard=I"
        )
    if fv.tpu and name != "tpu":
        raise FlagError(
            f"--tpu is given but --distribution_strategy={name}; use "
            "--distribution_strategy=tpu (or leave it at default)"
        )
    if name == "tpu":
        if not fv.tpu:
            raise FlagError(
                "--distribution_strategy=tpu needs --tpu (an address, a TPU name or 'local')"
            )
        if not fv.static_shapes:
            raise FlagError(
                "--distribution_strategy=tpu needs --static_shapes=1 (TPUs "
                "compile for fixed shapes)"
            )
    if fv.num_cpu_devices > 1 and name != "mirrored":
        raise FlagError("--num_cpu_devices > 1 is only used by --distribution_strategy=mirrored")
    if fv.num_gpus < -1:
        raise FlagError(f"--num_gpus must be -1 (all), 0 or positive, got {fv.num_gpus}")


def given(fv, name: str, unknown: bool = True) -> bool:
    """Whether flag `name` was given on the command line (`unknown` for a plain
    namespace, which cannot say)."""
    try:
        return bool(fv[name].present)
    except (TypeError, KeyError, AttributeError):
        return unknown


def check_decode_lengths(fv) -> None:
    """A --min_dec_steps given above the --max_dec_steps in force (given, or stored by
    the experiment) asks for summaries that can never end: one error. (Defaults are left
    alone: the original's 35 above a short experiment's length just runs to the end.)"""
    if given(fv, "min_dec_steps") and fv.min_dec_steps > fv.max_dec_steps:
        raise FlagError(
            f"--min_dec_steps={fv.min_dec_steps} is above --max_dec_steps={fv.max_dec_steps} "
            "(no summary could end): lower it, or raise --max_dec_steps"
        )


def apply_model_family(fv) -> None:
    """What the family of --model says of the flags (`models/family_registry.py`): the settings
    it fixes (ABS and RAS have no pointer and no coverage: those flags are off for them,
    and turning one on is an error), its own defaults for the flags not given, and the
    one-off checkpoint conversions it has (`ModelFamily.conversions`).
    `fv`: absl FlagValues (whether a flag was given is read from it)."""
    registry = family_flags.family_registry()
    family = registry.get(fv.model)
    fixed, defaults = registry.settings({name: fv[name].value for name in fv})
    for name, value in defaults.items():
        if name in fv and not fv[name].present:
            fv[name].value = value
    for name, value in fixed.items():
        if name not in fv:  # (a setting that is no flag: HParams' default)
            continue
        if fv[name].present and fv[name].value != value:
            raise FlagError(family.fixed_setting_message(name, value))
        fv[name].value = value
    _check_options(fv, registry, family)
    for name in registry.conversion_flags():
        if name in fv and fv[name].value and name not in family.conversions:
            having = [f.name for f in registry.all_families() if name in f.conversions]
            raise FlagError(
                f"--{name} is for --model={'|'.join(having)}; --model={fv.model} has no "
                "such conversion"
            )


def _check_options(fv, registry, family) -> None:
    """No option of another family nor a setting the family does not read given (either
    would be ignored). (Its own options' ranges are checked with every number's,
    `flag_bounds.all_bounds`, and their values by `ModelFamily.check`.)"""
    mine = {o.name: o for o in family.options}
    for name, option in registry.option_table().items():
        if name in mine or name not in fv or not fv[name].present:
            continue
        owners = [f.name for f in registry.all_families() if option in f.options]
        raise FlagError(
            f"--{name} is a setting of --model={'|'.join(owners)}, not of --model={fv.model}: "
            "drop it"
        )
    for name in (*family.unused_settings, *family.unused_flags):
        if name in fv and fv[name].present:
            raise FlagError(
                f"--{name} is no setting of --model={fv.model} (its models do not read it): drop it"
            )


def _conversion_flags() -> tuple[str, ...]:
    """The train-mode switches of the families' one-off conversions
    (--convert_to_coverage_model)."""
    return tuple(family_flags.family_registry().conversion_table())


def conversion_given(fv) -> str:
    """The flag of the one-off conversion the flags ask for ("" = none)."""
    return next((n for n in _conversion_flags() if getattr(fv, n, False)), "")


def _check_conversion_targets(fv) -> None:
    """A family's conversion makes a model with its target settings, which must be the
    flags' (the pointer-generator's --convert_to_coverage_model needs --coverage=1)."""
    family = family_flags.family_registry().get(fv.model)
    for flag in family.conversions:
        conversion = family.conversion(flag)
        if conversion is None or not getattr(fv, flag, False):
            continue
        wrong = {k: v for k, v in conversion.target.items() if getattr(fv, k) != v}
        if wrong:
            needed = " ".join(
                f"--{k}={int(v) if isinstance(v, bool) else v}" for k, v in wrong.items()
            )
            raise FlagError(
                f"--{flag} needs {needed} (it makes a model with {conversion.what_is_added} "
                "from a checkpoint trained without them)"
            )
