"""The earlier families at their papers' configurations: training throughput against
this machine's matmul rate, decoding speed at the papers' beam sizes, peak memory.

    python -m experiments.benchmarks.families [--family abs|ras_elman|ras_lstm|all]
        [--vocab_size 69000] [--steps 12] [--rounds 3] [--decode_inputs 64]

Configurations: the presets `experiments/families/{abs_paper,ras_*_paper}.flags` (ABS:
D 200, H 400, C 5, batch 64; RAS: d 512, q 5, batch 32), a 69,000-word vocabulary
(Gigaword's headline dictionary), Gigaword-like lengths (inputs of 31 tokens, padded to
40 in a batch, headlines of 8 + [STOP]). Batches are random ids: only shapes matter for
speed. Each training step is the trainer's whole step (forward, backward, clipping, SGD);
the timed steps run in rounds, each followed by a measurement of the dense matmul rate
(`flops.measured_matmul_rate`), so both see the same machine load.

Figures per family: examples/s, the analytical matrix-product FLOPs of a step
(`train_flops`, backward = 2 x forward) over the measured matmul rate (target >= 0.45,
the pointer-generator's bar), decoding inputs/s with beam 50 (ABS) or 10 and 1 (RAS)
over `--decode_inputs` inputs of `--decode_steps` words, and the process's peak memory.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from experiments.benchmarks import common, flops
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types

TARGET_RATIO = 0.45
PRESETS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "families")
ENC_LEN, DEC_LEN = 40, 9


def preset(name: str) -> dict:
    values = {}
    with open(os.path.join(PRESETS, name + ".flags"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("--"):
                key, value = line[2:].strip().split("=", 1)
                values[key] = value
    return values


def hparams_of(family: str):
    from pointer_generator.hparams import HParams

    name = "abs_paper" if family == "abs" else f"{family}_paper"
    from pointer_generator.models import family_registry

    options = family_registry.option_table()
    fields = set(HParams.__dataclass_fields__) | set(options)
    base = HParams(pointer_gen=False)
    typed = {}
    for key, value in preset(name).items():
        if key in fields:
            kind = options[key].type if key in options else type(getattr(base, key))
            typed[key] = value.lower() == "true" if kind is bool else kind(value)
    return base.replace(**{**typed, "max_enc_steps": ENC_LEN, "max_dec_steps": DEC_LEN})


def train_flops(hps, vocab: int, batch: int, enc: int, dec: int) -> float:
    """Matrix-product FLOPs of one training step (2 per multiply-add; backward 2x)."""
    from pointer_generator.models import family_registry

    rows = batch * dec  # one output distribution per target word
    options = family_registry.of(hps).option_values(hps)
    if hps.model == "abs":
        d, h = hps.emb_dim, hps.hidden_dim
        c, q = options["context_window"], options["smoothing_window"]
        per_row = c * d * h + 2 * h * vocab  # U, and V h + W enc
        per_article = 0
        if options["abs_encoder"] == "attention":
            per_row += c * d * h + 2 * enc * h  # P, scores, p^T x-bar
        elif options["abs_encoder"] == "conv":
            per_article = 3 * (2 * q + 1) * h * h * enc
        forward = 2 * (rows * per_row + batch * per_article)
    else:
        d, q = hps.hidden_dim, options["conv_width"]
        cell = 3 * d * d if hps.model == "ras_elman" else 12 * d * d
        per_row = 2 * enc * d + cell + 2 * d * vocab
        forward = 2 * (rows * per_row + batch * q * d * d * enc)
    return 3.0 * forward


def batch_of(batch: int, vocab: int, rng) -> dict:
    import tensorflow as tf

    enc = rng.integers(4, vocab, size=(batch, ENC_LEN))
    lens = rng.integers(ENC_LEN - 12, ENC_LEN + 1, size=batch)
    mask = (np.arange(ENC_LEN)[None, :] < lens[:, None]).astype(np.float32)
    dec = rng.integers(4, vocab, size=(batch, DEC_LEN))
    dec[:, 0] = 2  # [START]
    target = np.concatenate([dec[:, 1:], np.full((batch, 1), 3)], axis=1)  # ... [STOP]
    return {
        "enc_batch": tf.constant(enc * mask.astype(np.int64), tf.int32),
        "enc_lens": tf.constant(lens, tf.int32),
        "enc_padding_mask": tf.constant(mask),
        "enc_batch_extend_vocab": tf.constant(enc * mask.astype(np.int64), tf.int32),
        "max_art_oovs": tf.constant(0, tf.int32),
        "dec_batch": tf.constant(dec, tf.int32),
        "target_batch": tf.constant(target, tf.int32),
        "dec_padding_mask": tf.ones([batch, DEC_LEN]),
    }


def bench_training(family: str, args) -> dict:
    import tensorflow as tf

    from pointer_generator.training.trainer import Trainer

    hps = hparams_of(family)
    trainer = Trainer(hps, args.vocab_size)
    batch = batch_of(hps.batch_size, args.vocab_size, np.random.default_rng(0))
    # A tf.data iterator, as the trainer reads the pipeline's: a Python one would be
    # read once, at tracing, and its batch kept as a constant of the step's graph.
    it = iter(tf.data.Dataset.from_tensors(batch).repeat())
    for _ in range(3):  # trace and warm up
        trainer.train_step(it)
    per_step = train_flops(hps, args.vocab_size, hps.batch_size, ENC_LEN, DEC_LEN)
    seconds, steps, rates = 0.0, 0, []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        for _ in range(args.steps // args.rounds):
            assert trainer.train_step(it)["finite"]
            steps += 1
        seconds += time.perf_counter() - t0
        rates.append(flops.measured_matmul_rate(args.matmul_seconds))
    rate = float(np.mean(rates))
    achieved = per_step * steps / seconds
    params = sum(int(np.prod(v.shape)) for v in trainer.model.trainable_variables)
    return {
        "parameters": params,
        "batch_size": hps.batch_size,
        "train_examples_per_s": round(steps * hps.batch_size / seconds, 1),
        "train_gflop_per_step": round(per_step / 1e9, 2),
        "achieved_gflop_per_s": round(achieved / 1e9, 2),
        "matmul_gflop_per_s": round(rate / 1e9, 2),
        "ratio_achieved_over_matmul": round(achieved / rate, 3),
        "model": trainer.model,
        "hps": hps,
    }


def bench_decoding(model, hps, beam: int, args) -> float:
    """Inputs per second of the batched search at beam `beam`."""
    from pointer_generator.search.beam_decoder import BeamSearchDecoder
    from pointer_generator.search.settings import SearchSettings

    class Words:  # the search needs only the vocabulary's size
        def size(self):
            return args.vocab_size

    hps = hps.replace(max_dec_steps=args.decode_steps)
    settings = SearchSettings.from_hparams(
        hps, beam_size=beam, min_dec_steps=0, block_unk=hps.model == "abs"
    )
    decoder = BeamSearchDecoder(model, Words(), hps, settings)
    batch = batch_of(args.decode_batch, args.vocab_size, np.random.default_rng(1))
    search = decoder._search
    search(batch["enc_batch"], batch["enc_padding_mask"], batch["enc_batch_extend_vocab"],
           batch["max_art_oovs"])  # fmt: skip
    t0, n = time.perf_counter(), 0
    while n < args.decode_inputs:
        out = search(batch["enc_batch"], batch["enc_padding_mask"],
                     batch["enc_batch_extend_vocab"], batch["max_art_oovs"])  # fmt: skip
        out["tokens"].numpy()
        n += args.decode_batch
    return n / (time.perf_counter() - t0)


@exit_codes.command
def main(argv=None) -> int:
    p = common.argument_parser(__doc__, __spec__)
    p.add_argument("--family", choices=("abs", "ras_elman", "ras_lstm", "all"), default="all")
    p.add_argument("--vocab_size", type=arg_types.positive_int, default=69_000)
    p.add_argument("--steps", type=arg_types.positive_int, default=12)
    p.add_argument("--rounds", type=arg_types.positive_int, default=3)
    p.add_argument("--matmul_seconds", type=arg_types.positive_float, default=1.5)
    p.add_argument("--decode_inputs", type=arg_types.positive_int, default=64)
    p.add_argument("--decode_batch", type=arg_types.positive_int, default=16)
    p.add_argument("--decode_steps", type=arg_types.positive_int, default=12)
    common.add_thread_arguments(p)
    p.add_argument("--out_json", default=None)
    args = p.parse_args(argv)
    common.import_tensorflow(args)
    families = ("abs", "ras_elman", "ras_lstm") if args.family == "all" else (args.family,)
    figures = {}
    for family in families:
        result = bench_training(family, args)
        model, hps = result.pop("model"), result.pop("hps")
        beams = (50,) if family == "abs" else (10, 1)
        for beam in beams:
            result[f"decode_inputs_per_s_beam{beam}"] = round(
                bench_decoding(model, hps, beam, args), 2
            )
        figures[family] = result
        ratio = result["ratio_achieved_over_matmul"]
        print(
            f"{family}: {result['parameters']:,} parameters; training "
            f"{result['train_examples_per_s']} examples/s, {ratio:.0%} of the measured matmul "
            f"rate ({'meets' if ratio >= TARGET_RATIO else 'MISSES'} the {TARGET_RATIO:.0%} "
            "target); decoding "
            + ", ".join(
                f"{k.split('_')[-1]} {v} inputs/s"
                for k, v in result.items()
                if k.startswith("decode_")
            ),  # fmt: skip
            flush=True,
        )
    config = (
        f"papers' presets, vocab {args.vocab_size:,}, inputs {ENC_LEN}, headlines {DEC_LEN}; "
        f"{args.steps} timed steps in {args.rounds} rounds; decoding {args.decode_inputs} "
        f"inputs of {args.decode_steps} steps in batches of {args.decode_batch}"
    )
    figures["peak_rss_mib"] = round(common.peak_rss_mib(), 1)
    common.record("families", config, figures, args.out_json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
