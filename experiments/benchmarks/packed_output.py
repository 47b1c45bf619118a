"""The earlier families' training step with the output layer at every decoder position
(dense) against the output layer at the real target words only (packed), side by side.

    python -m experiments.benchmarks.packed_output [--rounds 3] [--vocab_size 14677]
        [--xla 1]

One training step is the forward and backward pass (loss and the gradients of every
weight) compiled with XLA, as `Trainer` runs it with --xla (`--xla 0`: a plain
tf.function, where the packed output gathers the real positions with `tf.where`).
Dense: the loss from `log_probs` ([B, T, V]: the gold word's log-probability gathered,
masked, averaged), the models' training loss before the packed output; packed: the
model's own `call` (models/sentence_model.py, `gold_log_probs`). The same model and
batch serve both; each round times one step of each, in alternating order, after one
compiling step each.

Models: RAS-Elman d = 128 and ABS (attention encoder) D = 64, H = 200, both with
Keras-initialised weights. Batches: 64 random inputs of 60 words, decoders padded to 30
steps, target lengths 5 + Binomial(24, 0.375) (5 to 29, mean 14): only shapes matter
for speed. Prints the machine (`common.machine_description`), each round's seconds, the
medians and packed / dense.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

from experiments.benchmarks import common
from pointer_generator.cli import arg_types

BATCH, ENC_LEN, DEC_LEN = 64, 60, 30


def batch_of(vocab: int, seed: int = 0) -> dict:
    """Random ids with realistic target lengths (mean 14 of 30 decoder steps)."""
    rng = np.random.default_rng(seed)
    lengths = 5 + rng.binomial(24, 0.375, size=BATCH)
    mask = (np.arange(DEC_LEN)[None, :] < lengths[:, None]).astype(np.float32)
    ids = lambda shape: rng.integers(4, vocab, size=shape).astype(np.int32)  # noqa: E731
    dec = ids((BATCH, DEC_LEN))
    dec[:, 0] = 2  # [START]
    return {
        "enc_batch": ids((BATCH, ENC_LEN)),
        "enc_padding_mask": np.ones((BATCH, ENC_LEN), np.float32),
        "dec_batch": dec,
        "target_batch": ids((BATCH, DEC_LEN)),
        "dec_padding_mask": mask,
    }


def models(vocab: int) -> dict:
    from pointer_generator.models.abs_model import ABSConfig, ABSModel
    from pointer_generator.models.ras_model import RASConfig, RASModel

    return {
        "RAS-Elman d=128": RASModel(
            RASConfig(decoder="elman", dim=128, init="keras"), vocab
        ).build_weights(),
        "ABS attention D=64 H=200": ABSModel(
            ABSConfig(encoder="attention", emb_dim=64, hidden_dim=200, init="keras"), vocab
        ).build_weights(),
    }


def steps(tf, model, xla: bool = True) -> dict:
    """{"dense": step, "packed": step}: compiled loss and gradients."""

    def dense_loss(batch):
        lp = model.log_probs(batch["enc_batch"], batch["enc_padding_mask"], batch["dec_batch"])
        gold = tf.gather(lp, batch["target_batch"], batch_dims=2)
        mask = batch["dec_padding_mask"]
        return -tf.reduce_sum(gold * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)

    def packed_loss(batch):
        return model(batch, training=True)["loss"]

    def step(loss_fn):
        def run(batch):
            with tf.GradientTape() as tape:
                loss = loss_fn(batch)
            return loss, tape.gradient(loss, model.trainable_variables)

        return tf.function(run, jit_compile=xla)

    return {"dense": step(dense_loss), "packed": step(packed_loss)}


def main(argv=None) -> int:
    p = common.argument_parser(__doc__, __spec__)
    p.add_argument("--rounds", type=arg_types.positive_int, default=3)
    p.add_argument("--vocab_size", type=arg_types.positive_int, default=14677)
    p.add_argument("--xla", type=int, choices=(0, 1), default=1, help="compile with XLA")
    args = p.parse_args(argv)
    tf = common.import_tensorflow()
    print(f"machine: {common.machine_description()}", flush=True)
    batch = {k: tf.constant(v) for k, v in batch_of(args.vocab_size).items()}
    real = float(tf.reduce_mean(batch["dec_padding_mask"]))
    print(
        f"batch {BATCH}, input {ENC_LEN}, decoder {DEC_LEN} steps, vocabulary "
        f"{args.vocab_size}: {real:.1%} of the decoder positions are real; "
        f"XLA {'on' if args.xla else 'off'}",
        flush=True,
    )
    results = {}
    for name, model in models(args.vocab_size).items():
        fns = steps(tf, model, bool(args.xla))
        compile_s, losses = {}, {}
        for kind, fn in fns.items():
            t0 = time.perf_counter()
            losses[kind] = float(fn(batch)[0])
            compile_s[kind] = round(time.perf_counter() - t0, 1)
        times = {kind: [] for kind in fns}
        for r in range(args.rounds):
            for kind in list(fns)[:: 1 if r % 2 == 0 else -1]:
                t0 = time.perf_counter()
                float(fns[kind](batch)[0])  # (the gradients are computed with it)
                times[kind].append(time.perf_counter() - t0)
        median = {kind: statistics.median(ts) for kind, ts in times.items()}
        results[name] = {
            "step_s": {kind: [round(t, 3) for t in ts] for kind, ts in times.items()},
            "median_s": {kind: round(t, 3) for kind, t in median.items()},
            "packed_over_dense": round(median["packed"] / median["dense"], 3),
            "first_step_s (compiling)": compile_s,
            "loss": {kind: round(v, 6) for kind, v in losses.items()},
        }
        print(f"{name}: {json.dumps(results[name])}", flush=True)
    summary = {"machine": common.machine_description(), "xla": bool(args.xla), "results": results}
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
