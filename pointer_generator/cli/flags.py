"""Command-line flags: the original release's (spec 1.1) plus this implementation's.

The original's flags keep their names, defaults and meanings. Everything is checked by
`flag_checks.validate` before TensorFlow is imported, so a wrong command line costs one clear line
(`FlagError`) and no start-up time. Checks that need TensorFlow (does a checkpoint match
the flags, does the batch divide over the replicas) happen later, with the same kind of
error.
"""

from __future__ import annotations

import os

from absl import flags

from pointer_generator.cli import family_flags, padding_flags, serving_flags
from pointer_generator.errors import FlagError
from pointer_generator.hparams import (
    DECODE_ATTENTION_MODES,
    GRAD_NORM_MODES,
)

FLAGS = flags.FLAGS

STRATEGIES = ("default", "mirrored", "multi_worker_mirrored", "tpu")


def define_flags(flag_values: flags.FlagValues = FLAGS) -> flags.FlagValues:
    """Define every flag on `flag_values` (idempotent: a second call does nothing)."""
    if "data_path" in flag_values:
        return flag_values
    fv = flag_values

    # ---- the original release's flags (spec 1.1), same names, defaults and meanings ----
    flags.DEFINE_string(
        "data_path",
        "",
        "Glob of the .bin data files, e.g. 'finished_files/chunked/train_*'.",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "vocab_path", "", "Path of the vocabulary file ('word count' lines).", flag_values=fv
    )
    flags.DEFINE_string("mode", "train", "train, eval or decode.", flag_values=fv)
    flags.DEFINE_boolean(
        "single_pass",
        False,
        "decode: go through the data once in file order with a fixed "
        "checkpoint, then score with ROUGE (otherwise: endless concurrent "
        "decoding). eval: report the exact average loss over the data once "
        "(an addition). Not allowed in train mode.",
        flag_values=fv,
    )
    flags.DEFINE_string("log_root", "", "Root directory of all experiments.", flag_values=fv)
    flags.DEFINE_string(
        "exp_name", "", "Experiment name: a sub-directory of log_root.", flag_values=fv
    )
    flags.DEFINE_integer("hidden_dim", 256, "LSTM hidden state size.", flag_values=fv)
    flags.DEFINE_integer("emb_dim", 128, "Word embedding size.", flag_values=fv)
    flags.DEFINE_integer(
        "batch_size",
        16,
        "Minibatch size (the global batch over all "
        "replicas); replaced by beam_size in decode mode.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_enc_steps", 400, "Articles are truncated to this many tokens.", flag_values=fv
    )
    flags.DEFINE_integer(
        "max_dec_steps",
        100,
        "Decoder steps in train/eval (abstracts are "
        "truncated to it); the maximum summary length in decode.",
        flag_values=fv,
    )
    flags.DEFINE_integer("beam_size", 4, "Beam width in decode mode.", flag_values=fv)
    flags.DEFINE_integer(
        "min_dec_steps", 35, "Minimum summary length in beam search.", flag_values=fv
    )
    flags.DEFINE_integer(
        "vocab_size",
        50000,
        "Vocabulary size including the 4 special "
        "tokens; 0 (or more than the file holds) reads the whole file.",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "lr",
        0.15,
        "Learning rate (--model=abs --abs_encoder=conv: 0.02 unless given; docs/families.md).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "adagrad_init_acc",
        0.1,
        "Initial Adagrad accumulator value (--model=abs|ras_*: 1e-4 unless given; "
        "docs/families.md).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "rand_unif_init_mag", 0.02, "LSTM weights are initialised U(-mag, +mag).", flag_values=fv
    )
    flags.DEFINE_float(
        "trunc_norm_init_std",
        1e-4,
        "Std of the truncated-normal initialiser of the other explicitly initialised weights.",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "max_grad_norm", 2.0, "Gradients are clipped to this global norm.", flag_values=fv
    )
    flags.DEFINE_boolean(
        "pointer_gen",
        True,
        "Pointer-generator (True) or baseline attention seq2seq (False).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "coverage",
        False,
        "Use the coverage mechanism. The paper trains "
        "without coverage to convergence, then briefly with coverage (see "
        "convert_to_coverage_model).",
        flag_values=fv,
    )
    flags.DEFINE_float("cov_loss_wt", 1.0, "Weight of the coverage loss (lambda).", flag_values=fv)
    flags.DEFINE_boolean(
        "restore_best_model",
        False,
        "train mode: copy the eval job's best model into train/ (fresh "
        "Adagrad accumulators) as model-<step>, then exit.",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "debug",
        False,
        "Stop at the first op producing inf/NaN, naming it "
        "(tf.debugging.enable_check_numerics; the original opened tfdbg).",
        flag_values=fv,
    )

    # ---- additions of this implementation ---------------------------------------------
    flags.DEFINE_integer(
        "max_steps",
        0,
        "Stop training at this global step (0 = train forever, like the original).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "seed",
        111,
        "Seed of weight initialisation and data shuffling (111 = the original's graph seed).",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "distribution_strategy",
        "default",
        STRATEGIES,
        "tf.distribute strategy: default (one device), mirrored (all local GPUs, or "
        "--num_cpu_devices CPU devices; decode splits each batch over them), "
        "multi_worker_mirrored (machines listed in TF_CONFIG), tpu (training only).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "tpu",
        "",
        "TPU address (grpc://..., a TPU name, or 'local'); implies --distribution_strategy=tpu.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "num_gpus",
        -1,
        "GPUs to use: -1 = all visible, 0 = none (CPU only), N = the first N.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "num_cpu_devices",
        1,
        "Split the CPU into this many logical "
        "devices (mirrored training without GPUs, e.g. for testing).",
        flag_values=fv,
    )
    flags.DEFINE_string(
        "tf1_checkpoint",
        "",
        "Original TF1 checkpoint (prefix or directory) "
        "to start from when train/ has no checkpoint yet (train), or to "
        "decode with (decode).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "xla", False, "Compile the train/eval step with XLA (jit_compile).", flag_values=fv
    )
    flags.DEFINE_integer(
        "save_checkpoint_secs",
        60,
        "Save a training checkpoint this often (and at exit).",
        flag_values=fv,
    )
    padding_flags.define(fv)
    flags.DEFINE_enum(
        "decode_attention",
        "original",
        DECODE_ATTENTION_MODES,
        "Decode-step attention: 'original' recomputes it from the previous "
        "state like the TF1 decode graph; 'train_consistent' carries it like "
        "training does.",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "safe_numerics",
        True,
        "Guard log(0) and 0/0 in the loss and attention (False = the original formulas).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "fused_recurrence",
        True,
        "Run the encoder and the training "
        "decoder as fused XLA-compiled loops with hand-written gradients, "
        "and the vocabulary projection + log P_vocab(target) as one "
        "operation with a hand-written gradient (same values; each new "
        "batch shape compiles once). False = Keras layers, log-softmax and "
        "autodiff; --debug implies False so that its numeric checks see "
        "inside the loops.",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "mixed_precision",
        False,
        "Compute the vocabulary projection "
        "(most of a step's FLOPs) with bfloat16 inputs; variables, logits, "
        "softmax, distributions and losses stay float32. For GPUs/TPUs "
        "with bfloat16 units (slower on CPUs without them). Changes the "
        "numbers slightly; off = float32 as the original.",
        flag_values=fv,
    )
    flags.DEFINE_enum(
        "grad_norm",
        "original",
        GRAD_NORM_MODES,
        "The global gradient norm clipped to --max_grad_norm (and reported as "
        "global_norm): 'original' = the original's tf.global_norm, which sees "
        "the embedding gradient as one row per looked-up token (repeated "
        "words not summed); 'dense' = the norm of the summed embedding "
        "gradient.",
        flag_values=fv,
    )
    family_flags.define(fv)
    flags.DEFINE_float(
        "eval_interval_secs",
        10.0,
        "Eval/decode: seconds to wait before "
        "looking again when train/ has no (new) checkpoint (the original's "
        "10 s retry).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "input_gap",
        False,
        "eval --single_pass: also measure the loss with every abstract paired with another "
        "example's article, and report the gap (a model that reads its input does clearly "
        "worse there; a gap near 0 means its summaries ignore the article); then the loss "
        "with every decoder fed another example's summary words (the history gap: near 0, "
        "the model ignores the words it has written and repeats them).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_eval_iterations",
        0,
        "Concurrent eval: stop after this many "
        "evaluated batches (0 = run forever, like the original).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "eval_idle_secs",
        0.0,
        "Concurrent eval: end once train/ has had no new checkpoint for this many "
        "seconds, i.e. training has ended (0 = run forever, like the original).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "checkpoint_data_position",
        True,
        "Save the input pipeline's "
        "position in training checkpoints so that a resumed job continues "
        "the same data order (single-worker jobs; costs some checkpoint "
        "space for the buffered examples).",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "log_every_n_steps",
        0,
        "Print training progress every N steps (1 = a line a step, as the original); 0: "
        "every --log_every_secs seconds, and at the first and last step (TensorBoard "
        "summaries are written every step regardless).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "log_every_secs",
        10.0,
        "Training with --log_every_n_steps=0: seconds between progress lines.",
        flag_values=fv,
    )

    # ---- decode-mode additions (pointer_generator.decoding.job) -------------------
    flags.DEFINE_integer(
        "decode_batch_size",
        32,
        "decode: articles decoded together "
        "(each with its own beam; the summaries do not depend on it).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "trigram_blocking",
        False,
        "decode: forbid repeated trigrams in a summary (not in the original).",
        flag_values=fv,
    )
    flags.DEFINE_float(
        "length_penalty",
        0.0,
        "decode: length-normalisation exponent for "
        "ranking hypotheses (0 = the original's average log-probability).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "full_final_dist",
        False,
        "decode: build the whole extended-"
        "vocabulary distribution at every step and take its top 2K, as the "
        "original (default: only the entries that can be in that top; same "
        "summaries up to float rounding, faster).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "continuous_batching",
        False,
        "Deprecated, no effect (accepted "
        "so that old command lines still run): continuous batching was "
        "removed, it decoded no faster than the batched search, which "
        "drops finished articles.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "attention_pages",
        100,
        "decode --single_pass: write attention pages for the first N examples.",
        flag_values=fv,
    )
    flags.DEFINE_integer(
        "max_decode_examples",
        0,
        "concurrent decode: stop after N examples (0 = run forever, like the original).",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "block_unk",
        False,
        "decode: never write [UNK] (the ABS papers' decoding; off in the original "
        "pointer-generator, whose copies of an article's [UNK] tokens it blocks too).",
        flag_values=fv,
    )
    serving_flags.define(fv)
    flags.DEFINE_boolean(
        "readable_summaries",
        False,
        "decode --single_pass: also write each summary as readable text (brackets, "
        "quotes, spacing and sentence case restored) in <decode dir>/readable/.",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "rouge_per_document",
        False,
        "decode --single_pass: also write every summary's ROUGE-1, -2 and -L (recall, "
        "precision, F) to <decode dir>/rouge_per_document.json, for paired comparisons.",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "save_search",
        False,
        "decode: also save this decode's search (beam, lengths, trigram blocking, length "
        "penalty, block_unk) as the experiment's own, <exp>/search.json, which summarize, "
        "serve, export and pg.Summarizer use when not given one. Without it a decode "
        "changes nothing they do.",
        flag_values=fv,
    )
    flags.DEFINE_boolean(
        "tokens",
        False,
        "summarize: print the model's lower-cased PTB tokens instead of readable text.",
        flag_values=fv,
    )
    return fv


# Defined at import: `--flagfile`, `--helpfull` and the console script see every flag.
define_flags()


def project_flag_names() -> frozenset[str]:
    """The names of the flags this project defines (not absl's own, such as --verbosity)."""
    global _PROJECT_FLAGS
    if _PROJECT_FLAGS is None:
        _PROJECT_FLAGS = frozenset(define_flags(flags.FlagValues()))
    return _PROJECT_FLAGS


_PROJECT_FLAGS: frozenset[str] | None = None


def experiment_dir(fv) -> str:
    """`<log_root>/<exp_name>`, the original's FLAGS.log_root after start-up."""
    return os.path.join(fv.log_root, fv.exp_name)


def strategy_name(fv) -> str:
    """The distribution strategy the flags ask for (`--tpu` alone implies tpu)."""
    if fv.tpu and fv.distribution_strategy == "default":
        return "tpu"
    return fv.distribution_strategy


# Flags that name files or folders (globs included).
PATH_FLAGS = (
    "data_path",
    "vocab_path",
    "log_root",
    "tf1_checkpoint",
    "valid_data_path",
    "feature_weights",
    "weights_out",
    "saved_model",
    "export_dir",
)


def resolve_paths(fv) -> None:
    """Make every path flag absolute, once, where the command line is parsed: a job
    that changes its working directory, or TensorFlow code that joins a relative
    directory a second time, can then never land somewhere else (a relative --log_root
    once made training rotate away files of the working directory)."""
    for name in PATH_FLAGS:
        value = fv[name].value
        if value:
            fv[name].value = os.path.abspath(os.path.expanduser(value))


def after_parsing(fv=FLAGS) -> None:
    """What every command does right after absl parsed its flags: paths resolved,
    every number checked against its range (`flag_bounds`)."""
    from pointer_generator.cli.flag_bounds import check_numbers

    resolve_paths(fv)
    check_numbers(fv)


def parse_subcommand(name: str, argv: list[str], positional: bool = False) -> list[str]:
    """Parse `pointer-generator <name> argv...` into FLAGS; returns the positional
    arguments (an error when the subcommand takes none). FlagError for a bad flag."""
    family_flags.define_options(FLAGS)  # (a family registered since the flags were defined)
    try:
        rest = FLAGS([f"pointer-generator {name}"] + list(argv))[1:]
    except flags.Error as e:
        raise FlagError(str(e)) from None
    if rest and not positional:
        raise FlagError(f"unexpected arguments {rest!r} (flags are written --name=value)")
    # A subcommand is its own mode (tune_features decodes, and its documented flag file
    # names --mode=decode): given to another, --mode would be ignored.
    if name != "tune_features" and FLAGS["mode"].present:
        raise FlagError(
            f"--mode is for the main command (pointer-generator --mode=train|eval|decode); "
            f"`pointer-generator {name}` has no mode: drop it"
        )
    after_parsing()
    return rest
