"""`--model`, whose choices are the registered model families (`models/family_registry.py`),
a flag for each family's own options (`ModelFamily.options`, declared with the family:
ABS's encoder, RAS's attention, ...), and the flags the earlier families (ABS, ABS+, RAS;
docs/families.md) brought to every model: the papers' training (SGD, annealing, epochs,
renormalisation) and ABS+'s features and tuning. Part of `flags.define_flags`."""

from __future__ import annotations

from absl import flags

from pointer_generator.errors import FlagError
from pointer_generator.hparams import LR_DECAYS, OPTIMIZERS

# --model's default: the registry's (`family_registry.DEFAULT`), written here so that defining
# the flags imports no model.
DEFAULT_MODEL = "pointer_generator"
MODEL_HELP = (
    "Model family, a registered one (models/family_registry.py; others join by "
    "family_registry.register or $POINTER_GENERATOR_FAMILIES)"
)


def family_registry():
    """The model families' registry (`pointer_generator.models.family_registry`). The built-in
    families load without TensorFlow; a plugin's module may start it, so then it is
    started first, quietly (`console`), as a command does before it uses TensorFlow."""
    from pointer_generator.models import family_registry as registry

    if registry.has_plugins():
        from pointer_generator.cli import console

        console.import_tensorflow()
    return registry


class _FamilyParser(flags.ArgumentParser):
    """--model's values: the families registered when the flags are parsed (a family
    registered after this module was imported is a choice too)."""

    syntactic_help = "a registered model family"

    def parse(self, argument):
        if argument == DEFAULT_MODEL:  # (the default, parsed when the flag is defined)
            return argument
        names = family_registry().names()
        if argument not in names:
            raise ValueError(f"value should be one of <{'|'.join(names)}>")
        return argument

    def flag_type(self) -> str:
        return "string enum"


class _ModelFlag(flags.Flag):
    """--model, whose help lists the registered families with their summaries."""

    @property
    def help(self) -> str:
        try:
            registry = family_registry()
            listed = "; ".join(
                family.summary
                if family.summary.startswith(family.name)
                else f"{family.name}: {family.summary}"
                for family in registry.all_families()
            )
        except FlagError:  # (a plugin that cannot be loaded: the error says so on use)
            return self._help + "."
        return f"{self._help}: {listed}."

    @help.setter
    def help(self, text: str) -> None:
        self._help = text


def define(fv: flags.FlagValues) -> None:
    flags.DEFINE_flag(
        _ModelFlag(_FamilyParser(), flags.ArgumentSerializer(), "model", DEFAULT_MODEL, MODEL_HELP),
        flag_values=fv,
    )
    define_options(fv)
    flags.DEFINE_enum(
        "optimizer",
        "adagrad",
        OPTIMIZERS,
        "adagrad (the original's) or sgd (plain SGD, as ABS and RAS were trained; "
        "--lr is then its rate).",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "lr_decay",
        "none",
        LR_DECAYS,
        "With --optimizer=sgd: divide the rate by --lr_decay_factor after an epoch whose "
        "validation perplexity (--valid_data_path) is no better than the best (plateau, "
        "the papers) or worse than the previous epoch's (previous, NAMAS's code).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "lr_decay_factor", 2.0, "What --lr_decay divides the rate by.", flag_values=fv
    )
    flags.DEFINE_enum(
        "loss_reduction",
        "mean",
        ("mean", "sum"),
        "--model=abs|ras_*: train on the mean NLL per target word (as NAMAS), or on its sum "
        "over the batch (RAS's printed objective); the reported loss is the mean either way.",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "embedding_max_norm",
        0.0,
        "> 0: at the start of every epoch, rescale each embedding row longer than this to "
        "this L2 norm (ABS: 1). 0 = never.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "valid_data_path",
        "",
        "Train mode: validation .bin files; at the end of every epoch training measures "
        "their perplexity (TensorBoard valid/perplexity in eval/), keeps the best model in "
        "eval/ like the eval job, and anneals the rate (--lr_decay).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "epoch_steps",
        0,
        "Training steps per epoch (validation, annealing, embedding renormalisation); "
        "0 = one pass over --data_path.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "early_stop_epochs",
        0,
        "With --valid_data_path: stop training after N epochs in a row whose validation "
        "perplexity is no better than the best so far, saving a checkpoint as at "
        "--max_steps (the same command run again trains no further); 0 = never.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "feature_weights",
        "",
        "decode/summarize/tune_features, --model=abs|ras_*: ABS+ -- add the extractive "
        "features (unigram, bigram, trigram match, out of order, length) to every word's "
        "score with the weights of this file ('<feature> <weight>' lines, as "
        "tune_features writes them).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "namas_features",
        False,
        "With --feature_weights: the official ABS code's features (input padded with "
        "<s>/</s>, its off-by-one skip-gram tables) instead of the paper's adjacent n-grams.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "weights_out", "", "tune_features: where to write the tuned weights.", flag_values=fv
    )
    flags.DEFINE_enum(
        "objective",
        "rouge1_recall",
        ("rouge1_recall", "rouge1_f", "bleu4"),
        "tune_features: what MERT maximises on --data_path: ROUGE-1 recall of the first "
        "--objective_bytes bytes (the papers' evaluation), ROUGE-1 F of the same (with "
        "--objective_bytes=0: whole summaries, as a full-length evaluation scores them) or "
        "BLEU-4 (NAMAS's Z-MERT set-up).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "objective_bytes",
        75,
        "tune_features: rouge1_recall reads the first N bytes of each summary and "
        "reference (DUC's limit; 0 = all).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "mert_iterations",
        5,
        "tune_features: decode-and-optimise rounds (fewer when no new hypothesis appears).",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "mert_keep",
        "best_decoded",
        ["best_decoded", "last"],
        "tune_features: which weights to write: those whose own decode scored best on the "
        "development set (the last round's are decoded once more to be scored), or the "
        "last round's, as Z-MERT writes them (their optimum on the n-best lists can decode "
        "far worse).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "random_starts",
        10,
        "tune_features: random starting points of each optimisation besides the current "
        "weights (Z-MERT uses 20).",
        flag_values=fv,
    )


def define_options(fv: flags.FlagValues) -> None:
    """A flag for every option of the registered families (`FamilyOption`) that has none
    yet: called when the flags are defined, and again before they are parsed, so that a
    family registered in between has its flags too. And a train-mode switch for each of
    their one-off conversions (`Conversion`: --convert_to_coverage_model)."""
    registry = family_registry()
    for flag, conversion in registry.conversion_table().items():
        if flag not in fv:
            flags.DEFINE_boolean(flag, False, conversion.help, flag_values=fv)
        elif fv[flag].help != conversion.help:
            raise FlagError(f"--{flag}, a model family's conversion, is another flag already")
    for option in registry.option_table().values():
        if option.name in fv:
            continue
        if option.type is bool:
            define = flags.DEFINE_boolean
        elif option.type is int:
            define = flags.DEFINE_integer
        elif option.type is float:
            define = flags.DEFINE_float
        elif option.choices:
            flags.DEFINE_enum(
                option.name, option.default, option.choices, option.help, flag_values=fv
            )
            continue
        else:
            define = flags.DEFINE_string
        define(option.name, option.default, option.help, flag_values=fv)
