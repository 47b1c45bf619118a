"""Ctrl-C at random moments of a running eval job: how many end as they should.

    python -m experiments.reliability.ctrl_c_hunt [--rounds 100] [--seed 1]
        [--out_json experiments/results/ctrl_c_hunt_<host>.json]

Trains the tests' tiny model for 32 steps, then `--rounds` times starts an eval job on it
(`--mode=eval`, looping on that checkpoint, as beside a training job that has ended: a few
hundred evaluations a second, each a TensorFlow call, a summary write and a best-model
check) and sends it SIGINT after a random number of evaluations (1-200) and a random
moment (0-50 ms) later. Each must end with status 130 and `interrupted` as its last line.
An exception raised inside Python code that TensorFlow's C++ called back corrupts the heap
(`pointer_generator/runtime/interrupts.py`): such a job aborted (status -6, "free():
invalid next size") in 3 of about 190 rounds before interrupts raised outside TensorFlow.
Prints each round that went wrong with its output's end, then the count.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import tempfile
import time

from experiments.benchmarks import common
from pointer_generator.cli import arg_types
from pointer_generator.runtime import child_processes

TRAIN_STEPS = 32
MAX_EVALS_BEFORE = 200
MAX_DELAY_S = 0.05
ROUND_TIMEOUT_S = 120


def _setup(folder: str) -> list[str]:
    """Tiny data, a model trained TRAIN_STEPS steps, and the eval job's arguments."""
    from tests import helpers

    data = helpers.tiny_setup(folder, n_train=40, n_val=12)
    common_flags = dict(vocab_path=data.vocab_path, log_root=data.log_root, exp_name="hunt")
    train = helpers.cli_args(
        mode="train", data_path=data.train_path, max_steps=TRAIN_STEPS, **common_flags
    )
    child_processes.run(
        [sys.executable, "-m", "pointer_generator.run_summarization", *train],
        check=True,
        capture_output=True,
        env=helpers.subprocess_env(),
    )
    return helpers.cli_args(
        mode="eval",
        data_path=data.val_path,
        eval_interval_secs=0.2,
        max_eval_iterations=0,
        **common_flags,
    )


# Ctrl-C as at a terminal, even when this runner was started with SIGINT ignored (`&`).
CHILD = (
    "import runpy, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "sys.argv = ['run_summarization', *sys.argv[1:]]\n"
    "runpy.run_module('pointer_generator.run_summarization', run_name='__main__')\n"
)


def one_round(children, eval_args: list[str], rng: random.Random) -> dict:
    """Start an eval job, interrupt it; its status, evaluations seen and output's end."""
    from tests import helpers

    proc = children.start(
        [sys.executable, "-c", CHILD, *eval_args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=helpers.subprocess_env(),
        start_new_session=True,
    )
    target, seen, lines = rng.randint(1, MAX_EVALS_BEFORE), 0, []
    for line in proc.stdout:
        lines.append(line)
        if "eval step" in line:
            seen += 1
            if seen >= target:
                time.sleep(rng.random() * MAX_DELAY_S)
                proc.send_signal(signal.SIGINT)
                break
    lines.extend(proc.stdout)
    status = proc.wait(ROUND_TIMEOUT_S)
    ok = status == 130 and lines and lines[-1].strip() == "interrupted"
    return {"status": status, "evaluations": seen, "ok": bool(ok), "tail": "".join(lines[-12:])}


def main(argv=None) -> int:
    p = common.argument_parser(__doc__, __spec__)
    p.add_argument("--rounds", type=arg_types.positive_int, default=100)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--out_json", default="")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    bad = []
    started = time.time()
    with tempfile.TemporaryDirectory() as folder, child_processes.Children() as children:
        eval_args = _setup(folder)
        for r in range(args.rounds):
            result = one_round(children, eval_args, rng)
            if not result["ok"]:
                bad.append({"round": r, **result})
                print(f"round {r}: status {result['status']}\n{result['tail']}", flush=True)
            elif (r + 1) % 10 == 0:
                print(f"{r + 1}/{args.rounds} rounds, {len(bad)} wrong", flush=True)
    summary = {
        "machine": common.machine_description(),
        "command": "python -m experiments.reliability.ctrl_c_hunt "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "rounds": args.rounds,
        "seed": args.seed,
        "wrong": len(bad),
        "wrong_rounds": bad,
        "seconds": round(time.time() - started, 1),
    }
    print(f"{len(bad)} of {args.rounds} rounds did not end with status 130 and 'interrupted'")
    if args.out_json:
        with open(args.out_json, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
