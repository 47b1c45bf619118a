"""A trained search kept across processes, so that a new `summarize` starts searching at
once instead of building the model and tracing its search again (issue 45 item 3).

The first `pointer-generator summarize` of an experiment's checkpoint with some search
settings exports that search (model weights, vocabulary and beam search as one graph,
`serving.saved_model`, its `summarize_tokens` signature only) into the user's cache,
after its summaries are printed. A later `summarize` with the same checkpoint, model
settings, vocabulary, search settings, TensorFlow and package version loads that graph
(about a second) and runs it on articles tokenized here, exactly as the training data
(`data.stories.articles_of_texts`), skipping the model build, the checkpoint load and the
trace of the search (several seconds). Compiled XLA executables are kept by
`runtime.compile_cache` beside it, so the kept graph's first search compiles nothing.

Where: `<compile cache>-searches/<digest>` (`compile_cache.folder()`; turned off with
it: POINTER_GENERATOR_COMPILE_CACHE=off). The digest covers everything the search
depends on (`digest`); a changed checkpoint (newer training, a file rewritten in place)
gets a new entry, and the entries of the experiment's replaced checkpoints are removed.
Entries are written into a staging folder and renamed into place: a
reader never sees half of one, and of two processes writing the same entry one wins and
the other's copy is removed.
"""

from __future__ import annotations

import dataclasses
import glob
import hashlib
import json
import logging
import os
import shutil

log = logging.getLogger(__name__)

STAGING_KIND = "kept-search"
INFO_FILE = "kept_search.json"


def root() -> str | None:
    """The folder kept searches go in, or None when compiled searches are not kept."""
    from pointer_generator.runtime import compile_cache

    folder = compile_cache.folder()
    return None if folder is None else folder + "-searches"


def _file_state(path: str) -> list:
    try:
        st = os.stat(path)
    except OSError:
        return [path, None]
    return [os.path.abspath(path), st.st_size, st.st_mtime_ns]


def digest(checkpoint: str, hps, settings, vocab_path: str) -> str:
    """What a kept search depends on, as a hex digest: the checkpoint's files (path,
    size, modification time), the model's settings, the search settings, the
    vocabulary's content, and the versions of TensorFlow and of this package."""
    import importlib.metadata

    def version(name: str) -> str:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return "unknown"

    files = sorted(glob.glob(checkpoint + ".*"))
    with open(vocab_path, "rb") as f:
        vocab = hashlib.sha256(f.read()).hexdigest()
    material = {
        "checkpoint": [_file_state(p) for p in files],
        "hps": dataclasses.asdict(hps),
        "search": dataclasses.asdict(settings),
        "vocab": vocab,
        "tensorflow": version("tensorflow"),
        "pointer_generator": version("pointer-generator"),
    }
    text = json.dumps(material, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def path_for(key: str) -> str | None:
    base = root()
    return None if base is None else os.path.join(base, key)


def load(key: str):
    """The kept search `key` as a callable (its `summarize_tokens` signature), or None
    when there is none (or it cannot be read: it is then made again)."""
    path = path_for(key)
    if path is None or not os.path.isfile(os.path.join(path, INFO_FILE)):
        return None
    import tensorflow as tf

    try:
        return _load_search(path)
    except (OSError, ValueError, KeyError, tf.errors.OpError) as e:
        log.warning("The kept search %s cannot be read (%s): searching without it", path, e)
        return None


# The process-wide counter TensorFlow names loaded functions after, set to this before a
# kept search is loaded: see `_load_search`.
LOAD_COUNTER = 100_000


def _load_search(path: str):
    """The `summarize_tokens` signature of the kept search in `path`. TensorFlow renames a
    loaded graph's functions after a process-wide counter (`ops.uid`), and its XLA cache
    keys an executable by those names: a graph loaded at another count is compiled again.
    The counter is moved on to LOAD_COUNTER first (it only counts up), so that every
    process loading its first kept search, whatever it did before, and `compile_kept`'s
    process name it alike and share the compiled executables."""
    import tensorflow as tf

    from pointer_generator.summarizing.export_info import SIGNATURE_TOKENS

    try:
        from tensorflow.python.framework import ops

        # Bounded (a counter that stopped counting never hangs), and long enough to reach
        # LOAD_COUNTER from 0: every process then stops at the same count.
        for _ in range(LOAD_COUNTER + 1):
            if ops.uid() >= LOAD_COUNTER:
                break
    except (ImportError, AttributeError):  # another TensorFlow: loading works, the cache
        pass  # may miss
    return tf.saved_model.load(path).signatures[SIGNATURE_TOKENS]


def keep(save, key: str, about: dict) -> str | None:
    """Keep a search as kept search `key`: `save(folder)` writes its SavedModel there
    (`serving.saved_model`: `save_module(TokensModule(decoder), folder)`, as
    `keep_decoder` passes it in: serving sits above this package); `about`, what it was made
    from, goes beside as kept_search.json. Returns its folder, or None when searches are
    not kept, one is kept already, or the cache cannot be written (a warning says why)."""
    path = path_for(key)
    if path is None or os.path.exists(path):
        return None
    from pointer_generator.runtime import owned_files, staging

    base = os.path.dirname(path)
    try:
        owned_files.make_dir(base)
        staging.remove_stale(base, STAGING_KIND)
        stage = staging.make(base, STAGING_KIND)
    except OSError as e:
        log.warning("The search is not kept for the next run: %s (%s)", base, e.strerror or e)
        return None
    export = os.path.join(stage, "search")
    try:
        save(export)
        owned_files.replace_file(
            os.path.join(export, INFO_FILE), json.dumps(about, indent=1, sort_keys=True) + "\n"
        )
        os.rename(export, path)  # atomic; fails if another process kept it first
    except OSError as e:
        if not os.path.exists(path):
            log.warning("The search is not kept for the next run: %s", e.strerror or e)
        return None
    finally:
        shutil.rmtree(stage, ignore_errors=True)  # this process's own staging folder
    _remove_superseded(path, about)
    return path


def keep_decoder(
    exp_root: str, hps, settings, vocab_path: str, decoder, checkpoint: str, shapes=()
):
    """Keep `decoder`'s search (the model of `checkpoint`, experiment `exp_root`, these
    settings and vocabulary) for the next process, compiled for `shapes` (the batch
    shapes, (rows, article length), this process ran: `compile_kept`); its folder, or
    None when searches are not kept or it is kept already. Used by `summarize`, `serve`
    and `Summarizer.keep`."""
    if root() is None:
        return None
    key = digest(checkpoint, hps, settings, vocab_path)
    if os.path.exists(path_for(key)):
        return None
    # The SavedModel writer of `serving` (a package above this one), imported only here,
    # when a search is kept.
    from pointer_generator.serving.saved_model import TokensModule, save_module

    about = {"checkpoint": os.path.abspath(checkpoint), "experiment": os.path.abspath(exp_root)}
    path = keep(lambda to: save_module(TokensModule(decoder), to), key, about)
    if path is not None:
        compile_kept(key, shapes)
    return path


def compile_kept(key: str, shapes) -> bool:
    """Run the kept search `key` once on a dummy batch of each shape in `shapes` ((rows,
    article length)) in a new process, so that TensorFlow's XLA cache
    (`runtime.compile_cache`) holds its executables for the next process that loads it.
    The loaded graph is another XLA computation than the search it was made from, and
    loading renames its functions after a process-wide counter: loaded here, it would be
    compiled under other names than in a new process, and the next process would compile
    again (measured: 2.1 s instead of 1.0 s for its first search). A new process loads it
    as `from_experiment`, `summarize` and `serve` do. Nothing where compiled executables
    are not kept. True when the shapes were compiled."""
    import subprocess
    import sys

    from pointer_generator.runtime import compile_cache

    path = path_for(key)
    if not shapes or compile_cache.kept_folder() is None or path is None:
        return False
    shapes = sorted({(int(r), int(n)) for r, n in shapes})
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    code = f"import sys, json; from {__name__} import compile_here; compile_here(*sys.argv[1:])"
    cmd = [sys.executable, "-c", code, path, json.dumps(shapes)]
    try:
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.TimeoutExpired) as e:
        log.warning("The kept search is not compiled for the next run: %s", e)
        return False
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        log.warning("The kept search is not compiled for the next run: %s", why)
    return done.returncode == 0


def compile_here(path: str, shapes: str) -> None:
    """`compile_kept`'s new process: load the kept search in `path` as `load` does and run
    a dummy batch of each [rows, article length] of `shapes` (JSON)."""
    import tensorflow as tf

    search = _load_search(path)
    for rows, length in json.loads(shapes):
        search(articles=tf.constant([" ".join(["the"] * length)] * rows))


def _remove_superseded(path: str, about: dict) -> None:
    """Remove the kept searches of the same experiment made from another checkpoint than
    `about`'s (a checkpoint training replaced: each entry holds a copy of the weights, and
    an older checkpoint's is never loaded by `summarize` again). Only entries this module
    wrote (a folder with its kept_search.json naming that experiment) are removed."""
    experiment = about.get("experiment")
    if not experiment:
        return
    base = os.path.dirname(path)
    for name in os.listdir(base):
        entry = os.path.join(base, name)
        if entry == path or name.startswith(".") or os.path.islink(entry):
            continue
        try:
            with open(os.path.join(entry, INFO_FILE), encoding="utf-8") as f:
                info = json.load(f)
        except (OSError, ValueError):
            continue
        if (
            isinstance(info, dict)
            and info.get("experiment") == experiment
            and info.get("checkpoint") != about.get("checkpoint")
        ):
            shutil.rmtree(entry, ignore_errors=True)


def summarize_articles(search, articles: list[str], batch_size: int) -> list[list[str]]:
    """The summary tokens of each tokenized article (as `articles_of_texts` makes them),
    by the kept search, `batch_size` at a time."""
    import tensorflow as tf

    out = []
    for start in range(0, len(articles), batch_size):
        chunk = articles[start : start + batch_size]
        result = search(articles=tf.constant(chunk))
        tokens, counts = result["tokens"].numpy(), result["num_tokens"].numpy()
        for row, n in zip(tokens, counts, strict=True):
            out.append([w.decode("utf-8") for w in row[: int(n)]])
    return out
