"""A Ctrl-C that is never lost, and never raised inside TensorFlow.

Python raises `KeyboardInterrupt` in whatever code the main thread runs when it handles
the signal. In a TensorFlow loop that is now and then a finalizer: the `__del__` of an
eager executor or of a resource variable (2 of 1,236 signals sent at random moments to
the eval loop landed there). An exception raised in `__del__` cannot propagate; Python
prints "Exception ignored in ..." and carries on, so the job goes on running as if the
key had never been pressed.

Worse, it is sometimes Python code that TensorFlow's C++ called back (`TensorShape.__len__`
inside the eager fast path of `iterator_get_next`): the exception unwinds C++ that does not
expect it and corrupts the heap, and the process aborts later ("free(): invalid next size",
status -6) instead of ending with `interrupted` (3 of about 190 Ctrl-Cs sent at random
moments to an eval job evaluating a tiny model, `experiments/reliability/ctrl_c_hunt.py`).

`install()` (called by the command line, `process_exit.run_and_exit`) replaces Python's
default SIGINT handler with one that

- remembers the press: the long-running loops call `check()` once per iteration, which
  raises the `KeyboardInterrupt` again if a finalizer swallowed it (without the "Exception
  ignored" traceback, which would only alarm: the press is not lost);
- raises it at once where the main thread runs this project's code or the standard
  library, and otherwise (`raise_outside_tensorflow`) as soon as TensorFlow's code returns
  to the code that called it: at that frame's next line, through a trace function set on
  the callers only for that moment (as `pdb.set_trace` does). TensorFlow's Python code
  runs for micro- to milliseconds between its C++ calls, so the delay is not felt; a
  second Ctrl-C before then raises at once.

A process that ignores SIGINT (started with `nohup`, or by a shell script with `&`) or that
installed a handler of its own keeps it. Library callers that never call `install()` see no
change. SIGTERM's exception where the command line raises one (`child_processes`) goes
through `raise_outside_tensorflow` too.
"""

from __future__ import annotations

import os
import signal
import sys
import threading

_pressed = threading.Event()
_previous: dict = {}  # what install() replaced: "handler", "unraisablehook"

# Where a frame's code lives that an exception must not be raised in: TensorFlow, Keras and
# TensorBoard (whose writer is TensorFlow's), as installed packages.
_TENSORFLOW_PARTS = tuple(
    os.sep + name + os.sep for name in ("tensorflow", "keras", "tf_keras", "tensorboard")
)


class _Scheduled:
    """The exception `raise_outside_tensorflow` put off: its type, the frames whose next
    event raises it, and the trace function that was set before."""

    exc_type: type[BaseException] | None = None
    frames: list = []
    previous_trace = None


def _in_tensorflow(frame) -> bool:
    return any(part in frame.f_code.co_filename for part in _TENSORFLOW_PARTS)


def raise_outside_tensorflow(exc_type: type[BaseException], frame) -> None:
    """Raise `exc_type` (a signal's exception) now, unless `frame` (where the signal
    came, with its callers) is inside TensorFlow's code: then at the next line, return or
    exception of the nearest caller outside it, and return now. A second call before
    then raises at once (a second Ctrl-C: the user insists).

    Main thread only (where signal handlers run).
    """
    callers = []
    while frame is not None:
        callers.append(frame)
        frame = frame.f_back
    inside = [i for i, f in enumerate(callers) if _in_tensorflow(f)]
    if not inside or _Scheduled.exc_type is not None:
        _cancel()
        raise exc_type
    # The frames below TensorFlow's outermost one (all of them this project's or the
    # standard library's): an exception at their next event unwinds no C++ of TF's.
    outside = callers[max(inside) + 1 :]
    if not outside:
        raise exc_type  # TensorFlow's code at the bottom: nowhere better
    _Scheduled.exc_type = exc_type
    _Scheduled.frames = outside
    _Scheduled.previous_trace = sys.gettrace()
    for f in outside:
        f.f_trace = _raise_scheduled
    # Tracing on, for the frames above (TensorFlow's) nothing: new frames get no local
    # trace function.
    sys.settrace(_no_local_trace)


def _no_local_trace(frame, event, arg):
    return None


def _raise_scheduled(frame, event, arg):
    exc_type = _Scheduled.exc_type
    _cancel()
    if exc_type is None:
        return None
    raise exc_type


def _cancel() -> None:
    """Forget a scheduled exception: the frames' trace functions and tracing as it was."""
    if _Scheduled.exc_type is None:
        return
    for f in _Scheduled.frames:
        f.f_trace = None
    previous = _Scheduled.previous_trace
    _Scheduled.exc_type, _Scheduled.frames, _Scheduled.previous_trace = None, [], None
    sys.settrace(previous)


def _handle(signum, frame) -> None:
    _pressed.set()
    raise_outside_tensorflow(KeyboardInterrupt, frame)


def handler():
    """The SIGINT handler `install()` sets: it remembers the press and raises
    `KeyboardInterrupt` now or once out of TensorFlow's code (for a handler that passes a
    second Ctrl-C on: training's stop request)."""
    return _handle


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
    _cancel()
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
        _cancel()
        raise KeyboardInterrupt
