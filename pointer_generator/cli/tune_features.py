"""`pointer-generator tune_features`: ABS+'s feature weights by MERT on a development set.

    pointer-generator tune_features --log_root=L --exp_name=E \\
        --data_path='finished/val.bin' --weights_out=abs_plus.txt \\
        [--objective=rouge1_recall|rouge1_f|bleu4] [--beam_size=50] [--block_unk] \\
        [--feature_weights=start.txt] [--namas_features] [--mert_iterations=5]
        [--mert_keep=best_decoded|last]

Each round decodes every example of --data_path with the current weights and keeps each
example's final beam (its n-best list, merged with the earlier rounds'); then MERT
(`evaluation/mert.py`) moves the unigram, bigram, trigram and out-of-order weights, one
coordinate at a time from the current and from random points, to the best corpus
objective the n-best lists allow. The model's weight stays 1 and length's 0, and the
out-of-order weight stays <= 0 (NAMAS's tuning/params.txt). It stops after
--mert_iterations rounds, or earlier when a round finds no new hypothesis, and writes
the weights whose own decode scored best (--mert_keep=best_decoded; the last round's
weights, as Z-MERT, with --mert_keep=last). The result is a weight file for
`--feature_weights` in decode and summarize.

The objective reads the examples' abstracts as references (lower-cased tokens), and the
summaries' tokens without [STOP]; ROUGE-1 recall here does no stemming (ROUGE-1.5.5's
-m does): score the tuned decode with ROUGE-1.5.5 itself.
"""

from __future__ import annotations

from pointer_generator.cli.family_flags import family_registry
from pointer_generator.errors import FlagError
from pointer_generator.runtime import staging
from pointer_generator.runtime.progress import status


def _check(fv) -> None:
    if not fv.log_root or not fv.exp_name:
        raise FlagError("tune_features needs --log_root and --exp_name of a trained experiment")
    if not fv.weights_out:
        raise FlagError("tune_features needs --weights_out (where the tuned weights go)")
    registry = family_registry()
    family = registry.get(fv.model)
    if "features" not in family.search_options():
        having = [f.name for f in registry.all_families() if "features" in f.search_options()]
        raise FlagError(
            f"tune_features tunes ABS+'s features for --model={'|'.join(having)}; this "
            f"experiment is --model={fv.model} ({family.summary}), whose search has none"
        )
    staging.check_new_file(fv.weights_out, "weights_out")


def main(argv: list[str]) -> int:
    from pointer_generator.cli import configs, console, stored_settings
    from pointer_generator.cli import flags as flags_lib
    from pointer_generator.cli.flag_checks import apply_model_family, validate
    from pointer_generator.cli.help import wants_help

    fv = flags_lib.FLAGS
    if wants_help(argv):
        print(__doc__.strip())
        return 0
    flags_lib.parse_subcommand("tune_features", argv)
    console.setup_logging()
    exp = stored_settings.require_experiment(fv, "tune_features")
    # The experiment's settings and its saved search, as summarize and export read them
    # (one resolver).
    stored_settings.apply(fv, "decode", saved_search=True)
    apply_model_family(fv)
    _check(fv)
    fv.mode, fv.single_pass = "decode", True
    validate(fv)
    console.import_tensorflow()
    from pointer_generator.decoding.feature_tuning import TuningConfig, tune
    from pointer_generator.search.extractive_features import format_weights
    from pointer_generator.summarizing.trained import open_trained

    trained = open_trained(exp.root, configs.hparams(fv), fv.vocab_path)
    config = TuningConfig(
        data_path=fv.data_path,
        objective=fv.objective,
        objective_bytes=fv.objective_bytes,
        iterations=fv.mert_iterations,
        keep=fv.mert_keep,
        random_starts=fv.random_starts,
        decode_batch_size=fv.decode_batch_size,
    )
    weights, value = tune(trained, configs.search_settings(fv), config)
    header = (
        f"# ABS+ feature weights: MERT ({fv.objective}) on {fv.data_path}\n"
        f"# model {trained.checkpoint}; {fv.objective} {value:.4f} on the n-best lists"
        + (" after its decode" if fv.mert_keep == "best_decoded" else "")
        + "\n"
    )
    staging.write_new_file(fv.weights_out, header + format_weights(weights), "weights_out")
    status(f"Wrote {fv.weights_out}:")  # then the weights, as they are in the file
    print(format_weights(weights), end="", flush=True)
    return 0


if __name__ == "__main__":  # the same as `pointer-generator tune_features`
    import sys

    from pointer_generator.cli.entry import run

    run([sys.argv[0], "tune_features", *sys.argv[1:]])
