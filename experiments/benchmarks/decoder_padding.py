"""The decoder steps training pads, and what decoder length buckets would save (issue 46's
first candidate), measured on the batches training reads.

    python -m experiments.benchmarks.decoder_padding [--batches 400] [--buckets 2 4 8]

Every training batch's decoder runs max_dec_steps steps, as the original's did; steps past
a summary's end are masked out of the loss. A batch needs only as many as its longest
summary (its largest `dec_lens`, capped at max_dec_steps). This reads `--batches` batches
of the real training input pipeline (`make_dataset(..., "train")`: its shuffling and its
sorting by article length, spec 3.3) at the paper's sizes (batch 16, 400 / 100 tokens) and
reports the mean longest summary of a batch, the share of batches that need every
max_dec_steps, and for each count of evenly spaced decoder buckets
(`input_pipeline.bucket_lengths`, as the article lengths are bucketed) the mean length a
batch would be padded to and the decoder steps that saves. A training step's time grows
with its decoder steps only in part (the encoder's does not), so the saving in decoder
steps is an upper bound on the saving of a step. The pipeline groups batches by article
length (spec 3.3), not summary length; the mean summary length gives the ceiling of
grouping by summary length instead. What that grouping would cost is weighed on the same
batches: each pool of BUCKET_CACHE_BATCHES batches (the examples the pipeline sorts
together) is sorted again in three ways, by article length (the pipeline's order), by
summary length, and by article length bucket then summary length, and cut into batches;
for each, the mean encoder width a batch pads to (the encoder's length buckets) and the
mean decoder length (each batch's longest summary, and with decoder buckets). It changes
which examples train together, which this does not weigh.
"""

from __future__ import annotations

import statistics
import tempfile

from experiments.benchmarks import common
from pointer_generator.cli import arg_types


def padding_figures(longest: list[int], max_dec_steps: int, buckets: int) -> dict:
    """For batches whose longest summaries are `longest` (each <= max_dec_steps): the mean
    length they are padded to with `buckets` evenly spaced decoder lengths (1: all to
    max_dec_steps, the original's), and the share of decoder steps that saves against
    padding every batch to max_dec_steps."""
    from pointer_generator.data.input_pipeline import bucket_lengths

    lengths = bucket_lengths(max_dec_steps, buckets)
    padded = [min(n for n in lengths if n >= m) for m in longest]
    mean = statistics.fmean(padded)
    return {"lengths": lengths, "mean_padded": mean, "saved": 1.0 - mean / max_dec_steps}


def batch_lengths(pattern: str, vocab, hps, batches: int) -> list[tuple[list, list]]:
    """The (`enc_lens`, `dec_lens`) of each of the first `batches` training batches."""
    from pointer_generator.data import input_pipeline

    ds = input_pipeline.make_dataset(pattern, vocab, hps, "train", single_pass=False)
    return [
        ([int(n) for n in b["enc_lens"].numpy()], [int(n) for n in b["dec_lens"].numpy()])
        for b in ds.take(batches)
    ]


def _padded(longest: int, lengths: list[int]) -> int:
    """The smallest of `lengths` (ascending, the last the maximum) that holds `longest`."""
    return min(n for n in lengths if n >= longest)


# How a pool's examples may be ordered before it is cut into batches: a sort key of
# (article length, summary length, the article's encoder bucket).
ORDERINGS = {
    "articles": lambda enc, dec, bucket: enc,  # the pipeline's (spec 3.3)
    "summaries": lambda enc, dec, bucket: dec,
    "article_bucket_then_summaries": lambda enc, dec, bucket: (bucket, dec),
}


def grouping_figures(
    pools: list[list[tuple[int, int]]],
    batch_size: int,
    enc_lengths: list[int],
    max_dec_steps: int,
    dec_buckets: int,
) -> dict:
    """For pools of (article length, summary length) examples: each pool sorted (stably)
    by each of ORDERINGS and cut into batches of `batch_size` (a last partial batch
    dropped, as the pipeline drops a partial pool's). Per ordering: the mean encoder width
    (each batch's longest article padded up to the smallest of `enc_lengths`), the mean
    longest summary, and the mean decoder length with `dec_buckets` evenly spaced
    lengths (`bucket_lengths`)."""
    from pointer_generator.data.input_pipeline import bucket_lengths

    dec_lengths = bucket_lengths(max_dec_steps, dec_buckets)
    figures = {}
    for name, key in ORDERINGS.items():
        enc_widths, longest = [], []
        for pool in pools:
            ordered = sorted(pool, key=lambda e: key(e[0], e[1], _padded(e[0], enc_lengths)))
            for start in range(0, len(ordered) - batch_size + 1, batch_size):
                batch = ordered[start : start + batch_size]
                enc_widths.append(_padded(max(e for e, _ in batch), enc_lengths))
                longest.append(max(d for _, d in batch))
        figures[name] = {
            "mean_encoder_width": statistics.fmean(enc_widths),
            "mean_longest_summary": statistics.fmean(longest),
            f"mean_decoder_length_{dec_buckets}_buckets": statistics.fmean(
                _padded(m, dec_lengths) for m in longest
            ),
        }
    return figures


def main(argv=None) -> int:
    p = common.argument_parser(__doc__, __spec__)
    common.add_data_arguments(p)
    p.add_argument("--batch_size", type=arg_types.positive_int, default=16)
    p.add_argument("--max_dec_steps", type=arg_types.positive_int, default=100)
    p.add_argument("--batches", type=arg_types.positive_int, default=400)
    p.add_argument("--buckets", type=arg_types.positive_int, nargs="+", default=[2, 4, 8])
    p.add_argument(
        "--grouping_buckets",
        type=arg_types.positive_int,
        default=8,
        help="decoder buckets of the grouping table",
    )
    p.add_argument(
        "--out_json",
        default=None,
        help="default: experiments/results/decoder_padding_<hostname>.json",
    )
    args = p.parse_args(argv)
    if common.data_missing(args, check_data_path=True):
        return 0
    common.import_tensorflow()
    from experiments.benchmarks.pipeline import _write_chunks
    from pointer_generator.data import input_pipeline
    from pointer_generator.data.vocab import Vocab
    from pointer_generator.hparams import HParams

    hps = HParams(batch_size=args.batch_size, max_enc_steps=400, max_dec_steps=args.max_dec_steps)
    vocab = Vocab(args.vocab_path, args.vocab_size)
    with tempfile.TemporaryDirectory() as tmp:
        pattern = args.data_path
        if pattern.endswith(".jsonl.gz"):
            pattern = _write_chunks(pattern, tmp)
        both = batch_lengths(pattern, vocab, hps, args.batches)
    lengths = [dec for _, dec in both]
    longest = [max(b) for b in lengths]
    mean_length = statistics.fmean(n for b in lengths for n in b)
    full = sum(m == args.max_dec_steps for m in longest) / len(longest)
    figures = {
        "batches": len(longest),
        "mean_longest_summary": round(statistics.fmean(longest), 2),
        "share_of_batches_needing_all_steps": round(full, 3),
        "saved_if_each_batch_stopped_at_its_longest": round(
            1.0 - statistics.fmean(longest) / args.max_dec_steps, 3
        ),
        # Batches grouped by summary length (the pipeline groups by article length) could
        # come close to every example stopping at its own summary's end: the ceiling.
        "mean_summary_length": round(mean_length, 2),
        "saved_if_each_example_stopped_at_its_own": round(
            1.0 - mean_length / args.max_dec_steps, 3
        ),
    }
    print(
        f"{len(longest)} training batches of {args.batch_size} ({common.machine_description()}"
        f"; the data decides these figures, not the host): the longest summary of a batch "
        f"{figures['mean_longest_summary']:.1f} steps on average of {args.max_dec_steps}; "
        f"{full:.1%} of the batches need all {args.max_dec_steps}"
    )
    print("| decoder buckets | lengths | mean padded length | decoder steps saved |")
    print("|---|---|---|---|")
    for n in sorted(set(args.buckets) | {1}):
        f = padding_figures(longest, args.max_dec_steps, n)
        figures[f"buckets_{n}_mean_padded"] = round(f["mean_padded"], 2)
        figures[f"buckets_{n}_saved"] = round(f["saved"], 4)
        lengths = ", ".join(map(str, f["lengths"]))
        print(f"| {n} | {lengths} | {f['mean_padded']:.1f} | {f['saved']:.1%} |")
    print(
        "each batch stopped at its own longest summary: "
        f"{figures['saved_if_each_batch_stopped_at_its_longest']:.1%} of the decoder steps; "
        f"each example at its own summary's end (batches grouped by summary length, which "
        f"this pipeline does not do: it groups by article length): "
        f"{figures['saved_if_each_example_stopped_at_its_own']:.1%} (summaries "
        f"{mean_length:.1f} steps on average)"
    )
    per_pool = input_pipeline.BUCKET_CACHE_BATCHES
    pools = [
        [pair for enc, dec in both[i : i + per_pool] for pair in zip(enc, dec, strict=True)]
        for i in range(0, len(both), per_pool)
    ]
    groups = grouping_figures(
        pools,
        args.batch_size,
        input_pipeline.padded_lengths(hps),
        args.max_dec_steps,
        args.grouping_buckets,
    )
    base = groups["articles"]
    print(
        f"pools of {per_pool} batches sorted again ({args.grouping_buckets} decoder buckets; "
        "the encoder's length buckets as the pipeline pads):"
    )
    print(
        "| batches grouped by | mean encoder width | mean longest summary | "
        f"mean decoder length, {args.grouping_buckets} buckets | encoder positions | "
        "decoder steps |"
    )
    print("|---|---|---|---|---|---|")
    dec_key = f"mean_decoder_length_{args.grouping_buckets}_buckets"
    for name, g in groups.items():
        for k, v in g.items():
            figures[f"grouped_by_{name}_{k}"] = round(v, 2)
        enc_change = g["mean_encoder_width"] / base["mean_encoder_width"] - 1.0
        dec_change = g[dec_key] / args.max_dec_steps - 1.0
        print(
            f"| {name.replace('_', ' ')} | {g['mean_encoder_width']:.1f} | "
            f"{g['mean_longest_summary']:.1f} | {g[dec_key]:.1f} | {enc_change:+.1%} | "
            f"{dec_change:+.1%} |"
        )
    print(
        "(encoder positions against the pipeline's grouping; decoder steps against "
        f"padding every batch to {args.max_dec_steps})"
    )
    config = (
        f"batch {args.batch_size}, max_dec_steps {args.max_dec_steps}, {len(longest)} "
        f"training batches of {args.data_path}"
    )
    common.record("decoder_padding", config, figures, args.out_json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
