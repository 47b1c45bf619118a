"""Does ABS's convolutional encoder stay alive? Its units' spread over inputs, per recipe.

    python -m experiments.families.conv_saturation --toy_dir W/toy [--steps 400] [--seed 111]

`W/toy` is the toy corpus (`python -m data_tools.toy_data --out_dir W/toy --num_train 4000
--num_test 200`). For each recipe, ABS with the convolutional encoder (hidden 128, the
first 50 input tokens, batch 16) trains in this process and, at a few steps, its encoder
output enc2 [B, H] on one test batch is summarised: the spread over the batch's inputs of
each unit (mean over units of the standard deviation; 0 = the same vector for every input)
and the share of units at ±1 (|enc2| > 0.99: saturated tanh units, whose gradient is 0).
docs/families.md ("The convolutional encoder and Adagrad") shows the table.
"""

from __future__ import annotations

import argparse
import sys

from experiments.families import keys_task
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types

# name -> HParams overrides of BASE (the toy page's sizes and input length)
RECIPES = {
    "Adagrad 0.15 (accumulator 1e-4)": dict(lr=0.15, adagrad_init_acc=1e-4),
    "Adagrad 0.05 (the encoder's default)": dict(lr=0.05, adagrad_init_acc=1e-4),
    "NAMAS's SGD (0.1 per 64 target words)": dict(
        optimizer="sgd", loss_reduction="sum", lr=0.1 / 64, max_grad_norm=1e30, grad_norm="dense"
    ),
}
BASE = dict(
    model="abs",
    abs_encoder="conv",
    pointer_gen=False,
    hidden_dim=128,
    emb_dim=64,
    batch_size=16,
    max_enc_steps=50,
    max_dec_steps=40,
    vocab_size=5000,
    static_shapes=True,
)


def encoder_summary(model, batch) -> tuple[float, float]:
    """(mean over units of the spread over inputs, share of units at +-1) of enc2."""
    import numpy as np

    enc = model.encoder(model.f(batch["enc_batch"]), batch["enc_padding_mask"]).numpy()
    return float(enc.std(axis=0).mean()), float((np.abs(enc) > 0.99).mean())


def run(toy_dir: str, steps: int, marks: list[int], seed: int) -> dict:
    from pointer_generator.cli import console

    console.import_tensorflow()
    corpus = keys_task.toy_corpus(toy_dir)
    return {
        name: keys_task.trace_training(corpus, seed, BASE, overrides, steps, marks, encoder_summary)
        for name, overrides in RECIPES.items()
    }


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.families.conv_saturation")
    p.add_argument("--toy_dir", required=True, type=keys_task.toy_dir)
    p.add_argument("--steps", type=arg_types.positive_int, default=400)
    p.add_argument(
        "--seed",
        type=arg_types.any_int,
        default=111,
        help="weights and data order (--seed's default)",
    )
    args = p.parse_args(argv)
    marks = sorted({m for m in (10, 50, args.steps) if m <= args.steps})
    table = run(args.toy_dir, args.steps, marks, args.seed)
    steps = [0, *marks]
    print("| recipe | " + " | ".join(f"step {s}" for s in steps) + " |")
    print("|---|" + "---|" * len(steps))
    for name, row in table.items():
        cells = [f"{row[s][0]:.3f} / {row[s][1]:.0%}" for s in steps]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
