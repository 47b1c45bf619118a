"""Reporting on stderr: progress lines, problem counts, and a parallel map with progress."""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TextIO

from pointer_generator.runtime.progress import format_duration

MAX_LISTED = 5  # problem files named individually per kind; the rest are only counted


def plural(n: int, noun: str) -> str:
    """`1 chunk file`, `2 chunk files`."""
    return f"{n} {noun}" + ("" if n == 1 else "s")


class Progress:
    """`label: done/total (rate/s, ETA m:ss)` rewritten in place at most every `interval` s.

    On a terminal the line is redrawn with a carriage return; elsewhere (logs, CI) a new line
    is printed at most every `log_interval` seconds so that logs stay short.
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        stream: TextIO | None = None,
        interval: float = 0.5,
        log_interval: float = 30.0,
    ):
        self.label, self.total = label, total
        self.stream = stream if stream is not None else sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.interval = interval if self.tty else log_interval
        self.done = 0
        self.start = time.monotonic()
        self._last = self.start

    def line(self) -> str:
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = self.done / elapsed
        text = f"{self.label}: {self.done}"
        if self.total is not None:
            text += f"/{self.total}"
        text += f" ({rate:.0f}/s"
        if self.total is not None and rate > 0 and self.done < self.total:
            text += f", ETA {format_duration((self.total - self.done) / rate)}"
        elif self.done and (self.total is None or self.done >= self.total):
            text += f", {format_duration(elapsed)}"
        return text + ")"

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._last >= self.interval:
            self._last = now
            self._write(self.line(), final=False)

    def close(self) -> None:
        if self.done:  # a run that failed before its first item has nothing to report
            self._write(self.line(), final=True)

    def _write(self, text: str, final: bool) -> None:
        if self.tty:
            self.stream.write("\r" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()


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
    progress = Progress(label, total, stream) if label else None
    if num_workers <= 1:
        results = map(func, items)
        pool = None
    else:
        # fork is fastest, but forking a process that runs TensorFlow's threads can deadlock.
        method = "spawn" if "tensorflow" in sys.modules else "fork"
        pool = multiprocessing.get_context(method).Pool(num_workers)
        results = pool.imap(func, items, chunksize)
    finished = False
    try:
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
