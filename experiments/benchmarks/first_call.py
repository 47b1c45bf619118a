"""The first summary of a new process: `pointer-generator summarize` on one article, each
run a fresh process, with compiled searches not kept (off), with an empty cache (cold: the
model is built, its search traced and compiled, then kept), with the search the cold run
kept (kept: loaded instead of traced, its graph compiled once) and with everything kept
(warm), in turn (runtime/compile_cache.py, summarizing/kept_search.py).

    python -m experiments.benchmarks.first_call [--log_root L --exp_name E] [--rounds 3] [--serve]
        [--python]

Without an experiment it trains a toy model briefly on the quick-start's toy data (200
steps, hidden 128, articles of up to 200 tokens; not the quick-start's own settings).
For each setting it prints the median over the rounds of: the whole command, and the
time from "Loaded checkpoint" to the first summary line on stdout (the first summary after
the model is loaded: tracing the search, compiling or loading it, searching), beside the
targets of issue 45 item 3 (warm <= 2 s, cold <= 5 s) and the ratios warm / off and cold / off.
Settings alternate within each round, so a busy host slows all of them alike. With
`--serve`, `pointer-generator serve` is started the same way (off, cold, warm): its time to
"Serving", from the model loaded to its first answer, and the first request's latency (no
request may wait for a compile after "Serving"). With `--python`, the README's Python
example (`pg.Summarizer.from_experiment(...).summarize([text])`) in a new process the same
way (off, cold and then `keep()`, warm): import and open, the first summary, the keep.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from experiments.benchmarks import common
from experiments.benchmarks.serve import _articles, _toy_experiment

ARTICLE_WORDS = 120
SETTINGS = ("off", "cold", "kept", "warm")


def _summarize_once(log_root: str, exp_name: str, article: str, cache: str) -> tuple[float, float]:
    """(whole command, "Loaded checkpoint" to the first summary line) seconds of one
    `summarize` process. The summary is timed when it reaches stdout: a cold run keeps its
    search after printing (the whole command includes that, the first summary does not)."""
    import threading

    env = dict(os.environ, POINTER_GENERATOR_COMPILE_CACHE=cache)
    cmd = [sys.executable, "-m", "pointer_generator.cli", "summarize", f"--log_root={log_root}",
           f"--exp_name={exp_name}", article]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first: list[float] = []

    def read_stdout():
        for _ in proc.stdout:
            if not first:
                first.append(time.perf_counter())

    reader = threading.Thread(target=read_stdout, daemon=True)
    reader.start()
    loaded = None
    for line in proc.stderr:
        if "Loaded checkpoint" in line and loaded is None:
            loaded = time.perf_counter()
    reader.join()
    if proc.wait() != 0 or loaded is None or not first:
        raise SystemExit(f"error: summarize failed (exit {proc.returncode}): {' '.join(cmd)}")
    end = time.perf_counter()
    return end - t0, first[0] - loaded


def _serve_once(
    log_root: str, exp_name: str, text: str, cache: str, wait_kept: bool = False
) -> tuple[float, float, float]:
    """(start to "Serving", model loaded to the first answer, the first request's latency)
    seconds of one `serve` process on a free port: the model is loaded at "Loaded
    checkpoint" (a built model) or "Using the search kept in" (a kept search); the first
    request is sent once it says "Serving". With `wait_kept` (a cold start) the process
    then runs until it says "Kept the search in" (it keeps its search once serving has been
    quiet for 2 s), for the next start. The process is then stopped with Ctrl-C."""
    import json
    import re
    import signal
    import threading
    import urllib.request

    env = dict(os.environ, POINTER_GENERATOR_COMPILE_CACHE=cache)
    cmd = [sys.executable, "-m", "pointer_generator.cli", "serve", f"--log_root={log_root}",
           f"--exp_name={exp_name}", "--serve_port=0"]  # fmt: skip
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen: dict[str, float] = {}
    url: list[str] = []
    serving, kept = threading.Event(), threading.Event()

    def watch(stream):
        for line in stream:
            now = time.perf_counter()
            if "Loaded checkpoint" in line or "Using the search kept in" in line:
                seen.setdefault("loaded", now)
            if "Kept the search in" in line:
                kept.set()
            m = re.search(r"Serving .* on (http://\S+/)", line)
            if m and not serving.is_set():
                seen["serving"] = now
                url.append(m.group(1))
                serving.set()

    threads = [threading.Thread(target=watch, args=(s,), daemon=True)
               for s in (proc.stdout, proc.stderr)]  # fmt: skip
    for t in threads:
        t.start()
    try:
        if not serving.wait(600) or "loaded" not in seen:
            raise SystemExit(f"error: serve did not start (exit {proc.poll()}): {' '.join(cmd)}")
        body = json.dumps({"text": text}).encode("utf-8")
        request = urllib.request.Request(url[0] + "api/summarize", data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        sent = time.perf_counter()
        with urllib.request.urlopen(request, timeout=600) as r:
            r.read()
        answered = time.perf_counter()
        if wait_kept and not kept.wait(600):
            raise SystemExit(f"error: serve did not keep its search: {' '.join(cmd)}")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return seen["serving"] - t0, answered - seen["loaded"], answered - sent


def _each_setting(work: str, name: str, rounds: int, settings, once) -> dict[str, list]:
    """{setting: [once(cache folder, setting) of each round]}: the settings in turn within
    each round (a busy host slows all of them alike), "off" with compiled searches off and
    the others sharing the round's cache folder, empty at the round's start."""
    out: dict[str, list] = {s: [] for s in settings}
    for r in range(rounds):
        cache = os.path.join(work, f"{name}_cache{r}")
        for setting in settings:
            out[setting].append(once("off" if setting == "off" else cache, setting))
    return out


def _table(title: str, rounds: int, columns: list[str], rows: list[list[str]]) -> None:
    print(f"\n{title} ({common.machine_description()}), median of {rounds} rounds:")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(row) + " |")


TARGETS = {"off": "", "cold": "<= 5 s", "kept": "", "warm": "<= 2 s"}


def _serve_table(log_root: str, exp_name: str, text: str, work: str, rounds: int) -> dict:
    """`serve` started fresh with compiled searches off, an empty cache (cold: it warms
    up its compiled shapes before serving and keeps its search once serving is quiet,
    which the run waits for) and that cache (warm: it loads the kept search), in turn."""
    settings = ("off", "cold", "warm")
    times = _each_setting(
        work,
        "serve",
        rounds,
        settings,
        lambda folder, s: _serve_once(log_root, exp_name, text, folder, wait_kept=s == "cold"),
    )
    med = {s: tuple(statistics.median(t[i] for t in times[s]) for i in (0, 1, 2)) for s in settings}
    columns = ["compiled searches", 'start to "Serving"', "loaded to the first answer",
               "first request's latency", "target"]  # fmt: skip
    rows = [[s, f"{med[s][0]:.2f} s", f"{med[s][1]:.2f} s", f"{med[s][2]:.3f} s", TARGETS[s]]
            for s in settings]  # fmt: skip
    _table("`serve`: a new process's first answer", rounds, columns, rows)
    return {
        f"serve_{s}_{part}_s": round(med[s][i], 3)
        for s in settings
        for i, part in enumerate(("to_serving", "after_load", "first_request"))
    }


# One `pg.Summarizer` process: the README's Python example, timed, then `keep()` where
# asked (argv: log_root exp_name text keep).
PYTHON_ONCE = """
import json, sys, time
t0 = time.perf_counter()
import pointer_generator as pg
log_root, exp_name, text, keep = sys.argv[1:5]
summarizer = pg.Summarizer.from_experiment(log_root, exp_name)
t1 = time.perf_counter()
summarizer.summarize([text])
t2 = time.perf_counter()
kept = summarizer.keep() if keep == "1" else None
t3 = time.perf_counter()
print(json.dumps({"open_s": t1 - t0, "first_s": t2 - t1, "keep_s": t3 - t2,
                  "summarizer": type(summarizer).__name__, "kept": kept}))
"""


def _python_once(log_root: str, exp_name: str, text: str, cache: str, keep: bool) -> dict:
    """{open_s: import and `from_experiment`, first_s: the first `summarize([text])`,
    keep_s: `keep()` (0 where not asked), summarizer: its class} of one new process."""
    import json

    env = dict(os.environ, POINTER_GENERATOR_COMPILE_CACHE=cache)
    cmd = [sys.executable, "-c", PYTHON_ONCE, log_root, exp_name, text, "1" if keep else "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"error: the pg.Summarizer process failed: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _python_table(log_root: str, exp_name: str, text: str, work: str, rounds: int) -> dict:
    """`pg.Summarizer` in a new process with compiled searches off, an empty cache (cold,
    then `keep()`) and that cache (warm: `from_experiment` loads the kept search)."""
    settings = ("off", "cold", "warm")
    runs = _each_setting(
        work, "python", rounds, settings,
        lambda folder, s: _python_once(log_root, exp_name, text, folder, keep=s == "cold"),
    )  # fmt: skip
    parts = ("open", "first", "keep")
    med = {s: {k: statistics.median(x[f"{k}_s"] for x in runs[s]) for k in parts} for s in settings}
    columns = ["compiled searches", "import + from_experiment", "first summarize()", "keep()",
               "summarizer", "target (first summary)"]  # fmt: skip
    rows = [[s, *(f"{med[s][k]:.2f} s" for k in parts),
             "/".join(sorted({x["summarizer"] for x in runs[s]})), TARGETS[s]]
            for s in settings]  # fmt: skip
    _table("`pg.Summarizer` (the README's Python example): a new process's first summary",
           rounds, columns, rows)  # fmt: skip
    out = {f"python_{s}_{k}_s": round(med[s][k], 3) for s in settings for k in parts}
    out["python_warm_summarizer"] = "/".join(sorted({x["summarizer"] for x in runs["warm"]}))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--log_root", default="")
    p.add_argument("--exp_name", default="")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--train_steps", type=int, default=200)
    p.add_argument("--out_json", default="")
    p.add_argument(
        "--serve",
        action="store_true",
        help='also start `serve` fresh in each setting: its time to "Serving", from the '
        "model loaded to its first answer, and that first request's latency",
    )
    p.add_argument(
        "--python",
        action="store_true",
        help="also the README's Python example (`pg.Summarizer`) in a new process, with "
        "compiled searches off, cold (then `keep()`) and warm",
    )
    args = p.parse_args(argv)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as work:
        log_root, exp_name = args.log_root, args.exp_name
        if log_root:
            data_bin = None
        else:
            print(
                f"Training a toy model on the quick-start's toy data ({args.train_steps} "
                "steps, hidden 128) ..."
            )
            log_root, exp_name, data_bin = _toy_experiment(work, args.train_steps)
        text = "the council voted on tuesday to build a new bridge over the river . " * 20
        if data_bin:
            text = _articles(data_bin, 1)[0]
        article = os.path.join(work, "article.txt")
        with open(article, "w", encoding="utf-8") as f:
            f.write(" ".join(text.split()[:ARTICLE_WORDS]) + "\n")
        times = _each_setting(
            work, "summarize", args.rounds, SETTINGS,
            lambda folder, _: _summarize_once(log_root, exp_name, article, folder),
        )  # fmt: skip
        words = " ".join(text.split()[:ARTICLE_WORDS])
        served = _serve_table(log_root, exp_name, words, work, args.rounds) if args.serve else {}
        if args.python:
            served.update(_python_table(log_root, exp_name, words, work, args.rounds))
    med = {s: tuple(statistics.median(t[i] for t in times[s]) for i in (0, 1)) for s in SETTINGS}
    rows = [[s, f"{med[s][0]:.2f} s", f"{med[s][1]:.2f} s", TARGETS[s]] for s in SETTINGS]
    columns = ["compiled searches", "whole command", "first summary after loading", "target"]
    _table("First summary of a new process", args.rounds, columns, rows)
    figures = {
        f"{s}_{part}_s": round(med[s][i], 3)
        for s in SETTINGS
        for i, part in enumerate(("command", "after_load"))
    }
    figures["load_avg_1min_before"] = round(load_before, 2)
    figures["load_avg_1min_after"] = round(os.getloadavg()[0], 2)
    figures["warm_over_off_after_load"] = round(med["warm"][1] / med["off"][1], 3)
    figures["cold_over_off_after_load"] = round(med["cold"][1] / med["off"][1], 3)
    figures.update(served)
    print(f"warm / off after load: {figures['warm_over_off_after_load']:.2f}; "
          f"cold / off: {figures['cold_over_off_after_load']:.2f}")  # fmt: skip
    common.record("first_call", f"{args.rounds} rounds", figures, args.out_json or None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
