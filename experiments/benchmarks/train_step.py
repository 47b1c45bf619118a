"""Training throughput at the paper configuration, against this machine's matmul rate.

    python -m experiments.benchmarks.train_step [--impl fused|reference|both] [--steps N]

Paper configuration: batch 16, max_enc_steps 400, max_dec_steps 100, vocabulary 50,000
from ../shared/data/vocab_200k, hidden 256, embedding 128, pointer and coverage on. Real
batches: the CNN/DM sample in ../shared/data is written as `.bin` chunks to a temporary
directory and read by the train-mode input pipeline (length-bucketed, so a few batches
are shorter than 400 tokens); `--batches` of them are cached and cycled through (a
`tf.data` iterator, as the trainer reads the pipeline's).

Each step is the trainer's full step (`pointer_generator.training.train.Trainer.train_step`:
forward, backward, gradient clipping, Adagrad update). One pass over the cached batches
warms up (tracing, and XLA compiling the recurrent loops once per batch shape); then
`--steps` steps are timed in rounds, each followed by a measurement of this machine's
dense float32 matmul rate (`flops.measured_matmul_rate`), so that both see the same load.

Figures: steps/s, examples/s, the analytical FLOPs per step (`flops.train_step_flops`,
matrix products only, backward = 2x forward), achieved FLOP/s, the matmul rate and the
ratio achieved/possible (target >= 0.40), the time of a first step on a new batch shape
(XLA compilation), and the peak resident memory (target < 4 GiB).

`--impl both` alternates the fused recurrence (`hps.fused_recurrence`, the default) and
the reference implementation (Keras LSTM layers, autodiff'd while loop) step by step on
the same batches and prints the speed ratio; memory is then that of both models.

`--decoder_buckets N` (N > 1) alternates, step by step, the fused recurrence on the
original's batches (summaries padded to max_dec_steps, grouped by article length) and on
`--decoder_buckets=N` batches (grouped by article bucket, then summary length; each
padded to a summary length bucket), `--batches` of each read from the same data, and
prints the speed ratio, the two sets' mean decoder lengths beside it.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from experiments.benchmarks import common, flops
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types

TARGET_RATIO = 0.40
TARGET_PEAK_MIB = 4096.0


def _batches(data_path: str, vocab, hps, n: int, tmp: str) -> list:
    """n real train-mode batches (model inputs only), as eager tensors."""
    from experiments.benchmarks.pipeline import _write_chunks
    from pointer_generator.data import input_pipeline

    pattern = data_path
    if pattern.endswith(".jsonl.gz"):
        pattern = _write_chunks(pattern, tmp)
    ds = input_pipeline.make_dataset(pattern, vocab, hps, "train", single_pass=False)
    return list(ds.map(input_pipeline.model_inputs).take(n))


def _batch_flops(batch, hps, vocab_size: int) -> float:
    b, t = batch["enc_batch"].shape
    return flops.train_step_flops(
        batch=b,
        enc_len=t,
        dec_len=batch["dec_batch"].shape[1],
        vocab=vocab_size,
        hidden=hps.hidden_dim,
        emb=hps.emb_dim,
        pointer_gen=hps.pointer_gen,
    )


class _Cycle:
    """The cached batches, endlessly, as the trainer's step takes them: a `tf.data`
    iterator (`next()` inside the traced step reads the next element). `i` counts the
    batches taken, so `batches[i % len(batches)]` is the one the next step reads.

    A Python iterator would not do: tracing the step calls its `next()` once and keeps
    that first batch as a constant, so every later step would train on it again (what
    this benchmark did before 2026-11-29: its figures were of the first batch alone).
    """

    def __init__(self, batches):
        import tensorflow as tf

        self.i, self.batches = 0, batches
        ds = tf.data.Dataset.from_tensors(batches[0])
        for b in batches[1:]:
            ds = ds.concatenate(tf.data.Dataset.from_tensors(b))
        self.iterator = iter(ds.repeat())

    def take(self, trainer) -> dict:
        """One step of `trainer` on the next batch: its metrics."""
        metrics = trainer.train_step(self.iterator)
        self.i += 1
        return metrics


def _batch_sets(args, vocab, hps_of: dict) -> dict:
    """{impl: its `--batches` real batches}: one set per padding, shared by the
    implementations that pad alike."""
    batches_of = {}
    with tempfile.TemporaryDirectory() as tmp:
        for impl, hps in hps_of.items():
            same = [i for i in batches_of if hps_of[i].decoder_buckets == hps.decoder_buckets]
            batches_of[impl] = (
                batches_of[same[0]]
                if same
                else _batches(args.data_path, vocab, hps, args.batches, tmp)
            )
    return batches_of


def _threads(args) -> str:
    parts = common.thread_settings(args)
    return " (" + ", ".join(parts) + ")" if parts else ""


def _warm_up(impls, step, batches_of, iters) -> dict[str, list[float]]:
    """Every cached batch once per implementation (one trace / XLA compilation per shape);
    returns the seconds of each implementation's first step at each new shape."""
    first_shape_s = {impl: [] for impl in impls}
    for impl in impls:
        seen = set()
        batches = batches_of[impl]
        for _ in range(len(batches)):
            b = batches[iters[impl].i % len(batches)]
            shape = (int(b["enc_batch"].shape[1]), int(b["dec_batch"].shape[1]))
            dt, _ = step(impl)
            if shape not in seen:
                first_shape_s[impl].append(dt)
                seen.add(shape)
            print(
                f"warm-up {impl}: {dt:.2f} s (enc_len {shape[0]}, dec_len {shape[1]})", flush=True
            )
    return first_shape_s


def _timed_rounds(impls, step, args) -> tuple[dict, list[float], list[float]]:
    """({impl: [seconds, flops, steps]}, matmul rates, load averages) of `args.rounds`
    rounds, the implementations alternating step by step, a matmul measurement after
    each round."""
    timed = {impl: [0.0, 0.0, 0] for impl in impls}
    rates, loads = [], []
    per_round = max(1, args.steps // args.rounds)
    for r in range(args.rounds):
        for _ in range(per_round):
            for impl in impls:
                dt, fl = step(impl)
                timed[impl][0] += dt
                timed[impl][1] += fl
                timed[impl][2] += 1
        loads.append(os.getloadavg()[0])
        rates.append(flops.measured_matmul_rate(args.matmul_seconds))
        msg = ", ".join(f"{impl} {timed[impl][2] / timed[impl][0]:.3f} steps/s" for impl in impls)
        print(
            f"round {r + 1}/{args.rounds}: {msg}; matmul {rates[-1] / 1e9:.1f} GFLOP/s, "
            f"load {loads[-1]:.2f}",
            flush=True,
        )
    return timed, rates, loads


@exit_codes.command
def main(argv=None) -> int:
    p = common.argument_parser(__doc__, __spec__)
    common.add_data_arguments(p)
    p.add_argument("--batch_size", type=arg_types.positive_int, default=16)
    p.add_argument("--max_enc_steps", type=arg_types.positive_int, default=400)
    p.add_argument("--max_dec_steps", type=arg_types.positive_int, default=100)
    p.add_argument("--no_coverage", action="store_true", help="pointer-generator only")
    p.add_argument(
        "--mixed_precision",
        action="store_true",
        help="bfloat16 vocabulary projection (hps.mixed_precision; for GPUs/TPUs)",
    )
    p.add_argument("--impl", choices=("fused", "reference", "both"), default="fused")
    p.add_argument(
        "--decoder_buckets",
        type=arg_types.positive_int,
        default=1,
        help="N > 1: the original's batches against --decoder_buckets=N batches, alternating",
    )
    p.add_argument(
        "--xla",
        action="store_true",
        help="compile the whole forward/backward pass with XLA (train --xla)",
    )
    p.add_argument(
        "--batches", type=arg_types.positive_int, default=8, help="real batches cached and cycled"
    )
    p.add_argument(
        "--steps", type=arg_types.positive_int, default=16, help="timed steps (per implementation)"
    )
    p.add_argument(
        "--rounds",
        type=arg_types.positive_int,
        default=4,
        help="timed steps are split in this many rounds, each followed by a "
        "matmul-rate measurement",
    )
    p.add_argument("--matmul_seconds", type=arg_types.positive_float, default=1.5)
    common.add_thread_arguments(p)
    p.add_argument(
        "--out_json", default=None, help="default: experiments/results/train_step_<hostname>.json"
    )
    args = p.parse_args(argv)
    if common.data_missing(args):
        return 0

    common.import_tensorflow(args)

    from pointer_generator.data.vocab import Vocab
    from pointer_generator.hparams import HParams
    from pointer_generator.training.train import Trainer

    hps = HParams(
        batch_size=args.batch_size,
        max_enc_steps=args.max_enc_steps,
        max_dec_steps=args.max_dec_steps,
        pointer_gen=True,
        coverage=not args.no_coverage,
        mixed_precision=args.mixed_precision,
    )
    vocab = Vocab(args.vocab_path, args.vocab_size)
    buckets = args.decoder_buckets > 1
    if buckets and args.impl != "fused":
        p.error("--decoder_buckets compares the fused recurrence only (--impl fused)")
    impls = ("fused", "reference") if args.impl == "both" else (args.impl,)
    if buckets:
        impls = ("fused", "decoder_buckets")
    hps_of = {
        impl: hps.replace(
            fused_recurrence=impl != "reference",
            decoder_buckets=args.decoder_buckets if impl == "decoder_buckets" else 1,
        )
        for impl in impls
    }
    batches_of = _batch_sets(args, vocab, hps_of)
    batches = batches_of[impls[0]]
    shapes = sorted({int(b["enc_batch"].shape[1]) for b in batches})
    print(f"{len(batches)} real batches, encoder lengths {shapes}", flush=True)
    dec_means = {
        impl: sum(int(b["dec_batch"].shape[1]) for b in bs) / len(bs)
        for impl, bs in batches_of.items()
    }
    if buckets:
        print(
            "mean decoder length: " + ", ".join(f"{impl} {m:.1f}" for impl, m in dec_means.items()),
            flush=True,
        )
    trainers = {impl: Trainer(hps_of[impl], vocab.size(), jit_compile=args.xla) for impl in impls}
    print(next(iter(trainers.values())).model.parameter_summary(), flush=True)
    start_rss = common.peak_rss_mib()

    iters = {impl: _Cycle(batches_of[impl]) for impl in impls}

    def step(impl: str) -> tuple[float, float]:
        batch = batches_of[impl][iters[impl].i % len(batches_of[impl])]
        start = time.perf_counter()
        metrics = iters[impl].take(trainers[impl])
        assert metrics["finite"], metrics
        return time.perf_counter() - start, _batch_flops(batch, hps, vocab.size())

    first_shape_s = _warm_up(impls, step, batches_of, iters)
    timed, rates, loads = _timed_rounds(impls, step, args)

    rate = sum(rates) / len(rates)
    main_impl = impls[0]
    seconds, total_flops, n = timed[main_impl]
    achieved = total_flops / seconds
    nominal = flops.train_step_flops(
        batch=hps.batch_size,
        enc_len=hps.max_enc_steps,
        dec_len=hps.max_dec_steps,
        vocab=vocab.size(),
        hidden=hps.hidden_dim,
        emb=hps.emb_dim,
        pointer_gen=hps.pointer_gen,
    )
    figures = {
        "steps_per_s": round(n / seconds, 4),
        "examples_per_s": round(n * hps.batch_size / seconds, 2),
        "s_per_step": round(seconds / n, 3),
        "gflop_per_step_paper_shape": round(nominal / 1e9, 1),
        "achieved_gflop_per_s": round(achieved / 1e9, 2),
        "matmul_gflop_per_s": round(rate / 1e9, 2),
        "ratio_achieved_over_matmul": round(achieved / rate, 3),
        "first_step_new_shape_s": round(max(first_shape_s[main_impl]), 2),
        "timed_steps": n,
        "load_avg_1min": round(sum(loads) / len(loads), 2),
        "rss_after_model_build_mib": round(start_rss, 1),
    }
    if "reference" in impls:
        ref_s, _, ref_n = timed["reference"]
        figures["reference_s_per_step"] = round(ref_s / ref_n, 3)
        figures["speedup_vs_reference"] = round((ref_s / ref_n) / (seconds / n), 2)
    if buckets:
        b_s, _, b_n = timed["decoder_buckets"]
        figures["decoder_buckets"] = args.decoder_buckets
        figures["decoder_buckets_s_per_step"] = round(b_s / b_n, 3)
        figures["speedup_decoder_buckets"] = round((seconds / n) / (b_s / b_n), 3)
        figures["mean_decoder_length_fixed"] = round(dec_means["fused"], 1)
        figures["mean_decoder_length_buckets"] = round(dec_means["decoder_buckets"], 1)
        print(
            f"--decoder_buckets={args.decoder_buckets}: {b_s / b_n:.3f} s/step against "
            f"{seconds / n:.3f} with the original's padding: "
            f"{figures['speedup_decoder_buckets']:.2f}x (mean decoder length "
            f"{dec_means['decoder_buckets']:.1f} against {dec_means['fused']:.1f})"
        )
    config = (
        f"impl {args.impl}{' + whole-step XLA' if args.xla else ''}"
        f"{f' against --decoder_buckets={args.decoder_buckets}' if buckets else ''}"
        f"{' + bf16 vocabulary projection' if args.mixed_precision else ''}"
        f"{_threads(args)}: batch {hps.batch_size}, enc "
        f"{hps.max_enc_steps}, dec {hps.max_dec_steps}, vocab {vocab.size()}, hidden "
        f"{hps.hidden_dim}, emb {hps.emb_dim}, pointer"
        f"{' + coverage' if hps.coverage else ''}; {len(batches)} real batches (enc "
        f"lengths {shapes}), {n} timed steps after {len(batches)} warm-up"
    )
    common.record("train_step", config, figures, args.out_json)
    ratio = figures["ratio_achieved_over_matmul"]
    peak = common.peak_rss_mib()
    print(
        f"training: {figures['examples_per_s']} examples/s, {ratio:.0%} of the measured "
        f"matmul rate ({'meets' if ratio >= TARGET_RATIO else 'MISSES'} the "
        f"{TARGET_RATIO:.0%} target); peak RSS {peak:.0f} MiB "
        f"({'meets' if peak < TARGET_PEAK_MIB else 'MISSES'} the 4 GiB target)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
