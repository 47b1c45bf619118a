"""The first training step and the first decode batch of a new process, at the paper
configuration: as train and decode mode run them (off: nothing kept across processes), and
with TensorFlow's persistent XLA cache (`runtime/compile_cache.py`, which `summarize` and
`serve` use) empty (cold), filled by the cold run (warm), and filled but with one other
function traced first (shifted), each a fresh process, in turn.

    python -m experiments.benchmarks.cold_start [--rounds 3] [--steps 3]

Issue 46 item 4 measured 6.5 s for the first training step and 12 s for the first decode
batch on its Intel host, and asked whether a compile cache kept across processes would
shorten them. The cache's key names the traced function, and a function's name holds a
counter of everything traced before it in the process: "shifted" is a process whose
history differs by one small function, as a train job that resumes from a checkpoint (it
restores before its first step) or an eval job differs from the job that filled the cache.

Each child process enables the cache (or not) before importing TensorFlow, as the command
line does, then runs what the modes run on synthetic data of exactly the paper's lengths
(`roofline.synthetic_data`: batch 16, articles of 400 tokens, summaries of 100, a 50,000-word
vocabulary, hidden 256, embeddings 128, pointer and coverage): `Trainer.train_step` once
(tracing and compiling; timed), `--steps` more (the median is the step's own time), then
`BeamSearchDecoder.decode_batch` on 16 articles (beam 4, untrained: 120 steps each), twice.
Printed: the median over the rounds of each setting's first step, later step, first decode
batch and later decode batch, the process's wall time, warm / off and shifted / off, and how
many entries the cache holds after each setting.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile

from experiments.benchmarks import common
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.runtime import child_processes

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETTINGS = ("off", "cold", "warm", "shifted")

# The child: the cache as the command line sets it, then the modes' first calls; one JSON line.
CHILD = r"""
import json, sys, time
start = time.perf_counter()
from pointer_generator.runtime import compile_cache
kept = compile_cache.enable()
import tensorflow as tf
from experiments.benchmarks import roofline
from pointer_generator.data.vocab import Vocab

folder, steps = sys.argv[1], int(sys.argv[2])
if sys.argv[3] == "shifted":
    tf.function(lambda x: x + 1)(tf.constant(1.0))  # one more function traced before
cfg = {"batch": 16, "enc_len": 400, "dec_len": 100, "decode_steps": 120, "hidden": 256,
       "emb": 128, "vocab": 50000}
vocab = Vocab(folder + "/vocab", 0)
data = folder + "/data.bin"
train = roofline.time_training(tf, cfg, vocab, data, steps)
decode = roofline.time_decoding(tf, cfg, vocab, data, 16, 16)  # the batch twice
print(json.dumps({
    "kept": kept,
    "first_step_s": train["first_step_s"], "step_s": train["s_per_step"],
    "first_decode_batch_s": decode["first_batch_s"],
    "decode_batch_s": 16 / decode["articles_per_s"],
    "process_s": time.perf_counter() - start,
}))
"""


def _run_child(folder: str, cache: str, steps: int, setting: str) -> dict:
    env = dict(os.environ, POINTER_GENERATOR_COMPILE_CACHE=cache, TF_CPP_MIN_LOG_LEVEL="2")
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("TF_XLA_FLAGS", None)  # the cache flag is the child's own to set
    cmd = [sys.executable, "-c", CHILD, folder, str(steps), setting]
    done = child_processes.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"error: the child with POINTER_GENERATOR_COMPILE_CACHE={cache} failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


@exit_codes.command
def main(argv=None) -> int:
    p = common.argument_parser(__doc__, __spec__)
    p.add_argument("--rounds", type=arg_types.positive_int, default=3)
    p.add_argument("--steps", type=arg_types.positive_int, default=3, help="later steps timed")
    p.add_argument("--out_json", default=None)
    args = p.parse_args(argv)
    from experiments.benchmarks import roofline
    from pointer_generator.runtime import compile_cache

    machine = common.machine_description()
    print(f"cold_start on {machine}", flush=True)
    cfg = {"vocab": 50_000, "enc_len": 400, "dec_len": 100}
    runs = {s: [] for s in SETTINGS}
    with tempfile.TemporaryDirectory() as tmp:
        roofline.synthetic_data(tmp, cfg, 32)
        for r in range(args.rounds):
            cache = tempfile.mkdtemp(dir=tmp, prefix="xla-")  # empty for each round's cold
            for setting in SETTINGS:
                got = _run_child(tmp, "off" if setting == "off" else cache, args.steps, setting)
                if (got["kept"] is None) != (setting == "off"):
                    raise SystemExit(f"error: the {setting} child kept compiles in {got['kept']}")
                got["entries"] = compile_cache.entries(got["kept"]) if got["kept"] else 0
                runs[setting].append(got)
                print(
                    f"round {r + 1}/{args.rounds} {setting}: first step "
                    f"{got['first_step_s']:.2f} s (then {got['step_s']:.3f}), first decode "
                    f"batch {got['first_decode_batch_s']:.2f} s (then "
                    f"{got['decode_batch_s']:.2f}), process {got['process_s']:.1f} s, "
                    f"{got['entries']} entries in the cache after it",
                    flush=True,
                )
    keys = ("first_step_s", "step_s", "first_decode_batch_s", "decode_batch_s", "process_s")
    figures = {
        f"{s}_{k}": round(statistics.median(g[k] for g in runs[s]), 3)
        for s in SETTINGS
        for k in keys
    }
    for k in ("first_step_s", "first_decode_batch_s", "process_s"):
        for s in ("warm", "shifted"):
            figures[f"{s}_over_off_{k}"] = round(figures[f"{s}_{k}"] / figures[f"off_{k}"], 3)
    for s in SETTINGS[1:]:
        figures[f"{s}_cache_entries_after"] = runs[s][-1]["entries"]
    figures["load_avg_1min"] = round(os.getloadavg()[0], 2)
    config = (
        f"paper configuration (batch 16, 400/100, hidden 256, emb 128, vocabulary 50,000, "
        f"pointer + coverage), synthetic data; {args.rounds} rounds of off, cold, warm, "
        f"shifted, each a fresh process; {args.steps} later steps; decode batches of 16 "
        "articles, beam 4"
    )
    common.record("cold_start", config, figures, args.out_json)
    for k, what in (("first_step_s", "first training step"),
                    ("first_decode_batch_s", "first decode batch")):  # fmt: skip
        print(
            f"{what}: off {figures[f'off_{k}']:.2f} s, cold {figures[f'cold_{k}']:.2f} s, "
            f"warm {figures[f'warm_{k}']:.2f} s (warm / off {figures[f'warm_over_off_{k}']:.2f}), "
            f"shifted {figures[f'shifted_{k}']:.2f} s on {machine}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
