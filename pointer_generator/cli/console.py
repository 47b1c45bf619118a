"""What a command prints: the project's own lines, and TensorFlow's only when asked.

TensorFlow's C++ start-up notices (oneDNN, CUDA drivers missing on a CPU machine,
`cuInit`, CPU instruction sets, XLA service lines) and the INFO lines its Python code
logs (checkpoint sharding times) say nothing a user acts on. By default they are
hidden: `TF_CPP_MIN_LOG_LEVEL=3` before TensorFlow is imported, and absl's logger at
WARNING; the project's loggers (`pointer_generator.*`, `data_tools.*`) log at INFO in a
short format (`12:50:19 step 3/5 | loss ...`, `12:50:19 WARNING: ...`). Errors still end
as one `error:` line. `POINTER_GENERATOR_TF_LOGS=1` (or an explicit
`TF_CPP_MIN_LOG_LEVEL`) shows everything, in absl's usual format.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import tempfile

VERBOSE_ENV = "POINTER_GENERATOR_TF_LOGS"
OWN_LOGGERS = ("pointer_generator", "data_tools", "experiments")


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV, "") not in ("", "0")


def quiet_tensorflow() -> None:
    """Hide TensorFlow's C++ log lines (call before TensorFlow is imported; an explicit
    TF_CPP_MIN_LOG_LEVEL is kept)."""
    if not verbose():
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


@contextlib.contextmanager
def _stderr_kept_back():
    """Hold back what is written to file descriptor 2 (C++ libraries included); on an
    exception, write it out after all (it may explain the failure)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            held.seek(0)
            sys.stderr.buffer.write(held.read())
            sys.stderr.flush()
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def import_tensorflow(keep_compiled: bool = False) -> None:
    """Import TensorFlow and find its devices without the notices both print.

    TensorFlow 2.21 logs them through absl before its logging is set up, where
    TF_CPP_MIN_LOG_LEVEL does not reach; afterwards the variable works.
    keep_compiled: keep XLA's compiled executables across processes
    (`runtime.compile_cache`: the interactive commands and the Python API), which must be
    set up before TensorFlow is imported.
    """
    quiet_tensorflow()
    if keep_compiled and "tensorflow" not in sys.modules:
        from pointer_generator.runtime import compile_cache

        compile_cache.enable()
    if verbose() or "tensorflow" in sys.modules:
        return
    with _stderr_kept_back():
        import tensorflow as tf

        tf.config.list_physical_devices()


class _Short(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        level = "" if record.levelno < logging.WARNING else f"{record.levelname}: "
        return f"{self.formatTime(record, '%H:%M:%S')} {level}{record.getMessage()}"


def setup_logging() -> None:
    """The project's INFO lines in the short format; other libraries' from WARNING."""
    from absl import logging as absl_logging

    absl_logging.use_absl_handler()  # (app.run installs it; subcommands run without)
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO)
    if verbose():
        absl_logging.set_verbosity(absl_logging.INFO)
        return
    absl_logging.set_verbosity(absl_logging.WARNING)
    absl_logging.get_absl_handler().setFormatter(_Short())


@contextlib.contextmanager
def notice_if_slow(text: str, after_s: float = 2.0, stream=None):
    """Say `text` (on stderr) if the block is still running after `after_s` seconds
    (`runtime.progress.DelayedNotice`)."""
    from pointer_generator.runtime.progress import DelayedNotice

    notice = DelayedNotice(text, after_s, stream if stream is not None else sys.stderr)
    try:
        yield
    finally:
        notice.cancel()
