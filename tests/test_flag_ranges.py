"""Every number of every command is range-checked (docs/reliability.md): each absl flag
has a range in `cli/flag_bounds.py` (the table is held to the defined flags, and every
default is in it); NaN, inf and values out of range are one `error:` line from every
command; every argparse command (data_tools, experiments, the quick-start, ROUGE) types
its numbers with `cli/arg_types.py`.
"""

from __future__ import annotations

import argparse

import pytest

from pointer_generator.errors import FlagError
from tests import helpers


def test_every_numeric_flag_has_a_range():
    from pointer_generator.cli import flags as flags_lib
    from pointer_generator.cli.flag_bounds import all_bounds

    bounds = all_bounds()  # the model families' numeric options included
    numeric = {
        name
        for name, flag in flags_lib.FLAGS._flags().items()
        if name == flag.name
        and type(flag.parser).__name__ in ("IntegerParser", "FloatParser")
        and flags_lib.FLAGS.find_module_defining_flag(name).startswith("pointer_generator")
    }
    assert numeric == set(bounds), (numeric - set(bounds), set(bounds) - numeric)
    defaults = helpers.flag_defaults()
    for name, bound in bounds.items():
        assert bound.problem(defaults[name]) is None, name  # every default is valid


def test_nan_inf_and_values_below_range_are_refused_for_every_flag():
    from pointer_generator.cli.flag_bounds import all_bounds, check_numbers

    for name, bound in all_bounds().items():
        bad = [float("nan"), float("inf"), float("-inf")]
        if bound.low is not None:
            bad.append(bound.low if bound.open_low else bound.low - 1)
        if bound.high is not None:
            bad.append(bound.high + 1)
        for value in bad:
            namespace = helpers.flag_namespace(**{name: value})
            with pytest.raises(FlagError, match=f"^--{name} must be"):
                check_numbers(namespace)


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["serve", "--saved_model=/x", "--serve_max_wait_ms=nan"],
            "--serve_max_wait_ms must be a finite",
        ),
        (
            ["serve", "--saved_model=/x", "--serve_max_wait_ms=inf"],
            "--serve_max_wait_ms must be a finite",
        ),
        (
            ["serve", "--saved_model=/x", "--serve_max_wait_ms=-1"],
            "--serve_max_wait_ms must be in [0, 60000]",
        ),
        (["serve", "--saved_model=/x", "--log_root=/l", "--exp_name=e"], "name two models"),
        (["summarize", "--length_penalty=nan"], "--length_penalty must be a finite"),
        (["export", "--beam_size=0"], "--beam_size must be positive"),
        (["tune_features", "--random_starts=-2"], "--random_starts must be >= 0"),
        (["--mode=train", "--lr=inf"], "--lr must be a finite number"),
        (["--mode=decode", "--eval_interval_secs=1e300"], "--eval_interval_secs must be in"),
        (["--mode=train", "--seed=-1"], "--seed must be in [0, 4294967295]"),
    ],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_the_commands_refuse_bad_numbers_in_one_line(args, message):
    proc = helpers.run_python(["-m", "pointer_generator.cli.entry", *args], timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert lines == [lines[0]] and lines[0].startswith("error: ") and message in lines[0], lines


def _argparse_commands():
    return [
        "pointer_generator.cli.quickstart",
        "data_tools.make_datafiles",
        "data_tools.toy_data",
        "data_tools.convert",
        "data_tools.sumdata",
        "data_tools.gigaword_raw",
        "data_tools.proxy_task",
        "pointer_generator.cli.score_rouge",
        "pointer_generator.cli.check_bin_files",
        "pointer_generator.cli.ptb_tokenize",
        "experiments.lead3",
        "experiments.prefix",
        "experiments.report",
        "experiments.analysis",
        "experiments.paper.run_recipe",
        "experiments.cpu_scale.run_all",
        "experiments.cpu_scale.split_sample",
        "experiments.families.run_proxy",
        "experiments.families.report",
        "experiments.benchmarks.pipeline",
        "experiments.benchmarks.train_step",
        "experiments.benchmarks.decode",
        "experiments.benchmarks.families",
        "experiments.benchmarks.serve",
        "experiments.benchmarks.export",
    ]


@pytest.mark.parametrize("module", _argparse_commands())
def test_every_argparse_number_is_range_checked(module, monkeypatch):
    """Each command's parser, caught as its main parses `--help`: no plain int/float."""
    import importlib

    from pointer_generator.cli import arg_types

    parsers = []

    class Caught(BaseException):  # not an Exception: the commands' wrapper lets it through
        pass

    def parse_args(self, args=None, namespace=None):
        parsers.append(self)
        raise Caught

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_args)
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", parse_args)
    mod = importlib.import_module(module)
    with pytest.raises((Caught, SystemExit)):
        mod.main(["--help"])
    assert parsers, module
    for action in parsers[0]._actions:
        assert action.type not in (int, float), f"{module} {action.option_strings}"
        if action.type is not None and getattr(action.type, "__module__", "") != "builtins":
            if action.type.__name__.endswith(("_int", "_float")):
                assert action.type in arg_types.CHECKED


@pytest.mark.parametrize(
    "args",
    [["--vocab_size", "0"], ["--chunk_size", "-5"], ["--num_workers", "nan"]],
    ids=["vocab_size_0", "chunk_size_negative", "workers_nan"],
)
def test_converters_refuse_meaningless_sizes(tmp_path, args):
    text = tmp_path / "a.txt"
    text.write_text("Some article text.", encoding="utf-8")
    proc = helpers.run_python(
        ["-m", "data_tools.convert", "--format", "text", "--input", str(text), "--out_dir",
         str(tmp_path / "out"), *args], timeout=120,
    )  # fmt: skip
    assert (
        proc.returncode == 2 and "must be" in proc.stderr and f"argument {args[0]}" in proc.stderr
    )
    assert not (tmp_path / "out" / "vocab").exists()
