"""Throughput of the tf.data input pipeline alone, on one CPU core.

    python -m experiments.benchmarks.pipeline [--data_path GLOB_OR_JSONL] [--vocab_path V]

Paper configuration (batch 16, max_enc_steps 400, max_dec_steps 100, 50k vocab) on the
real CNN/DM sample in ../shared/data, written as 1000-record `.bin` chunks to a temporary
directory first. Measures, after a warm-up, examples per second of the train-mode
pipeline (endless, shuffled, length-bucketed) and of a single-pass decode-mode read, plus
the start-up time and the peak resident memory. The pipeline must stay well ahead of
training (about 16 examples/s on this CPU), so the target is >= 320 examples/s.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
import sys
import tempfile
import time

from experiments.benchmarks import common
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types

TARGET = 320.0  # examples/s: 20x the model's best CPU training throughput


def _pin_to_one_core() -> str:
    """Restrict this process to one CPU (before TensorFlow starts its thread pools)."""
    if hasattr(os, "sched_getaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity)"


def _write_chunks(jsonl_path: str, out_dir: str) -> str:
    from pointer_generator.data import binfile

    def pairs():
        with gzip.open(jsonl_path, "rt", encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                yield row["article"], " ".join("<s> %s </s>" % s for s in row["abstract"])

    paths = binfile.write_chunked(out_dir, "bench", pairs(), chunk_size=1000)
    print(f"wrote {len(paths)} chunks to {out_dir}")
    return os.path.join(out_dir, "bench_*.bin")


def _single_thread(ds):
    import tensorflow as tf

    options = tf.data.Options()
    options.threading.private_threadpool_size = 1
    options.threading.max_intra_op_parallelism = 1
    return ds.with_options(options)


def _rate(iterator, n_batches: int) -> tuple[float | None, float | None, int]:
    """(examples/s wall, examples/s of process CPU time, examples) over up to n_batches;
    fewer where a single pass ends first (a user's small file), None where none came."""
    n = 0
    wall, cpu = time.perf_counter(), time.process_time()
    for batch in itertools.islice(iterator, n_batches):
        n += int(batch["enc_lens"].shape[0])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if not n:
        return None, None, 0
    return n / wall, n / cpu, n


@exit_codes.command
def main(argv=None) -> int:
    p = common.argument_parser(__doc__, __spec__)
    common.add_data_arguments(p)
    p.add_argument("--batch_size", type=arg_types.positive_int, default=16)
    p.add_argument("--warmup_batches", type=arg_types.positive_int, default=100)
    p.add_argument("--batches", type=arg_types.positive_int, default=500)
    p.add_argument(
        "--out_json", default=None, help="default: experiments/results/pipeline_<hostname>.json"
    )
    args = p.parse_args(argv)
    if common.data_missing(args, check_data_path=True):
        return 0

    pinning = _pin_to_one_core()
    tf = common.import_tensorflow()
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    tf.constant(0) + 1  # start the runtime, to separate its memory from the pipeline's
    rss_tf = common.peak_rss_mib()

    from pointer_generator.data import input_pipeline
    from pointer_generator.data.vocab import Vocab
    from pointer_generator.hparams import HParams

    hps = HParams(batch_size=args.batch_size, max_enc_steps=400, max_dec_steps=100)
    vocab = Vocab(args.vocab_path, args.vocab_size)
    with tempfile.TemporaryDirectory() as tmp:
        pattern = args.data_path
        if pattern.endswith(".jsonl.gz"):
            pattern = _write_chunks(pattern, tmp)

        start = time.perf_counter()
        train = _single_thread(
            input_pipeline.make_dataset(pattern, vocab, hps, "train", single_pass=False)
        )
        it = iter(train)
        next(it)
        startup_s = time.perf_counter() - start
        _rate(it, args.warmup_batches)
        train_wall, train_cpu, n_train = _rate(it, args.batches)
        del it

        decode = _single_thread(
            input_pipeline.make_dataset(pattern, vocab, hps, "decode", single_pass=True)
        )
        it = iter(decode)
        _rate(it, min(args.warmup_batches, 20))
        dec_wall, dec_cpu, n_dec = _rate(it, min(args.batches, 200))

    figures = {
        "train_examples_per_s": round(train_wall, 1),
        "train_examples_per_cpu_s": round(train_cpu, 1),
        # None: the single pass ended within its warm-up (a file of a few batches).
        "decode_examples_per_s": dec_wall and round(dec_wall, 1),
        "startup_s": round(startup_s, 2),
        "measured_examples": n_train,
        "rss_before_pipeline_mib": round(rss_tf, 1),
        "target_examples_per_s": TARGET,
    }
    config = (
        f"train mode: batch {hps.batch_size}, enc {hps.max_enc_steps}, dec "
        f"{hps.max_dec_steps}, vocab {vocab.size()}, 1 thread ({pinning}), "
        f"{args.warmup_batches} warm-up + {args.batches} batches; decode single-pass "
        f"{n_dec} examples"
    )
    common.record("pipeline", config, figures, args.out_json)
    verdict = "meets" if train_wall >= TARGET else "MISSES"
    print(
        f"train-mode pipeline: {train_wall:.0f} examples/s on one core "
        f"({verdict} the {TARGET:.0f}/s target)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
