"""Recipe files: what to run, stage by stage, to reproduce one Table 1 model.

A recipe is a JSON file in `experiments/paper/recipes/` (or any path):

    {
      "description": "...",
      "table1_row": "pointer_generator",        # key of the paper's row (experiments.report)
      "exp_name": "pointer_generator",         # experiment dir under --log_root
      "extends": "other_recipe",               # optional: its stages come first
      "flagfiles": ["common.flags", ...],      # absl flag files (next to the recipes dir)
      "flags": {"vocab_size": 150000},         # flags for every stage of this file
      "stages": [ {stage}, ... ]
    }

A stage is `{"name": unique name, "kind": ..., "flagfiles": [...], "flags": {...}}` with
kind one of:

* `train` — `--mode=train` on the training data until the global step `flags.max_steps`,
  or, with `"steps": N` instead, until N steps after the global step at which the stage
  first started (e.g. the coverage phase). `"eval_job": true` runs the original's
  concurrent eval job on the validation data alongside (it saves the best models).
* `restore_best_model` — `--restore_best_model=True`: the eval job's best model becomes the
  newest training checkpoint.
* `convert_to_coverage` — `--convert_to_coverage_model=True` (needs `--coverage=True`).
* `eval_single_pass` — `--mode=eval --single_pass=True` on the validation data: the exact
  loss of the newest checkpoint (recorded in the state file).
* `decode` — `--mode=decode` on the test data (give `--single_pass=True` in its flags).
* `score` — ROUGE-1.5.5 (when decode did not write ROUGE_results.txt) and
  `experiments.analysis` for the decode dir of `"decode_stage"`.

Flags are applied in this order (absl: a later value wins): the recipe's flag files, the
stage's flag files, the recipe's flags, the stage's flags, the user's `--set` overrides,
then the flags the runner sets (mode, data and experiment paths, the one-off switches).
Stages of an `extends` parent keep the parent's flag files and flags.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from absl import flags as absl_flags

from pointer_generator.errors import PointerGeneratorError
from pointer_generator.runtime import json_files

PAPER_DIR = os.path.dirname(os.path.abspath(__file__))
RECIPES_DIR = os.path.join(PAPER_DIR, "recipes")
CLI_MODULE = "pointer_generator.run_summarization"

KINDS = (
    "train",
    "restore_best_model",
    "convert_to_coverage",
    "eval_single_pass",
    "decode",
    "score",
)
RECIPE_KEYS = {"description", "table1_row", "exp_name", "extends", "flagfiles", "flags", "stages"}
STAGE_KEYS = {"name", "kind", "flagfiles", "flags", "steps", "eval_job", "decode_stage"}
# Flags the runner sets itself; a recipe or --set must not.
RUNNER_FLAGS = {
    "mode",
    "data_path",
    "vocab_path",
    "log_root",
    "exp_name",
    "restore_best_model",
    "convert_to_coverage_model",
    "flagfile",
}


class RecipeError(PointerGeneratorError):
    """A recipe file is malformed, or a stage cannot run."""


@dataclass(frozen=True)
class Stage:
    """One step of a recipe, with the recipe-level flag files and flags already merged."""

    name: str
    kind: str
    flagfiles: tuple[str, ...] = ()
    flags: dict = field(default_factory=dict)
    steps: int | None = None
    eval_job: bool = False
    decode_stage: str | None = None


@dataclass(frozen=True)
class Recipe:
    name: str
    path: str
    description: str
    table1_row: str | None
    exp_name: str
    stages: tuple[Stage, ...]

    def stage(self, name: str) -> Stage:
        for s in self.stages:
            if s.name == name:
                return s
        raise RecipeError(
            f"recipe {self.name} has no stage {name!r} (stages: "
            f"{', '.join(s.name for s in self.stages)})"
        )


def available() -> list[str]:
    """Names of the recipes shipped in experiments/paper/recipes/."""
    return sorted(f[:-5] for f in os.listdir(RECIPES_DIR) if f.endswith(".json"))


def recipe_path(name_or_path: str) -> str:
    if os.path.isfile(name_or_path):
        return os.path.abspath(name_or_path)
    path = os.path.join(RECIPES_DIR, name_or_path + ".json")
    if not os.path.isfile(path):
        raise RecipeError(
            f"no recipe {name_or_path!r}: neither a file nor one of "
            f"{', '.join(available())} (in {RECIPES_DIR})"
        )
    return path


def _check_keys(obj: dict, allowed: set, where: str) -> None:
    unknown = set(obj) - allowed
    if unknown:
        raise RecipeError(f"{where}: unknown keys {sorted(unknown)} (allowed: {sorted(allowed)})")


def _sibling(name: str, recipe_dir: str) -> str:
    """`extends` names a recipe beside the extending one first, then a shipped one."""
    beside = os.path.join(recipe_dir, name + ".json")
    return beside if os.path.isfile(beside) else name


def _flagfile(path: str, base_dir: str, where: str) -> str:
    """Flag file paths are relative to the recipes' parent dir (experiments/paper)."""
    full = path if os.path.isabs(path) else os.path.join(base_dir, path)
    if not os.path.isfile(full):
        raise RecipeError(f"{where}: flag file {full} does not exist")
    return full


def _check_flags(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise RecipeError(f"{where}: 'flags' must be an object of flag: value")
    for k, v in value.items():
        if k in RUNNER_FLAGS:
            raise RecipeError(f"{where}: flag {k!r} is set by the runner, not by recipes")
        if not isinstance(v, (bool, int, float, str)):
            raise RecipeError(f"{where}: flag {k!r} must be a number, bool or string")
    return value


def load(name_or_path: str, _seen: tuple[str, ...] = ()) -> Recipe:
    """Read and check a recipe (following `extends`)."""
    path = recipe_path(name_or_path)
    name = os.path.basename(path)[:-5] if path.endswith(".json") else os.path.basename(path)
    if path in _seen:
        raise RecipeError(f"{path}: 'extends' forms a cycle")
    try:
        with open(path, encoding="utf-8") as f:
            data = json_files.load(f)
    except (OSError, ValueError) as e:
        raise RecipeError(f"{path}: cannot read the recipe ({e})") from None
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: a recipe is a JSON object")
    _check_keys(data, RECIPE_KEYS, path)
    # Shipped recipes name the flag files of experiments/paper; others, files beside them.
    base_dir = PAPER_DIR if os.path.dirname(path) == RECIPES_DIR else os.path.dirname(path)
    parent = (
        load(_sibling(data["extends"], os.path.dirname(path)), _seen + (path,))
        if data.get("extends")
        else None
    )
    exp_name = data.get("exp_name") or (parent.exp_name if parent else None)
    if not exp_name:
        raise RecipeError(f"{path}: 'exp_name' is required")
    files = tuple(_flagfile(p, base_dir, path) for p in data.get("flagfiles", []))
    recipe_flags = _check_flags(data.get("flags", {}), path)
    stages = list(parent.stages) if parent else []
    raw_stages = data.get("stages")
    if not isinstance(raw_stages, list) or not raw_stages:
        raise RecipeError(f"{path}: 'stages' must be a non-empty list")
    for i, raw in enumerate(raw_stages):
        stages.append(_stage(raw, f"{path} stage {i}", base_dir, files, recipe_flags))
    names = [s.name for s in stages]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise RecipeError(f"{path}: stage names must be unique, repeated: {sorted(dup)}")
    decodes = set()
    for s in stages:
        if s.kind == "decode":
            decodes.add(s.name)
        if s.kind == "score" and s.decode_stage not in decodes:
            raise RecipeError(
                f"{path}: score stage {s.name!r} needs 'decode_stage' naming an "
                f"earlier decode stage (got {s.decode_stage!r})"
            )
    return Recipe(
        name=name,
        path=path,
        description=data.get("description", ""),
        table1_row=data.get("table1_row"),
        exp_name=exp_name,
        stages=tuple(stages),
    )


def _stage(raw, where: str, base_dir: str, recipe_files: tuple, recipe_flags: dict) -> Stage:
    if not isinstance(raw, dict):
        raise RecipeError(f"{where}: a stage is a JSON object")
    _check_keys(raw, STAGE_KEYS, where)
    name, kind = raw.get("name"), raw.get("kind")
    if not name or not isinstance(name, str) or "/" in name:
        raise RecipeError(f"{where}: 'name' must be a non-empty string without '/'")
    where = f"{where} ({name})"
    if kind not in KINDS:
        raise RecipeError(f"{where}: 'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    stage_flags = _check_flags(raw.get("flags", {}), where)
    steps = raw.get("steps")
    if kind == "train":
        if (steps is None) == ("max_steps" not in stage_flags):
            raise RecipeError(
                f"{where}: a train stage needs exactly one of flags.max_steps "
                "(a global step) and steps (relative to its start)"
            )
        if steps is not None and (not isinstance(steps, int) or steps <= 0):
            raise RecipeError(f"{where}: 'steps' must be a positive integer")
    elif steps is not None or raw.get("eval_job"):
        raise RecipeError(f"{where}: 'steps' and 'eval_job' belong to train stages")
    files = recipe_files + tuple(_flagfile(p, base_dir, where) for p in raw.get("flagfiles", []))
    return Stage(
        name=name,
        kind=kind,
        flagfiles=files,
        flags={**recipe_flags, **stage_flags},
        steps=steps,
        eval_job=bool(raw.get("eval_job")),
        decode_stage=raw.get("decode_stage"),
    )


# ---------------------------------------------------------------------------------------
# Flags of a stage


def flag_value(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    return str(v)


def parse_overrides(items: list[str]) -> dict:
    """`--set name=value` items -> {name: value} (values stay strings for absl)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip().lstrip("-")
        if not sep or not name:
            raise RecipeError(f"--set {item!r}: expected NAME=VALUE")
        if name in RUNNER_FLAGS:
            raise RecipeError(f"--set {name}: this flag is set by the runner")
        out[name] = value
    return out


def scaled(steps: int, scale: float) -> int:
    """A step count times --steps_scale, at least 1."""
    return max(1, math.ceil(steps * scale)) if scale != 1 else steps


def static_args(stage: Stage, overrides: dict, steps_scale: float = 1.0) -> list[str]:
    """The stage's flag arguments that do not depend on paths or on run time.

    Relative-step train stages get their `--max_steps` from the runner.
    """
    args = [f"--flagfile={f}" for f in stage.flagfiles]
    for k, v in stage.flags.items():
        if k == "max_steps":
            v = scaled(int(v), steps_scale)
        args.append(f"--{k}={flag_value(v)}")
    args += [f"--{k}={v}" for k, v in overrides.items()]
    return args


def resolve(args: list[str]) -> absl_flags.FlagValues:
    """Parse `args` exactly as the command line would (flag files expanded, later wins).

    Raises RecipeError for an unknown flag or a bad value, so a typo in a recipe is caught
    before anything runs.
    """
    from pointer_generator.cli import flags as flags_lib

    fv = absl_flags.FlagValues()
    flags_lib.define_flags(fv)
    try:
        fv(["run_summarization"] + list(args))
    except absl_flags.Error as e:
        raise RecipeError(f"bad flags {' '.join(args)}: {e}") from None
    return fv


def explicit_flags(args: list[str]) -> dict:
    """{flag: value} of every flag `args` set (through flag files too), for fingerprints."""
    fv = resolve(args)
    out = {}
    for name in sorted(fv):
        flag = fv[name]
        if flag.present and name not in RUNNER_FLAGS:
            value = flag.value
            out[name] = value if isinstance(value, (bool, int, float, str)) else str(value)
    return out
