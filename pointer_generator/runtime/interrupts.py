"""A Ctrl-C that is never lost.

Python raises `KeyboardInterrupt` in whatever code the main thread runs when it handles
the signal. In a TensorFlow loop that is now and then a finalizer: the `__del__` of an
eager executor or of a resource variable (2 of 1,236 signals sent at random moments to
the eval loop landed there). An exception raised in `__del__` cannot propagate; Python
prints "Exception ignored in ..." and carries on, so the job goes on running as if the
key had never been pressed.

`install()` (called by the command line, `process_exit.run_and_exit`) replaces Python's
default SIGINT handler with one that also remembers the press, and the long-running
loops call `check()` once per iteration, which raises the `KeyboardInterrupt` again if it
was swallowed (without the "Exception ignored" traceback, which would only alarm: the
press is not lost). A process that ignores SIGINT (started
with `nohup`, or by a shell script with `&`) or that installed a handler of its own keeps
it. Library callers that never call `install()` see no change.
"""

from __future__ import annotations

import signal
import sys
import threading

_pressed = threading.Event()
_previous: dict = {}  # what install() replaced: "handler", "unraisablehook"


def _handle(signum, frame) -> None:
    _pressed.set()
    raise KeyboardInterrupt


def install() -> bool:
    """Remember every Ctrl-C of this process (main thread only). Returns True if the
    handler was installed, False if SIGINT was ignored or had a handler of its own."""
    if threading.current_thread() is not threading.main_thread():
        return False
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return False
    _pressed.clear()
    _previous["handler"] = signal.signal(signal.SIGINT, _handle)
    _previous["unraisablehook"] = sys.unraisablehook
    sys.unraisablehook = _unraisable
    return True


def uninstall() -> None:
    """Undo `install()` and forget any press."""
    if "handler" in _previous:
        signal.signal(signal.SIGINT, _previous.pop("handler"))
        sys.unraisablehook = _previous.pop("unraisablehook")
    _pressed.clear()


def _unraisable(info) -> None:
    # A press swallowed by a finalizer is raised again by check(): nothing to report.
    if not (issubclass(info.exc_type, KeyboardInterrupt) and _pressed.is_set()):
        _previous.get("unraisablehook", sys.__unraisablehook__)(info)


def pressed() -> bool:
    """True once Ctrl-C was pressed after `install()`."""
    return _pressed.is_set()


def check() -> None:
    """Raise `KeyboardInterrupt` if Ctrl-C was pressed (its own exception may have been
    swallowed by a finalizer). Cheap enough to call once per loop iteration."""
    if _pressed.is_set():
        raise KeyboardInterrupt
