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
