"""Child processes that never outlive the command that started them.

The commands that run other processes (the quick-start's steps, the recipe runner's
training and eval jobs, the proxy and CPU-scale runners, the benchmarks, and
ROUGE-1.5.5.pl wherever ROUGE is scored: `evaluation/rouge.py`) start them through
`Children` (or `run` for one). While they run:

- SIGTERM of the command raises `exit_codes.Terminated` and Ctrl-C (SIGINT)
  `KeyboardInterrupt`, wherever the command is; any exception then stops every child
  that is still running: SIGTERM (a training job saves a checkpoint and exits, eval and
  decode end at once; after Ctrl-C only once they had `ctrl_c_secs`, 10 s by default, to
  end by themselves),
  `grace_secs` to end, then SIGKILL, and every child is reaped before the command goes
  on to report `interrupted ...` and end with 130 / 143. A second signal while they stop
  kills them at once. Nothing is left running: a rerun is never refused by the lock of a
  job that outlived its parent.
- Children get SIGTERM, not SIGINT, even for Ctrl-C: those in the terminal's foreground
  process group got that Ctrl-C already, and a second one would stop training without
  its checkpoint (SIGTERM asks for one again, harmlessly); and a child ignores SIGINT
  when its parent does (a shell starts `cmd &` with SIGINT ignored, and children inherit
  that), which SIGTERM never is.
- A command that ignores SIGINT keeps ignoring it (as `interrupts` does), and so do its
  children: a terminal's Ctrl-C meant for the foreground job does not reach them.

Only the main thread can take signals; elsewhere (a library caller's thread) children
are still stopped and reaped when the block ends by an exception.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import threading
import time

from pointer_generator import exit_codes
from pointer_generator.runtime import interrupts

GRACE_SECS = 60.0  # a training step and its checkpoint, on a loaded machine
CTRL_C_SECS = 10.0  # after Ctrl-C, before SIGTERM: children may have had it too
KILL_WAIT_SECS = 10.0  # after SIGKILL: a process in uninterruptible I/O takes a moment
POLL_SECS = 0.05


class _Signals:
    """SIGTERM and SIGINT as exceptions in the main thread, held back while a child is
    being started (so none is started without being recorded) or while children stop."""

    def __init__(self):
        self._previous: dict[int, object] = {}
        self._holding = 0
        self.pending: int | None = None
        self.sigint_ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGTERM, signal.SIGINT):
            current = signal.getsignal(signum)
            if current is signal.SIG_IGN or current is None:
                continue  # ignored on purpose (nohup, `&`): keep it so
            self._previous[signum] = current
            signal.signal(signum, self._handle)

    def uninstall(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # nothing was installed (or a generator is collected in a thread)
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum, frame) -> None:
        if self._holding:
            self.pending = self.pending or signum
            return
        self.raise_for(signum, frame)

    def raise_for(self, signum: int, frame=None) -> None:
        """The exception of `signum`: Ctrl-C through the handler that was there (which
        may remember the press: `interrupts`), SIGTERM as `Terminated`; never inside
        TensorFlow's code (`interrupts.raise_outside_tensorflow`)."""
        previous = self._previous.get(signum)
        if signum == signal.SIGINT and previous is interrupts.handler():
            previous(signum, frame)  # remembers the press; raises now or once out of TF
            return
        if signum == signal.SIGINT and callable(previous):
            previous(signum, frame)
        exc_type = KeyboardInterrupt if signum == signal.SIGINT else exit_codes.Terminated
        if frame is None:
            raise exc_type
        interrupts.raise_outside_tensorflow(exc_type, frame)

    @contextlib.contextmanager
    def held(self):
        """Signals in the block are recorded in `pending`, not raised."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1


class Children:
    """Start child processes; stop and reap those still running when the block ends.

    with Children() as children:
        proc = children.start(cmd)
        status = proc.wait()
    """

    def __init__(self, grace_secs: float = GRACE_SECS, ctrl_c_secs: float = CTRL_C_SECS):
        self.grace_secs = grace_secs
        # 0 for a child with nothing to finish (ROUGE-1.5.5.pl): stopped at once.
        self.ctrl_c_secs = ctrl_c_secs
        self.procs: list[subprocess.Popen] = []
        self._signals = _Signals()

    def __enter__(self) -> Children:
        self._signals.install()
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        # Children in the terminal's process group got a Ctrl-C too: a moment to end by
        # themselves (an eval job closes its files) before they get SIGTERM.
        ctrl_c = exc_type is not None and issubclass(exc_type, KeyboardInterrupt)
        try:
            self.stop_all(self.ctrl_c_secs if ctrl_c else 0.0)
            _close_pipes(self.procs)
            if exc_type is None:
                self._raise_pending()  # a signal that came while the last ones stopped
        finally:
            self._signals.uninstall()
        return False

    def _raise_pending(self) -> None:
        pending, self._signals.pending = self._signals.pending, None
        if pending is not None:
            self._signals.raise_for(pending)

    def start(self, cmd: list[str], **popen_kwargs) -> subprocess.Popen:
        """`subprocess.Popen(cmd, **popen_kwargs)`, recorded to be stopped with the block.
        A signal that comes meanwhile is raised once the child is recorded."""
        with self._signals.held():
            proc = subprocess.Popen(cmd, **popen_kwargs)
            self.procs.append(proc)
        self._raise_pending()
        return proc

    def stop(self, proc: subprocess.Popen, gently: bool = True) -> int:
        """Stop one child and reap it; returns its exit status. `gently`: Ctrl-C first
        (an eval job closes its event files), where the child takes it; else SIGTERM."""
        first = signal.SIGINT if gently and not self._signals.sigint_ignored else signal.SIGTERM
        self._stop([proc], first)
        self._raise_pending()
        return proc.returncode

    def stop_all(self, own_secs: float = 0.0) -> None:
        """Every child still running: `own_secs` to end by itself, then SIGTERM,
        `grace_secs`, SIGKILL; all reaped."""
        self._stop(self.procs, signal.SIGTERM, own_secs)

    def _stop(self, procs: list[subprocess.Popen], first: int, own_secs: float = 0.0) -> None:
        running = [p for p in procs if p.poll() is None]
        if not running:
            return
        with self._signals.held():
            before = self._signals.pending
            # A second signal while waiting (`pending` changes): kill at once.
            if self._wait(running, own_secs, before):
                _send(running, first)
                self._wait(running, self.grace_secs, before)
            _kill(running)

    def _wait(self, procs: list[subprocess.Popen], secs: float, before) -> bool:
        """Wait up to `secs` for `procs` to end; False if a new signal came meanwhile."""
        deadline = time.monotonic() + secs
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            if self._signals.pending != before:
                return False
            time.sleep(POLL_SECS)
        return self._signals.pending == before


def _send(procs: list[subprocess.Popen], signum: int) -> None:
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            if proc.poll() is None:
                proc.send_signal(signum)


def _kill(procs: list[subprocess.Popen]) -> None:
    """SIGKILL what still runs, and reap everything (each wait bounded)."""
    _send(procs, signal.SIGKILL)
    for proc in procs:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(KILL_WAIT_SECS)


@contextlib.contextmanager
def signals_raise():
    """SIGTERM raises `exit_codes.Terminated` (Ctrl-C `KeyboardInterrupt`, as always) in
    the block, for code that started processes some other way and ends them in a
    `finally` (a multiprocessing pool: `data_tools.progress`). Enter it after starting
    them: a forked child would inherit the handler."""
    signals = _Signals()
    signals.install()
    try:
        yield
    finally:
        signals.uninstall()


def _close_pipes(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def run(
    cmd: list[str],
    *,
    check: bool = False,
    grace_secs: float = GRACE_SECS,
    ctrl_c_secs: float = CTRL_C_SECS,
    **popen_kwargs,
) -> subprocess.CompletedProcess:
    """`subprocess.run` whose child is stopped and reaped when this process is stopped
    (SIGTERM, Ctrl-C) or fails. Takes `capture_output`, `input` and Popen's keywords;
    `grace_secs` and `ctrl_c_secs` as `Children`."""
    capture = popen_kwargs.pop("capture_output", False)
    if capture:
        popen_kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    data = popen_kwargs.pop("input", None)
    if data is not None:
        popen_kwargs["stdin"] = subprocess.PIPE
    with Children(grace_secs, ctrl_c_secs) as children:
        proc = children.start(cmd, **popen_kwargs)
        # Not `with proc`: its exit waits for the child without a bound.
        stdout, stderr = proc.communicate(data)
    done = subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)
    if check:
        done.check_returncode()
    return done
