"""Decode mode end to end on a tiny model: batched search == one-article search for the
real model, single-pass files + ROUGE, resume after an interruption, concurrent decoding,
and the summarize command."""

import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.data.vocab import START_ID, STOP_ID, UNK_ID, Vocab, outputids2words
from pointer_generator.decoding import folder, job
from pointer_generator.search.beam_search import tile_beams
from tests import helpers
from tests.reference_search import beam_search_single


def _model(setup, min_dec_steps=2, **hp):
    """(hyper-parameters, vocabulary, model with large random weights, the search: beam 3,
    at least `min_dec_steps`)."""
    hps = helpers.hparams(**({"max_dec_steps": 6} | hp))
    search = helpers.search(hps, beam_size=3, min_dec_steps=min_dec_steps)
    vocab = Vocab(setup.vocab_path, hps.vocab_size)
    tf.keras.utils.set_random_seed(3)
    model = pg.PointerGeneratorModel(hps, vocab.size()).build_weights()
    # Larger random weights than the initialisers give, so that the search has real choices.
    for v in model.trainable_variables:
        v.assign(tf.random.uniform(v.shape, -0.5, 0.5, seed=7))
    return hps, vocab, model, search


def _save(model, setup, step=5):
    train_dir = os.path.join(setup.log_root, setup.exp_name, "train")
    os.makedirs(train_dir, exist_ok=True)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model), train_dir, max_to_keep=3, checkpoint_name="model.ckpt"
    )
    return manager.save(checkpoint_number=step)


@pytest.fixture
def setup(tmp_path):
    s = helpers.tiny_setup(tmp_path, n_train=8, n_val=7)
    s.test_path = helpers.write_data(
        os.path.join(str(tmp_path), "data"), "test", 7, s.words, seed=5
    )
    return s


def _one_article_search(model, search, vocab, batch, i, block_unk=False):
    """Article i of a decode batch by the one-article search over the whole distribution
    (the original's algorithm): (words, hypothesis, enc_len). `block_unk`: [UNK]'s
    probability set to 0 in each step's whole distribution."""
    n = int(batch["enc_lens"][i])
    enc = model.encode(batch["enc_batch"][i : i + 1, :n], batch["enc_padding_mask"][i : i + 1, :n])
    enc_k = tile_beams(enc, search.beam_size)
    ext_k = tile_beams(batch["enc_batch_extend_vocab"][i : i + 1, :n], search.beam_size)
    carry = tile_beams(model.initial_carry(enc), search.beam_size)

    def step_fn(tokens, carry):
        dist, *rest = model.decode_step(enc_k, ext_k, batch["max_art_oovs"], tokens, carry)
        if block_unk:
            dist = dist * (1.0 - tf.one_hot(UNK_ID, tf.shape(dist)[-1]))
        return (dist, *rest)

    hyp = beam_search_single(
        step_fn,
        carry,
        beam_size=search.beam_size,
        vocab_size=vocab.size(),
        max_dec_steps=search.max_dec_steps,
        min_dec_steps=search.min_dec_steps,
        start_id=START_ID,
        stop_id=STOP_ID,
        unk_id=UNK_ID,
    )
    strings = job.example_strings(batch, i)
    words = outputids2words(hyp.tokens[1:], vocab, strings["art_oovs"])
    if "[STOP]" in words:
        words = words[: words.index("[STOP]")]
    return words, hyp, n


def _assert_equals_one_article_search(model, search, vocab, batch, batched, block_unk=False):
    for i in range(len(batched)):
        words, hyp, n = _one_article_search(model, search, vocab, batch, i, block_unk)
        assert batched[i].words == words
        assert batched[i].score == pytest.approx(float(hyp.avg_log_prob), abs=1e-5)
        np.testing.assert_allclose(batched[i].attn, np.stack(hyp.attn_dists)[:, :n], atol=1e-5)


@pytest.mark.parametrize(
    "coverage,attention,full,pointer",
    [
        (False, "original", False, True),
        (True, "original", False, True),
        (True, "train_consistent", False, True),
        (True, "original", True, True),
        (False, "original", False, False),
        (False, "original", True, False),
    ],
)
def test_batched_search_equals_one_article_search_for_the_model(
    setup, coverage, attention, full, pointer
):
    """The batched decoder (with top candidates, or the whole distribution when `full`)
    against the one-article search over the whole distribution, as the original."""
    hps, vocab, model, search = _model(
        setup, coverage=coverage, decode_attention=attention, pointer_gen=pointer
    )
    decoder = pg.BeamSearchDecoder(model, vocab, hps, search.replace(full_final_dist=full))
    batch = next(
        iter(pg.make_dataset(setup.test_path, vocab, hps.replace(batch_size=4), "decode", True))
    )
    _assert_equals_one_article_search(model, search, vocab, batch, decoder.decode_batch(batch))


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("pointer", [True, False])
def test_block_unk_keeps_unk_out_of_the_pointer_generators_summaries(setup, full, pointer):
    """A model that favours [UNK] writes it; with --block_unk it does not, and the search
    over the top candidates (one spare for the blocked id) gives the one-article search's
    summaries over the whole distribution with [UNK] at probability 0."""
    hps, vocab, model, search = _model(setup, coverage=True, pointer_gen=pointer)
    bias = model.output_projection.bias
    bias.assign(tf.tensor_scatter_nd_add(bias, [[UNK_ID]], [5.0]))
    batch = next(
        iter(pg.make_dataset(setup.test_path, vocab, hps.replace(batch_size=4), "decode", True))
    )
    summaries = {}
    for block in (False, True):
        settings = search.replace(full_final_dist=full, block_unk=block)
        summaries[block] = pg.BeamSearchDecoder(model, vocab, hps, settings).decode_batch(batch)
    assert any("[UNK]" in s.words for s in summaries[False])
    assert not any("[UNK]" in s.words for s in summaries[True])
    _assert_equals_one_article_search(model, search, vocab, batch, summaries[True], block_unk=True)


@pytest.mark.parametrize("full", [False, True])
def test_compacting_decoder_equals_one_article_search(setup, full):
    """Articles that end early leave the batch (7 rows, then 2, then 1): every summary is
    still the one-article search's."""
    hps, vocab, model, search = _model(setup, coverage=True, max_dec_steps=12, min_dec_steps=1)
    bias = model.output_projection.bias
    bias.assign(tf.tensor_scatter_nd_add(bias, [[STOP_ID]], [2.8]))  # most end at once
    decoder = pg.BeamSearchDecoder(
        model,
        vocab,
        hps,
        search.replace(full_final_dist=full),
        min_compact_size=1,
    )
    batch = next(
        iter(pg.make_dataset(setup.test_path, vocab, hps.replace(batch_size=7), "decode", True))
    )
    batched = decoder.decode_batch(batch)
    lengths = [len(s.p_gens) for s in batched]
    assert 2 <= sum(n < hps.max_dec_steps for n in lengths) < 7  # the batch is compacted
    _assert_equals_one_article_search(model, search, vocab, batch, batched)


@pytest.mark.parametrize("skip", [0, 4])
def test_decode_stream_equals_decode_batch(setup, skip):
    """The stream of a single pass gives every article the summary decode_batch gives,
    in input order; the first `skip` articles are left out (a resumed single pass)."""
    hps, vocab, model, search = _model(setup, coverage=True, max_dec_steps=12, min_dec_steps=1)
    bias = model.output_projection.bias
    bias.assign(tf.tensor_scatter_nd_add(bias, [[STOP_ID]], [2.7]))  # ends at 2 or 12
    decoder = pg.BeamSearchDecoder(model, vocab, hps, search)
    dataset = pg.make_dataset(setup.test_path, vocab, hps.replace(batch_size=3), "decode", True)
    expected = [
        (job.example_strings(b, i), s)
        for b in dataset
        for i, s in enumerate(decoder.decode_batch(b))
    ]
    streamed = [
        (job.example_strings(b, i), s) for b, i, s in decoder.decode_stream(dataset, skip=skip)
    ]
    assert len(expected) == 7 and len(streamed) == 7 - skip
    for (strings, summary), (want_strings, want) in zip(streamed, expected[skip:], strict=True):
        assert strings == want_strings
        assert summary.words == want.words
        assert summary.score == pytest.approx(want.score, abs=1e-5)
        np.testing.assert_allclose(summary.attn, want.attn, atol=1e-5)
        np.testing.assert_allclose(summary.p_gens, want.p_gens, atol=1e-5)


def test_single_pass_writes_files_and_resumes_identically(setup):
    hps, vocab, model, search = _model(setup)
    decoder = pg.BeamSearchDecoder(model, vocab, hps, search)

    def dataset():
        return pg.make_dataset(setup.test_path, vocab, hps.replace(batch_size=3), "decode", True)

    full = os.path.join(setup.log_root, "full")
    job.decode_single_pass(decoder, dataset(), full, total=7, attention_pages=2, run_rouge=False)
    assert folder.count_complete(full) == 7
    assert sorted(os.listdir(os.path.join(full, "attention"))) == [
        "000000.html",
        "000001.html",
        "index.html",
    ]
    # An interrupted run: only the first 4 examples were written; the rerun completes it.
    part = os.path.join(setup.log_root, "part")
    job.decode_single_pass(decoder, dataset(), part, run_rouge=False, attention_pages=0)
    for k in range(4, 7):
        os.remove(os.path.join(part, "decoded", "%06d_decoded.txt" % k))
    assert folder.count_complete(part) == 4
    job.decode_single_pass(decoder, dataset(), part, run_rouge=False, attention_pages=0)
    for sub, name in (("decoded", "%06d_decoded.txt"), ("reference", "%06d_reference.txt")):
        for k in range(7):
            with (
                open(os.path.join(full, sub, name % k)) as a,
                open(os.path.join(part, sub, name % k)) as b,
            ):
                assert a.read() == b.read()
    # The mean p_gen of each example was recorded once per decode (a resume appends).
    with open(os.path.join(part, job.P_GENS_FILE)) as f:
        indices = [int(line.split("\t")[0]) for line in f]
    assert sorted(set(indices)) == list(range(7))


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_ctrl_c_that_a_finalizer_swallowed_still_stops_single_pass_decode(setup, monkeypatch):
    hps, vocab, model, search = _model(setup)
    decoder = pg.BeamSearchDecoder(model, vocab, hps, search)
    real_write = folder.write_for_rouge
    written = []

    def write_then_press(*args, **kwargs):
        real_write(*args, **kwargs)
        written.append(1)
        if len(written) == 2:
            helpers.ctrl_c_in_a_finalizer()

    monkeypatch.setattr(folder, "write_for_rouge", write_then_press)
    out = os.path.join(setup.log_root, "ctrl_c")
    dataset = pg.make_dataset(setup.test_path, vocab, hps.replace(batch_size=3), "decode", True)
    with helpers.ctrl_c_remembered(), pytest.raises(KeyboardInterrupt):
        job.decode_single_pass(decoder, dataset, out, run_rouge=False, attention_pages=0)
    # It stopped before the next example: two complete ones for a rerun to resume after.
    assert len(written) == 2 and folder.count_complete(out) == 2


def test_decode_mode_cli_single_pass_with_rouge_and_concurrent(setup):
    hps, vocab, model, search = _model(setup)
    _save(model, setup)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    base = [
        sys.executable,
        "-m",
        "pointer_generator.run_summarization",
        "--mode=decode",
        f"--vocab_path={setup.vocab_path}",
        f"--log_root={setup.log_root}",
        f"--exp_name={setup.exp_name}",
        f"--data_path={setup.test_path}",
    ]
    args = helpers.cli_args(max_dec_steps=6, min_dec_steps=2, beam_size=3)
    run = subprocess.run(
        base + args + ["--single_pass"], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    exp = os.path.join(setup.log_root, setup.exp_name)
    dirs = [d for d in os.listdir(exp) if d.startswith("decode_test")]
    assert dirs == ["decode_test_20maxenc_3beam_2mindec_6maxdec_ckpt-5"]
    with open(os.path.join(exp, dirs[0], "ROUGE_results.txt")) as f:
        assert "rouge_1_f_score:" in f.read()
    run = subprocess.run(
        base + args + ["--max_decode_examples=3"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.count("GENERATED SUMMARY:") == 3
    assert os.path.exists(os.path.join(exp, "decode", "attn_vis_data.json"))
    assert os.path.exists(os.path.join(exp, "decode", "attention.html"))


def test_summarize_prints_one_summary_per_file(setup, tmp_path):
    hps, vocab, model, search = _model(setup)
    _save(model, setup)
    files = []
    for k, text in enumerate(["W1 w2 w3 (w4) w5. W6 w7 w8.", 'w9 "w10" w11 w12, w13.']):
        path = os.path.join(str(tmp_path), f"a{k}.txt")
        with open(path, "w") as f:
            f.write(text)
        files.append(path)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    cmd = (
        [
            sys.executable,
            "-m",
            "pointer_generator.cli.entry",
            "summarize",
            f"--vocab_path={setup.vocab_path}",
            f"--log_root={setup.log_root}",
            f"--exp_name={setup.exp_name}",
        ]
        + helpers.cli_args(max_dec_steps=6, min_dec_steps=2, beam_size=3)
        + files
    )
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.count("==> ") == 2
    assert f"==> {files[1]} <==" in run.stdout
    missing = subprocess.run(
        cmd[:-2] + ["/nonexistent/file.txt"], env=env, capture_output=True, text=True, timeout=300
    )
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines()[-1] == "error: /nonexistent/file.txt: no such file"


def test_trigram_blocking_decodes_the_model_over_the_whole_distribution(setup):
    """Trigram blocking needs the whole distribution: the decoder switches to it."""
    hps, vocab, model, search = _model(setup)
    hps = hps.replace(max_dec_steps=12)
    decoder = pg.BeamSearchDecoder(model, vocab, hps, search.replace(trigram_blocking=True))
    assert decoder.settings.whole_distribution
    batch = next(
        iter(pg.make_dataset(setup.test_path, vocab, hps.replace(batch_size=4), "decode", True))
    )
    for s in decoder.decode_batch(batch):
        trigrams = [tuple(s.words[i : i + 3]) for i in range(len(s.words) - 2)]
        assert len(trigrams) == len(set(trigrams))
        assert len(s.words) >= 1


def test_block_unk_also_blocks_copies_of_an_articles_literal_unk_token():
    """An article's literal [UNK] token is one of its OOVs (the original's article2ids): its
    positions are given UNK_ID under --block_unk, so their copy mass is blocked too."""
    from pointer_generator.search.beam_decoder import unk_copies_as_unk

    v = 50
    ext = np.array([[5, v, v + 1, 7, v, 1], [v, 9, 1, 1, 1, 1], [4, 4, 4, 4, 4, 4]], np.int32)
    oovs = np.array([[b"zork", b"[UNK]"], [b"[UNK]", b""], [b"", b""]])
    want = ext.copy()
    for r in range(len(ext)):
        for t in range(ext.shape[1]):
            if ext[r, t] >= v and oovs[r, ext[r, t] - v] == b"[UNK]":
                want[r, t] = UNK_ID
    assert (want != ext).sum() == 2
    np.testing.assert_array_equal(unk_copies_as_unk(ext, oovs, v).numpy(), want)
    # A batch without OOVs (the families, or no rare words): unchanged.
    np.testing.assert_array_equal(
        unk_copies_as_unk(ext[2:], np.zeros((1, 0), dtype=bytes), v).numpy(), ext[2:]
    )
