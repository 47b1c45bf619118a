"""Run a Table 1 recipe end to end with the command-line interface, resumably.

    python -m experiments.paper.run_recipe --recipe pointer_generator_coverage \
        --data_dir D --log_root L [--exp_name NAME] [--stage NAME ...] [--dry_run] [--list]
        [--set FLAG=VALUE ...] [--steps_scale X] [--eval_grace_secs S]

`D` is a `finished_files` dir (`chunked/{train,val,test}_*.bin` and `vocab`). Every stage
(see experiments/paper/recipe.py) runs `python -m pointer_generator.run_summarization`
(or the ROUGE / analysis modules) in a subprocess. The experiment dir `L/<exp_name>` holds
`recipe_state.json`, which records each finished stage (with the settings it ran with), the
global step a relative-step stage started from, the decode dir and its scores. A rerun
skips finished stages; an interrupted stage simply runs again, and training resumes from
its newest checkpoint, decoding after its last complete example. A finished stage whose
settings differ from the recipe's now is an error (use another --exp_name, or --stage to
redo it deliberately).

`--dry_run` prints the exact commands (finished stages as comments) and runs nothing.
`--list` prints the stages and their state. `--stage NAME` (repeatable) runs only those
stages, finished or not. `--set FLAG=VALUE` adds a flag to every CLI command (e.g. a
smaller `hidden_dim` for a smoke test); `--steps_scale` multiplies every step count.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import time
from types import SimpleNamespace

from experiments.paper import recipe as recipe_lib
from experiments.paper.recipe import CLI_MODULE, Recipe, RecipeError, Stage
from pointer_generator import exit_codes
from pointer_generator.cli import arg_types
from pointer_generator.decoding import folder
from pointer_generator.runtime import child_processes, json_files, owned_files, staging
from pointer_generator.search.settings import SearchSettings

STATE_FILE = "recipe_state.json"
LOGS_SUBDIR = "recipe_logs"
SINGLE_PASS_LOSS = os.path.join("eval", "single_pass_loss.txt")
DATA_SETS = {"train": "train", "val": "val", "test": "test"}
# Shown by --dry_run where the value is only known at run time.
_STEP_PLACEHOLDER = "<global step at the start of this stage + {}>"


# ---------------------------------------------------------------------------------------
# State file


class State:
    """`recipe_state.json`: {"stages": {name: {...}}}, rewritten atomically on each change."""

    def __init__(self, path: str, dry_run: bool = False):
        self.path, self.dry_run = path, dry_run
        self.data = {"version": 1, "stages": {}}
        if os.path.exists(path):
            try:
                with open(path, encoding="utf-8") as f:
                    self.data = json_files.load(f)
                if not isinstance(self.data, dict) or not isinstance(self.data.get("stages"), dict):
                    raise ValueError("no 'stages' object")
            except (OSError, ValueError) as e:
                raise RecipeError(
                    f"{path}: unreadable recipe state ({e}); fix or remove "
                    "it (finished stages are then rerun)"
                ) from None

    def stage(self, name: str) -> dict:
        return self.data["stages"].get(name, {})

    def finished(self, name: str) -> bool:
        return bool(self.stage(name).get("finished"))

    def update(self, name: str, **values) -> None:
        self.data["stages"].setdefault(name, {}).update(values)
        self._save()

    def unfinish(self, name: str) -> None:
        """Mark a stage that is run again on purpose as not finished. Its start step is
        kept, so a relative-step stage still ends where it was meant to."""
        record = self.data["stages"].get(name)
        if record:
            for key in ("finished", "fingerprint"):
                record.pop(key, None)
            self._save()

    def _save(self) -> None:
        if self.dry_run:
            return
        staging.replace_file(self.path, json.dumps(self.data, indent=2))


# ---------------------------------------------------------------------------------------
# Reading what the CLI wrote


def newest_checkpoint(train_dir: str) -> str | None:
    """Basename of the checkpoint the `checkpoint` state file of `train_dir` names."""
    path = os.path.join(train_dir, "checkpoint")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r'^model_checkpoint_path:\s*"((?:[^"\\]|\\.)*)"', text, re.M)
    if not m:
        return None
    # An entry naming another folder's checkpoint (a hand-edited or foreign state file)
    # is not this experiment's, as the project's own readers hold (checkpoint_scan).
    full = os.path.normpath(os.path.join(train_dir, m.group(1)))
    return os.path.basename(full) if os.path.dirname(full) == os.path.normpath(train_dir) else None


def step_of(checkpoint_name: str) -> int:
    """Global step of `model.ckpt-230000`, `model-230000`, `model.ckpt-230000_cov_init`."""
    m = re.search(r"-(\d+)[^-]*$", checkpoint_name)
    if not m:
        raise RecipeError(f"cannot read a global step from checkpoint {checkpoint_name!r}")
    return int(m.group(1))


def read_key_values(path: str) -> dict:
    """`key: value` lines (eval/single_pass_loss.txt), numbers converted."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, sep, value = line.partition(":")
            if not sep:
                continue
            value = value.strip()
            for conv in (int, float):
                try:
                    value = conv(value)
                    break
                except ValueError:
                    pass
            out[key.strip()] = value
    return out


# ---------------------------------------------------------------------------------------
# Runner


class Runner:
    """Builds each stage's commands and runs them (or prints them with dry_run)."""

    def __init__(
        self,
        recipe: Recipe,
        data_dir: str,
        log_root: str,
        *,
        exp_name=None,
        python: str = sys.executable,
        overrides: dict | None = None,
        steps_scale: float = 1.0,
        eval_grace_secs: float = 120.0,
        dry_run: bool = False,
        out=None,
        poll_secs: float = 2.0,
    ):
        self.recipe = recipe
        self.data_dir = os.path.abspath(data_dir)
        self.exp_dir = os.path.join(os.path.abspath(log_root), exp_name or recipe.exp_name)
        self.log_root, self.exp_name = os.path.abspath(log_root), exp_name or recipe.exp_name
        self.python = python
        self.overrides = overrides or {}
        self.steps_scale = steps_scale
        self.eval_grace_secs = eval_grace_secs
        self.dry_run = dry_run
        self.out = out
        self.poll_secs = poll_secs
        self.state = State(os.path.join(self.exp_dir, STATE_FILE), dry_run)

    # ---- paths and commands -----------------------------------------------------------
    def data_path(self, split: str) -> str:
        return os.path.join(self.data_dir, "chunked", f"{DATA_SETS[split]}_*")

    @property
    def vocab_path(self) -> str:
        return os.path.join(self.data_dir, "vocab")

    @property
    def train_dir(self) -> str:
        return os.path.join(self.exp_dir, "train")

    def check_data(self) -> list[str]:
        """Problems with the data dir (empty list if none)."""
        problems = []
        for split in DATA_SETS:
            if not glob.glob(self.data_path(split)):
                problems.append(f"{self.data_path(split)} matches no files")
        if not os.path.isfile(self.vocab_path):
            problems.append(f"{self.vocab_path} does not exist")
        return problems

    def static_args(self, stage: Stage) -> list[str]:
        return recipe_lib.static_args(stage, self.overrides, self.steps_scale)

    def cli(self, stage: Stage, mode: str, split: str, *extra: str) -> list[str]:
        return (
            [self.python, "-m", CLI_MODULE]
            + self.static_args(stage)
            + list(extra)
            + [
                f"--mode={mode}",
                f"--data_path={self.data_path(split)}",
                f"--vocab_path={self.vocab_path}",
                f"--log_root={self.log_root}",
                f"--exp_name={self.exp_name}",
            ]
        )

    def fingerprint(self, stage: Stage) -> dict:
        """What a finished stage must agree on with the recipe to count as done."""
        fp = {"kind": stage.kind}
        if stage.kind == "score":
            fp["decode_stage"] = stage.decode_stage
        else:
            fp["flags"] = recipe_lib.explicit_flags(self.static_args(stage))
        if stage.steps is not None:
            fp["steps"] = recipe_lib.scaled(stage.steps, self.steps_scale)
        return fp

    def max_steps_arg(self, stage: Stage) -> list[str]:
        """`--max_steps` of a relative-step train stage (from the recorded start step)."""
        if stage.kind != "train" or stage.steps is None:
            return []
        steps = recipe_lib.scaled(stage.steps, self.steps_scale)
        start = self.state.stage(stage.name).get("start_step")
        if start is None:
            return [f"--max_steps={_STEP_PLACEHOLDER.format(steps)}"]
        return [f"--max_steps={start + steps}"]

    def decode_dir_for(self, stage: Stage, checkpoint: str | None) -> str:
        """Where single-pass decode of `checkpoint` writes (decoding/folder.py's naming)."""
        fv = recipe_lib.resolve(self.static_args(stage))
        settings = SearchSettings(
            beam_size=fv.beam_size,
            min_dec_steps=fv.min_dec_steps,
            max_dec_steps=fv.max_dec_steps,
        )
        name = folder.decode_dir_name(
            self.data_path("test"),
            SimpleNamespace(max_enc_steps=fv.max_enc_steps),
            settings,
            checkpoint or "model.ckpt-<N>",
        )
        return os.path.join(self.exp_dir, name)

    def commands(self, stage: Stage) -> tuple[list[list[str]], list[str] | None]:
        """(foreground commands, background eval command or None) of a stage, as they
        would run now."""
        if stage.kind == "train":
            cmd = self.cli(stage, "train", "train", *self.max_steps_arg(stage))
            eval_cmd = self.cli(stage, "eval", "val") if stage.eval_job else None
            if eval_cmd:
                eval_cmd = [a for a in eval_cmd if not a.startswith("--max_steps=")]
            return [cmd], eval_cmd
        if stage.kind == "restore_best_model":
            return [self.cli(stage, "train", "train", "--restore_best_model=True")], None
        if stage.kind == "convert_to_coverage":
            return [self.cli(stage, "train", "train", "--convert_to_coverage_model=True")], None
        if stage.kind == "eval_single_pass":
            return [self.cli(stage, "eval", "val", "--single_pass=True")], None
        if stage.kind == "decode":
            return [self.cli(stage, "decode", "test")], None
        # score
        decode_dir = self.decode_dir_of(stage)
        cmds = []
        if not os.path.isfile(os.path.join(decode_dir, "ROUGE_results.txt")):
            cmds.append(
                [
                    self.python,
                    "-m",
                    "pointer_generator.cli.score_rouge",
                    f"--reference_dir={os.path.join(decode_dir, 'reference')}",
                    f"--decoded_dir={os.path.join(decode_dir, 'decoded')}",
                    f"--out_dir={decode_dir}",
                ]
            )
        decode_fv = recipe_lib.resolve(self.static_args(self.recipe.stage(stage.decode_stage)))
        cmds.append(
            [
                self.python,
                "-m",
                "experiments.analysis",
                f"--decode_dir={decode_dir}",
                f"--data_path={self.data_path('test')}",
                f"--vocab_path={self.vocab_path}",
                f"--vocab_size={decode_fv.vocab_size}",
                f"--max_enc_steps={decode_fv.max_enc_steps}",
                f"--out={os.path.join(decode_dir, 'analysis.json')}",
            ]
        )
        return cmds, None

    # ---- selection --------------------------------------------------------------------
    def plan(self, only: list[str] | None = None) -> list[tuple[Stage, bool]]:
        """[(stage, run it?)] in recipe order; checks finished stages' fingerprints."""
        if only:
            for name in only:
                self.recipe.stage(name)  # raises for an unknown name
        plan = []
        for stage in self.recipe.stages:
            if only:
                plan.append((stage, stage.name in only))
                continue
            record = self.state.stage(stage.name)
            if record.get("finished"):
                recorded = record.get("fingerprint")
                now = self.fingerprint(stage)
                if recorded is not None and recorded != now:
                    raise RecipeError(
                        f"stage {stage.name} of {self.exp_dir} finished with other settings "
                        f"({_diff(recorded, now)}); use another --exp_name, or rerun it on "
                        f"purpose with --stage {stage.name}"
                    )
                plan.append((stage, False))
            else:
                plan.append((stage, True))
        return plan

    # ---- running ----------------------------------------------------------------------
    def say(self, text: str) -> None:
        print(text, file=self.out or sys.stdout, flush=True)

    def run(self, only: list[str] | None = None) -> None:
        for stage in self.recipe.stages:
            # Parse every stage's flags now: a typo fails here, not hours into a run.
            recipe_lib.resolve(self.static_args(stage))
        plan = self.plan(only)
        if not self.dry_run:
            problems = self.check_data()
            if problems:
                raise RecipeError(f"data dir {self.data_dir}: " + "; ".join(problems))
            os.makedirs(self.exp_dir, exist_ok=True)
        else:
            for p in self.check_data():
                self.say(f"# warning: {p}")
        total = len(plan)
        for i, (stage, todo) in enumerate(plan, start=1):
            head = f"# [{i}/{total}] {stage.name} ({stage.kind})"
            if not todo:
                why = "finished" if self.state.finished(stage.name) else "not selected"
                self.say(f"{head}: {why}, skipped")
                continue
            self.say(head)
            if self.dry_run:
                cmds, eval_cmd = self.commands(stage)
                if eval_cmd:
                    self.say(
                        shlex.join(eval_cmd) + " &  # concurrent eval job, stopped "
                        "when the training command ends"
                    )
                for cmd in cmds:
                    self.say(shlex.join(cmd))
                continue
            if only:
                self.state.unfinish(stage.name)
            self.run_stage(stage)

    def run_stage(self, stage: Stage) -> None:
        values = {}
        if (
            stage.kind == "train"
            and stage.steps is not None
            and self.state.stage(stage.name).get("start_step") is None
        ):
            ckpt = newest_checkpoint(self.train_dir)
            if ckpt is None:
                raise RecipeError(
                    f"stage {stage.name} trains {stage.steps} steps on from the "
                    f"newest checkpoint, but {self.train_dir} has none"
                )
            self.state.update(stage.name, start_step=step_of(ckpt))
        if stage.kind == "decode":
            ckpt = newest_checkpoint(self.train_dir)
            if ckpt is None:
                raise RecipeError(
                    f"stage {stage.name}: no checkpoint in {self.train_dir} to decode"
                )
            values["checkpoint"] = ckpt
            values["decode_dir"] = self.decode_dir_for(stage, ckpt)
        cmds, eval_cmd = self.commands(stage)
        skip = self.already_done(stage)
        if skip:
            self.say(f"# {skip}; not running it again")
            cmds = []
        if eval_cmd:
            self.run_with_eval_job(stage, cmds[0], eval_cmd)
        else:
            for cmd in cmds:
                self.run_command(stage, cmd)
        values.update(self.collect(stage, values))
        self.state.update(
            stage.name,
            finished=_now(),
            fingerprint=self.fingerprint(stage),
            commands=[shlex.join(c) for c in cmds],
            **values,
        )
        self.say(f"# {stage.name} finished")

    def already_done(self, stage: Stage) -> str | None:
        """A reason to skip a one-off conversion whose result is already there (the state
        file may have missed it if the runner stopped right after the command)."""
        ckpt = newest_checkpoint(self.train_dir) or ""
        if stage.kind == "convert_to_coverage" and ckpt.endswith("_cov_init"):
            return f"the newest checkpoint {ckpt} is already a converted coverage model"
        if stage.kind == "restore_best_model" and re.fullmatch(r"model-\d+", ckpt):
            return f"the newest checkpoint {ckpt} is already a restored best model"
        return None

    def collect(self, stage: Stage, values: dict) -> dict:
        """Results a finished stage leaves for later stages and for the report."""
        out = {}
        if stage.kind in ("train", "restore_best_model", "convert_to_coverage"):
            ckpt = newest_checkpoint(self.train_dir)
            if ckpt:
                out["checkpoint"] = ckpt
        if stage.kind == "eval_single_pass":
            path = os.path.join(self.exp_dir, SINGLE_PASS_LOSS)
            if os.path.isfile(path):
                out["validation"] = read_key_values(path)
        if stage.kind == "decode":
            out["decode_dir"] = self.find_decode_dir(values["decode_dir"], values["checkpoint"])
        if stage.kind == "score":
            from experiments.report import parse_rouge_results

            decode_dir = self.decode_dir_of(stage)
            out["decode_dir"] = decode_dir
            rouge = parse_rouge_results(os.path.join(decode_dir, "ROUGE_results.txt"))
            out["rouge_f1"] = {k: rouge[f"rouge_{k}_f_score"][0] for k in ("1", "2", "l")}
        return out

    def decode_dir_of(self, stage: Stage) -> str:
        """The decode dir a score stage scores: recorded by its decode stage; in a dry run
        before decoding, the name with a placeholder checkpoint."""
        recorded = self.state.stage(stage.decode_stage).get("decode_dir")
        if recorded:
            return recorded
        if not self.dry_run:
            raise RecipeError(
                f"stage {stage.name} scores the output of stage "
                f"{stage.decode_stage}, which has not run yet"
            )
        return self.decode_dir_for(self.recipe.stage(stage.decode_stage), None)

    def find_decode_dir(self, expected: str, checkpoint: str) -> str:
        if os.path.isdir(expected):
            return expected
        # Decode may add names of options of its own: take this checkpoint's test decode.
        pattern = f"decode_*ckpt-{checkpoint.rsplit('-', 1)[-1]}*"
        found = sorted(glob.glob(os.path.join(self.exp_dir, pattern)), key=os.path.getmtime)
        if not found:
            raise RecipeError(f"decode finished but {expected} does not exist")
        return found[-1]

    def run_command(self, stage: Stage, cmd: list[str]) -> None:
        self.say("$ " + shlex.join(cmd))
        # SIGTERM / Ctrl-C of the runner stops the command too (child_processes).
        code = child_processes.run(cmd).returncode
        if code != 0:
            raise RecipeError(
                f"stage {stage.name}: command exited with status {code}: {shlex.join(cmd)}"
            )

    def run_with_eval_job(self, stage: Stage, cmd: list[str], eval_cmd: list[str]) -> None:
        """Training with the concurrent eval job alongside, as the original was run. Both
        are stopped and reaped however this ends (SIGTERM or Ctrl-C of the runner
        included), so that a rerun finds neither holding the experiment's locks."""
        log_dir = os.path.join(self.exp_dir, LOGS_SUBDIR)
        owned_files.make_dir(log_dir)
        log_path = os.path.join(log_dir, f"{stage.name}.eval.log")
        self.say(f"$ {shlex.join(eval_cmd)} > {log_path} 2>&1 &")
        with child_processes.Children() as children:
            with owned_files.open_in_place(log_path, "ab") as log:
                eval_proc = children.start(eval_cmd, stdout=log, stderr=subprocess.STDOUT)
            self.say("$ " + shlex.join(cmd))
            train = children.start(cmd)
            self._watch(stage, children, train, eval_proc, log_path)
            # Let the eval job see the last checkpoints before it is stopped.
            deadline = time.time() + self.eval_grace_secs
            while time.time() < deadline and eval_proc.poll() is None:
                time.sleep(min(0.1, max(0.0, deadline - time.time())))
            self._check_eval_job(stage, eval_proc, log_path)
            children.stop(eval_proc)  # Ctrl-C first: it closes its event files

    def _watch(self, stage: Stage, children, train, eval_proc, log_path: str) -> None:
        """Wait for training; a failed eval job stops it (it saves and exits)."""
        pause = 0.05
        while train.poll() is None:
            if eval_proc.poll() not in (None, 0):
                children.stop(train, gently=False)  # SIGTERM: the trainer saves and exits
                self._check_eval_job(stage, eval_proc, log_path)
            time.sleep(pause)
            pause = min(pause * 1.5, self.poll_secs)  # quick for short commands
        if train.returncode != 0:
            raise RecipeError(
                f"stage {stage.name}: command exited with status "
                f"{train.returncode}: {shlex.join(train.args)}"
            )

    @staticmethod
    def _check_eval_job(stage: Stage, eval_proc, log_path: str) -> None:
        if eval_proc.poll() not in (None, 0):
            raise RecipeError(
                f"stage {stage.name}: the eval job exited with status "
                f"{eval_proc.returncode}; see {log_path}"
            )


def _diff(recorded: dict, now: dict) -> str:
    a, b = recorded.get("flags", {}), now.get("flags", {})
    changes = [
        f"{k}: {a.get(k)!r} -> {b.get(k)!r}"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]
    for k in sorted((set(recorded) | set(now)) - {"flags"}):
        if recorded.get(k) != now.get(k):
            changes.append(f"{k}: {recorded.get(k)!r} -> {now.get(k)!r}")
    return ", ".join(changes) or "unknown difference"


def _now() -> str:
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def list_stages(runner: Runner) -> str:
    lines = [
        f"recipe {runner.recipe.name}: {runner.recipe.description}",
        f"experiment dir: {runner.exp_dir}",
    ]
    for s in runner.recipe.stages:
        rec = runner.state.stage(s.name)
        status = f"finished {rec['finished']}" if rec.get("finished") else "to do"
        extra = ""
        if rec.get("rouge_f1"):
            extra = " ROUGE F1 " + "/".join(f"{100 * v:.2f}" for v in rec["rouge_f1"].values())
        lines.append(f"  {s.name:24s} {s.kind:20s} {status}{extra}")
    return "\n".join(lines)


@exit_codes.command(interrupted="interrupted; run the same command again to continue")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.paper.run_recipe", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--recipe",
        required=True,
        help=f"one of {', '.join(recipe_lib.available())}, or a JSON file",
    )
    parser.add_argument(
        "--data_dir",
        required=True,
        help="finished_files dir: chunked/{train,val,test}_*.bin and vocab",
    )
    parser.add_argument("--log_root", required=True)
    parser.add_argument("--exp_name", default=None, help="default: the recipe's exp_name")
    parser.add_argument(
        "--stage",
        action="append",
        default=None,
        help="run only this stage (repeatable), even if finished",
    )
    parser.add_argument("--dry_run", action="store_true", help="print the commands only")
    parser.add_argument("--list", action="store_true", help="print the stages and exit")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="FLAG=VALUE",
        help="extra flag for every CLI command (repeatable)",
    )
    parser.add_argument(
        "--steps_scale",
        type=arg_types.positive_float,
        default=1.0,
        help="multiply every training step count (e.g. 0.001 for a smoke test)",
    )
    parser.add_argument(
        "--eval_grace_secs",
        type=arg_types.non_negative_float,
        default=120.0,
        help="after training, how long the eval job may go on evaluating "
        "the last checkpoints before it is stopped",
    )
    parser.add_argument(
        "--python", default=sys.executable, help="Python interpreter of the commands"
    )
    args = parser.parse_args(argv)
    if args.steps_scale <= 0:
        raise RecipeError("--steps_scale must be positive")
    recipe = recipe_lib.load(args.recipe)
    runner = Runner(
        recipe,
        args.data_dir,
        args.log_root,
        exp_name=args.exp_name,
        python=args.python,
        overrides=recipe_lib.parse_overrides(args.set),
        steps_scale=args.steps_scale,
        eval_grace_secs=args.eval_grace_secs,
        dry_run=args.dry_run,
    )
    if args.list:
        print(list_stages(runner))
        return 0
    runner.run(args.stage)
    return 0


if __name__ == "__main__":
    sys.exit(main())
