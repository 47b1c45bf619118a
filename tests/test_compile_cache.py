"""Compiled searches kept across processes (issue 45 item 3a, runtime/compile_cache.py):
where the folder is, what turns it off, that an unusable folder never breaks a command, and
that a second `summarize` process loads what the first compiled instead of compiling."""

from __future__ import annotations

import logging
import os

import pytest

from pointer_generator.runtime import compile_cache
from tests import helpers, trained_experiment


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return trained_experiment.build(tmp_path_factory)


def test_the_folder_is_keyed_by_tensorflow_machine_and_cpu(monkeypatch, tmp_path):
    import importlib.metadata
    import platform

    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "c"))
    path = compile_cache.folder()
    key = os.path.basename(path)
    assert os.path.dirname(path) == str(tmp_path / "c")
    version = importlib.metadata.version("tensorflow")
    assert key.startswith(f"tf-{version}-{platform.machine()}-") and len(key.split("-")[-1]) == 12
    monkeypatch.delenv(compile_cache.ENV)
    monkeypatch.setenv("POINTER_GENERATOR_CACHE", str(tmp_path / "user"))
    assert compile_cache.folder() == str(tmp_path / "user" / "xla" / key)
    for off in ("off", "0", "OFF"):
        monkeypatch.setenv(compile_cache.ENV, off)
        assert compile_cache.folder() is None


def test_enable_sets_tensorflows_flag_and_keeps_the_users_own(monkeypatch, tmp_path):
    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "c"))
    monkeypatch.setenv("TF_XLA_FLAGS", "--tf_xla_auto_jit=0")
    path = compile_cache.enable()
    assert os.path.isdir(path)
    assert os.environ["TF_XLA_FLAGS"] == f"--tf_xla_auto_jit=0 {compile_cache.XLA_FLAG}={path}"
    assert compile_cache.kept_folder() == path
    # A folder the user chose in TF_XLA_FLAGS stays theirs.
    mine = f"{compile_cache.XLA_FLAG}={tmp_path / 'mine'}"
    monkeypatch.setenv("TF_XLA_FLAGS", mine)
    assert compile_cache.enable() is None and os.environ["TF_XLA_FLAGS"] == mine
    assert compile_cache.kept_folder() == str(tmp_path / "mine")


def test_a_folder_that_cannot_be_made_leaves_compiling_as_before(monkeypatch, tmp_path, caplog):
    """TensorFlow fails a compile whose cache entry it cannot write: such a folder is not
    handed to it, and a warning says why and what to do."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder\n")
    monkeypatch.setenv(compile_cache.ENV, str(blocker / "c"))
    monkeypatch.delenv("TF_XLA_FLAGS", raising=False)
    with caplog.at_level(logging.WARNING, logger=compile_cache.__name__):
        assert compile_cache.enable() is None
    assert "TF_XLA_FLAGS" not in os.environ
    (message,) = [r.getMessage() for r in caplog.records]
    assert message.startswith("compiled searches are not kept across runs: ") and "off" in message


def _xla_folder(cache) -> str:
    """The compiled executables' folder in `cache` (beside it: the kept searches)."""
    (folder,) = [os.path.join(cache, d) for d in os.listdir(cache) if not d.endswith("-searches")]
    return folder


PG_SUMMARY = """
import sys
import pointer_generator as pg
s = pg.Summarizer.from_experiment(sys.argv[1], "exp")
print(type(s).__name__)
print(s.summarize([open(sys.argv[2], encoding="utf-8").read()])[0].text)
"""


def test_a_second_process_loads_the_compiled_search(trained, tmp_path):
    """The first `summarize` keeps its search (summarizing/kept_search.py) compiled for
    the shapes it ran; the second process, `summarize` or `pg.Summarizer`, loads it and
    compiles nothing. The summaries are the same every time."""
    article = tmp_path / "a.txt"
    article.write_text("the cat sat on the mat . the dog ran to the park .\n", encoding="utf-8")
    cache = tmp_path / "cache"
    env = {compile_cache.ENV: str(cache)}
    args = ["-m", "pointer_generator.cli", "summarize", f"--log_root={trained.log_root}",
            "--exp_name=exp", str(article)]  # fmt: skip
    first = helpers.run_python(args, timeout=300, **env)
    assert first.returncode == 0, first.stderr[-2000:]
    folder = _xla_folder(cache)
    assert compile_cache.entries(folder) >= 2, os.listdir(folder)  # its search, the kept one
    assert "Kept the search in " in first.stderr
    compiled = sorted(os.listdir(folder))
    second = helpers.run_python(args, timeout=300, **env)
    assert second.returncode == 0, second.stderr[-2000:]
    assert "(its search as kept in " in second.stderr
    assert sorted(os.listdir(folder)) == compiled  # nothing compiled (or written) again
    assert first.stdout.strip() and first.stdout == second.stdout
    library = helpers.run_python(
        ["-c", PG_SUMMARY, trained.log_root, str(article)], timeout=300, **env
    )
    assert library.returncode == 0, library.stderr[-2000:]
    assert library.stdout.split("\n", 1) == ["KeptSearchSummarizer", first.stdout]
    assert sorted(os.listdir(folder)) == compiled
    # Off: nothing is kept.
    off = helpers.run_python(args, timeout=300, **{compile_cache.ENV: "off"})
    assert off.returncode == 0 and off.stdout == first.stdout
    assert sorted(os.listdir(folder)) == compiled


def test_the_first_call_benchmark_runs_each_setting_in_fresh_processes(
    trained, tmp_path, monkeypatch
):
    import json

    from experiments.benchmarks import common, first_call

    monkeypatch.setattr(common, "TABLE", str(tmp_path / "benchmarks.md"))  # not the committed
    out = tmp_path / "first_call.json"
    args = ["--log_root", trained.log_root, "--exp_name", "exp", "--rounds", "1",
            "--out_json", str(out), "--python"]  # fmt: skip
    assert first_call.main(args) == 0
    figures = json.loads(out.read_text())["figures"]
    for setting in first_call.SETTINGS:
        whole, after = figures[f"{setting}_command_s"], figures[f"{setting}_after_load_s"]
        assert 0 < after < whole, figures
    ratio = figures["warm_after_load_s"] / figures["off_after_load_s"]
    assert figures["warm_over_off_after_load"] == pytest.approx(ratio, abs=2e-3)
    assert "first_call" in (tmp_path / "benchmarks.md").read_text()
    # The Python example: the cold process keeps its search, the warm one loads it.
    assert figures["python_cold_keep_s"] > 0 and figures["python_off_keep_s"] == 0, figures
    assert figures["python_warm_summarizer"] == "KeptSearchSummarizer", figures
