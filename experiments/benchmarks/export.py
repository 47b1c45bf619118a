"""The exported SavedModel beside the Python summarizer, side by side in one run: articles/s
of each on the same raw texts, how often their summaries are identical (and, where they
differ, the largest gap between the two summaries' scores: a rounding-level gap means two
tied candidates swapped), and how often the in-graph tokenizer reads real stories as the
Python one does.

    python -m experiments.benchmarks.export [--log_root L --exp_name E] [--articles 64]

Without an experiment it trains a toy model briefly on the quick-start's toy corpus (as
the serve benchmark does; not the quick-start's own settings). The tokenizer figures need
../shared/data/raw_train_sample_100.csv (skipped without it). The SavedModel runs in this
process after `tf.saved_model.load`.
"""

from __future__ import annotations

import csv
import os
import sys
import tempfile
import time

from experiments.benchmarks import common
from experiments.benchmarks.serve import _articles, _toy_experiment
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types


def tokenizer_agreement(path: str) -> dict:
    """Articles (and their first 400 tokens) the in-graph tokenizer reads as the Python
    pipeline does, and the tokens that differ, over the stories of a raw CSV."""
    import tensorflow as tf

    from pointer_generator.data.graph_tokenizer import graph_article
    from pointer_generator.data.stories import texts_to_examples

    with open(path, encoding="utf-8") as f:
        texts = [row["article"] for row in csv.DictReader(f)]
    want = [a for a, _ in texts_to_examples(texts)]
    got = [a.decode() for a in graph_article(tf.constant(texts)).numpy()]
    pairs = list(zip(want, got, strict=True))
    return {
        "stories": len(texts),
        "identical": sum(a == b for a, b in pairs),
        "first_400_identical": sum(a.split()[:400] == b.split()[:400] for a, b in pairs),
        "tokens": sum(len(a.split()) for a in want),
    }


@exit_codes.command
def main(argv=None) -> int:
    p = common.argument_parser(__doc__, __spec__)
    p.add_argument("--log_root", default=None)
    p.add_argument("--exp_name", default=None)
    p.add_argument("--data_path", default=None, help="articles to summarize (a .bin file)")
    p.add_argument("--articles", type=arg_types.positive_int, default=64)
    p.add_argument("--batch", type=arg_types.positive_int, default=16)
    p.add_argument("--beam_size", type=arg_types.positive_int, default=4)
    p.add_argument("--train_steps", type=arg_types.positive_int, default=200)
    p.add_argument("--out_json", default=None)
    args = p.parse_args(argv)
    tf = common.import_tensorflow()
    import pointer_generator as pg
    from pointer_generator.serving.saved_model import export_saved_model

    figures = {}
    with tempfile.TemporaryDirectory() as work:
        if args.log_root:
            log_root, exp, data = args.log_root, args.exp_name, args.data_path
        else:
            log_root, exp, data = _toy_experiment(work, args.train_steps)
        texts = _articles(data, args.articles)
        # The search as `pointer-generator export` builds it (TensorFlow's executor, not
        # one XLA computation), so that the summaries can be compared bit for bit.
        summarizer = pg.Summarizer.from_experiment(
            log_root, exp, beam_size=args.beam_size, batch_size=args.batch, jit_compile=False
        )
        export_dir = os.path.join(work, "exported")
        export_saved_model(summarizer.decoder, export_dir, {})
        serve = tf.saved_model.load(export_dir).signatures["serving_default"]
        batches = [texts[i : i + args.batch] for i in range(0, len(texts), args.batch)]
        summarizer.summarize(batches[0])  # compile both before timing
        serve(texts=tf.constant(batches[0]))
        start = time.perf_counter()
        python_res = [r for b in batches for r in summarizer.summarize(b)]
        python_s = time.perf_counter() - start
        start = time.perf_counter()
        graph_out, graph_scores = [], []
        for b in batches:
            out = serve(texts=tf.constant(b))
            for row, n in zip(out["tokens"].numpy(), out["num_tokens"].numpy(), strict=True):
                graph_out.append([t.decode() for t in row[:n]])
            graph_scores.extend(float(x) for x in out["scores"].numpy())
        graph_s = time.perf_counter() - start
    figures["python_articles_per_s"] = round(len(texts) / python_s, 2)
    figures["saved_model_articles_per_s"] = round(len(texts) / graph_s, 2)
    figures["saved_model_over_python"] = round(python_s / graph_s, 2)
    python_out = [r.tokens for r in python_res]
    figures["identical_summaries"] = (
        f"{sum(a == b for a, b in zip(python_out, graph_out, strict=True))}/{len(texts)}"
    )
    # Where the two differ, are they tied? The graphs are the same search run by two
    # executors whose kernels may round differently (oneDNN's fused ops in one, not the
    # other): a barely trained model's near-equal candidates can then swap.
    differ = [
        abs(r.score - g)
        for r, g, a, b in zip(python_res, graph_scores, python_out, graph_out, strict=True)
        if a != b
    ]
    figures["differing_score_gap_max"] = float(f"{max(differ, default=0.0):.3g}")
    raw = os.path.join(common.shared_data_dir() or "", "raw_train_sample_100.csv")
    if os.path.exists(raw):
        figures["tokenizer"] = tokenizer_agreement(raw)
    for key, value in figures.items():
        print(f"{key}: {value}", flush=True)
    config = (
        f"{'toy model (' + str(args.train_steps) + ' steps)' if not args.log_root else exp}, "
        f"beam {args.beam_size}, {args.articles} articles in batches of {args.batch}"
    )
    common.record("export", config, figures, args.out_json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
