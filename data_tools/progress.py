"""Reporting on stderr: problem counts, and a parallel map with progress
(`pointer_generator.runtime.progress.CountProgress`)."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TextIO

from pointer_generator.runtime import child_processes
from pointer_generator.runtime.progress import CountProgress

MAX_LISTED = 5  # problem files named individually per kind; the rest are only counted


def plural(n: int, noun: str) -> str:
    """`1 chunk file`, `2 chunk files`."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


def ordered_map(
    func: Callable,
    items: Iterable,
    num_workers: int = 1,
    label: str = "",
    total: int | None = None,
    chunksize: int = 16,
    stream: TextIO | None = None,
) -> Iterator:
    """`map(func, items)` in input order, over `num_workers` processes, with progress.

    `func` must be a picklable top-level function when `num_workers` > 1. Exceptions raised
    in a worker propagate to the caller (the pool is torn down).
    """
    progress = CountProgress(label, total, stream=stream) if label else None
    if num_workers <= 1:
        results = map(func, items)
        pool = None
    else:
        # fork is fastest, but forking a process that runs TensorFlow's threads can deadlock.
        method = "spawn" if "tensorflow" in sys.modules else "fork"
        pool = multiprocessing.get_context(method).Pool(num_workers)
        results = pool.imap(func, items, chunksize)
    finished = False
    # SIGTERM of the command: an exception, so that the `finally` ends the workers (the
    # default action would end this process alone and leave them running).
    signals = child_processes.signals_raise() if pool is not None else contextlib.nullcontext()
    try:
        with signals:
            for r in results:
                if progress:
                    progress.update()
                yield r
        finished = True
    finally:
        if pool is not None:
            if finished:
                pool.close()
            else:
                pool.terminate()  # an error or an abandoned iteration: stop the workers now
            pool.join()
        if progress:
            progress.close()


@dataclass
class Issue:
    """Problem files of one kind: how many, and the first few names."""

    message: str
    count: int = 0
    names: list[str] = field(default_factory=list)

    def add(self, name: str, stream: TextIO, detail: str = "") -> None:
        self.count += 1
        if len(self.names) < MAX_LISTED:
            self.names.append(name)
            print(f"warning: {name}: {self.message}{detail}", file=stream)
            if len(self.names) == MAX_LISTED:
                print(
                    f"warning: further files with this problem ({self.message}) are only counted",
                    file=stream,
                )

    def summary_line(self) -> str:
        """`  message: count (first, names and N more)` for the end-of-run summary."""
        shown = ", ".join(os.path.basename(n) for n in self.names)
        more = f" and {self.count - len(self.names)} more" if self.count > len(self.names) else ""
        return f"  {self.message}: {self.count} ({shown}{more})"
