"""Where does RAS attend while it learns? Its attention on one test batch, per recipe.

    python -m experiments.families.ras_attention --toy_dir W/toy [--steps 1000] \\
        [--seed 111] [--models ras_elman,ras_lstm]

`W/toy` is the toy corpus (`python -m data_tools.toy_data --out_dir W/toy --num_train 4000
--num_test 200`). For each model and recipe, RAS (d = 64, the first 50 input tokens, batch
16, the toy page's sizes) trains in this process and, at a few steps, its attention
α_t ∝ exp(z_j · h_{t-1}) is read on one test batch under teacher forcing, for summary
steps 2-8 (step 1 attends with h_0):

* *max α*: the mean largest weight (1 = all weight on one input position);
* *positions*: how many different input positions the largest weight visits in those 7
  steps, averaged over the batch (1 = the same position for every summary word);
* *on target*: of the summary words that occur in the input, the share whose step puts
  its largest weight on an occurrence of that word (what a model that reads the facts it
  writes would do; a position drawn at random gets about 1/M, ~0.03 on these inputs).

The table: experiments/results/families_results.md, "RAS: the attention locks onto one position".
"""

from __future__ import annotations

import argparse
import sys

from experiments.families import keys_task
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types

DOT = dict(ras_attention="dot")
# key -> (what the row is, HParams overrides of BASE)
RECIPES = {
    "dot": ("the paper's dot product, default recipe (Adagrad 0.15, accumulator 1e-4)", DOT),
    "dot_acc01": ("the paper's dot product, Adagrad 0.15, accumulator 0.1",
                  dict(DOT, adagrad_init_acc=0.1)),
    "dot_namas_sgd": (
        "the paper's dot product, NAMAS's SGD (0.1 per 64 target words), clipping at 10",
        dict(DOT, optimizer="sgd", loss_reduction="sum", lr=0.1 / 64, max_grad_norm=10,
             grad_norm="dense"),
    ),
    "cosine": ("cosine attention (the default), default recipe", {}),
}  # fmt: skip
BASE = dict(
    pointer_gen=False,
    hidden_dim=64,
    batch_size=16,
    max_enc_steps=50,
    max_dec_steps=40,
    vocab_size=5000,
    static_shapes=True,
    max_positions=200,
)
STEPS_READ = range(1, 8)  # summary steps 2-8 (0-based 1-7): step 1 attends with h_0


def attention_summary(model, batch) -> tuple[float, float, float]:
    """(mean max α, mean number of distinct argmax positions, share on target) of the
    attention over summary steps 2-8 of `batch` under teacher forcing."""
    import numpy as np

    art = model.search_articles(batch["enc_batch"], batch["enc_padding_mask"])
    carry = model.initial_carry(batch["enc_batch"].shape[0])
    ys = model.y_emb(batch["dec_batch"])
    enc, target = batch["enc_batch"].numpy(), batch["target_batch"].numpy()
    maxima, argmaxes, hits = [], [], []
    for t in range(max(STEPS_READ) + 1):
        _, _, alpha, carry = model._recur(ys[:, t], carry, art)
        if t not in STEPS_READ:
            continue
        alpha = alpha.numpy()
        maxima.append(alpha.max(-1).mean())
        argmaxes.append(alpha.argmax(-1))
        for b, word in enumerate(target[:, t]):
            if word > 3 and (enc[b] == word).any():  # a word (not a special id) of the input
                hits.append(enc[b, alpha[b].argmax()] == word)
    positions = np.mean([len(set(row)) for row in np.array(argmaxes).T])
    return float(np.mean(maxima)), float(positions), float(np.mean(hits))


def run(
    toy_dir: str, models: list[str], recipes: list[str], steps: int, marks: list[int], seed: int
) -> dict:
    from pointer_generator.cli import console

    console.import_tensorflow()
    corpus = keys_task.toy_corpus(toy_dir)
    out = {}
    for model in models:
        for key in recipes:
            name, overrides = RECIPES[key]
            base = {**BASE, "model": model}
            row = keys_task.trace_training(
                corpus, seed, base, overrides, steps, marks, attention_summary
            )
            out[f"{model}: {name}"] = row
            print(f"{model}: {name}: {row[steps]}", file=sys.stderr, flush=True)
    return out


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.families.ras_attention")
    p.add_argument("--toy_dir", required=True, type=keys_task.toy_dir)
    p.add_argument("--steps", type=arg_types.positive_int, default=1000)
    p.add_argument("--seed", type=arg_types.any_int, default=111, help="weights and data order")
    p.add_argument("--models", default="ras_elman,ras_lstm", help="comma-separated")
    p.add_argument("--recipes", default=",".join(RECIPES), help=f"of {', '.join(RECIPES)}")
    args = p.parse_args(argv)
    models = args.models.split(",")
    unknown = [m for m in models if m not in ("ras_elman", "ras_lstm")]
    if unknown:
        p.error(f"--models: {', '.join(unknown)} is not ras_elman or ras_lstm")
    recipes = args.recipes.split(",")
    unknown = [r for r in recipes if r not in RECIPES]
    if unknown:
        p.error(f"--recipes: {', '.join(unknown)} is not one of {', '.join(RECIPES)}")
    marks = [m for m in (10, 100, 300, args.steps) if m <= args.steps]
    table = run(args.toy_dir, models, recipes, args.steps, sorted(set(marks)), args.seed)
    steps = [0, *sorted(set(marks))]
    print("max α / positions visited in 7 steps / on target, at each step")
    print()
    print("| model: recipe | " + " | ".join(f"step {s}" for s in steps) + " |")
    print("|---|" + "---|" * len(steps))
    for name, row in table.items():
        cells = [f"{row[s][0]:.2f} / {row[s][1]:.1f} / {row[s][2]:.2f}" for s in steps]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return exit_codes.OK


if __name__ == "__main__":
    sys.exit(main())
