"""Does ABS's convolutional encoder stay alive? Its units' spread over inputs, per recipe.

    python -m experiments.families.conv_saturation --toy_dir W/toy [--steps 400] [--seed 111]
    python -m experiments.families.conv_saturation --proxy_dir W/data/finished --steps 300

`W/toy` is the toy corpus (`python -m data_tools.toy_data --out_dir W/toy --num_train 4000
--num_test 200`): ABS with the convolutional encoder at the toy page's sizes (hidden 128,
embedding 64, the first 50 input tokens, batch 16). `W/data/finished` is the proxy task's
data (`experiments.families.run_proxy`): the papers' sizes (D 200, H 400, 100 input
tokens, batch 64), the size at which a rate safe for the toy kills the encoder. For each
recipe the model trains in this process and, at a few steps, its encoder output enc2
[B, H] on one test batch is summarised: the spread over the batch's inputs of each unit
(mean over units of the standard deviation; 0 = the same vector for every input) and the
share of units at ±1 (|enc2| > 0.99: saturated tanh units, whose gradient is 0).
experiments/results/families_results.md ("The convolutional encoder and Adagrad") shows the tables.
"""

from __future__ import annotations

import argparse
import os
import sys

from experiments.families import keys_task
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types

# name -> HParams overrides of BASE (the toy page's sizes and input length)
RECIPES = {
    "Adagrad 0.15 (accumulator 1e-4)": dict(lr=0.15, adagrad_init_acc=1e-4),
    "Adagrad 0.05": dict(lr=0.05, adagrad_init_acc=1e-4),
    "Adagrad 0.02 (the encoder's default)": dict(lr=0.02, adagrad_init_acc=1e-4),
    "NAMAS's SGD (0.1 per 64 target words)": dict(
        optimizer="sgd", loss_reduction="sum", lr=0.1 / 64, max_grad_norm=1e30, grad_norm="dense"
    ),
}
_SGD = dict(optimizer="sgd", max_grad_norm=1e30, grad_norm="dense")
# At the papers' sizes: the default recipe's rates, and the proxy's and the paper's SGD.
PROXY_RECIPES = {
    "Adagrad 0.05": dict(lr=0.05, adagrad_init_acc=1e-4),
    "Adagrad 0.02 (the encoder's default)": dict(lr=0.02, adagrad_init_acc=1e-4),
    "SGD 0.5 (the proxy page's ABS rate)": dict(_SGD, lr=0.5),
    "SGD 0.1": dict(_SGD, lr=0.1),
    "SGD 0.05 (the paper's rate)": dict(_SGD, lr=0.05),
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


# The papers' sizes, on the proxy task's data (abs_paper.flags).
PROXY_BASE = dict(
    BASE,
    hidden_dim=400,
    emb_dim=200,
    batch_size=64,
    max_enc_steps=100,
    max_dec_steps=50,
    vocab_size=0,
    context_window=5,
    smoothing_window=2,
)


def proxy_corpus(folder: str) -> dict:
    """The proxy task's data in `folder` (run_proxy's `data/finished`) as `new_trainer`
    reads a corpus: its whole vocabulary, train chunks, the test split."""
    from pointer_generator.data.vocab import Vocab

    return dict(
        vocab=Vocab(os.path.join(folder, "vocab"), 0),
        train=os.path.join(folder, "chunked", "train_*"),
        test=os.path.join(folder, "test.bin"),
    )


def encoder_summary(model, batch) -> tuple[float, float]:
    """(mean over units of the spread over inputs, share of units at +-1) of enc2."""
    import numpy as np

    enc = model.encoder(model.f(batch["enc_batch"]), batch["enc_padding_mask"]).numpy()
    return float(enc.std(axis=0).mean()), float((np.abs(enc) > 0.99).mean())


def run(toy_dir: str | None, steps: int, marks: list[int], seed: int, proxy_dir=None) -> dict:
    """{recipe: {step: (spread, share at +-1)}} on the toy corpus, or on the proxy task's
    data at the papers' sizes when `proxy_dir` is given."""
    from pointer_generator.cli import console

    console.import_tensorflow()
    if proxy_dir:
        corpus, base, recipes = proxy_corpus(proxy_dir), PROXY_BASE, PROXY_RECIPES
    else:
        corpus, base, recipes = keys_task.toy_corpus(toy_dir), BASE, RECIPES
    return {
        name: keys_task.trace_training(corpus, seed, base, overrides, steps, marks, encoder_summary)
        for name, overrides in recipes.items()
    }


def proxy_dir(value: str) -> str:
    """argparse type: a folder with the proxy task's vocab, chunked/ and test.bin."""
    folder = os.path.abspath(value)
    for need in ("vocab", "test.bin", "chunked"):
        if not os.path.exists(os.path.join(folder, need)):
            raise argparse.ArgumentTypeError(
                f"{folder} has no {need}: give the data/finished folder that "
                "`python -m experiments.families.run_proxy --work_dir W` writes (W/data/finished)"
            )
    return folder


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.families.conv_saturation")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--toy_dir", type=keys_task.toy_dir)
    where.add_argument(
        "--proxy_dir", type=proxy_dir, help="the proxy task's data/finished: the papers' sizes"
    )
    p.add_argument("--steps", type=arg_types.positive_int, default=400)
    p.add_argument(
        "--seed",
        type=arg_types.any_int,
        default=111,
        help="weights and data order (--seed's default)",
    )
    args = p.parse_args(argv)
    marks = sorted({m for m in (10, 50, args.steps) if m <= args.steps})
    table = run(args.toy_dir, args.steps, marks, args.seed, args.proxy_dir)
    steps = [0, *marks]
    print("| recipe | " + " | ".join(f"step {s}" for s in steps) + " |")
    print("|---|" + "---|" * len(steps))
    for name, row in table.items():
        cells = [f"{row[s][0]:.3f} / {row[s][1]:.0%}" for s in steps]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
