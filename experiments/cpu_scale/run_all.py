"""Rerun every CPU-scale experiment and rewrite its report, in one command.

    python -m experiments.cpu_scale.run_all --work_dir /tmp/cpu_scale \
        [--report_dir experiments/results/cpu_scale] [--jobs 2] [--steps_scale 1.0]

Steps (each skipped when already done, so an interrupted run continues where it stopped;
the recipe runner resumes training from the newest checkpoint and decoding from the last
complete example):

1. `split_sample` of the shared 9,490-pair sample into `<work_dir>/data` (8,490 / 500 / 500);
2. the recipes of `experiments/cpu_scale/recipes/` — `baseline` and
   `pointer_generator_coverage` (which runs `pointer_generator` first) — through
   `experiments.paper.run_recipe`, `--jobs` of them at a time, logs in `<work_dir>/logs/`;
3. lead-3 on the test split (`experiments.lead3`);
4. `experiments.report` over the four decode dirs, with learning curves, written to
   `--report_dir` (markdown + PNG + JSON), followed by the checks of the paper's findings
   (`findings`), each stated as held or not held.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from experiments import report
from experiments.cpu_scale import findings
from experiments.cpu_scale.split_sample import default_input
from experiments.paper import run_recipe
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.errors import PointerGeneratorError
from pointer_generator.runtime import child_processes, owned_files

HERE = os.path.dirname(os.path.abspath(__file__))
RECIPES = os.path.join(HERE, "recipes")
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_REPORT_DIR = os.path.join(REPO, "experiments", "results", "cpu_scale")
# recipe file -> (experiment dir, [(report row name, decode stage)])
RUNS = {
    "baseline": ("baseline", [("baseline_50k", "decode_test")]),
    "pointer_generator_coverage": (
        "pointer_generator",
        [
            ("pointer_generator", "decode_test"),
            ("pointer_generator_coverage", "decode_test_coverage"),
        ],
    ),
}
VOCAB_SIZE, MAX_ENC_STEPS = findings.VOCAB_WORDS, 200  # as recipes/cpu.flags


class RunError(PointerGeneratorError):
    pass


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def run(
    children: child_processes.Children, cmd: list[str], log_path: str | None = None
) -> subprocess.Popen:
    """Start `cmd` (output to `log_path` if given) in `children`: SIGTERM / Ctrl-C of
    this runner stops and reaps it."""
    say(" ".join(cmd) + (f"  (log: {log_path})" if log_path else ""))
    if not log_path:
        return children.start(cmd, cwd=REPO)
    with owned_files.open_in_place(log_path, "a") as out:  # the child keeps its own copy
        return children.start(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)


def wait_all(procs: list[tuple[str, subprocess.Popen]]) -> None:
    failed = []
    for name, proc in procs:
        if proc.wait() != 0:
            failed.append(f"{name} (exit {proc.returncode})")
    if failed:
        raise RunError(
            "failed: " + ", ".join(failed) + "; see the logs, fix, and rerun the "
            "same command to continue"
        )


def split(children, args, data_dir: str) -> None:
    if os.path.isfile(os.path.join(data_dir, "split.json")):
        say(f"split: {data_dir} exists, kept")
        return
    source = args.input or default_input()
    if not source:
        raise RunError(
            "the shared sample is not here: give --input PATH to "
            "cnndm_sample.jsonl.gz (or set POINTER_GENERATOR_SHARED_DATA)"
        )
    wait_all(
        [
            (
                "split_sample",
                run(
                    children,
                    [
                        args.python,
                        "-m",
                        "experiments.cpu_scale.split_sample",
                        "--input",
                        source,
                        "--out_dir",
                        data_dir,
                    ],
                ),
            )
        ]
    )


def recipes(children, args, data_dir: str, runs_dir: str, logs_dir: str) -> None:
    pending = list(RUNS)
    while pending:
        batch, pending = pending[: args.jobs], pending[args.jobs :]
        procs = []
        for name in batch:
            cmd = [
                args.python,
                "-m",
                "experiments.paper.run_recipe",
                "--recipe",
                os.path.join(RECIPES, name + ".json"),
                "--data_dir",
                data_dir,
                "--log_root",
                runs_dir,
                "--steps_scale",
                str(args.steps_scale),
            ]
            cmd += [f"--set={s}" for s in args.set]
            procs.append((name, run(children, cmd, os.path.join(logs_dir, name + ".log"))))
        wait_all(procs)


def decode_dirs(runs_dir: str) -> dict[str, str]:
    out = {}
    for exp_name, rows in RUNS.values():
        state_path = os.path.join(runs_dir, exp_name, "recipe_state.json")
        stages = run_recipe.State(state_path).data["stages"]  # checked as the runner checks it
        for row, stage in rows:
            d = stages.get(stage, {}).get("decode_dir")
            if not d:
                raise RunError(f"{state_path}: stage {stage} has no decode dir yet")
            out[row] = d
    return out


@exit_codes.command(interrupted="interrupted; run the same command again to continue")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.cpu_scale.run_all", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--work_dir", required=True, help="data, runs and logs go here")
    parser.add_argument("--report_dir", default=DEFAULT_REPORT_DIR)
    parser.add_argument("--input", default=None, help="default: ../shared/data sample")
    parser.add_argument(
        "--jobs",
        type=arg_types.positive_int,
        default=2,
        help="recipes run at the same time (2 uses 2 cores best: one "
        "training process keeps only ~1.2 cores busy)",
    )
    parser.add_argument(
        "--steps_scale",
        type=arg_types.positive_float,
        default=1.0,
        help="multiply every training step count (smoke tests)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FLAG=VALUE",
        help="extra CLI flag for every command (smoke tests)",
    )
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args(argv)
    # SIGTERM / Ctrl-C of this runner stops and reaps every process it started.
    with child_processes.Children() as children:
        return _run_all(children, args, os.path.abspath(args.work_dir))


def _run_all(children: child_processes.Children, args, work: str) -> int:
    """Every step of the module's docstring, each skipped when done."""
    data_dir, runs_dir = os.path.join(work, "data"), os.path.join(work, "runs")
    logs_dir = os.path.join(work, "logs")
    owned_files.make_dir(logs_dir)
    try:
        start = time.time()
        split(children, args, data_dir)
        recipes(children, args, data_dir, runs_dir, logs_dir)
        test_glob = os.path.join(data_dir, "chunked", "test_*")
        lead3_dir = os.path.join(work, "lead3")
        if not os.path.isfile(os.path.join(lead3_dir, "ROUGE_results.txt")):
            wait_all(
                [
                    (
                        "lead3",
                        run(
                            children,
                            [
                                args.python,
                                "-m",
                                "experiments.lead3",
                                "--data_path",
                                test_glob,
                                "--out_dir",
                                lead3_dir,
                                "--overwrite",
                            ],
                        ),
                    )
                ]
            )
        dirs = decode_dirs(runs_dir)
        dirs["lead3"] = lead3_dir
        vocab = report.Vocab(os.path.join(data_dir, "vocab"), VOCAB_SIZE)
        systems = report.gather(dirs, test_glob, vocab, MAX_ENC_STEPS)
        train_runs = {
            exp: report.read_scalars(os.path.join(runs_dir, exp)) for exp, _ in RUNS.values()
        }
        os.makedirs(args.report_dir, exist_ok=True)
        out = os.path.join(args.report_dir, "report.md")
        written = report.write_report(
            systems,
            out,
            train_runs=train_runs,
            data_path="<work_dir>/data/chunked/test_*",
            vocab_path=f"<work_dir>/data/vocab (first {VOCAB_SIZE:,})",
        )
        findings.add_to_report(out, systems, runs_dir, args, time.time() - start)
        say(f"report: {written['markdown']}")
    except (PointerGeneratorError, OSError) as e:
        return exit_codes.print_error(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
