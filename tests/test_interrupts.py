"""A Ctrl-C is never lost (pointer_generator/runtime/interrupts.py), even when Python swallows
its KeyboardInterrupt inside a finalizer, and a Ctrl-C of the quick-start lets its running
step finish."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from pointer_generator.runtime import interrupts
from tests import helpers

SCRIPT = textwrap.dedent("""
    import signal, sys
    from pointer_generator.runtime import interrupts
    from tests import helpers

    signal.signal(signal.SIGINT, {start})
    print("installed", interrupts.install(), flush=True)
    try:
        helpers.ctrl_c_in_a_finalizer()
        print("went on after the finalizer", flush=True)
        interrupts.check()
        print("not interrupted", flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
""")


def _run(start: str):
    return helpers.run_python(["-c", SCRIPT.format(start=start)], timeout=60)


def test_a_ctrl_c_swallowed_by_a_finalizer_is_raised_at_the_next_check():
    result = _run("signal.default_int_handler")
    assert "installed True" in result.stdout
    # Python went on after the finalizer, as without install() (but printed nothing: the
    # press is not lost)...
    assert "went on after the finalizer" in result.stdout
    assert "Exception ignored" not in result.stderr, result.stderr
    # ...and the loop's next check() raised it.
    assert result.stdout.splitlines()[-1] == "interrupted", result.stdout


def test_without_install_a_ctrl_c_in_a_finalizer_is_lost():
    """The failure the module exists for."""
    script = textwrap.dedent("""
        from tests import helpers
        helpers.ctrl_c_in_a_finalizer()
        print("still running", flush=True)
    """)
    result = helpers.run_python(["-c", script], timeout=60)
    assert result.returncode == 0 and "still running" in result.stdout
    assert "KeyboardInterrupt" in result.stderr  # printed, then ignored


def test_ignored_sigint_stays_ignored():
    """A job started with SIGINT ignored (nohup, `cmd &` in a script) keeps ignoring it."""
    result = _run("signal.SIG_IGN")
    assert "installed False" in result.stdout
    assert "not interrupted" in result.stdout
    assert "KeyboardInterrupt" not in result.stderr


def test_other_exceptions_in_finalizers_are_still_reported():
    script = textwrap.dedent("""
        from pointer_generator.runtime import interrupts

        class Broken:
            def __del__(self):
                raise ValueError("a finalizer's own bug")

        assert interrupts.install()
        Broken()
        print("still running", flush=True)
    """)
    result = helpers.run_python(["-c", script], timeout=60)
    assert result.returncode == 0 and "still running" in result.stdout
    assert "Exception ignored" in result.stderr
    assert "ValueError: a finalizer's own bug" in result.stderr


# The swallowed press must not reach pytest's own unraisable-exception hook either.
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_check_raises_only_after_a_press():
    with helpers.ctrl_c_remembered():
        interrupts.check()  # nothing pressed yet
        assert not interrupts.pressed()
        helpers.ctrl_c_in_a_finalizer()  # swallowed where it was raised...
        assert interrupts.pressed()
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()  # ...and raised again here
    interrupts.check()  # forgotten once the test's handler is back


def test_a_ctrl_c_of_the_quickstart_lets_the_running_step_finish(tmp_path):
    started, marker = tmp_path / "started", tmp_path / "saved"
    child = (
        "import signal, sys, time\n"
        "def stop(*_):\n"
        "    time.sleep(1.0)\n"  # longer than subprocess.run's 0.25 s grace
        f"    open({str(marker)!r}, 'w').write('saved')\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGINT, stop)\n"
        f"open({str(started)!r}, 'w').close()\n"
        "time.sleep(60)\n"
    )
    parent = (  # one step of the quick-start, under its command wrapper
        "import sys\n"
        "from pointer_generator import exit_codes\n"
        "from pointer_generator.cli import quickstart\n"
        "from pointer_generator.runtime import child_processes\n"
        "def step():\n"
        "    with child_processes.Children() as children:\n"
        f"        quickstart._run(children, [sys.executable, '-c', {child!r}])\n"
        "sys.exit(exit_codes.run_command(step))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", parent],
        stdout=subprocess.DEVNULL,
        env=helpers.subprocess_env(),
        cwd=helpers.REPO_ROOT,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while not started.exists():
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the whole foreground group
    assert proc.wait(timeout=60) == 130
    assert marker.read_text() == "saved"


# Stands for TensorFlow's Python code: a module whose file lies in a `tensorflow` folder,
# which signals its own process as if the signal came while it ran (the handler runs at
# its next bytecode), then goes on and calls back into the caller's code.
FAKE_TENSORFLOW = textwrap.dedent("""
    import os, signal

    events = []

    def signalled(signum, callback, times=1):
        for _ in range(times):
            os.kill(os.getpid(), signum)
            events.append("tensorflow went on")
        callback()
        events.append("tensorflow returned")
""")


def _fake_tensorflow(tmp_path):
    import importlib.util

    folder = tmp_path / "site-packages" / "tensorflow"
    folder.mkdir(parents=True)
    (folder / "fake_ops.py").write_text(FAKE_TENSORFLOW)
    spec = importlib.util.spec_from_file_location("fake_tensorflow_ops", folder / "fake_ops.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _unwound_tensorflow(raised, tmp_path) -> bool:
    """Whether the exception passed through the fake TensorFlow's code."""
    return any(str(e.path).startswith(str(tmp_path)) for e in raised.traceback)


def test_a_ctrl_c_inside_tensorflow_is_raised_once_its_code_returns(tmp_path):
    """An exception raised in Python code that TensorFlow's C++ called back corrupts the
    heap (an eval job aborted with "free(): invalid next size" after Ctrl-C): the press is
    raised at the caller's next line instead, and not in a callback TF's code makes."""
    fake = _fake_tensorflow(tmp_path)
    trace_before = sys.gettrace()
    with helpers.ctrl_c_remembered():
        with pytest.raises(KeyboardInterrupt) as raised:
            fake.signalled(signal.SIGINT, lambda: fake.events.append("our callback ran"))
            fake.events.append("the caller's next line")  # never reached
        assert interrupts.pressed()
    assert fake.events == ["tensorflow went on", "our callback ran", "tensorflow returned"]
    # Raised in this test's frame (by the trace function set on it), never in the fake
    # TensorFlow's (Python 3.11.2 lists the test's frame twice: the line, then the trace).
    assert not _unwound_tensorflow(raised, tmp_path)
    paths = [str(e.path) for e in raised.traceback]
    assert paths[-1] == interrupts.__file__ and set(paths[:-1]) == {__file__}
    assert sys.gettrace() is trace_before  # tracing as it was


def test_a_second_ctrl_c_inside_tensorflow_is_raised_at_once(tmp_path):
    fake = _fake_tensorflow(tmp_path)
    with helpers.ctrl_c_remembered():
        with pytest.raises(KeyboardInterrupt) as raised:
            fake.signalled(signal.SIGINT, lambda: None, times=2)
    assert fake.events == ["tensorflow went on"]
    assert _unwound_tensorflow(raised, tmp_path)
    assert sys.gettrace() is None or sys.gettrace() is not interrupts._no_local_trace


def test_a_sigterm_inside_tensorflow_is_raised_once_its_code_returns(tmp_path):
    """The same for SIGTERM's exception where children run (`child_processes`)."""
    from pointer_generator import exit_codes
    from pointer_generator.runtime import child_processes

    fake = _fake_tensorflow(tmp_path)
    previous = signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with pytest.raises(exit_codes.Terminated) as raised:
            with child_processes.Children():
                fake.signalled(signal.SIGTERM, lambda: None)
                fake.events.append("the caller's next line")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert fake.events == ["tensorflow went on", "tensorflow returned"]
    assert not _unwound_tensorflow(raised, tmp_path)


def test_a_ctrl_c_outside_tensorflow_is_raised_at_once():
    with helpers.ctrl_c_remembered():
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # interrupted at once
    assert sys.gettrace() is None or sys.gettrace() is not interrupts._no_local_trace


def test_training_started_with_sigint_ignored_keeps_ignoring_it():
    """A training job started with `&` from a script (SIGINT ignored) is not stopped by
    the terminal's Ctrl-C meant for the foreground job; SIGTERM still stops it."""
    from pointer_generator.training.train import StopRequest

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with StopRequest() as stop:
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) == stop._handle
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
