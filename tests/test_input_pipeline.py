"""The tf.data pipeline against the pure-Python oracle in reference_batcher.py."""

import gzip
import itertools
import json
import os
import struct

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import given, settings
from hypothesis import strategies as st

import pointer_generator as pg
from pointer_generator.data import bin_dataset, binfile, example_ops
from pointer_generator.data import input_pipeline as ip
from pointer_generator.errors import DataError, FlagError
from tests import reference_batcher as ref

N_EXAMPLES = 300
CHUNK = 100


# ---------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def pairs():
    """The first N_EXAMPLES real (article, tagged abstract) pairs, as str."""
    from tests.conftest import shared_file

    out = []
    with gzip.open(shared_file("cnndm_sample.jsonl.gz"), "rt", encoding="utf-8") as f:
        for line in itertools.islice(f, N_EXAMPLES):
            row = json.loads(line)
            out.append((row["article"], " ".join("<s> %s </s>" % s for s in row["abstract"])))
    return out


@pytest.fixture(scope="module")
def bin_dir(pairs, tmp_path_factory):
    d = tmp_path_factory.mktemp("chunks")
    paths = binfile.write_chunked(str(d), "train", pairs, chunk_size=CHUNK)
    assert len(paths) == N_EXAMPLES // CHUNK
    return str(d)


@pytest.fixture(scope="module")
def vocabs():
    from tests.conftest import shared_file

    path = shared_file("vocab_200k")
    return {50000: pg.Vocab(path, 50000), 5000: pg.Vocab(path, 5000)}


def byte_pairs(pairs):
    return [(a.encode("utf-8"), b.encode("utf-8")) for a, b in pairs]


def reference_batches(pairs, vocab, hps, static=False):
    exs = ref.make_examples(
        byte_pairs(pairs),
        ref.RefVocab(vocab),
        hps.max_enc_steps,
        hps.max_dec_steps,
        hps.pointer_gen,
        hps.max_oovs if static else None,
    )
    b = hps.batch_size
    groups = [exs[i : i + b] for i in range(0, len(exs), b)]
    if static:
        groups = [g for g in groups if len(g) == b]
    return [
        ref.make_batch(
            g,
            hps.max_dec_steps,
            hps.max_enc_steps if static else None,
            hps.max_oovs if static else None,
        )
        for g in groups
    ]


def as_numpy(batch):
    return {k: v.numpy() for k, v in batch.items()}


def collect(ds):
    with ip.data_errors():
        return [as_numpy(b) for b in ds]


def assert_batch_equal(got, want, where=""):
    assert set(got) == set(want), where
    for key, w in want.items():
        g = got[key]
        assert g.shape == np.shape(w), f"{where} {key}: shape {g.shape} != {np.shape(w)}"
        assert g.dtype == np.asarray(w).dtype, f"{where} {key}: dtype {g.dtype}"
        np.testing.assert_array_equal(g, w, err_msg=f"{where} {key}")


# ------------------------------------------------------------------ .bin reading in TF
def test_raw_records_round_trip_byte_for_byte(tmp_path, pairs):
    odd = [("", ""), ("é \u00a0 x", "<s> ü </s>"), ("a" * 300, "b" * 200)]
    records = pairs[:20] + odd
    path = str(tmp_path / "rt.bin")
    binfile.write_bin(path, records)
    raw = tf.function(bin_dataset.raw_records)(tf.constant(path)).numpy()
    assert list(raw) == [binfile.encode_record(a, b)[8:] for a, b in records]
    with ip.data_errors():
        parsed = tf.function(bin_dataset.read_bin_file)(tf.constant(path))
    assert [x.decode("utf-8") for x in parsed["article"].numpy()] == [a for a, _ in records]
    assert [x.decode("utf-8") for x in parsed["abstract"].numpy()] == [b for _, b in records]


def test_empty_file_has_no_records(tmp_path):
    path = tmp_path / "empty.bin"
    path.write_bytes(b"")
    assert tf.function(bin_dataset.raw_records)(tf.constant(str(path))).shape == (0,)


# ------------------------------------------------------------- arrays vs the reference
@pytest.mark.parametrize(
    "vocab_size,max_enc,max_dec,pointer_gen",
    [
        (50000, 400, 100, True),
        (5000, 50, 20, True),
        (5000, 50, 20, False),
    ],
)
def test_single_pass_matches_reference(
    pairs, bin_dir, vocabs, vocab_size, max_enc, max_dec, pointer_gen
):
    # static_shapes=False: the original Batcher's padding, each batch to its longest.
    hps = pg.HParams(
        batch_size=16,
        max_enc_steps=max_enc,
        max_dec_steps=max_dec,
        pointer_gen=pointer_gen,
        static_shapes=False,
    )
    vocab = vocabs[vocab_size]
    got = collect(
        ip.make_dataset(os.path.join(bin_dir, "train_*"), vocab, hps, "train", single_pass=True)
    )
    want = reference_batches(pairs, vocab, hps)
    assert len(got) == len(want) == -(-N_EXAMPLES // 16)  # final partial batch included
    assert len(got[-1]["enc_lens"]) == N_EXAMPLES % 16
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_batch_equal(g, w, f"batch {i}")
    if vocab_size == 5000:  # the small vocab must really exercise the OOV paths
        assert sum(int(b["max_art_oovs"]) for b in got) > 100
        assert any((b["target_batch"] >= vocab.size()).any() for b in got) == pointer_gen


@pytest.mark.parametrize(
    "max_enc,buckets,lengths",
    [
        (400, 4, [104, 200, 304, 400]),  # 100, 200, 300 rounded up to multiples of 8
        (50, 4, [16, 32, 40, 50]),  # 12, 25, 37 -> 16, 32, 40
        (50, 1, [50]),
        (10, 4, [8, 10]),  # 2, 5, 7 -> 8, 8, 8
        (3, 4, [3]),
    ],
)
def test_bucket_lengths(max_enc, buckets, lengths):
    assert ip.bucket_lengths(max_enc, buckets) == lengths


# 2000 / 16 = 125 positions a bucket, each rounded up to a multiple of 8, then 2000.
BUCKETS_2000_16 = [-(-125 * i // 8) * 8 for i in range(1, 16)] + [2000]


def test_default_padding_is_length_buckets(pairs, bin_dir, vocabs):
    """By default (static_shapes=None) a batch holds the original Batcher's examples,
    padded on to the smallest bucket length that holds its longest article."""
    # Long enough that the real articles' batches end in different buckets.
    hps = pg.HParams(batch_size=16, max_enc_steps=2000, max_dec_steps=20, length_buckets=16)
    assert pg.HParams().static_shapes is None and pg.HParams().length_buckets == 4
    vocab = vocabs[5000]
    got = collect(
        ip.make_dataset(os.path.join(bin_dir, "train_*"), vocab, hps, "train", single_pass=True)
    )
    exs = ref.make_examples(byte_pairs(pairs), ref.RefVocab(vocab), 2000, 20, hps.pointer_gen, None)
    groups = [exs[i : i + 16] for i in range(0, len(exs), 16)]
    assert len(got) == len(groups)
    widths = set()
    for i, (g, group) in enumerate(zip(got, groups, strict=True)):
        longest = max(int(n) for n in g["enc_lens"])
        width = min(n for n in BUCKETS_2000_16 if n >= longest)
        widths.add(width)
        assert_batch_equal(g, ref.make_batch(group, 20, width, None), f"batch {i}")
    assert len(widths) >= 2  # the data really spread over buckets


def test_static_shapes_cap_oovs_and_keep_every_example(pairs, bin_dir, vocabs):
    hps = pg.HParams(
        batch_size=16, max_enc_steps=50, max_dec_steps=20, static_shapes=True, max_oovs=3
    )
    vocab = vocabs[5000]
    repeating = ip.make_dataset(
        os.path.join(bin_dir, "train_*"), vocab, hps, "train", single_pass=False
    )
    ds = ip.make_dataset(os.path.join(bin_dir, "train_*"), vocab, hps, "train", single_pass=True)
    spec = repeating.element_spec
    for key in ("enc_batch", "enc_padding_mask", "enc_batch_extend_vocab"):
        assert spec[key].shape == (16, 50), key
    for key in ("dec_batch", "target_batch", "dec_padding_mask"):
        assert spec[key].shape == (16, 20), key
    assert spec["art_oovs"].shape == (16, 3)
    for key in ("enc_lens", "dec_lens"):
        assert spec[key].shape == (16,)
    assert all(s.shape.is_fully_defined() for s in ip.model_inputs(spec).values())
    # A single pass fixes every dimension but the batch one: its final batch is partial.
    assert ds.element_spec["enc_batch"].shape.as_list() == [None, 50]
    assert ds.element_spec["art_oovs"].shape.as_list() == [None, 3]
    graph = ds._as_serialized_graph().numpy()
    assert b"PyFunc" not in graph and b"Generator" not in graph  # TF ops only
    got = collect(ds)
    want = reference_batches(pairs, vocab, hps, static=True)
    assert len(want) == N_EXAMPLES // 16 and N_EXAMPLES % 16
    assert len(got) == len(want) + 1  # no example is dropped
    for i, (g, w) in enumerate(zip(got, want, strict=False)):
        assert_batch_equal(g, w, f"batch {i}")
    last = got[-1]
    assert last["enc_batch"].shape == (N_EXAMPLES % 16, 50)
    assert last["target_batch"].shape == (N_EXAMPLES % 16, 20)
    assert max(int(b["max_art_oovs"]) for b in got) == 3
    assert max(int(b["enc_batch_extend_vocab"].max()) for b in got) == vocab.size() + 2


def test_edge_cases_empty_articles_and_whitespace(tmp_path, vocabs, capfd):
    records = [
        ("the cat\u00a0sat  on\tthe\x0bmat\x1cnow", "x <s> a  </s> junk <s>b</s> <s> c"),
        ("", "<s> skipped </s>"),
        (" \t\x0b\n ", "<s> whitespace only: skipped too </s>"),
        ("w", "</s> <s> <s> two tags </s><s></s>"),
        ("[PAD] [UNK] zzqq zzqq yyqq zzqq", "<s> zzqq wwqq yyqq the </s>"),
    ]
    path = str(tmp_path / "edge_000.bin")
    binfile.write_bin(path, records)
    vocab = vocabs[5000]
    hps = pg.HParams(batch_size=4, max_enc_steps=400, max_dec_steps=6, static_shapes=False)
    got = collect(ip.make_dataset(path, vocab, hps, "decode", single_pass=True))
    assert "skipped 2 example(s) with an empty article (no words)" in capfd.readouterr().err
    assert len(got) == 1
    want = reference_batches(records, vocab, hps)[0]
    assert_batch_equal(got[0], want)
    b = got[0]
    # Hand-checked values, independent of both implementations.
    assert b["enc_lens"].tolist() == [5, 1, 6]  # U+00A0 and \x1c do not split
    assert list(b["abstract_sents"][0]) == [b"a", b"b"]
    assert list(b["abstract_sents"][1][:2]) == [b"<s> two tags", b""]
    assert list(b["art_oovs"][2][:3]) == [b"[UNK]", b"zzqq", b"yyqq"]
    v = vocab.size()
    assert b["enc_batch_extend_vocab"][2].tolist() == [1, v, v + 1, v + 1, v + 2, v + 1]
    the = vocab.word2id("the")
    assert b["target_batch"][2].tolist() == [v + 1, 0, v + 2, the, 3, 1]
    assert b["dec_batch"][2].tolist() == [2, 0, 0, 0, the, 1]


def test_decode_beam_copies_and_helpers(pairs, bin_dir, vocabs):
    hps = pg.HParams(batch_size=4, max_enc_steps=50, max_dec_steps=20)
    vocab = vocabs[5000]
    ds = ip.make_dataset(
        os.path.join(bin_dir, "train_*"), vocab, hps, "decode", single_pass=True, beam_copies=True
    )
    batches = list(ds.take(3))
    exs = ref.make_examples(byte_pairs(pairs[:3]), ref.RefVocab(vocab), 50, 20, True)
    for i, b in enumerate(batches):
        assert_batch_equal(as_numpy(b), ref.make_batch([exs[i]] * 4, 20), f"batch {i}")

    batch, e = batches[1], exs[1]
    inputs = ip.model_inputs(batch)
    assert all(v.dtype != tf.string for v in inputs.values())
    assert set(batch) - set(inputs) == set(ip.STRING_KEYS)
    s = ip.batch_strings(batch, 3)
    assert s["article"] == pairs[1][0]
    assert s["abstract"] == e["abstract"].decode("utf-8")
    assert s["abstract_sents"] == [x.decode("utf-8") for x in e["sents"]]
    assert s["art_oovs"] == [x.decode("utf-8") for x in e["oovs"]]
    assert s["art_oovs"]  # vocab 5000: there are OOVs
    with pytest.raises(FlagError):
        ip.make_dataset(
            os.path.join(bin_dir, "train_*"), vocab, hps, "train", True, beam_copies=True
        )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["<s>", "</s>", " ", "a", "b c", "\t", "<", "s>", "/"]), max_size=12)
)
def test_abstract_sentences_match_scan(parts):
    text = "".join(parts).encode()
    got = _sentences_fn(tf.constant([text, b"<s> x </s>"]))
    assert got.to_list() == [ref.sentences(text), [b"x"]]


_sentences_fn = tf.function(
    example_ops.abstract_sentences, input_signature=[tf.TensorSpec([None], tf.string)]
)


# --------------------------------------------------------------------------- bucketing
_BUCKET_CACHE = {}


def bucketed(bin_dir, vocab, seed, n_batches=200):
    """First n_batches of an endless train pipeline, batch 3 (so a pool is 300 = a pass)."""
    key = (bin_dir, seed, n_batches)
    if key not in _BUCKET_CACHE:
        hps = pg.HParams(batch_size=3, max_enc_steps=400, max_dec_steps=100, static_shapes=False)
        ds = ip.make_dataset(
            os.path.join(bin_dir, "train_*"), vocab, hps, "train", single_pass=False, seed=seed
        )
        _BUCKET_CACHE[key] = [as_numpy(b) for b in ds.take(n_batches)]
    return _BUCKET_CACHE[key]


def test_bucketing_pools(pairs, bin_dir, vocabs):
    vocab = vocabs[50000]
    batches = bucketed(bin_dir, vocab, seed=7)
    rv = ref.RefVocab(vocab)
    by_article = {a: ref.make_example(a, b, rv, 400, 100, True) for a, b in byte_pairs(pairs)}
    for pool in (batches[:100], batches[100:]):
        articles = [a for b in pool for a in b["original_article"]]
        # A pool of 100 batches is a permutation of one pass over the data.
        assert sorted(articles) == sorted(by_article)
        lens = [b["enc_lens"] for b in pool]
        for x in lens:
            assert (np.diff(x) >= 0).all()  # consecutive slice of a sorted pool
        by_start = sorted(lens, key=lambda x: (x[0], x[-1]))
        assert (np.diff(np.concatenate(by_start)) >= 0).all()  # groups do not overlap
        starts = [x[0] for x in lens]
        assert starts != sorted(starts)  # group order shuffled
    for i, b in enumerate(batches[:100]):
        assert b["enc_batch"].shape[1] == b["enc_lens"].max()  # trimmed per batch
        want = ref.make_batch([by_article[a] for a in b["original_article"]], 100)
        assert_batch_equal(b, want, f"batch {i}")


@pytest.mark.parametrize("static_shapes", [None, False, True])
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_endless_batches_have_a_static_batch_dimension(bin_dir, vocabs, mode, static_shapes):
    """Training and evaluation graphs are traced from the pipeline's element spec; with
    the batch dimension unknown the train step ran ~9% slower (docs/performance.md), so
    every endless pipeline says its batches are whole, in every padding mode."""
    hps = pg.HParams(
        batch_size=3, max_enc_steps=400, max_dec_steps=100, static_shapes=static_shapes
    )
    ds = ip.make_dataset(
        os.path.join(bin_dir, "train_*"), vocabs[5000], hps, mode, single_pass=False
    )
    for key in ("enc_batch", "enc_lens", "dec_batch", "target_batch", "dec_padding_mask"):
        assert ds.element_spec[key].shape[0] == 3, key
    assert all(int(b["enc_batch"].shape[0]) == 3 for b in ds.take(120))  # past a pool of 100


def test_bucketing_seed_reproducible(bin_dir, vocabs):
    vocab = vocabs[50000]
    a = bucketed(bin_dir, vocab, seed=7)
    b = bucketed(bin_dir, vocab, seed=7, n_batches=30)
    c = bucketed(bin_dir, vocab, seed=8, n_batches=30)
    order = [list(x["original_article"]) for x in a[:30]]
    assert [list(x["original_article"]) for x in b] == order
    assert [list(x["original_article"]) for x in c] != order


def test_bucket_order_is_a_stable_sort_in_shuffled_groups():
    lens = tf.constant([5, 1, 5, 3, 1, 5, 2, 3, 5, 1, 4, 5])
    order = ip.bucket_order(lens, 3, tf.constant([1, 2], tf.int64)).numpy()
    stable = np.argsort(lens.numpy(), kind="stable")
    groups = [tuple(order[i : i + 3]) for i in range(0, 12, 3)]
    assert sorted(groups) == sorted(tuple(stable[i : i + 3]) for i in range(0, 12, 3))


# ---------------------------------------------------------------------------- sharding
def test_sharding_by_file_through_input_context(pairs, bin_dir, vocabs):
    """3 files, 2 replicas: each replica reads whole files of its own."""
    vocab = vocabs[5000]
    hps = pg.HParams(batch_size=16, max_enc_steps=20, max_dec_steps=5)
    fn = ip.distributed_dataset_fn(
        os.path.join(bin_dir, "train_*"), vocab, hps, "eval", single_pass=True
    )
    shares = []
    for i in range(2):
        ds = fn(tf.distribute.InputContext(2, i, 2))
        assert ds.element_spec["enc_lens"].shape.as_list() == [None]
        batches = collect(ds)
        assert len(batches[0]["enc_lens"]) == 8  # per-replica share of the global 16
        shares.append([a for b in batches for a in b["original_article"]])
    assert sorted(len(s) for s in shares) == [CHUNK, 2 * CHUNK]
    assert sorted(shares[0] + shares[1]) == sorted(a for a, _ in byte_pairs(pairs))
    with pytest.raises(FlagError):
        ip.make_dataset(
            os.path.join(bin_dir, "train_*"),
            vocab,
            hps,
            "eval",
            True,
            num_replicas=2,
            replica_index=2,
        )


def test_endless_sharding_by_example_is_disjoint(pairs, bin_dir, vocabs):
    """1 file, 2 replicas: by example; both replicas read the same seeded order."""
    vocab = vocabs[5000]
    hps = pg.HParams(batch_size=10, max_enc_steps=20, max_dec_steps=5)
    one = os.path.join(bin_dir, "train_000.bin")
    shares = []
    for i in range(2):
        ds = ip.make_dataset(one, vocab, hps, "decode", False, num_replicas=2, replica_index=i)
        shares.append([a for b in ds.take(5) for a in b["original_article"].numpy()])
    assert sorted(shares[0] + shares[1]) == sorted(a for a, _ in byte_pairs(pairs[:CHUNK]))


# -------------------------------------------------------------------------- bad input
def _record(payload: bytes) -> bytes:
    return struct.pack("q", len(payload)) + payload


@pytest.fixture
def good_record():
    return binfile.encode_record("an article", "<s> a summary </s>")


def test_glob_matching_nothing(tmp_path, vocabs):
    pattern = str(tmp_path / "nothing_*.bin")
    with pytest.raises(DataError, match="nothing_"):
        ip.make_dataset(pattern, vocabs[5000], pg.HParams(), "train", False)
    (tmp_path / "nothing_dir.bin").mkdir()
    with pytest.raises(DataError, match="nothing_dir.bin.*not a file"):
        ip.make_dataset(pattern, vocabs[5000], pg.HParams(), "train", False)


@pytest.mark.parametrize(
    "name,make,problem",
    [
        ("truncated", lambda g: g + g[:-5], "record 1 claims"),
        ("short_prefix", lambda g: g + g[:3], "record 1 is truncated"),
        ("huge_prefix", lambda g: g + struct.pack("q", 10**9) + b"xyz", "claims 1000000000"),
        ("garbage", lambda g: bytes(range(7, 250, 3)) * 9, "record 0"),
    ],
)
def test_bad_framing_is_a_data_error(tmp_path, vocabs, good_record, name, make, problem):
    path = str(tmp_path / f"{name}.bin")
    with open(path, "wb") as f:
        f.write(make(good_record))
    # Up front, in Python ...
    with pytest.raises(DataError, match=problem) as err:
        ip.make_dataset(path, vocabs[5000], pg.HParams(), "decode", True)
    assert path in str(err.value)
    # ... and by the graph's own assertions, for files that change or appear later.
    with pytest.raises(DataError, match=problem) as err, ip.data_errors():
        tf.function(bin_dataset.read_bin_file)(tf.constant(path))
    assert path in str(err.value)


@pytest.mark.parametrize(
    "payload,problem",
    [
        (b"\x0a\x05" + b"not an example at all", "record 1 is not a serialized tf.train.Example"),
        (binfile.encode_example({"article": b"only an article"}), "record 1 has no 'abstract'"),
    ],
)
def test_bad_records_are_data_errors_when_iterating(
    tmp_path, vocabs, good_record, payload, problem
):
    """Found while reading (the file's first read, which the check that the data holds
    a usable example now makes before the dataset is returned)."""
    path = str(tmp_path / "bad_000.bin")
    with open(path, "wb") as f:
        f.write(good_record + _record(payload) + good_record)
    with pytest.raises(DataError, match=problem) as err, ip.data_errors():
        list(ip.make_dataset(path, vocabs[5000], pg.HParams(batch_size=2), "decode", True))
    assert path in str(err.value)


def test_endless_pipeline_without_usable_examples(tmp_path, vocabs):
    path = str(tmp_path / "empty_articles.bin")
    binfile.write_bin(path, [("", "<s> a </s>")] * 3)
    with pytest.raises(DataError, match="no example with a non-empty article"):
        ip.make_dataset(path, vocabs[5000], pg.HParams(), "train", False)


def test_bad_mode(bin_dir, vocabs):
    with pytest.raises(FlagError, match="mode"):
        ip.make_dataset(os.path.join(bin_dir, "train_*"), vocabs[5000], pg.HParams(), "tran", True)
