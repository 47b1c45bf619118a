"""Training speed of the README's command under each padding, side by side in one run.

    python -m experiments.benchmarks.padding [--steps 40] [--paper] [--paper_steps 12]

Each row runs `pointer-generator --mode=train` as a user types it (a fresh experiment, its
first call included) with the batches padded

* `buckets`: the default (no padding flag): each batch up to one of `--length_buckets`
  article lengths;
* `static`: `--static_shapes=1`, every batch to max_enc_steps;
* `original`: `--static_shapes=0`, each batch to its longest article (the original's),

and reports the command's wall time, the steady steps/s of its last progress line, and
how many of its logged steps were marked `compiling`. The toy configuration (the
quick-start's model on a synthetic corpus this benchmark writes) always runs; `--paper`
adds the paper's configuration (hidden 256, emb 128, 400/100 tokens, batch 16, 50k
vocabulary) on the shared CNN/DM sample. Ratios are against `static` of the same run.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time

from experiments.benchmarks import common
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.runtime import child_processes

PADDINGS = {"buckets": [], "static": ["--static_shapes=1"], "original": ["--static_shapes=0"]}
TOY_MODEL = ["--hidden_dim=64", "--emb_dim=64", "--max_enc_steps=200", "--max_dec_steps=40",
             "--vocab_size=5000", "--batch_size=16"]  # fmt: skip
PAPER_MODEL = ["--vocab_size=50000"]  # every other flag at its default: the paper's
STEP_LINE = re.compile(r"step (\d+)/\d+ \| loss \S+ \| ([\d.]+) steps/s")


def train(work: str, name: str, data: list[str], model: list[str], padding: list[str],
          steps: int) -> dict:  # fmt: skip
    cmd = [sys.executable, "-m", "pointer_generator.cli.run_summarization", "--mode=train",
           f"--log_root={work}/runs", f"--exp_name={name}", *data, *model, *padding,
           f"--max_steps={steps}", "--log_every_n_steps=1",
           "--save_checkpoint_secs=100000"]  # fmt: skip
    t0 = time.time()
    out = child_processes.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if out.returncode:
        sys.exit(f"error: {name} failed (status {out.returncode}):\n{out.stderr[-2000:]}")
    lines = [ln for ln in out.stderr.splitlines() if STEP_LINE.search(ln)]
    rate = float(STEP_LINE.search(lines[-1]).group(2)) if lines else 0.0
    return {
        "wall_s": round(wall, 1),
        "steady_steps_per_s": rate,
        "compiling_steps": sum("compiling" in ln for ln in lines),
        "steps": steps,
    }


def toy_data(work: str) -> list[str]:
    out = os.path.join(work, "toy")
    child_processes.run([sys.executable, "-m", "data_tools.toy_data", f"--out_dir={out}",
                         "--num_train=2000", "--num_val=50", "--num_test=50"],
                        check=True, capture_output=True)  # fmt: skip
    return [f"--data_path={out}/chunked/train_*", f"--vocab_path={out}/vocab"]


def paper_data(work: str, args) -> list[str] | None:
    if common.data_missing(args):
        return None
    pattern = args.data_path
    if pattern.endswith(".jsonl.gz"):
        from experiments.benchmarks.pipeline import _write_chunks

        pattern = _write_chunks(pattern, work)
    return [f"--data_path={pattern}", f"--vocab_path={args.vocab_path}"]


@exit_codes.command
def main(argv=None) -> None:
    p = common.argument_parser(__doc__, __spec__)
    p.add_argument("--steps", type=arg_types.positive_int, default=40)
    p.add_argument("--paper", action="store_true", help="also the paper configuration")
    p.add_argument("--paper_steps", type=arg_types.positive_int, default=12)
    common.add_data_arguments(p)
    args = p.parse_args(argv)
    figures = {"load_before": round(os.getloadavg()[0], 2)}
    configs = [("toy", TOY_MODEL, args.steps)]
    if args.paper:
        configs.append(("paper", PAPER_MODEL, args.paper_steps))
    with tempfile.TemporaryDirectory() as work:
        for config, model, steps in configs:
            data = toy_data(work) if config == "toy" else paper_data(work, args)
            if data is None:
                continue
            rows = {}
            for padding, flags in PADDINGS.items():
                rows[padding] = train(work, f"{config}_{padding}", data, model, flags, steps)
                print(f"{config} {padding}: {rows[padding]}", flush=True)
            for padding, row in rows.items():
                for key, value in row.items():
                    figures[f"{config}_{padding}_{key}"] = value
                figures[f"{config}_{padding}_wall_vs_static"] = round(
                    row["wall_s"] / rows["static"]["wall_s"], 2
                )
    figures["load_after"] = round(os.getloadavg()[0], 2)
    common.record("padding", f"README train command, {args.steps} toy steps", figures)


if __name__ == "__main__":
    sys.exit(main())
