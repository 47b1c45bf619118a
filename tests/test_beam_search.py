"""Beam search: hand-traced cases for the reference, batched == reference, extras.

Token ids follow the vocabulary: 0 [UNK], 1 [PAD], 2 [START], 3 [STOP]; words from 4.
"""

import time

import numpy as np
import pytest
import tensorflow as tf

from pointer_generator.data.vocab import PAD_ID, START_ID, STOP_ID, UNK_ID
from pointer_generator.search.beam_search import _segment_sizes, batched_beam_search, tile_beams
from tests.reference_search import Hypothesis, beam_search_single

IDS = dict(start_id=START_ID, stop_id=STOP_ID, unk_id=UNK_ID)
A, B_, C_, D_ = 4, 5, 6, 7  # word ids used by the hand-built tables


# --------------------------------------------------------------------------------------
# Step functions


class TableDecoder:
    """Step function reading a fixed table: probs = table[article][latest token].

    The table has only `vocab_size` rows, so feeding an article-OOV id would fail the
    gather (CPU): the search must feed [UNK]. Carry: the article index of each row and a
    step counter, which shapes attn and p_gen so that a wrong parent row shows.
    """

    def __init__(self, tables, vocab_size, t_enc=3):
        self.table = tf.constant(np.asarray(tables, np.float32))  # [A, V, V_ext]
        assert self.table.shape[1] == vocab_size
        self.t_enc = t_enc
        self.fed = []  # eager calls only: the tokens fed at each step

    def init_carry(self, articles, beam_size):
        return tile_beams(
            {"article": tf.constant(articles, tf.int32), "t": tf.zeros([len(articles)], tf.int32)},
            beam_size,
        )

    def step(self, tokens, carry):
        if tf.executing_eagerly():
            self.fed.append(tokens.numpy().tolist())
        probs = tf.gather_nd(self.table, tf.stack([carry["article"], tokens], axis=1))
        # Attention and p_gen that identify the step and the fed token.
        t = tf.cast(carry["t"], tf.float32)
        attn = tf.one_hot(carry["t"] % self.t_enc, self.t_enc) * 0.5 + 0.5 / self.t_enc
        p_gen = 1.0 / (2.0 + t + tf.cast(tokens, tf.float32))
        return probs, attn, p_gen, {"article": carry["article"], "t": carry["t"] + 1}


def table(vocab_size, v_ext, rows):
    """[V, V_ext] table; rows: {prev token: {token: prob}}, unset rows are uniform."""
    t = np.full((vocab_size, v_ext), 1.0 / v_ext, np.float32)
    for prev, dist in rows.items():
        t[prev] = 0.0
        for tok, p in dist.items():
            t[prev, tok] = p
    return t


class ToyRNN:
    """A tiny random RNN decoder for a batch of articles, numpy-seeded.

    carry = {"h": [N, H], "cov": [N, T]} (float64). Computed in float64 and rounded to
    float32, so a row's outputs do not depend on how many rows are in the batch.
    `stop_bias` shifts the [STOP] logit; the encoder adds an article-dependent part.
    """

    def __init__(
        self, seed, batch, vocab_size, n_oov, t_enc, hidden=6, stop_bias=0.0, sharpness=2.0
    ):
        rng = np.random.default_rng(seed)
        self.vocab_size, self.v_ext, self.t_enc = vocab_size, vocab_size + n_oov, t_enc
        self.emb = tf.constant(rng.normal(size=(vocab_size, hidden)))
        self.w = tf.constant(rng.normal(size=(hidden, hidden)) * 0.7)
        out = rng.normal(size=(hidden, self.v_ext)) * sharpness
        self.out = tf.constant(out)
        bias = np.zeros(self.v_ext)
        bias[STOP_ID] = stop_bias
        self.bias = tf.constant(bias)
        stop_from_ctx = np.zeros((hidden, self.v_ext))
        stop_from_ctx[:, STOP_ID] = rng.normal(size=hidden)
        self.stop_from_ctx = tf.constant(stop_from_ctx)
        self.w_pgen = tf.constant(rng.normal(size=(hidden, 1)))
        self.enc = rng.normal(size=(batch, t_enc, hidden))
        self.h0 = rng.normal(size=(batch, hidden))

    def init_carry(self, articles, beam_size):
        articles = list(articles)
        return tile_beams(
            {
                "h": tf.constant(self.h0[articles]),
                "cov": tf.zeros([len(articles), self.t_enc], tf.float64),
            },
            beam_size,
        )

    def step_fn(self, articles, beam_size):
        return self.step_fn_over(tile_beams(tf.constant(self.enc[list(articles)]), beam_size))

    def article_step_fn(self, beam_size, rows=None):
        """A step function over `articles={"enc": [B, T, H]}` (the compacting search);
        `rows`, a tf.Variable, counts the decoder rows computed."""

        def step(tokens, carry, articles):
            if rows is not None:
                rows.assign_add(tf.shape(tokens)[0])
            return self.step_fn_over(tile_beams(articles["enc"], beam_size))(tokens, carry)

        return step

    def step_fn_over(self, enc):
        """The step function over tiled encoder states enc [N, T, H]."""

        def step(tokens, carry):
            h = carry["h"]
            x = tf.gather(self.emb, tokens)  # fails for an article-OOV id (CPU)
            attn = tf.nn.softmax(tf.einsum("nth,nh->nt", enc, h) - carry["cov"], axis=-1)
            ctx = tf.einsum("nt,nth->nh", attn, enc)
            h_new = tf.tanh(tf.matmul(h, self.w) + x + 0.5 * ctx)
            logits = tf.matmul(h_new, self.out) + tf.matmul(ctx, self.stop_from_ctx) + self.bias
            probs = tf.nn.softmax(logits, axis=-1)
            p_gen = tf.sigmoid(tf.matmul(h_new, self.w_pgen))[:, 0]
            new_carry = {"h": h_new, "cov": carry["cov"] + attn}
            return (
                tf.cast(probs, tf.float32),
                tf.cast(attn, tf.float32),
                tf.cast(p_gen, tf.float32),
                new_carry,
            )

        return step


# --------------------------------------------------------------------------------------
# Helpers


def run_single(dec, article, beam_size, **kw):
    return beam_search_single(
        dec.step_fn([article], beam_size),
        dec.init_carry([article], beam_size),
        beam_size=beam_size,
        vocab_size=dec.vocab_size,
        **IDS,
        **kw,
    )


def run_batched(dec, batch, beam_size, **kw):
    out = batched_beam_search(
        dec.step_fn(range(batch), beam_size),
        dec.init_carry(range(batch), beam_size),
        batch_size=batch,
        beam_size=beam_size,
        vocab_size=dec.vocab_size,
        **IDS,
        **kw,
    )
    return {key: v.numpy() for key, v in out.items()}


def assert_matches(out, b, hyp: Hypothesis, max_dec_steps):
    """Row b of the batched output is the reference hypothesis."""
    gen = hyp.tokens[1:]
    n = len(gen)
    assert out["lengths"][b] == n
    np.testing.assert_array_equal(out["tokens"][b, :n], gen)
    np.testing.assert_array_equal(out["tokens"][b, n:], [PAD_ID] * (max_dec_steps - n))
    np.testing.assert_allclose(out["scores"][b], hyp.score, rtol=0, atol=1e-5)
    np.testing.assert_allclose(out["attn_dists"][b, :n], np.stack(hyp.attn_dists), atol=1e-6)
    np.testing.assert_array_equal(out["attn_dists"][b, n:], 0.0)
    np.testing.assert_allclose(out["p_gens"][b, :n], hyp.p_gens, atol=1e-6)
    np.testing.assert_array_equal(out["p_gens"][b, n:], 0.0)


def log32(*probs):
    """float32 running sum of float32 logs, as both searches add them."""
    total = np.float32(0.0)
    for p in probs:
        total = np.float32(total + np.log(np.float32(p)))
    return total


def trigrams(tokens):
    return list(zip(tokens, tokens[1:], tokens[2:], strict=False))


# --------------------------------------------------------------------------------------
# (a) the reference against hand-traced cases. V = 6 ([UNK] [PAD] [START] [STOP] a b),
# one article OOV id 6, K = 2: every hypothesis offers its top 4.

V, OOV = 6, 6
CASE_1 = table(
    V,
    7,
    {
        START_ID: {STOP_ID: 0.4, A: 0.3, B_: 0.2, OOV: 0.1},
        A: {STOP_ID: 0.5, A: 0.1, B_: 0.1, OOV: 0.3},
        B_: {STOP_ID: 0.6, A: 0.2, B_: 0.1, OOV: 0.1},
    },
)
CASE_2 = table(
    V,
    7,
    {
        START_ID: {OOV: 0.5, A: 0.3, B_: 0.12, STOP_ID: 0.08},
        UNK_ID: {A: 0.6, B_: 0.2, STOP_ID: 0.15, OOV: 0.05},
        A: {B_: 0.4, STOP_ID: 0.3, A: 0.2, OOV: 0.1},
        B_: {STOP_ID: 0.55, A: 0.25, B_: 0.12, OOV: 0.08},
    },
)
CASE_4 = CASE_2.copy()
CASE_4[A] = table(V, 7, {A: {STOP_ID: 0.4, B_: 0.3, A: 0.2, OOV: 0.1}})[A]


def hand_search(tables, **kw):
    dec = TableDecoder([tables], V)
    kw = dict(beam_size=2, vocab_size=V, **IDS) | kw
    hyp = beam_search_single(dec.step, dec.init_carry([0], kw["beam_size"]), **kw)
    return hyp, dec.fed


def test_early_stop_is_discarded_below_min_dec_steps():
    # Step 0: [STOP] .4 is best but steps 0 < min 1, so discarded; beam = a (.3), b (.2).
    # Step 1: a-STOP .15, b-STOP .12 -> results full (K = 2) -> search ends after 2 steps.
    hyp, fed = hand_search(CASE_1, max_dec_steps=5, min_dec_steps=1)
    assert hyp.tokens == [START_ID, A, STOP_ID]
    assert hyp.score == hyp.avg_log_prob
    np.testing.assert_allclose(hyp.score, log32(0.3, 0.5) / 3, rtol=1e-6)
    assert fed == [[START_ID, START_ID], [A, B_]]
    # p_gen = 1 / (2 + step + fed token): [START] at step 0, then a at step 1.
    np.testing.assert_allclose(hyp.p_gens, [1 / (2 + START_ID), 1 / (3 + A)])


def test_early_stop_is_kept_from_min_dec_steps_and_wins_on_average():
    # min 0: [STOP] at step 0 is a result (log .4 / 2); then a-STOP (log .15 / 3) fills
    # the results. The one-token summary has the better average.
    hyp, fed = hand_search(CASE_1, max_dec_steps=5, min_dec_steps=0)
    assert hyp.tokens == [START_ID, STOP_ID]
    np.testing.assert_allclose(hyp.score, np.log(0.4) / 2, rtol=1e-6)
    assert len(fed) == 2


def test_oov_fed_back_as_unk_and_results_end_the_search():
    # Step 0: beam OOV (.5), a (.3). Step 1 feeds [UNK, a]: OOV-a .30, a-b .12.
    # Step 2 feeds [a, b]: OOV-a-b .12 (beam), OOV-a-STOP .09, a-b-STOP .066 -> K results.
    hyp, fed = hand_search(CASE_2, max_dec_steps=10, min_dec_steps=0)
    assert fed == [[START_ID, START_ID], [UNK_ID, A], [A, B_]]
    assert hyp.tokens == [START_ID, OOV, A, STOP_ID]
    np.testing.assert_allclose(hyp.score, np.log(0.09) / 4, rtol=1e-6)
    assert len(hyp.attn_dists) == 3  # the [STOP] step's attention is kept


def test_falls_back_to_the_unfinished_beam_when_nothing_finished():
    # min 10 discards every [STOP]; after 2 steps the beam is OOV-a (.30) and a-b (.12).
    hyp, _ = hand_search(CASE_2, max_dec_steps=2, min_dec_steps=10)
    assert hyp.tokens == [START_ID, OOV, A]
    np.testing.assert_allclose(hyp.score, np.log(0.3) / 3, rtol=1e-6)


def test_a_finished_result_beats_a_better_unfinished_beam():
    # Step 1 scan: OOV-a .30 (beam), a-STOP .12 (result), OOV-b .10 (beam). The loop ends
    # at max_dec_steps with one result, which is returned although OOV-a scores higher.
    hyp, _ = hand_search(CASE_4, max_dec_steps=2, min_dec_steps=0)
    assert hyp.tokens == [START_ID, A, STOP_ID]
    np.testing.assert_allclose(hyp.score, np.log(0.12) / 3, rtol=1e-6)


TIE = table(
    V,
    7,
    {
        START_ID: {A: 0.4, B_: 0.4, OOV: 0.1, STOP_ID: 0.1},
        A: {A: 0.4, B_: 0.4, OOV: 0.1, STOP_ID: 0.1},
        B_: {A: 0.4, B_: 0.4, OOV: 0.1, STOP_ID: 0.1},
    },
)


def test_ties_keep_hypothesis_then_rank_order():
    # a and b tie everywhere; the stable sort keeps top-k order (lower id first) and
    # then hypothesis order: beam after step 1 is a-a, a-b; the first wins the tie.
    hyp, _ = hand_search(TIE, max_dec_steps=2, min_dec_steps=0)
    assert hyp.tokens == [START_ID, A, A]
    hyp, _ = hand_search(TIE, max_dec_steps=3, min_dec_steps=0, beam_size=1)
    assert hyp.tokens == [START_ID, A, A, A]


@pytest.mark.parametrize(
    "max_steps, min_steps, tables, expected",
    [
        (10, 0, [CASE_1, CASE_2], [[STOP_ID], [OOV, A, STOP_ID]]),
        (2, 0, [CASE_4, TIE], [[A, STOP_ID], [A, A]]),
        (2, 10, [CASE_2, CASE_1], [[OOV, A], [A, OOV]]),
    ],
)
def test_batched_reproduces_hand_traced_cases(max_steps, min_steps, tables, expected):
    # The hand-traced articles of the tests above, decoded together; the last is new:
    # CASE_1 with every [STOP] dropped keeps a-OOV (.09) over b-a (.04) after two steps.
    dec = TableDecoder(tables, V)
    kw = dict(beam_size=2, vocab_size=V, max_dec_steps=max_steps, min_dec_steps=min_steps, **IDS)
    n = len(tables)
    out = batched_beam_search(dec.step, dec.init_carry(list(range(n)), 2), batch_size=n, **kw)
    out = {key: val.numpy() for key, val in out.items()}
    for b in range(n):
        hyp = beam_search_single(dec.step, dec.init_carry([b], 2), **kw)
        assert hyp.tokens[1:] == expected[b]
        assert_matches(out, b, hyp, max_steps)


def test_single_returns_best_by_average_log_prob_over_all_tokens():
    # Independent replay: the returned log-probs are the table entries along the path.
    dec = TableDecoder([CASE_2], V)
    hyp = beam_search_single(
        dec.step,
        dec.init_carry([0], 2),
        beam_size=2,
        vocab_size=V,
        max_dec_steps=10,
        min_dec_steps=0,
        **IDS,
    )
    prev = [START_ID, UNK_ID, A]  # what was fed before each generated token
    expected = [np.log(CASE_2[p, tok]) for p, tok in zip(prev, hyp.tokens[1:], strict=True)]
    np.testing.assert_allclose(hyp.log_probs[1:], expected, rtol=1e-6)
    assert hyp.carry["t"].numpy() == 3


def test_tile_beams_row_order():
    x = {"a": tf.constant([[1, 2], [3, 4], [5, 6]]), "b": np.arange(3)}
    tiled = tile_beams(x, 2)
    np.testing.assert_array_equal(
        tiled["a"].numpy(), [[1, 2], [1, 2], [3, 4], [3, 4], [5, 6], [5, 6]]
    )
    np.testing.assert_array_equal(tiled["b"].numpy(), [0, 0, 1, 1, 2, 2])


def test_rejects_bad_arguments():
    dec = TableDecoder([CASE_1], V)
    with pytest.raises(ValueError, match="top 2\\*beam_size"):
        beam_search_single(
            dec.step,
            dec.init_carry([0], 4),
            beam_size=4,
            vocab_size=V,
            max_dec_steps=3,
            min_dec_steps=0,
            **IDS,
        )
    with pytest.raises(ValueError, match="max_dec_steps"):
        beam_search_single(
            dec.step,
            dec.init_carry([0], 2),
            beam_size=2,
            vocab_size=V,
            max_dec_steps=0,
            min_dec_steps=0,
            **IDS,
        )


# --------------------------------------------------------------------------------------
# (b) batched == one article at a time, random decoders and configurations.


def random_configs(n, seed):
    rng = np.random.default_rng(seed)
    for i in range(n):
        k = int(rng.integers(1, 5))
        yield dict(
            seed=int(rng.integers(1 << 30)) + i,
            batch=int(rng.integers(1, 5)),
            k=k,
            vocab=int(rng.integers(max(5, 2 * k), 16)),
            n_oov=int(rng.integers(0, 4)),
            t_enc=int(rng.integers(2, 8)),
            max_steps=int(rng.integers(1, 16)),
            min_steps=int(rng.integers(0, 6)),
            stop_bias=float(rng.uniform(-1, 3)),
        )


def check_batched_against_single(cfg, **extras):
    dec = ToyRNN(
        cfg["seed"],
        cfg["batch"],
        cfg["vocab"],
        cfg["n_oov"],
        cfg["t_enc"],
        stop_bias=cfg["stop_bias"],
    )
    kw = dict(max_dec_steps=cfg["max_steps"], min_dec_steps=cfg["min_steps"], **extras)
    out = run_batched(dec, cfg["batch"], cfg["k"], **kw)
    hyps = [run_single(dec, b, cfg["k"], **kw) for b in range(cfg["batch"])]
    for b, hyp in enumerate(hyps):
        assert_matches(out, b, hyp, cfg["max_steps"])
    return dec, out, hyps


def test_batched_equals_single_on_random_decoders():
    mixed_batches = 0  # batches where one article stopped early while another ran on
    endings = set()
    for cfg in random_configs(6, seed=2):
        _, _, hyps = check_batched_against_single(cfg)
        stopped = [h.latest_token == STOP_ID for h in hyps]
        endings.update(stopped)
        mixed_batches += len({len(h.tokens) for h in hyps}) > 1 and any(stopped)
    assert endings == {True, False} and mixed_batches >= 2


@pytest.mark.parametrize("min_compact_size", [1, 3])
def test_compacting_search_equals_single(min_compact_size):
    """With `articles` the search drops finished articles (batches of 9 -> 5 -> 3 -> 2 ->
    1 rows, or down to 3) and still returns what the one-article search returns; fewer
    decoder rows are computed than without compaction."""
    saved = 0
    for seed, k, stop_bias, extras in [
        (5, 2, 2.5, {}),
        (6, 3, 1.5, {}),
        (8, 2, 2.0, {"trigram_blocking": True}),
        (9, 1, 3.0, {"length_penalty": 1.2}),
    ]:
        batch, max_steps, min_steps = 9, 14, 2
        dec = ToyRNN(seed, batch, 10, 2, 5, stop_bias=stop_bias)
        kw = dict(max_dec_steps=max_steps, min_dec_steps=min_steps, **extras)
        hyps = [run_single(dec, b, k, **kw) for b in range(batch)]
        rows = {}
        for smallest in (min_compact_size, batch + 1):  # the second never compacts
            rows[smallest] = tf.Variable(0)
            out = batched_beam_search(
                dec.article_step_fn(k, rows[smallest]),
                dec.init_carry(range(batch), k),
                articles={"enc": tf.constant(dec.enc)},
                batch_size=batch,
                beam_size=k,
                vocab_size=dec.vocab_size,
                min_compact_size=smallest,
                **IDS,
                **kw,
            )
            out = {key: v.numpy() for key, v in out.items()}
            for b, hyp in enumerate(hyps):
                assert_matches(out, b, hyp, max_steps)
        assert len(set(out["lengths"])) > 2  # articles really ended at different steps
        compacted, plain = int(rows[min_compact_size].numpy()), int(rows[batch + 1].numpy())
        assert plain % (batch * k) == 0 and compacted <= plain
        saved += plain - compacted
    assert saved > 0


def test_segment_sizes():
    assert _segment_sizes(32, 4) == [32, 16, 8, 4]
    assert _segment_sizes(9, 1) == [9, 5, 3, 2, 1]
    assert _segment_sizes(3, 4) == [3]
    assert _segment_sizes(32, None) == [32]
    assert _segment_sizes(tf.constant(32), 4)[0] is not None  # dynamic: no compaction
    assert len(_segment_sizes(tf.constant(32), 4)) == 1


def test_batched_matches_replayed_decoder_path():
    """Independent check of the backtracking: teacher-force the chosen tokens.

    Also runs the search in a tf.function whose batch dimension is unknown (the model's
    decoder retraces with reduce_retracing), with batch_size a tensor.
    """
    dec = ToyRNN(7, 3, 11, 2, 5, stop_bias=1.0)
    enc = tf.constant(dec.enc)  # [B, T, H]

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, 5, 6], tf.float64),
            tf.TensorSpec([None, 6], tf.float64),
        ]
    )
    def search(enc, h0):
        enc_tiled = tile_beams(enc, 3)
        step = dec.step_fn_over(enc_tiled)
        carry = tile_beams({"h": h0, "cov": tf.zeros_like(enc[:, :, 0])}, 3)
        return batched_beam_search(
            step,
            carry,
            batch_size=tf.shape(enc)[0],
            beam_size=3,
            vocab_size=dec.vocab_size,
            max_dec_steps=9,
            min_dec_steps=2,
            **IDS,
        )

    out = {key: val.numpy() for key, val in search(enc, tf.constant(dec.h0)).items()}
    assert out["tokens"].shape == (3, 9) and out["attn_dists"].shape == (3, 9, 5)
    # Same graph, two articles: each article's search ignores the others.
    two = search(enc[1:], tf.constant(dec.h0[1:]))
    for key, val in two.items():
        np.testing.assert_allclose(val.numpy(), out[key][1:], atol=1e-6)
    for b in range(3):
        step, carry = dec.step_fn([b], 3), dec.init_carry([b], 3)
        prev, total = START_ID, np.float32(0.0)
        for i in range(out["lengths"][b]):
            feed = tf.fill([3], prev if prev < dec.vocab_size else UNK_ID)
            probs, attn, p_gen, carry = step(feed, carry)
            tok = int(out["tokens"][b, i])
            total = np.float32(total + np.log(probs.numpy()[0, tok]))
            np.testing.assert_allclose(out["attn_dists"][b, i], attn.numpy()[0], atol=1e-6)
            np.testing.assert_allclose(out["p_gens"][b, i], p_gen.numpy()[0], atol=1e-6)
            prev = tok
        np.testing.assert_allclose(out["scores"][b], total / (out["lengths"][b] + 1), atol=1e-5)


def test_batched_equals_single_with_ties():
    """Quantised tables full of exact ties: both searches break them the same way."""
    rng = np.random.default_rng(3)
    v, v_ext, batch = 7, 9, 4
    tables = rng.integers(1, 4, size=(batch, v, v_ext)).astype(np.float32)
    tables /= tables.sum(-1, keepdims=True)
    dec = TableDecoder(tables, v, t_enc=4)
    for k, max_steps, min_steps in [(3, 6, 1)]:
        kw = dict(
            beam_size=k, vocab_size=v, max_dec_steps=max_steps, min_dec_steps=min_steps, **IDS
        )
        out = batched_beam_search(
            dec.step, dec.init_carry(list(range(batch)), k), batch_size=batch, **kw
        )
        out = {key: val.numpy() for key, val in out.items()}
        for b in range(batch):
            hyp = beam_search_single(dec.step, dec.init_carry([b], k), **kw)
            assert_matches(out, b, hyp, max_steps)


def test_batched_jit_compiles_and_agrees():
    cfg = dict(
        seed=11, batch=3, k=2, vocab=9, n_oov=2, t_enc=4, max_steps=8, min_steps=1, stop_bias=1.5
    )
    dec = ToyRNN(cfg["seed"], 3, 9, 2, 4, stop_bias=1.5)
    out = run_batched(dec, 3, 2, max_dec_steps=8, min_dec_steps=1, jit_compile=True)
    # Also compacting (3 -> 2 -> 1 rows), all in one XLA computation.
    compacted = batched_beam_search(
        dec.article_step_fn(2),
        dec.init_carry(range(3), 2),
        articles={"enc": tf.constant(dec.enc)},
        batch_size=3,
        min_compact_size=1,
        beam_size=2,
        vocab_size=9,
        max_dec_steps=8,
        min_dec_steps=1,
        jit_compile=True,
        **IDS,
    )
    compacted = {key: v.numpy() for key, v in compacted.items()}
    for b in range(3):
        hyp = run_single(dec, b, 2, max_dec_steps=8, min_dec_steps=1)
        assert_matches(out, b, hyp, 8)
        assert_matches(compacted, b, hyp, 8)


# --------------------------------------------------------------------------------------
# (c) trigram blocking, (d) extras off = the original.

CYCLE_V = 9  # a b c d, one OOV (8)
CYCLE = table(
    CYCLE_V,
    10,
    {
        START_ID: {A: 0.6, B_: 0.1, C_: 0.1, D_: 0.1, STOP_ID: 0.05, 8: 0.05},
        A: {B_: 0.7, C_: 0.1, D_: 0.1, A: 0.05, STOP_ID: 0.05},
        B_: {C_: 0.7, A: 0.1, D_: 0.1, B_: 0.05, STOP_ID: 0.05},
        C_: {A: 0.7, B_: 0.1, D_: 0.1, C_: 0.05, STOP_ID: 0.05},
        D_: {A: 0.4, B_: 0.3, C_: 0.1, D_: 0.1, STOP_ID: 0.1},
    },
)


def test_trigram_blocking_never_repeats_a_trigram():
    dec = TableDecoder([CYCLE, CYCLE[:, ::-1].copy()], CYCLE_V)
    kw = dict(beam_size=2, vocab_size=CYCLE_V, max_dec_steps=12, min_dec_steps=20, **IDS)
    # Without blocking the a-b-c cycle repeats.
    plain = beam_search_single(dec.step, dec.init_carry([0], 2), **kw)
    assert len(set(trigrams(plain.tokens))) < len(trigrams(plain.tokens))
    out = batched_beam_search(
        dec.step, dec.init_carry([0, 1], 2), batch_size=2, trigram_blocking=True, **kw
    )
    out = {key: val.numpy() for key, val in out.items()}
    for b in range(2):
        hyp = beam_search_single(dec.step, dec.init_carry([b], 2), trigram_blocking=True, **kw)
        assert_matches(out, b, hyp, 12)
        gen = out["tokens"][b, : out["lengths"][b]].tolist()
        assert len(gen) == 12 and len(set(trigrams(gen))) == len(trigrams(gen))


def test_trigram_blocking_batched_equals_single_on_random_decoders():
    # A tiny vocabulary and long summaries: blocking bites.
    cfg = next(random_configs(1, seed=1))
    cfg.update(vocab=max(5, 2 * cfg["k"]), n_oov=1, max_steps=14, min_steps=40)
    # Three generable ids ([UNK] [PAD] [START]; [STOP] is discarded below min_dec_steps)
    # make at most 27 trigrams: every beam empties before 35 steps and the search stops
    # on its last non-empty beam.
    tiny = dict(
        seed=5, batch=3, k=2, vocab=4, n_oov=0, t_enc=3, max_steps=35, min_steps=50, stop_bias=0.0
    )
    for config in (cfg, tiny):
        _, out, hyps = check_batched_against_single(config, trigram_blocking=True)
        for h in hyps:
            gen = h.tokens[1:]
            assert len(set(trigrams(gen))) == len(trigrams(gen))
    assert all(len(h.tokens) - 1 < 35 for h in hyps)
    assert len({len(h.tokens) for h in hyps}) > 1  # the articles froze at different steps


def test_length_penalty_batched_equals_single():
    cfg = next(random_configs(1, seed=4))
    _, _, hyps = check_batched_against_single(cfg, length_penalty=1.5)
    for h in hyps:  # GNMT: log-prob sum / ((5 + generated tokens) / 6) ** alpha
        g = len(h.tokens) - 1
        np.testing.assert_allclose(h.score, sum(h.log_probs) / ((5 + g) / 6) ** 1.5, rtol=1e-5)


def test_extras_off_is_the_original():
    # Explicitly off in the batched search = the reference's default (original) path,
    # whose hand-traced cases are above.
    cfg = next(random_configs(1, seed=5))
    _, _, hyps = check_batched_against_single(cfg, trigram_blocking=False, length_penalty=None)
    dec = ToyRNN(
        cfg["seed"],
        cfg["batch"],
        cfg["vocab"],
        cfg["n_oov"],
        cfg["t_enc"],
        stop_bias=cfg["stop_bias"],
    )
    for b, hyp in enumerate(hyps):
        default = run_single(
            dec, b, cfg["k"], max_dec_steps=cfg["max_steps"], min_dec_steps=cfg["min_steps"]
        )
        assert default.tokens == hyp.tokens and default.score == hyp.score
        assert hyp.score == hyp.avg_log_prob


# --------------------------------------------------------------------------------------
# Timing (printed, not asserted).


def test_print_timing_batched_vs_single():
    batch, k, steps = 8, 4, 20
    dec = ToyRNN(123, batch, 40, 3, 20, hidden=16, stop_bias=-2.0)
    kw = dict(beam_size=k, vocab_size=dec.vocab_size, max_dec_steps=steps, min_dec_steps=5, **IDS)
    step, carry = dec.step_fn(range(batch), k), dec.init_carry(range(batch), k)
    search = tf.function(lambda c: batched_beam_search(step, c, batch_size=batch, **kw))
    search(carry)  # trace once
    t0 = time.perf_counter()
    out = search(carry)
    batched_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for b in range(batch):
        run_single(dec, b, k, max_dec_steps=steps, min_dec_steps=5)
    single_s = time.perf_counter() - t0
    print(
        f"\n[beam_search] {batch} articles, K={k}, <= {steps} steps (mean length "
        f"{out['lengths'].numpy().mean():.1f}): batched {batched_s * 1e3:.0f} ms, "
        f"one at a time {single_s * 1e3:.0f} ms ({single_s / batched_s:.0f}x)"
    )


# ------------------------------------------------------------------------------ top-k
def _numpy_top_k(values: np.ndarray, k: int):
    """Largest k per row, ties by lower index (tf.math.top_k's documented order)."""
    order = np.stack([np.lexsort((np.arange(row.size), -row))[:k] for row in values])
    return np.take_along_axis(values, order, axis=1), order


@pytest.mark.parametrize("seed", range(6))
def test_chunked_top_k_equals_top_k_with_ties(seed):
    from pointer_generator.layers.top_k import chunked_top_k

    rng = np.random.default_rng(seed)
    dynamic = tf.function(lambda x, k, c: chunked_top_k(x, k, c), reduce_retracing=True)
    for _ in range(15):
        rows, v = int(rng.integers(1, 9)), int(rng.integers(1, 700))
        k = int(rng.integers(1, min(v, 12) + 1))
        chunk = int(rng.choice([1, 2, 3, 8, 16, 64]))
        # Few distinct values: ties everywhere, across chunk borders; zeros like the
        # probabilities of trigram-blocked tokens; sometimes -inf like log(0).
        values = rng.integers(0, 6, size=(rows, v)).astype(np.float32) / 5
        if rng.random() < 0.3:
            values[rng.random(values.shape) < 0.2] = -np.inf
        want_v, want_i = _numpy_top_k(values, k)
        for got_v, got_i in (
            chunked_top_k(values, k, chunk),
            dynamic(tf.constant(values), k, chunk),
        ):
            np.testing.assert_array_equal(got_i.numpy(), want_i, err_msg=(rows, v, k, chunk))
            np.testing.assert_array_equal(got_v.numpy(), want_v)


def test_chunked_top_k_on_a_vocabulary_sized_row():
    from pointer_generator.layers.top_k import TOP_K_CHUNK, chunked_top_k

    values = tf.nn.softmax(tf.random.stateless_normal([4, 50037], (3, 4)) * 4).numpy()
    values[1, 1000:1010] = values[1].max()  # a tie at the top, inside one chunk
    values[2, [5, TOP_K_CHUNK * 7 + 1, 49000]] = 1.0  # tied maxima in far-apart chunks
    got_v, got_i = chunked_top_k(values, 8)
    want_v, want_i = _numpy_top_k(values, 8)
    np.testing.assert_array_equal(got_i.numpy(), want_i)
    np.testing.assert_array_equal(got_v.numpy(), want_v)


def test_large_beams_order_candidates_by_a_sort_exactly_as_the_pairwise_count(monkeypatch):
    """Beam 50 has 5,000 candidates per article: the counts come from a stable sort
    there; they must equal the pairwise definition (ties by candidate index, -inf
    scores of blocked words included, invalid candidates never counted)."""
    from pointer_generator.search import beam_search

    rng = np.random.default_rng(0)
    b, c = 3, 40
    scores = rng.integers(0, 6, size=(b, c)).astype(np.float32)  # many ties
    scores[rng.random((b, c)) < 0.2] = -np.inf
    valid = tf.constant(rng.random((b, c)) < 0.8)
    is_stop = tf.constant(rng.random((b, c)) < 0.3)
    index = tf.range(c)
    earlier = index[:, None] < index[None, :]
    want = beam_search._counts_before(tf.constant(scores), valid, is_stop, earlier)
    monkeypatch.setattr(beam_search, "PAIRWISE_MAX_CANDIDATES", 0)
    got = beam_search._counts_before(tf.constant(scores), valid, is_stop, earlier)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_array_equal(w.numpy(), g.numpy())


def test_batched_equals_single_with_the_sorted_candidate_order(monkeypatch):
    """The whole search through the sort path (as beams above 16 take it) on random
    decoders and on a table full of ties."""
    from pointer_generator.search import beam_search

    monkeypatch.setattr(beam_search, "PAIRWISE_MAX_CANDIDATES", 0)
    for cfg in random_configs(4, seed=7):
        check_batched_against_single(cfg)
    rng = np.random.default_rng(3)
    v, batch = 7, 3
    tables = rng.integers(1, 4, size=(batch, v, 9)).astype(np.float32)
    tables /= tables.sum(-1, keepdims=True)
    dec = TableDecoder(tables, v, t_enc=4)
    kw = dict(beam_size=3, vocab_size=v, max_dec_steps=6, min_dec_steps=1, **IDS)
    out = batched_beam_search(
        dec.step, dec.init_carry(list(range(batch)), 3), batch_size=batch, **kw
    )
    out = {key: val.numpy() for key, val in out.items()}
    for b in range(batch):
        assert_matches(out, b, beam_search_single(dec.step, dec.init_carry([b], 3), **kw), 6)
