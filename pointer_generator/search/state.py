"""The batched beam search's loop state and the operations on it that know no scores.

`SearchState` holds every article's hypotheses, results and history as [S, K] tensors
(S = the articles in the current, possibly compacted, batch); `beam_search.py` advances
it one step at a time. Here: building it, selecting and reordering its rows (compaction),
and following the parent pointers back once the loop ends.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import tensorflow as tf


def select_rows(mask_rows: tf.Tensor, new: Any, old: Any) -> Any:
    """Per row of N: `new` where mask_rows [N] else `old`, for every leaf of a nest."""

    def pick(a, b):
        m = tf.reshape(mask_rows, [-1] + [1] * (a.shape.rank - 1))
        return tf.where(m, a, b)

    return tf.nest.map_structure(pick, new, old)


class SearchState(NamedTuple):
    """The batched search's loop state; S = the rows (articles) in the current batch.

    t [S]: each article's step (the number of steps it has run; frozen once finished).
    latest [S, K]: each hypothesis' last token. carry: the step function's carry, rows
    s*K + k. beam_sum [S, K]: log-prob sums. alive [S, K]: slot holds a hypothesis.
    finished [S]. n_steps [S]: steps the article advanced. res_count [S], res_score /
    res_end / res_parent [S, K]: the result slots (score, step of the [STOP], parent
    slot). history [S, K, M or 0]: generated tokens (trigram blocking only). articles:
    the per-article nest given to the step function. index [S]: each row's article in
    the whole batch.
    """

    t: tf.Tensor
    latest: tf.Tensor
    carry: Any
    beam_sum: tf.Tensor
    alive: tf.Tensor
    finished: tf.Tensor
    n_steps: tf.Tensor
    res_count: tf.Tensor
    res_score: tf.Tensor
    res_end: tf.Tensor
    res_parent: tf.Tensor
    history: tf.Tensor
    articles: Any
    index: tf.Tensor


# What the end of the search reads of every article.
FINAL_FIELDS = ("beam_sum", "alive", "n_steps", "res_count", "res_score", "res_end", "res_parent")


def initial_state(
    b, k: int, carry: Any, articles: Any, start_id: int, history_len: int
) -> SearchState:
    """The search state of b articles at their step 0 (carry already [b*K, ...]);
    history_len: the token history kept per hypothesis (0 without trigram blocking)."""
    zeros_bk = tf.zeros([b, k], tf.int32)
    return SearchState(
        t=tf.zeros([b], tf.int32),
        latest=tf.fill([b, k], start_id),
        carry=carry,
        beam_sum=tf.zeros([b, k]),
        alive=tf.ones([b, k], tf.bool),
        finished=tf.zeros([b], tf.bool),
        n_steps=tf.zeros([b], tf.int32),
        res_count=tf.zeros([b], tf.int32),
        res_score=tf.zeros([b, k]),
        res_end=zeros_bk,
        res_parent=zeros_bk,
        history=tf.zeros([b, k, history_len], tf.int32),
        articles=tf.nest.map_structure(tf.convert_to_tensor, articles),
        index=tf.range(b),
    )


def beam_rows(articles: tf.Tensor, k: int) -> tf.Tensor:
    """int32 [A*K]: the decoder rows a*K .. a*K + K-1 of each article index in [A]."""
    return tf.reshape(articles[:, None] * k + tf.range(k)[None, :], [-1])


def gather_articles(state: SearchState, order: tf.Tensor, k: int) -> SearchState:
    """The state of the articles `order` [S'] only, in that order (each with its K carry
    rows)."""
    rows = beam_rows(order, k)
    parts = {
        name: tf.nest.map_structure(
            lambda x, idx=(rows if name == "carry" else order): tf.gather(x, idx), value
        )
        for name, value in state._asdict().items()
    }
    return SearchState(**parts)


def compact(state: SearchState, size: int, k: int) -> SearchState:
    """The loop state for `size` rows: the running articles first (in batch order), then
    finished ones to fill up."""
    # A stable sort on the finished flag: running rows first, each group in row order.
    return gather_articles(
        state, tf.argsort(tf.cast(state.finished, tf.int32), stable=True)[:size], k
    )


def backtrack(tas, steps_run, last, has_result, end_parent, end_slot, stop_id, pad_id, m):
    """Follow parent pointers from each article's last token back to step 0.

    History (per step t, read from the TensorArrays): token and parent of every new beam
    slot [B, K], the step's attention [B, K, T] and p_gen [B, K] per expanded slot.
    A result ends with [STOP] from slot end_parent at step `last`; a last-beam
    hypothesis is new beam slot end_slot of step `last`.

    Returns tokens int32 [B, M], attention float32 [B, M, T], p_gens float32 [B, M].
    """
    ta_tok, ta_par, ta_attn, ta_pgen = tas
    b = tf.shape(last)[0]
    outs = (
        tf.TensorArray(tf.int32, size=m),
        tf.TensorArray(tf.float32, size=m),
        tf.TensorArray(tf.float32, size=m),
    )

    def body(t, slot, outs):
        # Steps the loop never ran lie beyond every article's end; read a written one.
        tt = tf.minimum(t, steps_run - 1)
        direct = tf.equal(t, last) & has_result  # the [STOP] itself
        tok = tf.where(direct, stop_id, tf.gather(ta_tok.read(tt), slot, batch_dims=1))
        cur = tf.where(direct, end_parent, tf.gather(ta_par.read(tt), slot, batch_dims=1))
        keep = t <= last
        attn = tf.gather(ta_attn.read(tt), cur, batch_dims=1)
        p_gen = tf.gather(ta_pgen.read(tt), cur, batch_dims=1)
        outs = (
            outs[0].write(t, tf.where(keep, tok, pad_id)),
            outs[1].write(t, tf.where(keep[:, None], attn, tf.zeros_like(attn))),
            outs[2].write(t, tf.where(keep, p_gen, tf.zeros_like(p_gen))),
        )
        return t - 1, tf.where(keep, cur, slot), outs

    slot0 = tf.where(has_result, tf.zeros([b], tf.int32), end_slot)
    _, _, outs = tf.while_loop(
        lambda t, *_: t >= 0, body, (tf.constant(m - 1), slot0, outs), maximum_iterations=m
    )
    tokens = tf.transpose(outs[0].stack(), [1, 0])
    attn = tf.transpose(outs[1].stack(), [1, 0, 2])
    p_gens = tf.transpose(outs[2].stack(), [1, 0])
    return tokens, attn, p_gens
