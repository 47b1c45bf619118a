"""The one counted-items progress line (decoding, data tools), the record count that gives
decoding its total, and the training progress line's speed and ETA, which leave out the
steps that compile."""

import io
import re
import types

from pointer_generator.data.binfile import count_records, write_bin
from pointer_generator.runtime import progress


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_count_progress_rate_eta_and_a_resumed_start(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    out = io.StringIO()
    p = progress.CountProgress("decoded", 10, unit="articles", already=4, stream=out)
    clock.now += 30.0
    p.update(1)  # the first results: the wait (compilation) is no measure of speed
    assert p.line() == "decoded: 5/10 articles (measuring speed; started 00:30 ago)"
    clock.now += 2.0
    p.update(2)  # 2 articles in 2 s since the first: 1 article/s; 3 left -> ETA 3 s
    assert p.line() == "decoded: 7/10 articles (1.00 articles/s, ETA 00:03)"
    clock.now += 3.0
    p.update(3)
    p.close()
    # Non-terminal output: a line per interval and the final one: the rate measured as
    # the running lines measure it (since the first results: 5 articles in 5 s), the
    # whole time, and the wait for the first results (issue 45 item 6: before, the final
    # rate folded the wait in, 0.17 articles/s after lines of 1.00).
    stamp, last = out.getvalue().splitlines()[-1].split(" ", 1)
    assert re.fullmatch(r"\d\d:\d\d:\d\d", stamp)  # its time of day (`progress.stamp`)
    assert last == (
        "decoded: 10/10 articles (1.00 articles/s; 00:35 in all, the first after 00:30)"
    )


def test_count_progress_fast_rates_are_whole_numbers_and_nothing_done_prints_nothing():
    out = io.StringIO()
    p = progress.CountProgress("tokenizing train", None, stream=out)
    p.close()
    assert out.getvalue() == ""
    p.update(1)
    p._marks[0] = (p._marks[0][0] - 1.0, 1)
    p.update(250)
    assert p.line().startswith("tokenizing train: 251 (2")  # ~250/s, no decimals


def test_count_records_reads_only_the_framing(tmp_path):
    path = str(tmp_path / "a.bin")
    write_bin(path, [("a b", "<s> c </s>"), ("d", "<s> e </s>"), ("f g h", "")])
    assert count_records(path) == 3
    (tmp_path / "empty.bin").write_bytes(b"")
    assert count_records(str(tmp_path / "empty.bin")) == 0


def test_progress_speed_and_eta_ignore_compiling_steps(monkeypatch):
    clock = iter([0.0] + [float(t) for t in (20, 20.5, 30, 30.5, 31, 41, 41.5, 42, 42.5)])
    monkeypatch.setattr(progress, "time", types.SimpleNamespace(time=lambda: next(clock)))
    p = progress.Progress(start_step=0, max_steps=1000, examples_per_step=4)
    lines = [p.line(s, {"loss": 1.0}, p.update(s, {"loss": 1.0})) for s in range(1, 10)]
    assert "compiling" in lines[0] and "measuring speed" in lines[0]
    assert "compiling" in lines[2] and "compiling" in lines[5]  # new shapes: 9.5 s, 10 s
    assert "compiling" not in lines[8]
    # Steady steps take 0.5 s: 2 steps/s whatever the compiles; 991 steps left: 495.5 s.
    assert "| 2.00 steps/s | 8.0 examples/s | ETA 08:16" in lines[8]


def test_progress_marks_compiling_by_new_batch_shape_not_by_a_slow_step(monkeypatch):
    """With shapes given (the trainer's), a step slowed by other jobs is not called a
    compile, and a compile's time stays out of the speed."""
    # Step times: 10 s (first shape), 0.5, 0.5, 4.0 (same shape, a busy machine), 9.0
    # (a new shape), 0.5, 0.5.
    clock = iter([0.0, 10.0, 10.5, 11.0, 15.0, 24.0, 24.5, 25.0])
    monkeypatch.setattr(progress, "time", types.SimpleNamespace(time=lambda: next(clock)))
    p = progress.Progress(start_step=0, max_steps=1000, examples_per_step=4)
    shapes = [(4, 10), (4, 10), (4, 10), (4, 10), (4, 12), (4, 12), (4, 10)]
    lines = [
        p.line(s, {"loss": 1.0}, p.update(s, {"loss": 1.0}, shape))
        for s, shape in enumerate(shapes, 1)
    ]
    marked = ["compiling" in line for line in lines]
    assert marked == [True, False, False, False, True, False, False]
    # The steady time is the median of 0.5, 0.5, 4.0 (kept: not a compile), 0.5, 0.5.
    assert "| 2.00 steps/s |" in lines[6]


def test_by_default_a_line_every_few_seconds_and_at_the_first_and_last_step(monkeypatch, caplog):
    """Issue 45 item 6: not a line a step (1,002 lines for a 1,000-step recipe)."""
    import logging

    now = [0.0]
    monkeypatch.setattr(progress, "time", types.SimpleNamespace(time=lambda: now[0]))
    caplog.set_level(logging.INFO, logger=progress.__name__)
    p = progress.Progress(0, 1000, 16, log_every=0, log_every_secs=10.0)
    for step in range(1, 1001):
        now[0] += 0.0625  # 16 steps/s (exact in binary): 62.5 s in all
        p.update(step, {"loss": 1.0})
    steps = [int(r.getMessage().split()[1].split("/")[0]) for r in caplog.records]
    assert steps == [1, 161, 321, 481, 641, 801, 961, 1000], steps
    # N steps: as before (1 = every step, the original's).
    caplog.clear()
    p = progress.Progress(0, 10, 16, log_every=1)
    for step in range(1, 11):
        now[0] += 0.05
        p.update(step, {"loss": 1.0})
    assert len(caplog.records) == 10


def test_a_long_wait_for_the_first_results_says_what_it_is():
    """Issue 45 item 3c: decode's first batch compiles the search for seconds; the progress
    line says so after FIRST_WAIT_S instead of staying silent, and only once."""
    import time

    out = io.StringIO()  # (nothing comes for FIRST_WAIT_S = 2 s)
    p = progress.CountProgress("decoded", 10, unit="articles", stream=out, first_wait="compiling")
    deadline = time.monotonic() + 10
    while "compiling" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    # With its time of day, as every status line (`progress.stamp`).
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d decoded: 0/10 articles \(compiling \.\.\.\)\n", out.getvalue()
    )
    p.update(1)
    p.close()
    assert out.getvalue().count("compiling") == 1
    quick = io.StringIO()
    q = progress.CountProgress("decoded", 1, unit="articles", stream=quick, first_wait="x")
    q.update(1)  # at once: nothing said about waiting
    q.close()
    time.sleep(0.1)
    assert "(x ...)" not in quick.getvalue()


def test_a_delayed_notice_on_a_stream_closed_first_is_dropped(monkeypatch):
    """A command that fails before its first result leaves its notice's timer running: the
    notice must not raise in its thread when the stream is closed by then."""
    import io
    import threading

    from pointer_generator.runtime.progress import DelayedNotice

    raised = []
    monkeypatch.setattr(threading, "excepthook", lambda args: raised.append(args.exc_value))
    stream = io.StringIO()
    stream.close()
    notice = DelayedNotice("compiling ...", 0.0, stream)
    notice._timer.join(5)
    assert not notice._timer.is_alive() and raised == []
    open_stream = io.StringIO()
    DelayedNotice("compiling ...", 0.0, open_stream)._timer.join(5)
    assert re.fullmatch(r"\d\d:\d\d:\d\d compiling \.\.\.\n", open_stream.getvalue())


def test_a_status_line_carries_its_time_and_readers_take_it_off():
    """Issue 45 item 6: status lines start `HH:MM:SS ` like the log lines; tools that
    read them (the families' drivers, the benchmarks) take it off, and leave a line
    without one as it is."""
    line = progress.stamp("Decoding a into b")
    assert re.fullmatch(r"\d\d:\d\d:\d\d Decoding a into b", line)
    assert progress.unstamped(line) == "Decoding a into b"
    for bare in ("Decoding a into b", "12:3:45 x", "ab:cd:ef x", "12:34:56"):
        assert progress.unstamped(bare) == bare
    out = io.StringIO()
    progress.status("Serving x", out)
    assert progress.unstamped(out.getvalue()) == "Serving x\n"
