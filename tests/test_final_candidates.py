"""final_candidates: the top 2K of the final distribution (paper eq. 9) from the top
logits and the article's words, checked against a NumPy reference that builds the whole
extended-vocabulary distribution."""

import numpy as np
import pytest
import tensorflow as tf

from pointer_generator.layers.top_k import Candidates, top_of
from pointer_generator.models import final_candidates as fc
from tests.reference_search import beam_search_single

B, K, T, H = 3, 2, 12, 8


def _reference_final(x, kernel, bias, p_gen, attn, ext, n_oovs):
    """Eq. 9 in NumPy: p_gen softmax(x W + b) on the vocabulary, zeros for the article
    OOVs, plus (1 - p_gen) times the attention added onto each position's id."""
    logits = x.astype(np.float64) @ kernel + bias
    vocab = np.exp(logits - logits.max(1, keepdims=True))
    vocab /= vocab.sum(1, keepdims=True)
    final = np.concatenate([p_gen * vocab, np.zeros((len(x), n_oovs))], axis=1)
    if attn is not None:
        for r in range(len(x)):
            np.add.at(final[r], ext[r], (1 - p_gen[r, 0]) * attn[r])
    return final


def _case(v, seed, scale=3.0, n_oovs=3):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((B * K, H)).astype(np.float32)
    kernel = (rng.standard_normal((H, v)) * scale).astype(np.float32)
    bias = rng.standard_normal(v).astype(np.float32)
    lens = np.array([T, T - 4, 5])
    mask = (np.arange(T)[None, :] < lens[:, None]).astype(np.float32)
    ext = rng.integers(4, min(v, 40), size=(B, T))  # small id range: repeated words
    ext[0, [1, 6]] = v  # an article OOV, twice
    ext[1, 2] = v + 2
    ext[0, 3] = ext[0, 9]  # and an in-vocabulary repeat for sure
    ext = np.where(mask > 0, ext, 0).astype(np.int32)
    energies = rng.standard_normal((B * K, T)) * 2
    mask_k = np.repeat(mask, K, axis=0)
    attn = np.where(mask_k > 0, np.exp(energies), 0.0)
    attn = (attn / attn.sum(1, keepdims=True)).astype(np.float32)
    p_gen = rng.uniform(0.05, 0.95, size=(B * K, 1)).astype(np.float32)
    # A top-logit word that is also in the article, so that its copy mass must be added.
    top_word = int(np.argmax(x[0] @ kernel + bias))
    ext[0, 4] = top_word
    return dict(
        x=x, kernel=kernel, bias=bias, mask=mask, ext=ext, attn=attn, p_gen=p_gen, n_oovs=n_oovs
    )


def _candidates(c, k, pointer=True, pieces=fc.PIECES):
    proj = fc.vocab_projection(c["kernel"], c["bias"], pieces)
    words = fc.article_words(c["ext"], c["mask"], K) if pointer else None
    setup = fc.CandidateSetup(proj, words, k)
    return fc.final_candidates(
        tf.constant(c["x"]),
        tf.constant(c["p_gen"]) if pointer else None,
        tf.constant(c["attn"]),
        setup,
    )


@pytest.mark.parametrize("v,pieces", [(50, 4), (1000, 4), (2200, 4), (2200, 1), (5000, 7)])
def test_top_candidates_equal_the_top_of_the_whole_distribution(v, pieces):
    # v=2200 with 4 pieces pads to 4 x 768 columns: the last piece is all padding.
    c = _case(v, seed=v + pieces)
    k = 2 * K
    cands = _candidates(c, k, pieces=pieces)
    assert isinstance(cands, Candidates)
    top_p, top_ids = (t.numpy() for t in top_of(cands, k, None))
    ext_k = np.repeat(c["ext"], K, axis=0)
    ref = _reference_final(
        c["x"], c["kernel"], c["bias"], c["p_gen"], c["attn"], ext_k, c["n_oovs"]
    )
    ref_ids = np.argsort(-ref, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(top_ids, ref_ids)
    np.testing.assert_allclose(top_p, np.take_along_axis(ref, ref_ids, 1), rtol=2e-5)
    # Every used slot holds the right probability, and no id is used twice in a row.
    probs, ids = cands.probs.numpy(), cands.ids.numpy()
    for r in range(len(probs)):
        used = probs[r] >= 0
        assert len(set(ids[r][used])) == used.sum()
        np.testing.assert_allclose(probs[r][used], ref[r][ids[r][used]], rtol=2e-5, atol=1e-12)


def test_baseline_candidates_are_the_top_of_the_vocabulary_softmax():
    c = _case(700, seed=4)
    k = 2 * K
    cands = _candidates(c, k, pointer=False)
    assert cands.probs.shape == (B * K, k)
    ref = _reference_final(c["x"], c["kernel"], c["bias"], np.ones((B * K, 1)), None, None, 0)
    ref_ids = np.argsort(-ref, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(cands.ids.numpy(), ref_ids)
    np.testing.assert_allclose(cands.probs.numpy(), np.take_along_axis(ref, ref_ids, 1), rtol=2e-5)


def test_vocab_logits_normaliser_and_chunk_maxima():
    c = _case(2200, seed=9, scale=20.0)  # large logits: the normaliser must not overflow
    proj = fc.vocab_projection(c["kernel"], c["bias"], 4)
    logits, chunk_max, log_norm = (t.numpy() for t in fc.vocab_logits(tf.constant(c["x"]), proj))
    ref = c["x"].astype(np.float64) @ c["kernel"] + c["bias"]
    np.testing.assert_allclose(logits[:, :2200], ref, rtol=1e-4, atol=1e-3)
    assert np.all(np.isneginf(logits[:, 2200:]))
    m = ref.max(1)
    np.testing.assert_allclose(log_norm, m + np.log(np.exp(ref - m[:, None]).sum(1)), rtol=1e-6)
    np.testing.assert_allclose(chunk_max, logits.reshape(len(logits), -1, fc.CHUNK).max(-1))


def test_article_words_index_first_positions_and_copy_slots():
    ext = np.array([[5, 7, 5, 9, 7, 0], [4, 4, 4, 8, 0, 0]], np.int32)
    mask = np.array([[1, 1, 1, 1, 1, 0], [1, 1, 1, 1, 0, 0]], np.float32)
    w = fc.article_words(ext, mask, beams=2)
    assert w.ids.shape == (4, 6)
    np.testing.assert_array_equal(w.first.numpy()[0], [1, 1, 0, 1, 0, 0])
    np.testing.assert_array_equal(w.first.numpy()[2], [1, 0, 0, 1, 0, 0])
    np.testing.assert_array_equal(w.valid.numpy()[3], [1, 1, 1, 1, 0, 0])
    seg = w.segment.numpy().reshape(4, 6)
    # Row r's slots are r * 7 + (first position with the same id); padding -> r * 7 + 6.
    np.testing.assert_array_equal(seg[0], [0, 1, 0, 3, 1, 6])
    np.testing.assert_array_equal(seg[3], 21 + np.array([0, 0, 0, 3, 6, 6]))


def test_one_article_search_takes_candidates_like_a_whole_distribution():
    """beam_search_single on a step returning Candidates == on the whole distribution."""
    rng = np.random.default_rng(2)
    v, k = 30, 3
    table = rng.standard_normal((v, v)).astype(np.float32) * 3

    def dense_step(tokens, carry):
        logits = tf.gather(table, tokens) + carry
        return tf.nn.softmax(logits), tf.ones([k, 4]) / 4, tf.ones([k]), carry * 0.5

    def cand_step(tokens, carry):
        probs, attn, p_gen, carry = dense_step(tokens, carry)
        # Shuffled, with an unused slot and the probabilities of all ids.
        order = np.arange(v)[::-1].copy()
        ids = tf.constant(np.tile(np.append(order, 0), (k, 1)), tf.int32)
        p = tf.concat([tf.gather(probs, order, axis=1), -tf.ones([k, 1])], axis=1)
        return Candidates(p, ids), attn, p_gen, carry

    kw = dict(
        beam_size=k, vocab_size=v, max_dec_steps=8, min_dec_steps=2, start_id=2, stop_id=3, unk_id=0
    )
    carry = tf.constant(rng.standard_normal((1, v)).astype(np.float32))
    a = beam_search_single(dense_step, carry, **kw)
    b = beam_search_single(cand_step, carry, **kw)
    assert a.tokens == b.tokens
    assert float(a.score) == pytest.approx(float(b.score), abs=1e-6)
    with pytest.raises(ValueError, match="trigram blocking"):
        beam_search_single(cand_step, carry, trigram_blocking=True, **kw)


def test_a_blocked_id_leaves_the_top_2k_of_the_rest_among_the_candidates():
    """--block_unk on the candidates: [UNK] has the largest logit in every row and p_gen is
    near 1, so the 2K+1-th logit belongs in the blocked distribution's top 2K; the
    candidates' spare entry (`candidate_count`) holds it."""
    from pointer_generator.data.vocab import UNK_ID
    from pointer_generator.search.rules import block_token

    c = _case(1000, seed=12)
    c["bias"][UNK_ID] = 100.0
    c["p_gen"][:] = 0.99
    k = 2 * K
    cands = block_token(_candidates(c, fc.candidate_count(K)), UNK_ID)
    top_p, top_ids = (t.numpy() for t in top_of(cands, k, None))
    ext_k = np.repeat(c["ext"], K, axis=0)
    ref = _reference_final(
        c["x"], c["kernel"], c["bias"], c["p_gen"], c["attn"], ext_k, c["n_oovs"]
    )
    ref[:, UNK_ID] = 0.0
    ref_ids = np.argsort(-ref, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(top_ids, ref_ids)
    np.testing.assert_allclose(top_p, np.take_along_axis(ref, ref_ids, 1), rtol=2e-5)
    assert fc.candidate_count(K) == 2 * K + 1


def test_blocking_leaves_unused_candidate_slots_unused():
    from pointer_generator.search.rules import block_token

    cands = Candidates(tf.constant([[0.5, 0.2, -1.0, -1.0]]), tf.constant([[0, 7, 0, 0]]))
    out = block_token(cands, 0)
    np.testing.assert_array_equal(out.probs.numpy(), np.float32([[0.0, 0.2, -1.0, -1.0]]))
