"""Commands that start processes stop and reap them when they are stopped (issue 42, item
4; `pointer_generator/runtime/child_processes.py`): SIGTERM or Ctrl-C of the quick-start,
the recipe runner or any user of the helper leaves no child running, ends with 143 / 130
and one line, and a rerun is not refused by the lock of an orphaned job.

Every process a test starts runs in a session of its own; every wait is bounded, and the
whole session is killed at the end whatever happened.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

from pointer_generator import exit_codes
from tests import helpers

WAIT_S = 120  # any single wait of these tests (a loaded 2-core machine is slow)


# ------------------------------------------------------------------------------ helpers
def _children_of(pid: int) -> set[int]:
    """The pids of every live descendant of `pid` (from /proc: no psutil needed)."""
    parents = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{name}/stat", encoding="utf-8", errors="replace") as f:
                # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
                fields = f.read().rsplit(")", 1)[1].split()
            parents[int(name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    """True unless `pid` is gone (a zombie counts as gone: it runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _group_is_empty(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def _wait_for(condition, what: str, proc: subprocess.Popen | None = None, timeout=WAIT_S):
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the command ended (status {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


@contextlib.contextmanager
def _session(cmd: list[str], ignore_sigint: bool = False, **kwargs):
    """`cmd` started in a new session (its own process group), optionally with SIGINT
    ignored as a shell's `cmd &` starts it; the whole group is killed on the way out."""

    def ignore():
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    proc = subprocess.Popen(
        cmd,
        start_new_session=True,
        preexec_fn=ignore if ignore_sigint else None,
        env=helpers.subprocess_env(),
        cwd=helpers.REPO_ROOT,
        **kwargs,
    )
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)


def _stop_and_check(proc, signum: int, children: set[int], status: int) -> str:
    """Send `signum` to the command alone; its status must be `status`, every child and
    every member of its group gone when it has ended. Returns its stderr."""
    assert children and all(_alive(p) for p in children)
    proc.send_signal(signum)
    proc.wait(WAIT_S)
    left = [p for p in children if _alive(p)]
    assert not left, f"still running after the command ended: {left}"
    assert _group_is_empty(proc.pid)
    _, err = proc.communicate(timeout=WAIT_S)  # at its end now: no child holds the pipe
    assert proc.returncode == status, err[-3000:]
    return err


# ------------------------------------------------------------------ the shared helper
PARENT = r"""
import sys
from pointer_generator import exit_codes
from pointer_generator.runtime import child_processes

CHILD = sys.argv[1]
GRACE = float(sys.argv[2])

def main():
    with child_processes.Children(grace_secs=GRACE) as children:
        procs = [children.start([sys.executable, "-c", CHILD]) for _ in range(2)]
        print("started", flush=True)
        for proc in procs:
            proc.wait()

sys.exit(exit_codes.run_command(main, interrupted="interrupted; run it again"))
"""
# On the command's stdout, in one write (the two children's lines must not interleave).
READY = "import os, time\nos.write(1, b'ready\\n')\ntime.sleep(600)\n"
SLEEPER = READY
STUBBORN = "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n" + READY  # SIGKILL only


def _parent(child: str, grace: float, ignore_sigint: bool = False):
    return _session(
        [sys.executable, "-c", PARENT, child, str(grace)],
        ignore_sigint=ignore_sigint,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _started(proc) -> set[int]:
    """The two children's pids, once both are ready (signal dispositions set)."""
    lines = sorted(proc.stdout.readline() for _ in range(3))
    assert lines == ["ready\n", "ready\n", "started\n"]
    children = _children_of(proc.pid)
    assert len(children) == 2
    return children


@pytest.mark.parametrize("ignore_sigint", [False, True], ids=["foreground", "started_with_&"])
def test_sigterm_stops_and_reaps_the_children(ignore_sigint):
    with _parent(SLEEPER, grace=60, ignore_sigint=ignore_sigint) as proc:
        children = _started(proc)
        err = _stop_and_check(proc, signal.SIGTERM, children, exit_codes.TERMINATED)
    assert err == "interrupted by SIGTERM; run it again\n"


def test_ctrl_c_of_the_command_alone_stops_and_reaps_the_children():
    # `kill -INT <pid>`: the children did not get it; after a moment they get SIGTERM.
    with _parent(SLEEPER, grace=60) as proc:
        children = _started(proc)
        err = _stop_and_check(proc, signal.SIGINT, children, exit_codes.INTERRUPTED)
    assert err == "interrupted; run it again\n"


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period():
    with _parent(STUBBORN, grace=1.0) as proc:
        children = _started(proc)
        start = time.monotonic()
        err = _stop_and_check(proc, signal.SIGTERM, children, exit_codes.TERMINATED)
    assert time.monotonic() - start < 30
    assert err == "interrupted by SIGTERM; run it again\n"


def test_a_second_signal_kills_the_children_at_once():
    with _parent(STUBBORN, grace=600) as proc:
        children = _started(proc)
        proc.send_signal(signal.SIGTERM)
        time.sleep(1.0)  # the first one is being handled: the children got SIGTERM
        assert proc.poll() is None and all(_alive(p) for p in children)
        err = _stop_and_check(proc, signal.SIGTERM, children, exit_codes.TERMINATED)
    assert err == "interrupted by SIGTERM; run it again\n"


POOL = r"""
import os, sys, time
from data_tools.progress import ordered_map
from pointer_generator import exit_codes

def slow(x):
    time.sleep(0.2)
    return x

def main():
    for i, _ in enumerate(ordered_map(slow, range(100000), num_workers=2)):
        if i == 0:
            print("started", flush=True)

sys.exit(exit_codes.run_command(main, interrupted="interrupted: nothing was written"))
"""


def test_sigterm_ends_the_workers_of_a_data_tools_pool():
    with _session(
        [sys.executable, "-c", POOL], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout.readline() == "started\n"
        workers = _children_of(proc.pid)
        err = _stop_and_check(proc, signal.SIGTERM, workers, exit_codes.TERMINATED)
    assert err == "interrupted by SIGTERM: nothing was written\n"


# ------------------------------------------------------------------- the recipe runner
# Stands in for `python -m MODULE ARGS` of the recipe: training holds the experiment's lock
# as the real one does (a second job is refused with status 2), saves on SIGTERM; the eval
# job keeps the signal dispositions it inherited.
FAKE_PYTHON = r"""#!{python} -S
import fcntl, json, os, signal, sys, time

module, args = sys.argv[2], sys.argv[3:]
flags = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
exp = os.path.join(flags["log_root"], flags["exp_name"])
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps({"mode": flags.get("mode"), "pid": os.getpid()}) + "\n")
if flags.get("mode") == "train":
    train = os.path.join(exp, "train")
    os.makedirs(train, exist_ok=True)
    lock = open(os.path.join(train, ".lock"), "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        sys.exit("error: another training job is writing " + train)

    def save(*_):
        open(os.path.join(train, "saved_on_sigterm"), "w").close()
        sys.exit(0)

    signal.signal(signal.SIGTERM, save)
time.sleep(600)
"""


def _fake_recipe(tmp_path):
    data = tmp_path / "finished_files"
    (data / "chunked").mkdir(parents=True)
    for name in ("train_000.bin", "val_000.bin", "test_000.bin"):
        (data / "chunked" / name).write_bytes(b"")
    (data / "vocab").write_text("the 10\n")
    fake = tmp_path / "fake_python"
    fake.write_text(FAKE_PYTHON.replace("{python}", sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    logs = tmp_path / "logs"
    # The stage that runs the eval job beside training.
    stage = ["--stage", "train_enc400_dec100"]
    paths = ["--data_dir", str(data), "--log_root", str(logs), "--python", str(fake)]
    cmd = [sys.executable, "-m", "experiments.paper.run_recipe", "--recipe", "pointer_generator"]
    cmd += paths + stage
    return cmd, logs / "pointer_generator" / "train"


def _started_jobs(log) -> dict[str, int]:
    if not log.exists():
        return {}
    return {e["mode"]: e["pid"] for e in map(json.loads, log.read_text().splitlines())}


@pytest.mark.parametrize("ignore_sigint", [False, True], ids=["foreground", "started_with_&"])
def test_a_stopped_recipe_runner_leaves_no_job_and_its_rerun_runs(
    tmp_path, monkeypatch, ignore_sigint
):
    cmd, train_dir = _fake_recipe(tmp_path)
    for attempt in range(2):  # the rerun must not be refused by the first run's lock
        log = tmp_path / f"jobs{attempt}.jsonl"
        monkeypatch.setenv("FAKE_LOG", str(log))
        with _session(
            cmd, ignore_sigint=ignore_sigint, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ) as proc:
            _wait_for(lambda: len(_started_jobs(log)) == 2, "training and eval", proc)  # noqa: B023
            time.sleep(1.0)  # a refused training job would have ended by now
            jobs = _started_jobs(log)
            assert set(jobs) == {"train", "eval"} and all(map(_alive, jobs.values()))
            (train_dir / "saved_on_sigterm").unlink(missing_ok=True)
            err = _stop_and_check(
                proc, signal.SIGTERM, set(jobs.values()), exit_codes.TERMINATED
            ).decode()
        assert err.endswith("interrupted by SIGTERM; run the same command again to continue\n")
        assert (train_dir / "saved_on_sigterm").exists()  # training got SIGTERM, not SIGKILL


# ------------------------------------------------------------------------- quick-start
def _in_step_loop(err_path) -> bool:
    return "Compiling the training step" in err_path.read_text()


def test_sigterm_of_the_quickstart_stops_training_and_a_rerun_resumes(tmp_path):
    out = tmp_path / "quickstart"
    cmd = [sys.executable, "-m", "pointer_generator.cli", "quickstart", f"--out_dir={out}",
           "--train_steps=100000", "--num_train=40"]  # fmt: skip
    for attempt in range(2):
        err_path = tmp_path / f"stderr{attempt}.txt"
        with (
            open(err_path, "w") as err_file,
            _session(cmd, stdout=subprocess.DEVNULL, stderr=err_file) as proc,
        ):
            # Training runs its steps (and handles SIGTERM) once it says it compiles them.
            _wait_for(lambda: _in_step_loop(err_path), "the training steps", proc)  # noqa: B023
            children = _children_of(proc.pid)
            assert children
            proc.send_signal(signal.SIGTERM)
            proc.wait(WAIT_S)
            left = [p for p in children if _alive(p)]
            assert not left, f"still running after the command ended: {left}"
            assert _group_is_empty(proc.pid)
            assert proc.returncode == exit_codes.TERMINATED, err_path.read_text()[-3000:]
        err = err_path.read_text()
        assert "another training job" not in err
        assert ("Resuming from" in err) == (attempt == 1)
        assert "Received SIGTERM: stopping after this step and saving a checkpoint" in err
        assert err.endswith("interrupted by SIGTERM; run the same command again to continue\n")


def test_a_failed_quickstart_step_is_an_error_line_and_status_2(tmp_path):
    blocker = tmp_path / "a_file"  # the data folder cannot be made below a file
    blocker.write_text("")
    proc = helpers.run_python(
        ["-m", "pointer_generator.cli", "quickstart", f"--out_dir={blocker}/q"], timeout=WAIT_S
    )
    assert proc.returncode == exit_codes.BAD_INPUT, proc.stderr  # not 1, a checker's status
    assert proc.stderr.endswith(
        "error: quickstart step `python -m data_tools.toy_data` failed (exit status 2); its "
        "message is above\n"
    )


# ------------------------------------------------------------------------------- ROUGE
# ROUGE-1.5.5.pl runs for minutes at CNN/DM size. Loaded into every perl the command
# starts (PERL5OPT), this module holds the ROUGE script alone (not the module checks, not
# the exception-DB build) before it scores, so that the test stops the command while
# perl runs instead of racing a run of a few seconds on a loaded machine.
SLOW_ROUGE = r"""package SlowRouge;
BEGIN { sleep 600 if $0 =~ /ROUGE-1\.5\.5\.pl$/ }
1;
"""


def _rouge_can_run() -> None:
    """Skip (fail on CI) where Perl or the modules ROUGE-1.5.5 needs are missing."""
    from pointer_generator.evaluation import rouge

    try:
        rouge.check_perl(rouge.wheel_rouge_dir())
    except rouge.RougeError as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI must provide ROUGE's Perl dependencies: {e}")
        pytest.skip(f"official ROUGE-1.5.5 cannot run here: {e}")


def _rouge_script_of(pid: int) -> int | None:
    """The pid of the ROUGE-1.5.5.pl process among `pid`'s descendants, if one runs."""
    for child in _children_of(pid):
        with contextlib.suppress(OSError):
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"ROUGE-1.5.5.pl" in f.read():
                    return child
    return None


# How the command is stopped: (signal, sent to its whole group, status, its last line).
ROUGE_STOPS = {
    "sigterm": (signal.SIGTERM, False, exit_codes.TERMINATED, "interrupted by SIGTERM\n"),
    # A terminal's Ctrl-C reaches the whole foreground group, perl included.
    "ctrl_c": (signal.SIGINT, True, exit_codes.INTERRUPTED, "interrupted\n"),
    # `kill -INT` of the command alone: perl has nothing to finish, so it is not given
    # the children's Ctrl-C time (child_processes.CTRL_C_SECS) before SIGTERM.
    "sigint_of_the_command": (signal.SIGINT, False, exit_codes.INTERRUPTED, "interrupted\n"),
}


@pytest.mark.parametrize("how", list(ROUGE_STOPS))
def test_a_stopped_rouge_run_stops_perl_and_leaves_no_temporary_folder(tmp_path, monkeypatch, how):
    from pointer_generator.runtime import child_processes

    signum, whole_group, status, last_line = ROUGE_STOPS[how]
    _rouge_can_run()
    ref, dec, tmp, lib = (tmp_path / n for n in ("reference", "decoded", "tmp", "perl5"))
    for folder in (ref, dec, tmp, lib):
        folder.mkdir()
    for k in range(3):
        (ref / f"{k:06d}_reference.txt").write_text("the cat sat on the mat .")
        (dec / f"{k:06d}_decoded.txt").write_text("a cat sat on a mat .")
    (lib / "SlowRouge.pm").write_text(SLOW_ROUGE)
    monkeypatch.setenv("PERL5LIB", str(lib))
    monkeypatch.setenv("PERL5OPT", "-MSlowRouge")
    monkeypatch.setenv("TMPDIR", str(tmp))  # where pyrouge's folders go
    monkeypatch.setenv("POINTER_GENERATOR_CACHE", str(tmp_path / "cache"))
    cmd = [sys.executable, "-m", "pointer_generator.cli.score_rouge",
           f"--reference_dir={ref}", f"--decoded_dir={dec}"]  # fmt: skip
    with _session(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        _wait_for(lambda: _rouge_script_of(proc.pid), "ROUGE-1.5.5.pl to start", proc)
        perl = _rouge_script_of(proc.pid)
        descendants = _children_of(proc.pid)
        assert os.listdir(tmp), "the converted summaries should be in TMPDIR while perl runs"
        assert all(_alive(p) for p in descendants)
        start = time.monotonic()
        if whole_group:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        proc.wait(WAIT_S)
        took = time.monotonic() - start
        left = [p for p in descendants if _alive(p)]
        assert not left, f"still running after the command ended: {left}"
        assert _group_is_empty(proc.pid)
        _, err = proc.communicate(timeout=WAIT_S)
        assert proc.returncode == status, err[-3000:]
    assert not _alive(perl)
    assert err == last_line
    assert os.listdir(tmp) == []  # pyrouge's converted summaries and configuration
    assert took < child_processes.CTRL_C_SECS
