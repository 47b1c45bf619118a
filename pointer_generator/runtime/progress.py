"""Console progress of long jobs: training steps (step, losses, speed, ETA) and counted
items (decoded articles, tokenized stories: done/total, rate, ETA)."""

from __future__ import annotations

import collections
import logging
import sys
import time
from typing import TextIO

log = logging.getLogger(__name__)


def stamp(text: str) -> str:
    """`text` after the time of day, `HH:MM:SS text`, as the log lines on stderr are
    (`cli.console.setup_logging`): every line that says what a job is doing carries its
    time; what a command produces (summaries, ROUGE tables, the eval loss) is printed bare."""
    return f"{time.strftime('%H:%M:%S')} {text}"


def unstamped(line: str) -> str:
    """`line` without the time `stamp` put before it (unchanged where there is none): for
    tools that read a job's status lines."""
    head, _, rest = line.partition(" ")
    parts = head.split(":")
    if rest and len(parts) == 3 and all(len(p) == 2 and p.isdigit() for p in parts):
        return rest
    return line


def status(text: str, stream: TextIO | None = None) -> None:
    """Print a status line of a job (`stamp`) on stdout (or `stream`), flushed."""
    print(stamp(text), file=stream if stream is not None else sys.stdout, flush=True)


def format_duration(seconds: float) -> str:
    """`1d 02:03:04` / `02:03:04` / `03:04` style duration."""
    seconds = max(0, int(round(seconds)))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours:02d}:{minutes:02d}:{secs:02d}" if hours or days else f"{minutes:02d}:{secs:02d}"
    return f"{days}d {text}" if days else text


class Progress:
    """Measures training speed and logs one line every `log_every` steps.

    Each new batch shape compiles the step (and the fused loops) once, which takes many
    times a normal step; early in a run most steps may do so. Speed and ETA therefore
    come from the steady steps only: the median of the recent step times that are not
    outliers (at most twice the lower quartile). A step is marked `compiling` on its line
    when the caller says its batch shape is new (`update(..., shape=)`: exact, so a step
    slowed by other jobs on the machine is not mistaken for a compile, and its time is
    left out of the speed); without shapes, when it took over 3 times the fastest recent
    step. Until a few steps are measured the line says so instead of guessing an ETA.

    Args:
      start_step: the global step training starts (or resumes) from.
      max_steps: the step limit (0 = none, then no ETA).
      examples_per_step: the global batch size.
      log_every: log a line every N steps (1 = the original's line a step); 0: by time.
      log_every_secs: with log_every 0, a line when this many seconds have passed since
        the last one, and at the first and the last step.
      window: how many recent step times the estimate uses.
    """

    MIN_STEPS = 3  # measured steps before a speed is shown
    SLOW = 3.0  # a step this many times the steady time is counted as compiling

    def __init__(
        self,
        start_step: int,
        max_steps: int,
        examples_per_step: int,
        log_every: int = 1,
        window: int = 50,
        log_every_secs: float = 10.0,
    ):
        self.max_steps = max_steps
        self.examples_per_step = examples_per_step
        self.log_every = max(0, log_every)
        self.log_every_secs = log_every_secs
        self._last_step = start_step
        self._last_time = time.time()
        self._last_line: float | None = None  # when the last line was logged
        self._times: collections.deque = collections.deque(maxlen=window)
        self._compiling = False
        self._shapes: set = set()

    def update(self, step: int, metrics: dict, shape: tuple | None = None) -> dict:
        """Record that training reached `step`; returns {steps_per_sec, examples_per_sec}.

        shape: the step's batch shape (any hashable), when the caller knows it: the first
        step of each shape compiles.

        Logs `step N[/max] | loss .. | coverage loss .. | .. steps/s | .. examples/s |
        ETA ..` when due.
        """
        now = time.time()
        done = step - self._last_step
        if done > 0:
            sec = (now - self._last_time) / done
            if shape is not None:
                self._compiling = shape not in self._shapes
                self._shapes.add(shape)
            else:
                # Compared with the fastest recent step, which needs no steady estimate yet.
                fastest = min(self._times, default=None)
                self._compiling = fastest is None or sec > self.SLOW * fastest
            if shape is None or not self._compiling:
                self._times.extend([sec] * min(done, self._times.maxlen))
            self._last_step, self._last_time = step, now
        speed = self.speed()
        if self._due(step, now):
            self._last_line = now
            log.info(self.line(step, metrics, speed))
        return speed

    def _due(self, step: int, now: float) -> bool:
        if self.log_every:
            return step % self.log_every == 0
        return (
            self._last_line is None
            or now - self._last_line >= self.log_every_secs
            or (bool(self.max_steps) and step >= self.max_steps)
        )

    def pause(self) -> None:
        """Time since the last step was spent on something else (validation): the next
        step's time is measured from now."""
        self._last_time = time.time()

    def _steady(self) -> float | None:
        """Seconds per steady step, or None before MIN_STEPS steps are measured."""
        if len(self._times) < self.MIN_STEPS:
            return None
        ordered = sorted(self._times)
        quartile = ordered[len(ordered) // 4]
        steady = [t for t in ordered if t <= 2.0 * quartile]
        return steady[len(steady) // 2]

    def speed(self) -> dict:
        sec = self._steady()
        if not sec:
            return {"steps_per_sec": None, "examples_per_sec": None}
        steps_per_sec = 1.0 / sec
        return {
            "steps_per_sec": steps_per_sec,
            "examples_per_sec": steps_per_sec * self.examples_per_step,
        }

    def eta_seconds(self, step: int) -> float | None:
        sec = self._steady()
        if not self.max_steps or not sec:
            return None
        return max(0, self.max_steps - step) * sec

    def line(self, step: int, metrics: dict, speed: dict | None = None) -> str:
        speed = speed or self.speed()
        parts = [f"step {step}" + (f"/{self.max_steps}" if self.max_steps else "")]
        # The loss, then whatever else the model's family shows (`ModelFamily.logged`:
        # the coverage loss), each named in words.
        for name, value in metrics.items():
            if value is not None:
                parts.append(f"{name.replace('_', ' ')} {value:.4f}")
        if speed.get("steps_per_sec"):
            parts.append(f"{speed['steps_per_sec']:.2f} steps/s")
            parts.append(f"{speed['examples_per_sec']:.1f} examples/s")
        eta = self.eta_seconds(step)
        if eta is not None:
            parts.append(f"ETA {format_duration(eta)}")
        elif self._times or self._compiling:
            parts.append("measuring speed")
        if self._compiling:
            parts.append("compiling (a new batch shape)")
        return " | ".join(parts)


class DelayedNotice:
    """Say `text` once on `stream` if not cancelled within `after_s` seconds: a wait a user
    would notice says what it is; a quick one prints nothing (`cli.console.notice_if_slow`,
    `CountProgress`'s wait for its first results)."""

    def __init__(self, text: str, after_s: float, stream: TextIO):
        import threading

        def say():
            try:
                stream.write(stamp(text) + "\n")
                stream.flush()
            except (ValueError, OSError):
                # The stream closed first (a command that failed before its first result,
                # then returned): nobody is left to read the notice.
                pass

        self._timer = threading.Timer(after_s, say)
        self._timer.daemon = True
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()


class CountProgress:
    """`label: done/total unit (rate unit/s, ETA h:mm:ss)` on stderr, for jobs that count
    items (decoded articles, tokenized stories).

    On a terminal the line is redrawn in place at most every `interval` s; elsewhere (logs,
    CI) a new line is printed at most every `log_interval` s so that logs stay short.
    `already` items were done by an earlier run (a resumed job): they count towards the
    total but not towards the rate.
    """

    def __init__(
        self,
        label: str,
        total: int | None = None,
        unit: str = "",
        already: int = 0,
        stream: TextIO | None = None,
        interval: float = 0.5,
        log_interval: float = 30.0,
        first_wait: str = "",
    ):
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream if stream is not None else sys.stderr
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.interval = interval if self.tty else log_interval
        self.done = self.already = already
        self.start = time.monotonic()
        self._last = self.start
        # (time, done) at recent updates: the rate is measured between them, so the wait
        # for the first results (graph compilation) never enters it.
        self._marks: collections.deque = collections.deque()
        self._first: tuple[float, int] | None = None  # the first update's mark
        # `first_wait`: what the wait for the first results is (the search compiling), said
        # once if it lasts FIRST_WAIT_S: a wait a user notices never passes in silence.
        self._waiting = None
        if first_wait:
            total_text = f"/{total}" if total is not None else ""
            unit_text = f" {unit}" if unit else ""
            self._waiting = DelayedNotice(
                f"{label}: {already}{total_text}{unit_text} ({first_wait} ...)",
                self.FIRST_WAIT_S,
                self.stream,
            )

    RATE_WINDOW = 60.0  # seconds of recent updates the rate is measured over
    FIRST_WAIT_S = 2.0

    def _rate(self, final: bool) -> float | None:
        """Items a second after the first results: the running lines over the last
        RATE_WINDOW seconds, the final line over the whole run since the first results
        (one measure throughout: the wait before the first results, mostly compiling,
        is shown as such, never folded into a rate)."""
        marks = [self._first, self._marks[-1]] if final and self._marks else self._marks
        if len(self._marks) < 2:
            if final and self.done > self.already:  # one update: only the whole run
                return (self.done - self.already) / max(time.monotonic() - self.start, 1e-9)
            return None
        (t0, n0), (t1, n1) = marks[0], marks[-1]
        return (n1 - n0) / max(t1 - t0, 1e-9)

    def line(self, final: bool = False) -> str:
        rate = self._rate(final)
        unit = f" {self.unit}" if self.unit else ""
        text = f"{self.label}: {self.done}"
        if self.total is not None:
            text += f"/{self.total}"
        if rate is None:
            waited = format_duration(time.monotonic() - self.start)
            return text + f"{unit} (measuring speed; started {waited} ago)"
        text += f"{unit} ({rate:.2f}{unit}/s" if rate < 10 else f"{unit} ({rate:.0f}{unit}/s"
        if self.total is not None and rate > 0 and self.done < self.total:
            text += f", ETA {format_duration((self.total - self.done) / rate)}"
        elif self.done and (self.total is None or self.done >= self.total):
            text += f"; {format_duration(time.monotonic() - self.start)} in all"
            if self._first is not None and len(self._marks) >= 2:
                text += f", the first after {format_duration(self._first[0] - self.start)}"
        return text + ")"

    def update(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self._first is None:
            self._first = (now, self.done)
            if self._waiting is not None:
                self._waiting.cancel()
        self._marks.append((now, self.done))
        while len(self._marks) > 2 and now - self._marks[1][0] >= self.RATE_WINDOW:
            self._marks.popleft()
        if now - self._last >= self.interval:
            self._last = now
            self._write(self.line(), final=False)

    def close(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()
        if self.done > self.already:  # nothing done: nothing to report
            self._write(self.line(final=True), final=True)

    def _write(self, text: str, final: bool) -> None:
        text = stamp(text)
        if self.tty:
            self.stream.write("\r" + text + ("\n" if final else ""))
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
