"""`pointer-generator --help`: what the command does, its subcommands, and the flags that
matter grouped by purpose, with an example. (`--helpfull` adds absl's own flags.)"""

from __future__ import annotations

# The server's own flags (`serve --help` lists them, less --saved_model, in a group).
SERVE_FLAGS = (
    "serve_host",
    "serve_port",
    "serve_max_batch",
    "serve_max_wait_ms",
    "serve_max_chars",
    "serve_max_request_chars",
    "serve_warm_up_batches",
)

# Every flag of `cli/flags.py`, once, by purpose (tests/test_help.py checks both):
# `flag_groups()`, which adds the model families' own flags (`family_registry.model_flags()`)
# to the model group's generic ones.
_GROUPS = {
    "experiment (where it lives, what to do)": ("mode", "log_root", "exp_name", "single_pass"),
    "data": (
        "data_path",
        "vocab_path",
        "vocab_size",
        "max_enc_steps",
        "max_dec_steps",
        "static_shapes",
        "length_buckets",
        "decoder_buckets",
        "max_oovs",
    ),
    "model": (
        "model",
        "hidden_dim",
        "emb_dim",
        "rand_unif_init_mag",
        "trunc_norm_init_std",
        "safe_numerics",
        "fused_recurrence",
        "mixed_precision",
    ),
    "training": (
        "batch_size",
        "lr",
        "adagrad_init_acc",
        "max_grad_norm",
        "grad_norm",
        "optimizer",
        "lr_decay",
        "lr_decay_factor",
        "embedding_max_norm",
        "loss_reduction",
        "valid_data_path",
        "epoch_steps",
        "early_stop_epochs",
        "cov_loss_wt",
        "max_steps",
        "seed",
        "tf1_checkpoint",
        "restore_best_model",
        "xla",
        "debug",
    ),
    "devices": ("distribution_strategy", "tpu", "num_gpus", "num_cpu_devices"),
    "eval": ("eval_interval_secs", "max_eval_iterations", "eval_idle_secs", "input_gap"),
    "decoding": (
        "beam_size",
        "min_dec_steps",
        "decode_batch_size",
        "decode_attention",
        "trigram_blocking",
        "length_penalty",
        "full_final_dist",
        "block_unk",
        "feature_weights",
        "namas_features",
        "save_search",
        "max_decode_examples",
        "decode_shards",
        "decode_shard",
        "continuous_batching",
    ),
    "ABS+ tuning (tune_features)": (
        "weights_out",
        "objective",
        "objective_bytes",
        "mert_iterations",
        "mert_keep",
        "random_starts",
    ),
    "serve": (
        *SERVE_FLAGS,
        "saved_model",
    ),
    "export": ("export_dir",),
    "output": (
        "save_checkpoint_secs",
        "checkpoint_data_position",
        "log_every_n_steps",
        "log_every_secs",
        "attention_pages",
        "readable_summaries",
        "rouge_per_document",
        "tokens",
    ),
}


def flag_groups() -> dict:
    """{group title: flag names}: every flag once, the model families' own flags in the
    model group (after its generic ones)."""
    from pointer_generator.cli.family_flags import family_registry

    registry = family_registry()
    listed = {name for names in _GROUPS.values() for name in names}
    own = tuple(n for n in registry.model_flags() if n not in listed)
    # The families' one-off conversions (--convert_to_coverage_model) with the training's.
    conversions = tuple(n for n in registry.conversion_table() if n not in listed)
    extra = {"model": own, "training": conversions}
    return {title: names + extra.get(title, ()) for title, names in _GROUPS.items()}


def __getattr__(name: str):
    if name == "FLAG_GROUPS":  # (computed when asked: the registry may have grown)
        return flag_groups()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The search flags, one per field of `search/settings.SearchSettings`, as the
# subcommands that search (summarize, serve) list them in their `--help`.
SEARCH_HELP = (
    "beam_size",
    "min_dec_steps",
    "max_dec_steps",
    "trigram_blocking",
    "length_penalty",
    "full_final_dist",
    "block_unk",
    "feature_weights",
    "namas_features",
)

USAGE = """\
pointer-generator: train, evaluate and decode pointer-generator summarizers
(See et al. 2017), the original's run_summarization.py for TensorFlow 2.

Usage:
  pointer-generator --mode=train|eval|decode --log_root=DIR --exp_name=NAME [flags]
  pointer-generator summarize [flags] [FILE ...]   summaries of your own text
  pointer-generator quickstart [--out_dir=DIR]     the whole loop on a toy corpus
  pointer-generator serve [flags]                  an HTTP server and page for a model
  pointer-generator export --export_dir=DIR        a SavedModel (raw text in, summaries out)
  pointer-generator tune_features [flags]          ABS+'s feature weights by MERT
  pointer-generator SUBCOMMAND --help              help of a subcommand

An experiment remembers its model settings and vocabulary when it is first trained
(<log_root>/<exp_name>/settings.json): later commands on it need only --mode,
--log_root, --exp_name and --data_path.
"""

EXAMPLE = """\
Example (the paper's model on CNN/Daily Mail):
  pointer-generator --mode=train --data_path='finished_files/chunked/train_*' \\
      --vocab_path=finished_files/vocab --log_root=logs --exp_name=pgen
  pointer-generator --mode=decode --single_pass --data_path='finished_files/chunked/test_*' \\
      --log_root=logs --exp_name=pgen
"""


def _describe(flag) -> str:
    default = flag.default
    if isinstance(default, bool):
        default = int(default)
    shown = "" if default in ("", None) else f" (default: {default})"
    return f"  --{flag.name}: {flag.help}{shown}"


def flag_lines(fv, groups: dict) -> list[str]:
    """`<group> flags:` and one line per flag (name, help, default), for each group."""
    lines = []
    for title, names in groups.items():
        lines.append(f"{title} flags:")
        lines += [_describe(fv[name]) for name in names if name in fv]
        lines.append("")
    return lines


def help_text(fv) -> str:
    """The help page of the main command: usage, flags by group, example."""
    return "\n".join([USAGE, *flag_lines(fv, flag_groups()), EXAMPLE])


HELP_ARGS = ("-h", "--help", "-help", "--helpshort", "-?")
FULL_HELP_ARGS = ("--helpfull", "-helpfull")


def wants_help(argv: list[str]) -> str | None:
    """ "full" or "short" when the arguments ask for help (before anything else runs)."""
    if any(a in FULL_HELP_ARGS for a in argv):
        return "full"
    if any(a in HELP_ARGS for a in argv):
        return "short"
    return None
