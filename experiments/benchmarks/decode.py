"""Beam-search decoding throughput at the paper's test settings: batched vs one at a time.

    python -m experiments.benchmarks.decode [--batch_size 32] [--articles 64]

Settings of the paper's test decode: beam 4, max_enc_steps 400, max_dec_steps 120,
min_dec_steps 35, pointer-generator with coverage, vocabulary 50,000 from
../shared/data/vocab_200k, real CNN/DM articles from ../shared/data (single-pass decode
batches of distinct articles, in file order).

Weights: random (the initialisers; `--seed`) unless `--train_dir` or `--tf1_checkpoint`
gives trained ones. An untrained model practically never emits [STOP], so every article
runs the full 120 steps: the worst case (a trained model stops most summaries earlier).
`--stop_bias` raises the [STOP] logit to give untrained weights varied summary lengths
(the row says so). The figures report the average number of decoder steps per article.

Measured in one run, after a warm-up (tracing and compilation) of each:
  * batched: `BeamSearchDecoder.decode_batch` on `--articles` articles in batches
    of `--batch_size` (B articles x 4 beams per compiled step), with the top candidates
    of each step's final distribution (final_candidates.py; the default);
  * the same with the whole final distribution (`--full_final_dist`), alternating batch
    by batch, and how many summaries came out identical (random weights give nearly flat
    distributions, where float rounding can swap near-tied candidates); likewise the
    search that keeps finished articles and the pre-optimisation search;
  * one at a time, on `--single_articles` articles, twice (original_decode.py): the
    original's decoding as it ran (K encoder copies, its decode graph with W_h h_i
    recomputed at every step, top 2K in the step, the Python beam search; 2-3 s per
    article on its GPU) and the same Python search over this implementation's step (so
    that the ratio measures batching alone); and the batched search with one article
    per batch.
Figures: articles/s of each, the ratios, decoder steps per article, the vocabulary
projection's share (its FLOPs at this machine's matmul rate, measured in the same run:
the ceiling for a matmul-bound decoder), and the peak resident memory. Targets: >= 4
articles/s batched, >= 10x the original's one-article-at-a-time search.

The one-at-a-time searches compute 4 rows per step and are bound by per-step overheads
(Python, a compiled call, the whole [4, V_ext] distribution and its top-k), while the
batched search is bound by arithmetic: their ratio moves with the machine and its load
(see docs/performance.md). `--single_articles` more articles narrow the noise.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from experiments.benchmarks import common, flops, original_decode
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types

TARGET_ARTICLES_PER_S = 4.0
TARGET_SPEEDUP = 10.0


def _articles(data_path: str, vocab, hps, n: int, batch_size: int, tmp: str) -> list:
    """Decode-mode batches (distinct articles, file order) holding n articles in all."""
    from experiments.benchmarks.pipeline import _write_chunks
    from pointer_generator.data import input_pipeline

    pattern = data_path
    if pattern.endswith(".jsonl.gz"):
        pattern = _write_chunks(pattern, tmp)
    ds = input_pipeline.make_dataset(
        pattern, vocab, hps.replace(batch_size=batch_size), "decode", single_pass=True
    )
    return list(ds.take(max(1, n // batch_size)))


def _slice(batch: dict, i: int, j: int) -> dict:
    """Rows i:j of a decode batch, trimmed to their longest article."""
    import tensorflow as tf

    rows = {k: (v if v.shape.rank == 0 else v[i:j]) for k, v in batch.items()}
    n = int(tf.reduce_max(rows["enc_lens"]))
    for k in ("enc_batch", "enc_padding_mask", "enc_batch_extend_vocab"):
        rows[k] = rows[k][:, :n]
    return rows


def reference_search(model, vocab, hps):
    """The batched search over `reference_step` (the search as it decoded before the
    performance work), for comparison."""
    import tensorflow as tf

    from pointer_generator.search.beam_search import (
        batched_beam_search,
        tile_beams,
    )
    from pointer_generator.search.settings import SearchSettings

    settings = SearchSettings.from_hparams(hps)  # the original's: beam 4, min 35
    k = settings.beam_size
    step = original_decode.reference_step(model, hps)

    @tf.function(reduce_retracing=True)
    def search(enc_batch, enc_padding_mask, enc_batch_extend_vocab, max_art_oovs):
        enc = model.encode(enc_batch, enc_padding_mask)
        enc_k, ext_k = tile_beams(enc, k), tile_beams(enc_batch_extend_vocab, k)
        carry = tile_beams(original_decode.reference_carry(enc, enc_padding_mask), k)
        return batched_beam_search(
            lambda tokens, carry: step(enc_k, ext_k, max_art_oovs, tokens, carry),
            carry,
            batch_size=tf.shape(enc_batch)[0],
            **settings.search_keywords(vocab.size()),
            top_k=tf.math.top_k,
        )

    return lambda b: search(
        b["enc_batch"], b["enc_padding_mask"], b["enc_batch_extend_vocab"], b["max_art_oovs"]
    )


def _threads(args) -> str:
    parts = common.thread_settings(args)
    return ", " + ", ".join(parts) if parts else ""


def _parse(argv):
    p = common.argument_parser(__doc__, __spec__)
    common.add_data_arguments(p)
    p.add_argument(
        "--batch_size",
        type=arg_types.positive_int,
        default=32,
        help="articles per batched search (32 was the fastest of 16/32/64 here)",
    )
    p.add_argument(
        "--articles", type=arg_types.positive_int, default=64, help="articles decoded batched"
    )
    p.add_argument(
        "--single_articles",
        type=arg_types.positive_int,
        default=6,
        help="articles decoded one at a time (each way; the noisiest figure, "
        "so more than the 2-3 of earlier rows)",
    )
    p.add_argument(
        "--decode_attention", default="original", choices=("original", "train_consistent")
    )
    p.add_argument("--no_coverage", action="store_true")
    p.add_argument(
        "--mixed_precision",
        action="store_true",
        help="bfloat16 vocabulary projection (hps.mixed_precision; for GPUs/TPUs)",
    )
    p.add_argument("--xla", action="store_true", help="compile the whole search with XLA")
    p.add_argument(
        "--compare_full_dist",
        type=arg_types.non_negative_int,
        default=1,
        help="also time the batched search over the whole final distribution "
        "(--full_final_dist), alternating batch by batch",
    )
    p.add_argument(
        "--compare_plain_top_k",
        type=arg_types.non_negative_int,
        default=0,
        help="also time the batched search over the whole distribution with "
        "tf.math.top_k instead of top_k.chunked_top_k (alternating "
        "batch by batch)",
    )
    p.add_argument(
        "--compare_no_compaction",
        type=arg_types.non_negative_int,
        default=1,
        help="also time the batched search that keeps finished articles in the "
        "batch (min_compact_size=None), alternating batch by batch (only "
        "trained weights end articles early)",
    )
    p.add_argument(
        "--compare_reference",
        type=arg_types.non_negative_int,
        default=1,
        help="also run the pre-optimisation batched search (see reference_search)"
        " on the same batches, alternating with the current one",
    )
    p.add_argument("--train_dir", default="", help="load the newest checkpoint of this dir")
    p.add_argument("--tf1_checkpoint", default="", help="load an original TF1 checkpoint")
    p.add_argument(
        "--stop_bias",
        type=arg_types.finite_float,
        default=0.0,
        help="synthetic summary lengths: add this to the [STOP] logit (7.8 with "
        "untrained weights: summaries of 36 or 120 tokens), to see what "
        "dropping finished articles does without a trained model; the "
        "step's cost is unchanged",
    )
    p.add_argument("--seed", type=arg_types.non_negative_int, default=111)
    common.add_thread_arguments(p)
    p.add_argument("--matmul_seconds", type=arg_types.positive_float, default=2.0)
    p.add_argument(
        "--out_json", default=None, help="default: experiments/results/decode_<hostname>.json"
    )
    return p.parse_args(argv)


def _model_and_batches(args, tf):
    """(hps, vocab, model, its weights' description, batches) at the paper's settings."""
    from pointer_generator.data.vocab import STOP_ID, Vocab
    from pointer_generator.hparams import HParams
    from pointer_generator.models.pointer_generator import PointerGeneratorModel
    from pointer_generator.summarizing.trained import load_weights

    hps = HParams(
        batch_size=args.batch_size,
        max_enc_steps=400,
        max_dec_steps=120,  # the search: the original's beam 4, min 35
        pointer_gen=True,
        coverage=not args.no_coverage,
        decode_attention=args.decode_attention,
        seed=args.seed,
        mixed_precision=args.mixed_precision,
    )
    vocab = Vocab(args.vocab_path, args.vocab_size)
    with tempfile.TemporaryDirectory() as tmp:
        batches = _articles(args.data_path, vocab, hps, args.articles, args.batch_size, tmp)
    tf.keras.utils.set_random_seed(args.seed)
    model = PointerGeneratorModel(hps, vocab.size()).build_weights()
    weights = "random (untrained)"
    if args.train_dir or args.tf1_checkpoint:
        weights = load_weights(model, args.train_dir, args.tf1_checkpoint or None, wait=False)
    if args.stop_bias:
        bias = model.output_projection.bias
        bias.assign(tf.tensor_scatter_nd_add(bias, [[STOP_ID]], [args.stop_bias]))
        weights += f", [STOP] logit + {args.stop_bias:g}"
    return hps, vocab, model, weights, batches


def _alternatives(args, model, vocab, hps, tf) -> dict:
    """{figure name: decode(batch)} of the searches timed against the default one, batch
    by batch; a decode returns Summaries (compared with the default's) or None."""

    from pointer_generator.search.beam_decoder import BeamSearchDecoder
    from pointer_generator.search.settings import SearchSettings

    def decoder(full_final_dist=False, **kwargs):
        settings = SearchSettings.from_hparams(hps, full_final_dist=full_final_dist)
        return BeamSearchDecoder(
            model, vocab, hps, settings, jit_compile=args.xla, **kwargs
        ).decode_batch

    out = {}
    if args.compare_no_compaction:
        out["no_compaction"] = decoder(min_compact_size=None)
    if args.compare_full_dist:
        out["full_dist"] = decoder(full_final_dist=True)
    if args.compare_plain_top_k:
        out["plain_top_k"] = decoder(top_k=tf.math.top_k, full_final_dist=True)
    if args.compare_reference:
        search = reference_search(model, vocab, hps)

        def reference(batch):
            search(batch)["tokens"].numpy()  # waits for the result; no Summaries made

        out["reference"] = reference
    return out


# Alternatives that must give exactly the summaries of another (checked on every batch).
MUST_EQUAL = {"plain_top_k": "full_dist"}


def _time_batched(decode_batch, alternatives: dict, batches) -> dict:
    """Seconds of the default search and of each alternative, taken batch by batch in
    turn (this machine's speed drifts), after one warm-up batch each; summaries that
    differ from the default's are counted."""
    start = time.perf_counter()
    decode_batch(batches[0])
    timing = {
        "warmup_s": time.perf_counter() - start,
        "steps": 0,
        "longest": 0,
        "seconds": dict.fromkeys(["batched", *alternatives], 0.0),
        "identical": dict.fromkeys(alternatives, 0),
    }
    for fn in alternatives.values():
        fn(batches[0])
    for batch in batches:
        start = time.perf_counter()
        summaries = decode_batch(batch)
        timing["seconds"]["batched"] += time.perf_counter() - start
        timing["steps"] += sum(len(s.p_gens) for s in summaries)
        timing["longest"] += max(len(s.p_gens) for s in summaries) * len(summaries)
        outputs = {}
        for name, fn in alternatives.items():
            start = time.perf_counter()
            outputs[name] = other = fn(batch)
            timing["seconds"][name] += time.perf_counter() - start
            if other is not None:
                timing["identical"][name] += sum(
                    a.words == b.words for a, b in zip(other, summaries, strict=True)
                )
        for name, twin in MUST_EQUAL.items():
            if (
                name in outputs
                and twin in outputs
                and [s.words for s in outputs[name]] != [s.words for s in outputs[twin]]
            ):
                raise AssertionError(f"the {name} and {twin} searches differ")
    return timing


def _time_one_at_a_time(args, model, vocab, hps, decoder, batch) -> dict:
    """articles/s of the original's one-article decoding, of the same Python search over
    this implementation's step, and of the batched search with one article per batch."""
    singles = [_slice(batch, i, i + 1) for i in range(args.single_articles + 1)]
    rates = {}
    for name, original in (("original_single", True), ("single", False)):
        decode_one = original_decode.one_at_a_time(model, vocab, hps, original)
        decode_one(singles[0])  # warm-up
        start = time.perf_counter()
        steps = sum(len(decode_one(b).tokens) - 1 for b in singles[1:])
        rates[name] = args.single_articles / (time.perf_counter() - start)
        print(
            f"one at a time (Python beam search, "
            f"{'original decode graph' if original else 'this step function'}): "
            f"{rates[name]:.3f} articles/s, {steps / args.single_articles:.1f} "
            "steps/article",
            flush=True,
        )
    decoder.decode_batch(singles[0])  # warm-up (new shapes)
    start = time.perf_counter()
    for b in singles[1:]:
        decoder.decode_batch(b)
    rates["batch1"] = args.single_articles / (time.perf_counter() - start)
    print(f"batched search, one article per batch: {rates['batch1']:.3f} articles/s", flush=True)
    return rates


def _batched_figures(timing: dict, n_articles: int) -> dict:
    """articles/s and ratios of the batched searches (figure names as in earlier rows)."""
    seconds, base = timing["seconds"], timing["seconds"]["batched"]
    figures = {"batched_articles_per_s": round(n_articles / base, 3)}
    for name, s in seconds.items():
        if name == "batched":
            continue
        figures[f"{name}_articles_per_s"] = round(n_articles / s, 3)
        if name != "plain_top_k":
            figures[f"speedup_vs_{name}"] = round(s / base, 2)
        if name in ("no_compaction", "full_dist"):
            figures[f"identical_summaries_vs_{name}"] = f"{timing['identical'][name]}/{n_articles}"
    if "no_compaction" in seconds:
        figures["longest_in_batch_steps_per_article"] = round(timing["longest"] / n_articles, 1)
    return figures


@exit_codes.command
def main(argv=None) -> int:
    args = _parse(argv)
    if common.data_missing(args):
        return 0
    tf = common.import_tensorflow(args)
    from pointer_generator.search.beam_decoder import BeamSearchDecoder

    hps, vocab, model, weights, batches = _model_and_batches(args, tf)
    n_articles = sum(int(b["enc_lens"].shape[0]) for b in batches)
    print(
        f"{n_articles} articles in {len(batches)} batches; encoder lengths "
        f"{[int(b['enc_batch'].shape[1]) for b in batches]}",
        flush=True,
    )
    print(model.parameter_summary(), f"- weights: {weights}", flush=True)
    decoder = BeamSearchDecoder(model, vocab, hps, jit_compile=args.xla)
    rss_model = common.peak_rss_mib()

    timing = _time_batched(
        decoder.decode_batch, _alternatives(args, model, vocab, hps, tf), batches
    )
    load_batched = os.getloadavg()[0]
    figures = _batched_figures(timing, n_articles)
    batched_rate, steps = figures["batched_articles_per_s"], timing["steps"]
    print(
        f"batched (B={args.batch_size}): {batched_rate:.3f} articles/s, "
        f"{steps / n_articles:.1f} steps/article (warm-up {timing['warmup_s']:.1f} s); "
        + ", ".join(f"{k}: {v}" for k, v in figures.items() if k != "batched_articles_per_s"),
        flush=True,
    )
    rss_batched = common.peak_rss_mib()

    rates = _time_one_at_a_time(args, model, vocab, hps, decoder, batches[0])
    original_rate, single_rate = rates["original_single"], rates["single"]
    load = (load_batched + os.getloadavg()[0]) / 2
    rate = flops.measured_matmul_rate(args.matmul_seconds)
    vocab_flop_per_article = (
        2.0 * hps.hidden_dim * vocab.size() * decoder.settings.beam_size * steps / n_articles
    )
    ceiling = rate / vocab_flop_per_article
    figures = {
        "batched_articles_per_s": batched_rate,
        "original_single_articles_per_s": round(original_rate, 3),
        "speedup_vs_original_single": round(batched_rate / original_rate, 1),
        "single_articles_per_s": round(single_rate, 3),
        "speedup_vs_single": round(batched_rate / single_rate, 1),
        "batch1_articles_per_s": round(rates["batch1"], 3),
        "speedup_vs_batch1": round(batched_rate / rates["batch1"], 1),
        "steps_per_article": round(steps / n_articles, 1),
        **figures,
        "matmul_gflop_per_s": round(rate / 1e9, 2),
        "vocab_matmul_ceiling_articles_per_s": round(ceiling, 2),
        "share_of_ceiling": round(batched_rate / ceiling, 3),
        "warmup_s": round(timing["warmup_s"], 1),
        "rss_after_model_mib": round(rss_model, 1),
        "rss_after_batched_mib": round(rss_batched, 1),
        "load_avg_1min": round(load, 2),
    }
    config = (
        f"beam {decoder.settings.beam_size}, enc {hps.max_enc_steps}, dec "
        f"{hps.max_dec_steps} (min {decoder.settings.min_dec_steps}), vocab {vocab.size()}, pointer"
        f"{' + coverage' if hps.coverage else ''}, decode_attention "
        f"{hps.decode_attention}{', whole-search XLA' if args.xla else ''}"
        f"{', bf16 vocabulary projection' if args.mixed_precision else ''}"
        f"{_threads(args)}; weights "
        f"{weights}; batched: {n_articles} articles in batches of {args.batch_size}; "
        f"one at a time: {args.single_articles} articles"
    )
    common.record("decode", config, figures, args.out_json)
    print(
        f"decoding: {batched_rate:.2f} articles/s batched "
        f"({'meets' if batched_rate >= TARGET_ARTICLES_PER_S else 'MISSES'} the "
        f"{TARGET_ARTICLES_PER_S:g}/s target), {batched_rate / original_rate:.1f}x the "
        f"original's one-at-a-time decoding "
        f"({'meets' if batched_rate / original_rate >= TARGET_SPEEDUP else 'MISSES'} the "
        f"{TARGET_SPEEDUP:g}x target); batching alone (this step function one article at "
        f"a time): {batched_rate / single_rate:.1f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
