"""Compiled searches kept across processes: TensorFlow's persistent XLA cache.

`summarize`, `serve`, `export` and `pg.Summarizer` run the whole beam search as one XLA
computation per article-length bucket; compiling one takes seconds, and before this every
new process compiled them all again. TensorFlow can keep each compiled executable in a
folder (`--tf_xla_persistent_cache_directory` in `TF_XLA_FLAGS`) and load it instead of
compiling when the same computation comes again: the second process skips the compile.
Tracing the Python function still happens in every process, and on the quick-start's model
it is most of a first summary's wait (`experiments.benchmarks.first_call`).

Where: `<user cache>/xla/<key>/` (`runtime.user_cache.cache_root`: $POINTER_GENERATOR_CACHE,
else $XDG_CACHE_HOME/pointer_generator, else ~/.cache/pointer_generator). The key names the
TensorFlow version, the machine and a digest of the CPU's instruction-set flags, so an
executable is never loaded by another TensorFlow or on a CPU that lacks what it was
compiled for (a home folder shared between hosts). TensorFlow itself writes each entry to a
temporary file and renames it (concurrent processes never read a half-written entry) and
loads an entry only when its whole computation is the same (strict signature checks), so a
changed model or search compiles anew. `POINTER_GENERATOR_COMPILE_CACHE=off` turns it off;
`POINTER_GENERATOR_COMPILE_CACHE=DIR` puts it in DIR. Deleting the folder is always safe.

TensorFlow reads `TF_XLA_FLAGS` once, at its first XLA compile: `enable` must run before
that (the commands call it before importing TensorFlow; `pg.Summarizer` calls it too, and it
does nothing where the process has compiled with XLA already). Training and decode mode do
not use it: their computations are compiled once per long run.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import logging
import os
import platform

from pointer_generator.runtime.user_cache import cache_root

log = logging.getLogger(__name__)

ENV = "POINTER_GENERATOR_COMPILE_CACHE"
XLA_FLAG = "--tf_xla_persistent_cache_directory"
OFF = ("off", "0", "no", "false")


def _cpu_flags() -> str:
    """The CPU's instruction-set flags (/proc/cpuinfo), or "" where not known."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return platform.processor()


def key() -> str:
    """`tf-<version>-<machine>-<digest of the CPU flags>`: what an executable depends on
    besides its computation."""
    try:
        version = importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    digest = hashlib.sha256(_cpu_flags().encode()).hexdigest()[:12]
    return f"tf-{version}-{platform.machine() or 'unknown'}-{digest}"


def folder() -> str | None:
    """The cache folder this process would use (None: turned off)."""
    value = os.environ.get(ENV, "")
    if value.lower() in OFF:
        return None
    base = os.path.abspath(value) if value else os.path.join(cache_root(), "xla")
    return os.path.join(base, key())


def enable() -> str | None:
    """Point TensorFlow's XLA at the cache folder (created if needed); returns it, or None
    when off, when `TF_XLA_FLAGS` names another folder already (the user's), or when the
    folder cannot be written (a warning says why; compiling then works as before: a cache
    TensorFlow cannot write would make every compile fail)."""
    flags = os.environ.get("TF_XLA_FLAGS", "")
    if XLA_FLAG in flags:
        return None
    path = folder()
    if path is None:
        return None
    try:
        os.makedirs(path, exist_ok=True)
        writable = os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)
    except OSError as e:
        writable, why = False, e.strerror or str(e)
    else:
        why = "not writable"
    if not writable:
        log.warning(
            "compiled searches are not kept across runs: %s is %s (set %s to another "
            "folder, or to off)",
            path,
            why,
            ENV,
        )
        return None
    os.environ["TF_XLA_FLAGS"] = f"{flags} {XLA_FLAG}={path}".strip()
    return path


def kept_folder() -> str | None:
    """The folder TensorFlow keeps compiled executables in for this process (set by
    `enable`, or by the user's own TF_XLA_FLAGS), or None."""
    for item in os.environ.get("TF_XLA_FLAGS", "").split():
        if item.startswith(XLA_FLAG + "="):
            return item.split("=", 1)[1]
    return None


def entries(path: str) -> int:
    """How many compiled executables the folder holds."""
    try:
        return sum(1 for name in os.listdir(path) if name.endswith(".pb"))
    except OSError:
        return 0
