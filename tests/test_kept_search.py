"""A trained search kept across processes (issue 45 item 3, summarizing/kept_search.py):
what its key covers, that a changed checkpoint or search gets its own entry, that an
unreadable entry falls back to searching as before, and that two writers of one entry
leave one whole entry and no staging folder."""

from __future__ import annotations

import dataclasses
import os
import shutil

import numpy as np
import pytest

from pointer_generator.runtime import compile_cache
from pointer_generator.runtime.progress import unstamped
from pointer_generator.summarizing import kept_search
from tests import helpers, trained_experiment


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    return trained_experiment.build(tmp_path_factory)


def test_the_key_covers_checkpoint_settings_search_and_vocabulary(tmp_path):
    from pointer_generator.hparams import HParams
    from pointer_generator.search.settings import SearchSettings

    ckpt = tmp_path / "model.ckpt-5"
    for suffix in (".index", ".data-00000-of-00001"):
        (tmp_path / f"model.ckpt-5{suffix}").write_bytes(b"weights")
    vocab = tmp_path / "vocab"
    vocab.write_text("the 5\n")
    hps, search = HParams(), SearchSettings(beam_size=4)
    key = kept_search.digest(str(ckpt), hps, search, str(vocab))
    assert key == kept_search.digest(str(ckpt), hps, search, str(vocab)) and len(key) == 32
    others = [
        kept_search.digest(str(ckpt), hps.replace(hidden_dim=7), search, str(vocab)),
        kept_search.digest(str(ckpt), hps, dataclasses.replace(search, beam_size=2), str(vocab)),
    ]
    (tmp_path / "model.ckpt-5.index").write_bytes(b"retrained")  # rewritten in place
    others.append(kept_search.digest(str(ckpt), hps, search, str(vocab)))
    vocab.write_text("the 6\n")
    others.append(kept_search.digest(str(ckpt), hps, search, str(vocab)))
    assert len({key, *others}) == 5


def test_kept_searches_are_off_with_the_compile_cache(monkeypatch, tmp_path):
    monkeypatch.setenv(compile_cache.ENV, "off")
    assert kept_search.root() is None and kept_search.path_for("k") is None
    assert kept_search.load("k") is None and kept_search.keep(None, "k", {}) is None
    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "c"))
    assert kept_search.root() == compile_cache.folder() + "-searches"


def _summarize(trained, article, cache):
    args = ["-m", "pointer_generator.cli", "summarize", f"--log_root={trained.log_root}",
            "--exp_name=exp", str(article)]  # fmt: skip
    return helpers.run_python(args, timeout=300, **{compile_cache.ENV: str(cache)})


def test_a_damaged_entry_or_a_changed_search_searches_as_before(trained, tmp_path):
    article = tmp_path / "a.txt"
    article.write_text("the cat sat on the mat . the dog ran to the park .\n", encoding="utf-8")
    cache = tmp_path / "cache"
    first = _summarize(trained, article, cache)
    assert first.returncode == 0, first.stderr[-2000:]
    searches = [os.path.join(cache, d) for d in os.listdir(cache) if d.endswith("-searches")]
    (entry,) = [os.path.join(searches[0], d) for d in os.listdir(searches[0])]
    assert os.path.isfile(os.path.join(entry, kept_search.INFO_FILE))
    assert not [d for d in os.listdir(searches[0]) if d.startswith(".")]  # no staging left
    # Damaged: a warning, the summary from the model as before, exit 0.
    os.remove(os.path.join(entry, "saved_model.pb"))
    damaged = _summarize(trained, article, cache)
    assert damaged.returncode == 0, damaged.stderr[-2000:]
    assert "cannot be read" in damaged.stderr and damaged.stdout == first.stdout
    assert "(its search as kept in " not in damaged.stderr
    shutil.rmtree(entry)
    # Another search (a flag given): its own entry, the first one's not used.
    again = _summarize(trained, article, cache)
    assert again.returncode == 0 and "(its search as kept in " not in again.stderr
    args = ["-m", "pointer_generator.cli", "summarize", f"--log_root={trained.log_root}",
            "--exp_name=exp", "--beam_size=1", str(article)]  # fmt: skip
    other = helpers.run_python(args, timeout=300, **{compile_cache.ENV: str(cache)})
    assert other.returncode == 0 and "(its search as kept in " not in other.stderr
    assert len(os.listdir(searches[0])) == 2


def test_of_two_writers_of_one_entry_one_wins(trained, tmp_path, monkeypatch):
    """The second `keep` of an entry finds it kept and writes nothing; a writer that
    loses the rename race removes its own staging copy."""
    from pointer_generator.search.settings import SearchSettings
    from pointer_generator.summarizing.trained import open_trained, stored_settings

    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "c"))
    root = os.path.join(trained.log_root, "exp")
    hps, search, vocab = stored_settings(root)
    opened = open_trained(root, hps, vocab)
    from pointer_generator.serving.saved_model import TokensModule, save_module

    decoder = opened.decoder(SearchSettings(**{"max_dec_steps": hps.max_dec_steps, **search}))

    def save(to):
        save_module(TokensModule(decoder), to)

    path = kept_search.keep(save, "k1", {"checkpoint": opened.checkpoint})
    assert path == kept_search.path_for("k1") and kept_search.load("k1") is not None
    assert kept_search.keep(save, "k1", {}) is None
    # The race: the entry appears while this writer saves its copy.
    real_rename = os.rename

    def rename_after_another(src, dst):
        os.makedirs(os.path.join(dst, "someone_elses"))
        return real_rename(src, dst)

    monkeypatch.setattr(os, "rename", rename_after_another)
    assert kept_search.keep(save, "k2", {}) is None
    base = kept_search.root()
    assert sorted(os.listdir(base)) == ["k1", "k2"]
    assert os.listdir(os.path.join(base, "k2")) == ["someone_elses"]


def test_a_new_checkpoints_entry_replaces_the_older_ones_of_its_experiment(monkeypatch, tmp_path):
    """Entries hold a copy of the weights: keeping one for a new checkpoint removes the
    experiment's entries of other checkpoints, not another experiment's nor a folder
    this module did not write."""
    import json

    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "c"))
    base = tmp_path / "c"
    base.mkdir()
    searches = base / (os.path.basename(compile_cache.folder()) + "-searches")
    searches.mkdir()

    def entry(name, experiment, checkpoint):
        (searches / name).mkdir()
        info = {"experiment": experiment, "checkpoint": checkpoint}
        (searches / name / kept_search.INFO_FILE).write_text(json.dumps(info))

    entry("old", "/e/one", "/e/one/train/model.ckpt-1")
    entry("other_search", "/e/one", "/e/one/train/model.ckpt-2")
    entry("another_experiment", "/e/two", "/e/two/train/model.ckpt-1")
    (searches / "not_ours").mkdir()
    entry("new", "/e/one", "/e/one/train/model.ckpt-2")
    kept_search._remove_superseded(
        str(searches / "new"), {"experiment": "/e/one", "checkpoint": "/e/one/train/model.ckpt-2"}
    )
    assert sorted(os.listdir(searches)) == ["another_experiment", "new", "not_ours", "other_search"]


def test_pg_summarizer_uses_the_search_summarize_kept(trained, tmp_path, monkeypatch):
    """`pg.Summarizer.from_experiment` finds the search `summarize` kept for the newest
    checkpoint and its settings (the same key from the Python API as from the command
    line), builds no model, and writes the same summaries as the model; another search
    setting or kept=False opens the model."""
    import pointer_generator as pg
    from pointer_generator.summarizing.summarizer import KeptSearchSummarizer, Summarizer

    text = "the cat sat on the mat . the dog ran to the park ."
    article = tmp_path / "a.txt"
    article.write_text(text + "\n", encoding="utf-8")
    cache = tmp_path / "cache"
    first = _summarize(trained, article, cache)
    assert first.returncode == 0, first.stderr[-2000:]
    monkeypatch.setenv(compile_cache.ENV, str(cache))
    kept = pg.Summarizer.from_experiment(trained.log_root, "exp")
    assert isinstance(kept, KeptSearchSummarizer) and os.path.isdir(kept.where)
    model = pg.Summarizer.from_experiment(trained.log_root, "exp", kept=False)
    assert isinstance(model, Summarizer)
    texts = [text, "a man walked his dog . it rained all day ."]
    ours, theirs = kept.summarize(texts), model.summarize(texts)
    assert [r.tokens for r in ours] == [r.tokens for r in theirs]
    assert ours[0].text == first.stdout.strip()
    for a, b in zip(ours, theirs, strict=True):
        assert a.article_tokens == b.article_tokens
        np.testing.assert_allclose(a.attention, b.attention, atol=1e-5)
        np.testing.assert_allclose(a.p_gens, b.p_gens, atol=1e-5)
    from pointer_generator.data.input_pipeline import padded_lengths

    assert kept.warm_up(rows=(1, 2)) == 2 * len(padded_lengths(kept.hps) or [0])
    other = pg.Summarizer.from_experiment(trained.log_root, "exp", beam_size=1)
    assert isinstance(other, Summarizer)
    # `serve`'s mode: after one text of each length, 3 texts run no new shape.
    fresh = pg.Summarizer.from_experiment(trained.log_root, "exp", batch_size=4)
    fresh.warm_up(rows=(1,))
    fresh.only_compiled_shapes()
    warmed = set(fresh._ready)
    three = [*texts, "the cat ran ."]
    assert [r.tokens for r in fresh.summarize(three)] == [r.tokens for r in model.summarize(three)]
    assert fresh._ready == warmed


def test_pg_summarizer_keeps_its_search_for_the_next_process(trained, tmp_path, monkeypatch):
    """`Summarizer.keep()` writes the entry a later `from_experiment` loads (the same
    summaries, no model built); once kept, with a pinned checkpoint, or with searches not
    kept, it keeps nothing."""
    import pointer_generator as pg
    from pointer_generator.runtime import checkpointing
    from pointer_generator.summarizing.summarizer import KeptSearchSummarizer, Summarizer

    texts = ["the cat sat on the mat . the dog ran to the park .", "a man walked his dog ."]
    monkeypatch.setenv(compile_cache.ENV, "off")
    off = pg.Summarizer.from_experiment(trained.log_root, "exp")
    assert isinstance(off, Summarizer) and off.keep() is None
    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "cache"))
    first = pg.Summarizer.from_experiment(trained.log_root, "exp")
    assert isinstance(first, Summarizer)  # nothing kept yet
    theirs = first.summarize(texts)
    path = first.keep()
    assert path and os.path.isdir(path)
    assert os.path.dirname(path) == kept_search.root()
    assert first.keep() is None  # kept already
    kept = pg.Summarizer.from_experiment(trained.log_root, "exp")
    assert isinstance(kept, KeptSearchSummarizer) and kept.where == path
    assert [r.tokens for r in kept.summarize(texts)] == [r.tokens for r in theirs]
    assert kept.keep() is None
    newest = checkpointing.latest_checkpoint(os.path.join(trained.log_root, "exp", "train"))
    pinned = pg.Summarizer.from_experiment(trained.log_root, "exp", checkpoint=newest)
    assert isinstance(pinned, Summarizer) and pinned.keep() is None
    assert os.listdir(kept_search.root()) == [os.path.basename(path)]


def test_serve_keeps_the_search_it_builds_while_serving(trained, tmp_path, monkeypatch, capsys):
    """`serve` without a kept search serves the model's search at once and keeps it in a
    thread once serving (`serve.keep_while_serving`: the first requests do not wait for
    it); the next start finds it (no model built, nothing more to keep); both write the
    model's summaries, also while it is being kept. With compiled searches off there is
    nothing to keep."""
    from pointer_generator.cli import flags as flags_lib
    from pointer_generator.cli import serve
    from pointer_generator.summarizing.summarizer import KeptSearchSummarizer, Summarizer

    args = [f"--log_root={trained.log_root}", "--exp_name=exp", "--serve_max_batch=2"]

    def start():
        flags_lib.FLAGS.unparse_flags()
        try:
            flags_lib.parse_subcommand("serve", args)
            return serve.summarizer_of(flags_lib.FLAGS)
        finally:
            flags_lib.FLAGS.unparse_flags()

    monkeypatch.setenv(compile_cache.ENV, str(tmp_path / "cache"))
    built, _, keep = start()
    assert isinstance(built, Summarizer) and keep is not None
    # It says at start which search it runs and where that search comes from.
    (line,) = [
        x for x in capsys.readouterr().out.splitlines() if unstamped(x).startswith("search: ")
    ]
    assert "beam_size=" in line and " from the " in line
    texts = ["the cat sat on the mat . the dog ran to the park .", "a man walked his dog ."]
    want = [r.tokens for r in built.summarize(texts)]
    thread = serve.keep_while_serving(keep)
    assert [r.tokens for r in built.summarize(texts)] == want  # served meanwhile
    thread.join(120)
    assert not thread.is_alive()
    (entry,) = os.listdir(kept_search.root())
    again, _, nothing = start()
    assert isinstance(again, KeptSearchSummarizer) and nothing is None
    assert f"Using the search kept in {again.where}" in capsys.readouterr().out
    assert os.listdir(kept_search.root()) == [entry]
    assert [r.tokens for r in again.summarize(texts)] == want


def test_serve_keeps_its_search_only_once_requests_have_paused(monkeypatch):
    """`keep_while_serving` waits until the server has been quiet (`idle()`, seconds since
    the last request ended, reaches `quiet_s`) before it keeps the search, and keeps it
    once; a failure to keep is a warning, not an end of serving."""
    from pointer_generator.cli import kept, serve

    calls, kept_with = [], []
    idle = iter([0.0, 0.0, 0.5, 3.0])

    def idle_for():
        calls.append(1)
        return next(idle)

    monkeypatch.setattr(kept, "keep_search", lambda *a: kept_with.append(a))
    serve.keep_while_serving(("args",), idle_for, quiet_s=2.0, poll_s=0.001).join(10)
    assert len(calls) == 4 and kept_with == [("args",)]

    def broken(*a):
        raise RuntimeError("disk full")

    monkeypatch.setattr(kept, "keep_search", broken)
    thread = serve.keep_while_serving(("args",))
    thread.join(10)
    assert not thread.is_alive()
