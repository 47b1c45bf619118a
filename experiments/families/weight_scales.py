"""The root-mean-square of a trained pointer-generator's weights, by variable, beside
the RMS its initialisation draws: how far training moved each from where it started.

    python -m experiments.families.weight_scales --train_dir DIR --out_json F
        [--rand_unif_init_mag 0.02] [--trunc_norm_init_std 1e-4]

The real-text page (issue 44) reads it for the pointer-generator's runs: with the
original's Adagrad accumulator (0.1) in a budget of a few thousand steps, the decoder's
weights stay close to their small initial draws, and the decoder barely reads the words
it has written. The initial RMS is the distribution's: U(-a, a) has RMS a / sqrt(3); a
normal of std s truncated at 2 s (TF's truncated normal), s * 0.8796; Glorot uniform
sqrt(2 / (fan_in + fan_out)).
"""

from __future__ import annotations

import argparse
import json
import math
import sys

# Checkpoint name -> (what it is, its initialiser: "uniform", "truncated" or "glorot").
VARIABLES = {
    "model/embedding/_embeddings/.ATTRIBUTES/VARIABLE_VALUE": ("embeddings", "truncated"),
    "model/decoder_cell/kernel/.ATTRIBUTES/VARIABLE_VALUE": (
        "decoder LSTM input kernel",
        "uniform",
    ),
    "model/decoder_cell/recurrent_kernel/.ATTRIBUTES/VARIABLE_VALUE": (
        "decoder LSTM recurrent kernel",
        "uniform",
    ),
    "model/input_merge/_kernel/.ATTRIBUTES/VARIABLE_VALUE": ("decoder input merge", "glorot"),
    "model/encoder/forward_layer/cell/kernel/.ATTRIBUTES/VARIABLE_VALUE": (
        "encoder LSTM input kernel (forward)",
        "uniform",
    ),
}
# The std of a normal truncated at two standard deviations, in units of the untruncated.
TRUNCATED_STD = 0.8796


def initial_rms(kind: str, shape, mag: float, std: float) -> float:
    if kind == "uniform":
        return mag / math.sqrt(3.0)
    if kind == "truncated":
        return std * TRUNCATED_STD
    fan_in, fan_out = shape[0], shape[-1]
    return math.sqrt(2.0 / (fan_in + fan_out))


def scales(checkpoint: str, mag: float, std: float) -> dict:
    import numpy as np
    import tensorflow as tf

    reader = tf.train.load_checkpoint(checkpoint)
    out = {}
    for name, (label, kind) in VARIABLES.items():
        try:
            value = reader.get_tensor(name)
        except (tf.errors.NotFoundError, ValueError):
            continue
        rms = float(np.sqrt(np.mean(np.square(value, dtype=np.float64))))
        start = initial_rms(kind, value.shape, mag, std)
        out[label] = {"rms": rms, "initial_rms": start, "ratio": rms / start}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.families.weight_scales")
    p.add_argument("--train_dir", required=True, help="its newest intact checkpoint is read")
    p.add_argument("--out_json", required=True)
    p.add_argument("--rand_unif_init_mag", type=float, default=0.02)
    p.add_argument("--trunc_norm_init_std", type=float, default=1e-4)
    args = p.parse_args(argv)
    from pointer_generator.cli import console

    console.import_tensorflow()
    from pointer_generator.runtime import checkpointing

    checkpoint = checkpointing.latest_checkpoint(args.train_dir)
    result = None
    if checkpoint is not None:
        result = scales(checkpoint, args.rand_unif_init_mag, args.trunc_norm_init_std)
    if not result:
        what = checkpoint or f"{args.train_dir}: no checkpoint"
        print(f"error: {what}: none of the pointer-generator's variables", file=sys.stderr)
        return 1
    with open(args.out_json, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
