"""Continuous batching (slot_search.SlotSearch): every article's summary is the
one-article search's, however the articles share and refill the slots."""

import numpy as np
import pytest
import tensorflow as tf

from pointer_generator.slot_search import SlotSearch
from pointer_generator.vocab import PAD_ID, STOP_ID
from tests.test_beam_search import IDS, ToyRNN, run_single


def _groups(dec, k, sizes):
    """The articles 0.. of `dec` in groups of `sizes`: (keys, init carry, {"enc"})."""
    start = 0
    for n in sizes:
        ids = list(range(start, start + n))
        yield ids, dec.init_carry(ids, k), {"enc": tf.constant(dec.enc[ids])}
        start += n


@pytest.mark.parametrize("slots,refill,sizes,k,stop_bias,extras", [
    (3, 1, [2, 3, 1, 4, 1], 2, 2.0, {}),
    (4, 2, [5, 6], 3, 1.5, {}),
    (2, 2, [11], 2, 2.5, {"trigram_blocking": True}),
    (4, 3, [1] * 11, 1, 3.0, {"length_penalty": 1.2}),
    (16, 4, [11], 2, 2.0, {}),  # more slots than articles
    (3, 2, [4, 7], 2, 2.0, {"jit_compile": True}),  # each segment one XLA computation
])
def test_slot_search_equals_one_article_search(slots, refill, sizes, k, stop_bias, extras):
    n, max_steps, min_steps = sum(sizes), 14, 2
    dec = ToyRNN(7 + slots, n, 10, 2, 5, stop_bias=stop_bias)
    extras = dict(extras)
    jit = extras.pop("jit_compile", False)
    kw = dict(max_dec_steps=max_steps, min_dec_steps=min_steps, **extras)
    search = SlotSearch(dec.article_step_fn(k), num_slots=slots, refill=refill, beam_size=k,
                        vocab_size=dec.vocab_size, jit_compile=jit, **IDS, **kw)
    order, lengths = [], set()
    for key, out in search.run(_groups(dec, k, sizes)):
        hyp = run_single(dec, key, k, **kw)
        gen = hyp.tokens[1:]
        np.testing.assert_array_equal(out["tokens"], gen)
        assert out["score"] == pytest.approx(float(hyp.score), abs=1e-5)
        np.testing.assert_allclose(out["attn_dists"], np.stack(hyp.attn_dists), atol=1e-6)
        np.testing.assert_allclose(out["p_gens"], hyp.p_gens, atol=1e-6)
        order.append(key)
        lengths.add(len(gen))
    assert sorted(order) == list(range(n))
    assert len(lengths) > 2  # articles really ended at different steps


def test_slot_search_refills_slots_and_computes_fewer_rows():
    """11 articles through 3 slots: articles start as others end, and fewer decoder rows
    are computed than by batches of 3 that each run until their last article ends."""
    from pointer_generator.beam_search import batched_beam_search
    n, k, slots = 12, 2, 3
    dec = ToyRNN(21, n, 10, 2, 5, stop_bias=2.0)
    kw = dict(max_dec_steps=14, min_dec_steps=2)
    rows = tf.Variable(0)
    search = SlotSearch(dec.article_step_fn(k, rows), num_slots=slots, refill=1, beam_size=k,
                        vocab_size=dec.vocab_size, **IDS, **kw)
    results = dict(search.run(_groups(dec, k, [n])))
    slot_rows = int(rows.numpy())
    batch_rows = tf.Variable(0)
    for lo in range(0, n, slots):
        ids = list(range(lo, lo + slots))
        out = batched_beam_search(dec.article_step_fn(k, batch_rows), dec.init_carry(ids, k),
                                  articles={"enc": tf.constant(dec.enc[ids])},
                                  batch_size=slots, beam_size=k, vocab_size=dec.vocab_size,
                                  min_compact_size=None, **IDS, **kw)
        out = {name: v.numpy() for name, v in out.items()}
        for i, key in enumerate(ids):
            length = int(out["lengths"][i])
            np.testing.assert_array_equal(results[key]["tokens"], out["tokens"][i, :length])
            assert (out["tokens"][i, length:] == PAD_ID).all()
    assert slot_rows < int(batch_rows.numpy())
    assert any(r["tokens"][-1] == STOP_ID for r in results.values())


def test_slot_search_checks_its_arguments():
    dec = ToyRNN(1, 2, 10, 2, 5)
    with pytest.raises(ValueError, match="refill"):
        SlotSearch(dec.article_step_fn(2), num_slots=2, refill=3, beam_size=2,
                   vocab_size=10, max_dec_steps=4, min_dec_steps=0, **IDS)
    with pytest.raises(ValueError, match="num_slots"):
        SlotSearch(dec.article_step_fn(2), num_slots=0, beam_size=2, vocab_size=10,
                   max_dec_steps=4, min_dec_steps=0, **IDS)
    empty = SlotSearch(dec.article_step_fn(2), num_slots=2, beam_size=2, refill=1,
                       vocab_size=10, max_dec_steps=4, min_dec_steps=0, **IDS)
    assert list(empty.run([])) == []


def test_slot_search_shrinks_its_table_when_draining():
    """Once no article is left to start, the table halves while the running articles
    fit (8 -> 4 -> 2 -> 1 slots here): same summaries, fewer decoder rows computed."""
    n, k = 8, 2
    dec = ToyRNN(33, n, 10, 2, 5, stop_bias=2.0)
    kw = dict(max_dec_steps=14, min_dec_steps=2)
    out, rows = {}, {}
    for smallest in (1, 8):  # the second never shrinks
        rows[smallest] = tf.Variable(0)
        search = SlotSearch(dec.article_step_fn(k, rows[smallest]), num_slots=8, refill=2,
                            beam_size=k, vocab_size=dec.vocab_size, min_slots=smallest,
                            **IDS, **kw)
        out[smallest] = dict(search.run(_groups(dec, k, [n])))
    assert len({len(r["tokens"]) for r in out[1].values()}) > 2
    for key, result in out[1].items():
        hyp = run_single(dec, key, k, **kw)
        np.testing.assert_array_equal(result["tokens"], hyp.tokens[1:])
        np.testing.assert_allclose(result["attn_dists"], out[8][key]["attn_dists"], atol=1e-6)
    assert int(rows[1].numpy()) < int(rows[8].numpy())
