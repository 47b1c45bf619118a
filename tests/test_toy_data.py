"""toy_data: deterministic, well-formed, sized as documented, and copy-friendly."""

import io
import os
import time

from data_tools import toy_data
from pointer_generator.data.binfile import read_records
from pointer_generator.data.vocab import Vocab, abstract2sents


def make(out_dir, **kw):
    kw.setdefault("num_train", 60)
    kw.setdefault("num_val", 6)
    kw.setdefault("num_test", 6)
    toy_data.make_toy_data(str(out_dir), stream=io.StringIO(), **kw)
    return out_dir


def read_bytes(d):
    out = {}
    for name in ("train.bin", "val.bin", "test.bin", "vocab"):
        with open(os.path.join(d, name), "rb") as f:
            out[name] = f.read()
    return out


def test_same_seed_same_bytes_other_seed_other_data(tmp_path):
    a = read_bytes(make(tmp_path / "a", seed=3))
    b = read_bytes(make(tmp_path / "b", seed=3))
    c = read_bytes(make(tmp_path / "c", seed=4))
    assert a == b
    assert a["train.bin"] != c["train.bin"]


def test_val_and_test_do_not_depend_on_the_training_size(tmp_path):
    small = read_bytes(make(tmp_path / "s", num_train=10))
    large = read_bytes(make(tmp_path / "l", num_train=80))
    assert small["val.bin"] == large["val.bin"] and small["test.bin"] == large["test.bin"]


def test_layout_lengths_and_summary_form(tmp_path):
    out = make(tmp_path / "t", num_train=1200, chunk_size=500)
    assert sorted(os.listdir(out / "chunked")) == [
        "test_000.bin",
        "train_000.bin",
        "train_001.bin",
        "train_002.bin",
        "val_000.bin",
    ]
    pairs = list(read_records(str(out / "train.bin")))
    assert len(pairs) == 1200
    for article, abstract in pairs:
        words = article.split(" ")
        assert 100 <= len(words) <= 200
        assert article == article.lower() and "  " not in article
        sents = abstract2sents(abstract)
        assert len(sents) in (2, 3)
        summary_words = " ".join(sents).split(" ")
        assert 20 <= len(summary_words) <= 40
        # The summary restates the article: nearly all its words appear there.
        in_article = sum(w in set(words) for w in summary_words)
        assert in_article / len(summary_words) >= 0.8
    # All seven kinds of event occur.
    for keyword in ("arrested", " beat ", "jobs", "earthquake", "elected", "species", "rescued"):
        assert any(keyword in a for _, a in pairs), keyword


def test_vocab_is_readable_and_rich_in_rare_names(tmp_path):
    out = make(tmp_path / "v", num_train=400)
    vocab = Vocab(str(out / "vocab"), 0)
    with open(out / "vocab", encoding="utf-8") as f:
        counts = [int(line.split(" ")[1]) for line in f]
    assert vocab.size() == 4 + len(counts) and counts == sorted(counts, reverse=True)
    # Many words are rare (invented surnames and towns): a small vocab must copy them.
    assert sum(c <= 2 for c in counts) / len(counts) > 0.3
    # PTB-style tokens of the real data occur.
    for w in ("-lrb-", "-rrb-", "``", "''", "'s", "n't"):
        assert vocab.word2id(w) != 0, w


def test_default_size_generates_in_seconds():
    start = time.perf_counter()
    sets = [
        toy_data.make_set(name, n, 0) for name, n in (("train", 4000), ("val", 200), ("test", 200))
    ]
    assert sum(len(s) for s in sets) == 4400
    assert time.perf_counter() - start < 10
