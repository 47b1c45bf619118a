"""The smallest task where the input decides the summary: does a model read its input?

    python -m experiments.families.keys_task --work_dir /tmp/keys \\
        [--runs ras_elman,ras_elman_sgd05] [--seeds 1,2,3] [--steps 300] [--gradients]

Each article is filler words with one word of group A and one of group B inserted at
random places; its summary is "a b .". A model of the summaries alone cannot do better
than log 8 nats on each key word; a model that reads the article can. After `steps`
training steps (batch 16, hidden 32, embedding 16) the loss on a test split is measured
with the right articles and with every abstract paired with the next example's article
(`evaluation.evaluate.dataset_loss`, what `eval --single_pass --input_gap` reports): the
gap between the two is what a model gained from its input (a perfect reader gains ~1.0
nats averaged over the summary's 4 tokens).

`tests/test_reads_input.py` runs every family's default recipe on it; this command runs
any recipe over several seeds: experiments/results/families_results.md, "Do they read their
input?".
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from pointer_generator import exit_codes
from pointer_generator.cli import arg_types

KEYS = 8
FILLERS = 24
# The tiny configuration every run starts from (HParams fields).
TINY = dict(
    hidden_dim=32,
    emb_dim=16,
    batch_size=16,
    max_enc_steps=12,
    max_dec_steps=4,
    vocab_size=0,
    static_shapes=True,
    max_positions=12,
    conv_width=3,
    fused_recurrence=False,
)
# name -> HParams overrides: every family with the flags' default recipe (Adagrad 0.15),
# and the recipes experiments/results/families_results.md compares for RAS.
RUNS = {
    "pointer_generator": dict(model="pointer_generator", pointer_gen=True),
    "baseline": dict(model="pointer_generator", pointer_gen=False),
    "abs_attention": dict(model="abs", abs_encoder="attention"),
    # Before issue 29: Keras' initialisation and the pointer-generator's Adagrad accumulator.
    "abs_attention_keras": dict(
        model="abs", abs_encoder="attention", family_init="keras", adagrad_init_acc=0.1
    ),
    "abs_bow": dict(model="abs", abs_encoder="bow"),
    "abs_conv": dict(model="abs", abs_encoder="conv"),
    # The convolutional encoder's default rate before it became 0.02 (docs/families.md).
    "abs_conv_lr005": dict(model="abs", abs_encoder="conv", lr=0.05),
    "ras_elman": dict(model="ras_elman"),
    "ras_lstm": dict(model="ras_lstm"),
    # RAS with the paper's dot-product attention (every RAS row before issue 29's third
    # round; experiments/results/families_results.md's table)
    "ras_elman_dot": dict(model="ras_elman", ras_attention="dot"),
    "ras_elman_keras": dict(
        model="ras_elman", family_init="keras", adagrad_init_acc=0.1, ras_attention="dot"
    ),
    "ras_elman_sgd01": dict(model="ras_elman", optimizer="sgd", lr=0.1, ras_attention="dot"),
    "ras_elman_sgd05": dict(
        model="ras_elman", optimizer="sgd", lr=0.5, max_grad_norm=10.0, ras_attention="dot"
    ),
    "ras_lstm_dot": dict(model="ras_lstm", ras_attention="dot"),
    "ras_lstm_sgd01": dict(model="ras_lstm", optimizer="sgd", lr=0.1, ras_attention="dot"),
    "ras_lstm_keras": dict(
        model="ras_lstm", family_init="keras", adagrad_init_acc=0.1, ras_attention="dot"
    ),
}


def pairs(n: int, seed: int) -> list[tuple[str, str]]:
    """`n` (article, abstract) pairs of the task, abstracts in the `.bin` format."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        words = [f"f{int(i)}" for i in rng.integers(0, FILLERS, size=8)]
        a, b = (int(k) for k in rng.integers(0, KEYS, size=2))
        for key in (f"a{a}", f"b{b}"):
            words.insert(int(rng.integers(0, len(words) + 1)), key)
        out.append((" ".join(words) + " .", f"<s> a{a} b{b} . </s>"))
    return out


def write_corpus(folder: str, n_train: int = 512, n_test: int = 96) -> dict:
    """The vocab and the train/test `.bin` files under `folder`:
    {"vocab": Vocab, "train": glob, "test": glob}."""
    from pointer_generator.data import binfile
    from pointer_generator.data.vocab import Vocab

    words = [f"a{i}" for i in range(KEYS)] + [f"b{i}" for i in range(KEYS)]
    words += [f"f{i}" for i in range(FILLERS)] + ["."]
    os.makedirs(folder, exist_ok=True)
    vocab_path = os.path.join(folder, "vocab")
    with open(vocab_path, "w", encoding="utf-8") as f:
        f.writelines(f"{w} {100 - i}\n" for i, w in enumerate(words))
    binfile.write_chunked(folder, "train", pairs(n_train, seed=1), 1000)
    binfile.write_chunked(folder, "test", pairs(n_test, seed=2), 1000)
    return dict(
        vocab=Vocab(vocab_path, 0),
        train=os.path.join(folder, "train_*"),
        test=os.path.join(folder, "test_*"),
    )


def hparams(values: dict):
    """HParams of flat {setting: value} for the family `values["model"]`: what it fixes
    applied (ABS: no pointer), and only its own options kept (TINY holds RAS's sizes,
    which the other families have no use for)."""
    from pointer_generator.hparams import HParams
    from pointer_generator.models import family_registry

    family = family_registry.get(values.get("model", HParams.model))
    others = set(family_registry.option_table()) - {o.name for o in family.options}
    kept = {k: v for k, v in values.items() if k not in others}
    return HParams().replace(**{**kept, **family.fixed_settings})


def new_trainer(corpus: dict, seed: int = 3, base: dict = TINY, **overrides):
    """(a new Trainer, an iterator over its training batches): HParams of `base`, the
    family's defaults (as the command line gives them) and `overrides`; weights and data
    order drawn from `seed`."""
    import keras

    from pointer_generator.data import input_pipeline
    from pointer_generator.models import family_registry
    from pointer_generator.training.trainer import Trainer

    keras.utils.set_random_seed(seed)
    _, defaults = family_registry.settings({**base, **overrides})
    hps = hparams({**base, **defaults, "seed": seed, **overrides})
    trainer = Trainer(hps, corpus["vocab"].size())
    batches = input_pipeline.make_dataset(corpus["train"], corpus["vocab"], hps, "train", False)
    return trainer, iter(batches.map(input_pipeline.model_inputs))


def toy_dir(value: str) -> str:
    """argparse type of a `--toy_dir`: a corpus `data_tools.toy_data` wrote."""
    if not os.path.isfile(os.path.join(value, "vocab")):
        raise argparse.ArgumentTypeError(
            f"{value} has no vocab: make the corpus with "
            f"python -m data_tools.toy_data --out_dir {value} --num_train 4000"
        )
    return value


def toy_corpus(folder: str) -> dict:
    """The toy corpus in `folder` (`data_tools.toy_data`) as `new_trainer` reads one:
    its first 5,000 words, train and test chunks."""
    from pointer_generator.data.vocab import Vocab

    return dict(
        vocab=Vocab(os.path.join(folder, "vocab"), 5000),
        train=os.path.join(folder, "chunked", "train_*"),
        test=os.path.join(folder, "chunked", "test_*"),
    )


def trace_training(corpus: dict, seed: int, base: dict, overrides: dict, steps: int,
                   marks: list[int], summary) -> dict:  # fmt: skip
    """{step: summary(model, batch)} at step 0 and at each of `marks` while a new trainer
    (`new_trainer(corpus, seed, base, **overrides)`) trains `steps` steps in this
    process; `batch` is the first test batch, the same every time."""
    from pointer_generator.data import input_pipeline

    trainer, iterator = new_trainer(corpus, seed, base, **overrides)
    test = input_pipeline.make_dataset(corpus["test"], corpus["vocab"], trainer.hps, "eval", True)
    batch = next(iter(test.map(input_pipeline.model_inputs)))
    row = {0: summary(trainer.model, batch)}
    for step in range(1, steps + 1):
        trainer.train_step(iterator)
        if step in marks:
            row[step] = summary(trainer.model, batch)
    return row


def train(corpus: dict, steps: int, seed: int = 3, **overrides):
    """A Trainer of the tiny configuration after `steps` steps (`overrides`: HParams
    fields; the flags' defaults otherwise), weights and data order drawn from `seed`."""
    trainer, iterator = new_trainer(corpus, seed, **overrides)
    for _ in range(steps):
        trainer.train_step(iterator)
    return trainer


def losses(corpus: dict, trainer) -> tuple[float, float]:
    """(loss with the right articles, loss with every abstract paired with another)."""
    from pointer_generator.evaluation import evaluate

    evaluator = evaluate.Evaluator(trainer.hps, corpus["vocab"].size(), model=trainer.model)
    right, wrong = (
        evaluate.dataset_loss(evaluator, corpus["vocab"], corpus["test"], control)
        for control in (None, "articles")
    )
    return right, wrong


def first_gradients(corpus: dict, seed: int = 1, **overrides) -> dict:
    """{weight path: (gradient norm, weight norm)} of a fresh model on its first training
    batch: where the loss's signal first goes (experiments/results/families_results.md compares the
    encoder's share under the two initialisations)."""
    import keras
    import tensorflow as tf

    from pointer_generator.data import input_pipeline
    from pointer_generator.models.family_registry import build_model

    keras.utils.set_random_seed(seed)
    hps = hparams({**TINY, "seed": seed, **overrides})
    model = build_model(hps, corpus["vocab"].size())
    batches = input_pipeline.make_dataset(corpus["train"], corpus["vocab"], hps, "train", False)
    batch = next(iter(batches.map(input_pipeline.model_inputs)))
    with tf.GradientTape() as tape:
        loss = model(batch, training=True)["loss"]
    grads = tape.gradient(loss, model.trainable_variables)
    return {
        v.path: (float(tf.norm(tf.convert_to_tensor(g))), float(tf.norm(v)))
        for v, g in zip(model.trainable_variables, grads, strict=True)
    }


def _print_gradients(corpus: dict, runs: list[str]) -> None:
    print("| run | gradient norm / weight norm at the first batch |")
    print("|---|---|")
    for name in runs:
        norms = first_gradients(corpus, **RUNS[name])
        cells = ", ".join(f"{k} {g:.1e} / {w:.1f}" for k, (g, w) in norms.items())
        print(f"| {name} | {cells} |")


@exit_codes.command
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m experiments.families.keys_task")
    p.add_argument("--work_dir", required=True, help="where the corpus is written")
    p.add_argument("--runs", default=",".join(RUNS), help=f"of {', '.join(RUNS)}")
    p.add_argument("--seeds", default="1,2,3", help="comma-separated seeds")
    p.add_argument("--steps", type=arg_types.positive_int, default=300)
    p.add_argument(
        "--gradients",
        action="store_true",
        help="print each weight's gradient norm on the first batch instead of training",
    )
    args = p.parse_args(argv)
    runs = [r for r in args.runs.split(",") if r]
    unknown = [r for r in runs if r not in RUNS]
    if unknown:
        p.error(f"unknown runs {unknown}")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s]
    except ValueError:
        p.error(f"--seeds: comma-separated integers, got {args.seeds!r}")
    corpus = write_corpus(os.path.abspath(args.work_dir))
    if args.gradients:
        _print_gradients(corpus, runs)
        return 0
    print(f"| run | {' | '.join(f'gap, seed {s}' for s in seeds)} | loss (right), mean |")
    print(f"|---|{'---|' * len(seeds)}---|")
    for name in runs:
        gaps, rights = [], []
        t0 = time.time()
        for seed in seeds:
            right, wrong = losses(corpus, train(corpus, args.steps, seed, **RUNS[name]))
            gaps.append(wrong - right)
            rights.append(right)
        cells = " | ".join(f"{g:+.3f}" for g in gaps)
        print(f"| {name} | {cells} | {np.mean(rights):.3f} |  ({time.time() - t0:.0f} s)")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
