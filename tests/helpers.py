"""Tiny vocabularies, `.bin` data, batches, flags and event readers for tests.

Everything is sized for a 2-core CPU: ~100 words, hidden 8, emb 8, batch 2-4,
max_enc_steps 20, max_dec_steps 8. Shareable by every test module.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import signal
import subprocess
import sys
import types

import numpy as np

import pointer_generator as pg
from pointer_generator.data import binfile

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Model/data sizes of the tiny configuration (flag name -> value).
TINY = {
    "hidden_dim": 8,
    "emb_dim": 8,
    "batch_size": 4,
    "max_enc_steps": 20,
    "max_dec_steps": 8,
    "vocab_size": 100,
    "min_dec_steps": 2,
    "beam_size": 2,
    # The fused XLA loops compile once per batch shape: too slow for tests whose batches
    # vary in length (tests of the fused path set it explicitly).
    "fused_recurrence": False,
}


# ------------------------------------------------------------------------------ files
def write_vocab(path: str, n_words: int = 150) -> list[str]:
    """A `word count` vocab file of `n_words` made-up words, most frequent first."""
    words = [f"w{i}" for i in range(n_words)]
    with open(path, "w", encoding="utf-8") as f:
        for i, w in enumerate(words):
            f.write(f"{w} {10 * (n_words - i)}\n")
    return words


def make_pairs(
    n: int, words: list[str], seed: int = 0, art_len=(6, 20), abs_len=(2, 7), oov_rate: float = 0.1
) -> list[tuple[str, str]]:
    """`n` (article, abstract) pairs; abstracts copy article words, some words are OOV.

    The abstract is in the `.bin` format `<s> sent . </s> <s> ... </s>`.
    """
    rng = np.random.default_rng(seed)
    pairs = []
    for k in range(n):
        length = int(rng.integers(*art_len, endpoint=True))
        art = []
        for _ in range(length):
            if rng.random() < oov_rate:
                art.append(f"oov{int(rng.integers(0, 30))}")
            else:
                art.append(words[int(rng.integers(0, min(len(words), 90)))])
        m = int(rng.integers(*abs_len, endpoint=True))
        picks = [art[int(i)] for i in rng.integers(0, len(art), size=m)]
        half = max(1, m // 2)
        abstract = f"<s> {' '.join(picks[:half])} . </s>" + (
            f" <s> {' '.join(picks[half:])} . </s>" if picks[half:] else ""
        )
        pairs.append((" ".join(art) + f" . {k}", abstract))
    return pairs


def write_data(
    out_dir: str, set_name: str, n: int, words: list[str], seed: int = 0, chunk_size: int = 1000
) -> str:
    """Write `n` pairs as `<out_dir>/<set_name>_NNN.bin`; returns the data_path glob."""
    os.makedirs(out_dir, exist_ok=True)
    binfile.write_chunked(out_dir, set_name, make_pairs(n, words, seed), chunk_size)
    return os.path.join(out_dir, f"{set_name}_*")


def tiny_setup(tmp_path, n_train: int = 40, n_val: int = 12) -> types.SimpleNamespace:
    """vocab file, train/val data and a log_root under `tmp_path`."""
    tmp = str(tmp_path)
    vocab_path = os.path.join(tmp, "vocab")
    words = write_vocab(vocab_path)
    return types.SimpleNamespace(
        vocab_path=vocab_path,
        words=words,
        train_path=write_data(os.path.join(tmp, "data"), "train", n_train, words, seed=1),
        val_path=write_data(os.path.join(tmp, "data"), "val", n_val, words, seed=2),
        log_root=os.path.join(tmp, "logs"),
        exp_name="exp",
    )


# ------------------------------------------------------------------------------ flags
def flag_defaults() -> dict:
    """{flag name: default} of every flag this project defines."""
    from pointer_generator.cli import flags as flags_lib

    fv = flags_lib.define_flags(_fresh_flag_values())
    return {name: fv[name].default for name in fv}


def _fresh_flag_values():
    from absl import flags

    return flags.FlagValues()


def flag_namespace(**overrides) -> types.SimpleNamespace:
    """A flags-like object: every default, the TINY sizes, then `overrides`."""
    values = flag_defaults()
    values.update(TINY)
    unknown = set(overrides) - set(values)
    if unknown:
        raise KeyError(f"unknown flags {sorted(unknown)}")
    values.update(overrides)
    return types.SimpleNamespace(**values)


# The TINY flags that set the search (SearchSettings), not the model (HParams).
TINY_SEARCH = ("beam_size", "min_dec_steps")


def hparams(**overrides):
    """HParams with the TINY sizes (and overrides; a name that is no field is a model
    family's option, `HParams.options`), and what the model family fixes (ABS: no
    pointer), as the command line applies it."""
    from pointer_generator.models import family_registry

    fields = {k: v for k, v in TINY.items() if k not in TINY_SEARCH}
    fields.update(family_registry.get(overrides.get("model", pg.HParams.model)).fixed_settings)
    fields.update(overrides)
    return pg.HParams().replace(**fields)


def search(hps=None, **overrides):
    """SearchSettings with the TINY search (beam 2, min 2; the max of `hps`, else TINY's),
    and overrides."""

    fields = {k: TINY[k] for k in TINY_SEARCH}
    fields["max_dec_steps"] = hps.max_dec_steps if hps is not None else TINY["max_dec_steps"]
    fields.update(overrides)
    return pg.SearchSettings(**fields)


# The modes that run no search: they refuse a search flag (cli/flag_checks.check_no_search).
NO_SEARCH_MODES = ("train", "eval")


def cli_args(**flags) -> list[str]:
    """`--name=value` arguments (booleans as 0/1), TINY sizes first: for `mode` train
    or eval, which refuse the search flags, without TINY's search (`TINY_SEARCH`; a
    search flag in `flags` is still given)."""
    values = dict(TINY)
    if str(flags.get("model", "")).startswith(("abs", "ras")):
        # The pointer-generator's fused loops: ABS and RAS refuse the flag they do not read.
        values.pop("fused_recurrence")
    if flags.get("mode") in NO_SEARCH_MODES:
        values = {k: v for k, v in values.items() if k not in TINY_SEARCH}
    values.update(flags)
    return [f"--{k}={int(v) if isinstance(v, bool) else v}" for k, v in values.items()]


def run_args(data, exp_name: str, mode: str = "train", **flags) -> list[str]:
    """`cli_args` of a tiny run on `data` (a `tiny_setup`) in experiment `exp_name`:
    the training split for train mode, the validation split otherwise; no timed saves;
    the TINY search for decode mode only."""
    values = dict(
        data_path=data.train_path if mode == "train" else data.val_path,
        vocab_path=data.vocab_path,
        log_root=data.log_root,
        exp_name=exp_name,
        save_checkpoint_secs=3600,
    )
    values.update(flags)
    if "model" not in values:
        # A command on an ABS or RAS experiment: its stored model (cli_args then leaves
        # out the pointer-generator's --fused_recurrence, which they refuse).
        stored = os.path.join(data.log_root, exp_name, "settings.json")
        try:
            with open(stored, encoding="utf-8") as f:
                model = json.load(f).get("flags", {}).get("model", "")
        except (OSError, ValueError, AttributeError):  # none, or hand-edited by a test
            model = ""
        if str(model).startswith(("abs", "ras")):
            values["model"] = model
    return cli_args(mode=mode, **values)


# ------------------------------------------------------------------------------ batches
def numpy_batch(
    batch_size: int,
    vocab_size: int,
    enc_len: int = 12,
    dec_len: int = 8,
    seed: int = 0,
    n_oovs: int = 2,
    pointer_gen: bool = True,
) -> dict:
    """A model-input batch like the input pipeline's, built directly in numpy.

    Rows have different encoder and decoder lengths (padding with id 1 and mask 0); in
    pointer mode some article positions and targets use extended (OOV) ids.
    """
    rng = np.random.default_rng(seed)
    enc_lens = rng.integers(enc_len // 2, enc_len + 1, size=batch_size)
    enc_lens[0] = enc_len
    dec_lens = rng.integers(2, dec_len + 1, size=batch_size)
    enc = np.ones((batch_size, enc_len), np.int32)
    ext = np.ones((batch_size, enc_len), np.int32)
    dec = np.ones((batch_size, dec_len), np.int32)
    tgt = np.ones((batch_size, dec_len), np.int32)
    for b in range(batch_size):
        n = enc_lens[b]
        ids = rng.integers(4, vocab_size, size=n)
        ext_ids = ids.copy()
        if pointer_gen and n_oovs:
            pos = rng.choice(n, size=min(n_oovs, n), replace=False)
            ids[pos] = 0
            ext_ids[pos] = vocab_size + np.arange(len(pos))
        enc[b, :n], ext[b, :n] = ids, ext_ids
        m = dec_lens[b]
        target = rng.choice(ext_ids, size=m) if pointer_gen else rng.integers(4, vocab_size, size=m)
        tgt[b, :m] = target
        dec[b, 0] = 2  # [START]
        dec[b, 1:m] = np.where(target[: m - 1] >= vocab_size, 0, target[: m - 1])
    return {
        "enc_batch": enc,
        "enc_lens": enc_lens.astype(np.int32),
        "enc_padding_mask": (np.arange(enc_len)[None] < enc_lens[:, None]).astype(np.float32),
        "enc_batch_extend_vocab": ext,
        "max_art_oovs": np.int32(n_oovs if pointer_gen else 0),
        "dec_batch": dec,
        "target_batch": tgt,
        "dec_padding_mask": (np.arange(dec_len)[None] < dec_lens[:, None]).astype(np.float32),
    }


def repeat_iterator(batch: dict):
    """An endless tf.data iterator yielding `batch` (for Trainer.train_step)."""
    import tensorflow as tf

    return iter(tf.data.Dataset.from_tensors(batch).repeat())


# ------------------------------------------------------------------------------ outputs
def read_scalars(logdir: str) -> dict[str, list[tuple[int, float]]]:
    """{tag: [(step, value), ...]} of every scalar in the event files of `logdir`."""
    import tensorflow as tf

    out: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(glob.glob(os.path.join(logdir, "events.out.tfevents.*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                if value.HasField("tensor"):
                    number = float(tf.make_ndarray(value.tensor))
                else:
                    number = float(value.simple_value)
                out.setdefault(value.tag, []).append((int(event.step), number))
    return out


def checkpoint_steps(directory: str, name: str = "model.ckpt") -> list[int]:
    """Steps of the `<name>-<step>` checkpoints (with an .index file) in `directory`."""
    steps = []
    for index in glob.glob(os.path.join(directory, f"{name}-*.index")):
        tail = os.path.basename(index)[len(name) + 1 : -len(".index")]
        if tail.isdigit():
            steps.append(int(tail))
    return sorted(steps)


def subprocess_env(**extra) -> dict:
    """Environment for child processes: quiet TensorFlow, this checkout importable."""
    env = dict(os.environ)
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env["PYTHONPATH"] = REPO_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def run_python(args: list[str], timeout: float, **env) -> subprocess.CompletedProcess:
    """Run `python args...` with a time limit; returns the completed process."""
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=subprocess_env(**env),
        cwd=REPO_ROOT,
    )


def run_cli(args: list[str], timeout: float = 120, **env) -> subprocess.CompletedProcess:
    """`python -m pointer_generator.run_summarization args...` with a time limit."""
    return run_python(["-m", "pointer_generator.run_summarization", *args], timeout, **env)


def run_main_in_process(args: list[str]) -> int:
    """run_summarization's flag parsing and main in this process (no TensorFlow import
    cost); returns the exit status. The global flags are reset before (a subcommand run
    in this process may have left them parsed: its flags would count as given) and
    afterwards."""
    from pointer_generator.cli import run_summarization

    run_summarization.FLAGS.unparse_flags()
    try:
        try:
            run_summarization.main(run_summarization.parse_flags(["prog", *args]))
        except SystemExit as e:
            return int(e.code or 0)
        return 0
    finally:
        run_summarization.FLAGS.unparse_flags()


# ------------------------------------------------------------------------------ Ctrl-C
class _PressesCtrlCWhenCollected:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs at a loop's back-jump: inside __del__
            pass


def ctrl_c_in_a_finalizer() -> None:
    """Press Ctrl-C (SIGINT to this process) while a `__del__` runs, where Python swallows
    the KeyboardInterrupt (as TensorFlow's finalizers sometimes do)."""
    _PressesCtrlCWhenCollected()


@contextlib.contextmanager
def ctrl_c_remembered():
    """`interrupts.install()` for the duration (from Python's default SIGINT handler, even
    where the test run ignores SIGINT), then the run's own handler back."""
    from pointer_generator.runtime import interrupts

    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert interrupts.install()
        yield
    finally:
        interrupts.uninstall()
        signal.signal(signal.SIGINT, previous)


# ------------------------------------------------------------------------------ serve
class StoppedServer:
    """What `serve` gets instead of a listening server (monkeypatched `make_server`):
    Ctrl-C at once, so a test sees what the command built before it would listen."""

    server_address = ("127.0.0.1", 0)

    def serve_forever(self):
        raise KeyboardInterrupt

    def server_close(self):
        pass


def stop_serve_before_listening(monkeypatch) -> list:
    """Make `serve` build its service, skip the warm-up compiles and stop where it would
    listen (`StoppedServer`). Returns the list the built services are appended to."""
    from pointer_generator.serving import http_server

    services = []

    def make_server(service, host, port):
        services.append(service)
        return StoppedServer()

    monkeypatch.setattr(http_server, "make_server", make_server)
    monkeypatch.setattr(pg.Summarizer, "warm_up", lambda self, rows=(1,): 0)
    return services
