"""A Ctrl-C that is never lost.

Python raises `KeyboardInterrupt` in whatever code the main thread runs when it handles
the signal. In a TensorFlow loop that is now and then a finalizer: the `__del__` of an
eager executor or of a resource variable (2 of 1,236 signals sent at random moments to
the eval loop landed there). An exception raised in `__del__` cannot propagate; Python
prints "Exception ignored in ..." and carries on, so the job goes on running as if the
key had never been pressed.

`install()` replaces Python's default SIGINT handler with one that also remembers the
press, and the long-running loops call `check()` once per iteration, which raises the
`KeyboardInterrupt` again if it was swallowed. A process that ignores SIGINT (started
with `nohup`, or by a shell script with `&`) or that installed a handler of its own keeps
it. Library callers that never call `install()` see no change.
"""

from __future__ import annotations

import signal
import threading

_pressed = threading.Event()


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
    signal.signal(signal.SIGINT, _handle)
    return True


def forget() -> None:
    """Forget a press (for a caller that handled the interrupt and goes on)."""
    _pressed.clear()


def pressed() -> bool:
    """True once Ctrl-C was pressed after `install()`."""
    return _pressed.is_set()


def check() -> None:
    """Raise `KeyboardInterrupt` if Ctrl-C was pressed (its own exception may have been
    swallowed by a finalizer). Cheap enough to call once per loop iteration."""
    if _pressed.is_set():
        raise KeyboardInterrupt
