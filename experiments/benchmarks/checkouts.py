"""Training and decoding speed of two checkouts of this project, side by side: the check
that a refactor kept the speed (issue 43: within 3 %).

    python -m experiments.benchmarks.checkouts --before DIR [--after DIR] [--rounds 3]
        [--train_steps 6] [--decode_articles 8] [--data_path ... --vocab_path ...]

Each round runs one child process per checkout, in alternating order (before, after;
then after, before; ...), so both see the same machine load. A child imports the package
from its checkout only and uses the public API that both keep (`pg.HParams`, `pg.Vocab`,
`pg.make_dataset`, `pg.Trainer`, `pg.SearchSettings`, `pg.BeamSearchDecoder`): the
pointer-generator at the paper's sizes with coverage (hidden 256, embeddings 128, a
50,000-word vocabulary, batches of 16 articles of up to 400 tokens, summaries of up to
100), `--train_steps` timed training steps after a warm-up one (a step on a batch
shape not seen before compiles, and is not timed), and the batched beam
search (beam 4, 35 to 100 steps) over `--decode_articles` articles after a warm-up batch.
Printed: each checkout's median seconds per training step and articles decoded per
second over the rounds, and after / before (a ratio of 1.03 is 3 % slower).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile

from experiments.benchmarks import common
from experiments.benchmarks.pipeline import _write_chunks
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.runtime import child_processes

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The child: the package of one checkout, its public API only; one JSON line out.
CHILD = r"""
import json, sys, time
import tensorflow as tf
import pointer_generator as pg

data, vocab_path, steps, articles = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
hps = pg.HParams(batch_size=16, max_enc_steps=400, max_dec_steps=100, coverage=True)
vocab = pg.Vocab(vocab_path, 50000)
tf.keras.utils.set_random_seed(1)
trainer = pg.Trainer(hps, vocab.size())
batches = iter(pg.make_dataset(data, vocab, hps, "train", False).map(pg.model_inputs))
# A step on a batch shape not seen before compiles (seconds): such steps are not timed.
seen, timed = {trainer.train_step(batches).get("batch_shape")}, []
while len(timed) < steps:
    t0 = time.perf_counter()
    m = trainer.train_step(batches)
    dt = time.perf_counter() - t0
    shape = m.get("batch_shape")
    if shape is not None and shape not in seen:
        seen.add(shape)
        continue
    timed.append(dt)
train_s = sum(timed) / steps
search = pg.SearchSettings(beam_size=4, min_dec_steps=35, max_dec_steps=100)
decoder = pg.BeamSearchDecoder(trainer.model, vocab, hps, search)
rows = hps.replace(batch_size=articles)
batch = next(iter(pg.make_dataset(data, vocab, rows, "decode", True)))
decoder.decode_batch(batch)
t0 = time.perf_counter()
decoder.decode_batch(batch)
decode_rate = articles / (time.perf_counter() - t0)
print(json.dumps({"train_s_per_step": train_s, "decode_articles_per_s": decode_rate}))
"""


def _run_child(checkout: str, args, data: str) -> dict | None:
    """The child's figures, or None after printing why it failed."""
    env = dict(os.environ, PYTHONPATH=checkout, TF_CPP_MIN_LOG_LEVEL="2")
    cmd = [sys.executable, "-c", CHILD, data, args.vocab_path]
    cmd += [str(args.train_steps), str(args.decode_articles)]
    done = child_processes.run(cmd, cwd=checkout, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        print(f"error: the measurement in {checkout} failed (above)", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _commit(root: str) -> str:
    """`<folder> (commit <hash>)`, or the folder alone where git cannot tell."""
    done = child_processes.run(
        ["git", "-C", root, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True
    )
    return f"{root} (commit {done.stdout.strip()})" if done.returncode == 0 else root


def main(argv=None) -> int:
    p = common.argument_parser(__doc__, __spec__)
    common.add_data_arguments(p)
    p.add_argument("--before", required=True, help="the checkout measured first (its root)")
    p.add_argument("--after", default=REPO, help="default: this checkout")
    p.add_argument("--rounds", type=arg_types.positive_int, default=3)
    p.add_argument("--train_steps", type=arg_types.positive_int, default=6)
    p.add_argument("--decode_articles", type=arg_types.positive_int, default=8)
    p.add_argument("--out_json", default=None)
    args = p.parse_args(argv)
    if common.data_missing(args):
        return 0
    roots = {"before": os.path.abspath(args.before), "after": os.path.abspath(args.after)}
    for name, root in roots.items():
        if not os.path.isfile(os.path.join(root, "pointer_generator", "__init__.py")):
            print(f"error: --{name}={root} is no checkout of this project", file=sys.stderr)
            return 2
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory() as tmp:
        data = args.data_path
        if data.endswith(".jsonl.gz"):
            data = _write_chunks(data, tmp)  # the benchmarks' .bin copy of the sample
        for r in range(args.rounds):
            order = ("before", "after") if r % 2 == 0 else ("after", "before")
            for name in order:
                figures = _run_child(roots[name], args, data)
                if figures is None:
                    return 2
                runs[name].append(figures)
                print(f"round {r + 1}/{args.rounds} {name}: {runs[name][-1]}", flush=True)
    figures = {}
    for key in ("train_s_per_step", "decode_articles_per_s"):
        for name in ("before", "after"):
            values = [x[key] for x in runs[name]]
            figures[f"{name}_{key}"] = round(statistics.median(values), 4)
            # The spread over the rounds: a ratio inside it is noise, not the change.
            figures[f"{name}_{key}_range"] = f"{min(values):.4g}-{max(values):.4g}"
        figures[f"{key}_after_over_before"] = round(
            figures[f"after_{key}"] / figures[f"before_{key}"], 3
        )
    config = (
        f"pointer-generator + coverage, paper sizes, batch 16; {args.train_steps} steps and "
        f"{args.decode_articles} articles (beam 4) per child, {args.rounds} alternating rounds; "
        f"before {_commit(roots['before'])}, after {_commit(roots['after'])}"
    )
    common.record("checkouts", config, figures, args.out_json)
    return 0


if __name__ == "__main__":
    sys.exit(exit_codes.run_command(main))
