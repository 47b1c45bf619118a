"""The first summary of a new process: `pointer-generator summarize` on one article, each
run a fresh process, with compiled searches not kept (off), with an empty cache (cold: the
model is built, its search traced and compiled, then kept), with the search the cold run
kept (kept: loaded instead of traced, its graph compiled once) and with everything kept
(warm), in turn (runtime/compile_cache.py, summarizing/kept_search.py).

    python -m experiments.benchmarks.first_call [--log_root L --exp_name E] [--rounds 3] [--serve]

Without an experiment it trains the quick-start's toy model briefly. For each setting it
prints the median over the rounds of: the whole command, and the time from "Loaded
checkpoint" to the first summary line on stdout (the first summary after the model is
loaded: tracing the search, compiling or loading it, searching), beside the targets of
issue 45 item 3 (warm <= 2 s, cold <= 5 s) and the ratios warm / off and cold / off.
Settings alternate within each round, so a busy host slows all of them alike. With
`--serve`, `pointer-generator serve` is started the same way (off, cold, warm): its time to
"Serving", from the model loaded to its first answer, and the first request's latency (no
request may wait for a compile after "Serving").
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


def _serve_once(log_root: str, exp_name: str, text: str, cache: str) -> tuple[float, float, float]:
    """(start to "Serving", model loaded to the first answer, the first request's latency)
    seconds of one `serve` process on a free port: the model is loaded at "Loaded
    checkpoint" (a built model) or "Using the search kept in" (a kept search); the first
    request is sent once it says "Serving". The process is then stopped with Ctrl-C."""
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
    serving = threading.Event()

    def watch(stream):
        for line in stream:
            now = time.perf_counter()
            if "Loaded checkpoint" in line or "Using the search kept in" in line:
                seen.setdefault("loaded", now)
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
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return seen["serving"] - t0, answered - seen["loaded"], answered - sent


def _serve_table(log_root: str, exp_name: str, text: str, work: str, rounds: int) -> dict:
    """`serve` started fresh with compiled searches off, an empty cache (cold: it keeps
    its search and compiled shapes before serving) and that cache (warm), in turn."""
    settings = ("off", "cold", "warm")
    times: dict[str, list] = {s: [] for s in settings}
    for r in range(rounds):
        cache = os.path.join(work, f"serve_cache{r}")
        for setting in settings:
            folder = "off" if setting == "off" else cache
            times[setting].append(_serve_once(log_root, exp_name, text, folder))
    med = {s: tuple(statistics.median(t[i] for t in times[s]) for i in (0, 1, 2)) for s in settings}
    print(f"\n`serve`: a new process's first answer ({common.machine_description()}), "
          f"median of {rounds} rounds:")  # fmt: skip
    print("| compiled searches | start to \"Serving\" | loaded to the first answer | "
          "first request's latency | target |")  # fmt: skip
    print("|---|---|---|---|---|")
    targets = {"off": "", "cold": "<= 5 s", "warm": "<= 2 s"}
    for s in settings:
        print(f"| {s} | {med[s][0]:.2f} s | {med[s][1]:.2f} s | {med[s][2]:.3f} s | {targets[s]} |")
    return {
        f"serve_{s}_{part}_s": round(med[s][i], 3)
        for s in settings
        for i, part in enumerate(("to_serving", "after_load", "first_request"))
    }


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
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        log_root, exp_name = args.log_root, args.exp_name
        if log_root:
            data_bin = None
        else:
            print(f"Training the quick-start's toy model for {args.train_steps} steps ...")
            log_root, exp_name, data_bin = _toy_experiment(work, args.train_steps)
        text = "the council voted on tuesday to build a new bridge over the river . " * 20
        if data_bin:
            text = _articles(data_bin, 1)[0]
        article = os.path.join(work, "article.txt")
        with open(article, "w", encoding="utf-8") as f:
            f.write(" ".join(text.split()[:ARTICLE_WORDS]) + "\n")
        times: dict[str, list[tuple[float, float]]] = {s: [] for s in SETTINGS}
        for r in range(args.rounds):
            cache = os.path.join(work, f"cache{r}")  # empty: the cold run fills it
            for setting in SETTINGS:
                folder = "off" if setting == "off" else cache
                times[setting].append(_summarize_once(log_root, exp_name, article, folder))
        words = " ".join(text.split()[:ARTICLE_WORDS])
        served = _serve_table(log_root, exp_name, words, work, args.rounds) if args.serve else {}
    med = {s: tuple(statistics.median(t[i] for t in times[s]) for i in (0, 1)) for s in SETTINGS}
    print(f"\nFirst summary of a new process ({common.machine_description()}), "
          f"median of {args.rounds} rounds:")  # fmt: skip
    print("| compiled searches | whole command | first summary after loading | target |")
    print("|---|---|---|---|")
    targets = {"off": "", "cold": "<= 5 s", "kept": "", "warm": "<= 2 s"}
    for s in SETTINGS:
        print(f"| {s} | {med[s][0]:.2f} s | {med[s][1]:.2f} s | {targets[s]} |")
    figures = {
        f"{s}_{part}_s": round(med[s][i], 3)
        for s in SETTINGS
        for i, part in enumerate(("command", "after_load"))
    }
    figures["warm_over_off_after_load"] = round(med["warm"][1] / med["off"][1], 3)
    figures["cold_over_off_after_load"] = round(med["cold"][1] / med["off"][1], 3)
    figures.update(served)
    print(f"warm / off after load: {figures['warm_over_off_after_load']:.2f}; "
          f"cold / off: {figures['cold_over_off_after_load']:.2f}")  # fmt: skip
    common.record("first_call", f"{args.rounds} rounds", figures, args.out_json or None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
