"""Beam search over a one-step decoder (spec section 5): one article, or a whole batch.

The search knows nothing about the model. It drives a *step function*::

    step_fn(tokens, carry) -> (probs, attn, p_gen, new_carry)
      tokens     int32 [N]           latest token of every hypothesis; article-OOV ids
                                     (>= vocab_size) are already replaced by [UNK]
      carry      nested tensors, each [N, ...]   (decoder state, coverage, ...)
      probs      float32 [N, V_ext]  final distribution (extended vocab in pointer mode),
                 or `Candidates`     entries sure to hold its top 2K (not with trigram
                                     blocking)
      attn       float32 [N, T]      attention of this step
      p_gen      float32 [N]         generation probability (ones in baseline mode)
      new_carry  same structure as carry

Encoder-side tensors are closed over by the step function, tiled to N rows with
`tile_beams` (row b*K + k is beam k of article b).

* `batched_beam_search` runs B articles x K beams (N = B*K) in one `tf.while_loop`,
  with no Python per step. For each article it returns exactly what the original
  one-article search returns given the same step function (that search, a plain Python
  loop, is the tests' reference: `tests/reference_search.py`).

Two optional extras, off by default, change the search (and are not the original's):
`trigram_blocking` and `length_penalty` (see `docs/beam_search.md`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf

from pointer_generator.data.vocab import PAD_ID
from pointer_generator.layers.top_k import chunked_top_k, top_of
from pointer_generator.models.family import tile_beams  # noqa: F401  (re-exported)
from pointer_generator.search import rules
from pointer_generator.search import state as search_state

StepFn = Callable[[tf.Tensor, Any], tuple[tf.Tensor, tf.Tensor, tf.Tensor, Any]]


# --------------------------------------------------------------------------------------
# Batched: B articles x K beams in one compiled loop.


# A batch is compacted down to this many articles: below it the step's fixed costs
# dominate and each new size costs compilations (docs/performance.md).
MIN_COMPACT_SIZE = 4


def _segment_sizes(batch, min_size: int | None) -> list:
    """Batch sizes the search runs through: [B, ceil(B/2), ...] while >= min_size (at
    least [B]); just [B] without compaction or when B is only known at run time."""
    sizes = [batch]
    if min_size is None or not isinstance(batch, int):
        return sizes
    while sizes[-1] > 1 and -(-sizes[-1] // 2) >= max(min_size, 1):
        sizes.append(-(-sizes[-1] // 2))
    return sizes


def batched_beam_search(
    step_fn: StepFn,
    init_carry: Any,
    *,
    batch_size: int | tf.Tensor,
    beam_size: int,
    vocab_size: int,
    max_dec_steps: int,
    min_dec_steps: int,
    start_id: int,
    stop_id: int,
    unk_id: int,
    trigram_blocking: bool = False,
    length_penalty: float | None = None,
    pad_id: int = PAD_ID,
    jit_compile: bool = False,
    top_k: Callable | None = None,
    articles: Any = None,
    min_compact_size: int | None = MIN_COMPACT_SIZE,
    n_best: bool = False,
) -> dict[str, tf.Tensor]:
    """Beam search for a batch of articles in one `tf.while_loop` (N = B*K rows).

    Identical per article to the original one-article search (`tests/reference_search.py`)
    with the same step function. Called
    eagerly it wraps itself in a fresh `tf.function(jit_compile=jit_compile)` (one trace
    per call); for repeated decoding call it inside your own `tf.function` (with your
    own `jit_compile`; the argument here is then ignored).

    Articles finish at different steps; without `articles` the loop computes every row
    until the batch's last article ends. With `articles` (and a static batch size) the
    search drops finished articles: once at most half of the rows are still running it
    continues with half as many (B, B/2, ... down to `min_compact_size` rows), taking
    the running articles' rows of the carry, of the search state and of `articles`.

    Args:
      step_fn: the one-step decoder, called with N = batch_size * beam_size rows:
        step_fn(tokens, carry), or step_fn(tokens, carry, articles) when `articles` is
        given (then N = rows of `articles` * beam_size, which shrinks as articles finish).
      batch_size: B, a Python int or (inside a tf.function whose batch dimension is not
        static) a scalar int32 tensor such as `tf.shape(enc_batch)[0]`.
      init_carry: nested tensors [B*K, ...] (see `tile_beams`); row b*K is every beam's
        initial carry for article b.
      pad_id: fills `tokens` after each summary's end.
      top_k: the top-k function, `chunked_top_k` by default (`tf.math.top_k` gives the
        same results, slower).
      articles: nested tensors with one row per article [B, ...] (encoder outputs and
        the like) that the step function reads; passed to it each step, with the rows
        of the articles still decoded.
      min_compact_size: the smallest batch the search compacts to; None = never compact.
      beam_size: K. vocab_size: V; fed ids outside [0, V) become `unk_id`.
      max_dec_steps / min_dec_steps: at most this many steps; a [STOP] produced at step
        index < min_dec_steps is discarded.
      trigram_blocking, length_penalty: optional extras, off = the original.
      n_best: also return every article's final hypotheses (for ABS+'s tuning): its
        results (hypotheses ended by [STOP]), or its last beam when it has none.

    Returns:
      tokens      int32   [B, max_dec_steps]  generated ids (after [START], the final
                                              [STOP] included if any), padded with pad_id
      lengths     int32   [B]                 number of generated ids
      scores      float32 [B]                 score of the chosen hypothesis
      attn_dists  float32 [B, max_dec_steps, T]  attention per generated id, 0 after
      p_gens      float32 [B, max_dec_steps]     p_gen per generated id, 0 after
    and with `n_best`:
      nbest_tokens  int32   [B, K, max_dec_steps]  each final hypothesis, as `tokens`
      nbest_lengths int32   [B, K]
      nbest_sums    float32 [B, K]   summed log-probabilities (not length-normalised)
      nbest_valid   bool    [B, K]
    """
    cfg = rules.SearchRules(
        beam_size=beam_size,
        vocab_size=vocab_size,
        max_dec_steps=max_dec_steps,
        min_dec_steps=min_dec_steps,
        start_id=start_id,
        stop_id=stop_id,
        unk_id=unk_id,
        trigram_blocking=trigram_blocking,
        length_penalty=length_penalty,
        top_k=top_k or chunked_top_k,
    )
    if isinstance(batch_size, int) and batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    sizes = _segment_sizes(batch_size, None if articles is None else min_compact_size)
    if articles is None:
        articles = ()  # an empty nest: nothing to gather when compacting

        def call(tokens, carry, _):
            return step_fn(tokens, carry)
    else:
        call = step_fn
    if tf.inside_function():
        return _batched_graph(call, init_carry, articles, batch_size, sizes, cfg, pad_id, n_best)
    fn = tf.function(
        lambda carry, arts: _batched_graph(
            call, carry, arts, batch_size, sizes, cfg, pad_id, n_best
        ),
        jit_compile=jit_compile,
        autograph=False,  # explicit tf.while_loops: nothing to convert
    )
    return fn(init_carry, articles)


# Up to this many candidates per article the counts come from a pairwise comparison
# (C^2 work, no sort); beyond it (large beams: C = 2K^2) from one stable sort.
PAIRWISE_MAX_CANDIDATES = 512


def _counts_before(scores, valid, is_stop, earlier):
    """int32 [B, C] twice: for each candidate, how many valid non-stop and valid stop
    candidates come before it in the original's order (score descending, then
    candidate index)."""
    c = scores.shape[1]
    if c is not None and c <= PAIRWISE_MAX_CANDIDATES:
        s_prev, s_this = scores[:, :, None], scores[:, None, :]
        before = valid[:, :, None] & ((s_prev > s_this) | (tf.equal(s_prev, s_this) & earlier))
        nonstop = tf.reduce_sum(tf.cast(before & (valid & ~is_stop)[:, :, None], tf.int32), 1)
        stop = tf.reduce_sum(tf.cast(before & (valid & is_stop)[:, :, None], tf.int32), 1)
        return nonstop, stop
    # A stable descending sort keeps equal scores in candidate order. NaN scores are
    # never "before" anything in the comparison above; here they sort as lowest.
    keyed = tf.where(tf.math.is_nan(scores), tf.constant(-np.inf, scores.dtype), scores)
    order = tf.argsort(keyed, axis=1, direction="DESCENDING", stable=True)
    rank = tf.argsort(order, axis=1, stable=True)  # each candidate's place in the order

    def exclusive_counts(flags):
        in_order = tf.gather(tf.cast(flags, tf.int32), order, batch_dims=1)
        return tf.gather(tf.cumsum(in_order, axis=1, exclusive=True), rank, batch_dims=1)

    return exclusive_counts(valid & ~is_stop), exclusive_counts(valid & is_stop)


def _first_argmax(scores: tf.Tensor, mask: tf.Tensor) -> tf.Tensor:
    """int32 [B]: first index of the highest masked score in [B, K] (Python's max())."""
    best = tf.reduce_max(tf.where(mask, scores, -np.inf), axis=1, keepdims=True)
    hit = mask & tf.equal(scores, best)
    k = tf.shape(scores)[1]
    first = tf.reduce_min(tf.where(hit, tf.range(k)[None, :], k), axis=1)
    return tf.minimum(first, k - 1)  # all-NaN rows: any slot, never out of range


def _advance(
    step_fn: Callable, state: search_state.SearchState, b, cfg: rules.SearchRules
) -> tuple[search_state.SearchState, tuple]:
    """One step of every running article of `state` (b rows, each at its own step t).

    The original's selection, batched: expand each hypothesis with its top 2K, then scan
    the candidates in score order into the new beam and the results. Finished articles
    are carried unchanged. Returns the new state and what the step records per article,
    for the backtracking: the new beam's tokens and parent slots [b, K], the step's
    attention [b, K, T] and p_gen [b, K] per expanded slot.
    """
    k, m = cfg.beam_size, cfg.max_dec_steps
    two_k, c = 2 * cfg.beam_size, 2 * cfg.beam_size * cfg.beam_size
    n = b * k
    norm = tf.constant(cfg.norm_table())
    beam_of_cand = tf.repeat(tf.range(k), two_k)  # [C]: candidates are hypothesis-major
    cand_index = tf.range(c)
    earlier = cand_index[:, None] < cand_index[None, :]  # [C', C]: c' precedes c in order
    slots = tf.range(k)
    # In SearchState's field order.
    t, latest, carry, beam_sum, alive, finished, n_steps = state[:7]
    res_count, res_score, res_end, res_parent, history, arts = state[7:13]
    feed = tf.where((latest < 0) | (latest >= cfg.vocab_size), cfg.unk_id, latest)
    probs, attn, p_gen, new_carry = step_fn(tf.reshape(feed, [n]), carry, arts)
    cfg.check_dist(probs)
    attn = tf.reshape(attn, [b, k, -1])
    p_gen = tf.reshape(p_gen, [b, k])
    if cfg.trigram_blocking:
        probs = tf.reshape(probs, [b, k, -1])
        blocked = rules.trigram_block_mask(history, t, tf.shape(probs)[-1])
        probs = tf.reshape(tf.where(blocked, tf.zeros_like(probs), probs), [n, -1])
    top_p, top_ids = top_of(probs, two_k, cfg.top_k)
    top_p = tf.reshape(top_p, [b, k, two_k])  # [B, K, 2K], on probabilities
    top_ids = tf.reshape(top_ids, [b, k, two_k])
    cand_sum = beam_sum[:, :, None] + tf.math.log(top_p)
    # Finished articles may stand at step m; their scores are never read.
    cand_score = cand_sum / tf.gather(norm, tf.minimum(t + 1, m))[:, None, None]
    # Step 0: the K hypotheses are copies, only the first is expanded.
    valid = tf.broadcast_to(
        alive[:, :, None] & ((t > 0)[:, None, None] | (slots == 0)[None, :, None]), [b, k, two_k]
    )
    if cfg.trigram_blocking:
        valid &= ~tf.gather(blocked, top_ids, batch_dims=2)
    valid = tf.reshape(valid & ~finished[:, None, None], [b, c])
    ids = tf.reshape(top_ids, [b, c])
    sums = tf.reshape(cand_sum, [b, c])
    scores = tf.reshape(cand_score, [b, c])
    is_stop = tf.equal(ids, cfg.stop_id)

    # The original sorts candidates (stably, descending) and scans them: count for each
    # candidate the valid non-stop and stop candidates sorted before it.
    nonstop_before, stop_before = _counts_before(scores, valid, is_stop, earlier)
    accept_stop = (t >= cfg.min_dec_steps)[:, None]  # [B, 1]
    taken_stops = tf.where(accept_stop, stop_before, 0)
    # The scan stops once K hypotheses or K results exist; processed = scanned.
    processed = valid & (nonstop_before < k) & (res_count[:, None] + taken_stops < k)
    to_beam = processed & ~is_stop
    to_result = processed & is_stop & accept_stop

    # New beam slot j = the j-th processed non-stop candidate.
    beam_sel = to_beam[:, :, None] & tf.equal(nonstop_before[:, :, None], slots)
    filled = tf.reduce_any(beam_sel, axis=1)  # [B, K]
    pick = tf.argmax(tf.cast(beam_sel, tf.int32), axis=1, output_type=tf.int32)
    new_parent = tf.gather(beam_of_cand, pick)
    new_tok = tf.gather(ids, pick, batch_dims=1)
    new_sum = tf.gather(sums, pick, batch_dims=1)

    # Results slot r = running count + stops accepted before it in this step.
    res_sel = to_result[:, :, None] & tf.equal(
        res_count[:, None, None] + stop_before[:, :, None], slots
    )
    res_new = tf.reduce_any(res_sel, axis=1)
    res_pick = tf.argmax(tf.cast(res_sel, tf.int32), axis=1, output_type=tf.int32)
    res_score = tf.where(res_new, tf.gather(scores, res_pick, batch_dims=1), res_score)
    res_end = tf.where(res_new, t[:, None], res_end)
    res_parent = tf.where(res_new, tf.gather(beam_of_cand, res_pick), res_parent)
    res_count += tf.reduce_sum(tf.cast(to_result, tf.int32), axis=1)

    # An article advances if it was running and kept at least one hypothesis; an empty
    # beam (all candidates trigram-blocked) freezes it on its previous beam.
    advance = ~finished & tf.reduce_any(filled, axis=1)
    adv_bk = tf.broadcast_to(advance[:, None], [b, k])
    parent_rows = tf.reshape(tf.range(b)[:, None] * k + new_parent, [n])
    carry = search_state.select_rows(
        tf.reshape(adv_bk, [n]),
        tf.nest.map_structure(lambda x: tf.gather(x, parent_rows), new_carry),
        carry,
    )
    latest = tf.where(adv_bk, new_tok, latest)
    beam_sum = tf.where(adv_bk, new_sum, beam_sum)
    alive = tf.where(adv_bk, filled, alive)
    n_steps += tf.cast(advance, tf.int32)
    if cfg.trigram_blocking:
        grown = tf.gather(history, new_parent, batch_dims=1)
        grown = tf.where(
            tf.equal(tf.range(m)[None, None, :], t[:, None, None]), new_tok[:, :, None], grown
        )
        history = tf.where(adv_bk[:, :, None], grown, history)
    t = tf.where(finished, t, t + 1)
    finished = finished | ~advance | (res_count >= k) | (t >= m)
    head = (t, latest, carry, beam_sum, alive, finished, n_steps)
    tail = (res_count, res_score, res_end, res_parent, history, arts, state.index)
    return search_state.SearchState(*head, *tail), (new_tok, new_parent, attn, p_gen)


def _choose(final: dict, norm: tf.Tensor, k: int) -> tuple[tf.Tensor, ...]:
    """Each article's answer: its best result, else the best of its last beam.

    final: the `search_state.FINAL_FIELDS` of the articles, each [B, ...]. Returns (score [B],
    last [B]: the step of its last token, has_result [B], end_parent [B]: the slot the
    result's [STOP] came from, end_slot [B]: the last beam's chosen slot).
    """
    slots = tf.range(k)
    res_count, res_score = final["res_count"], final["res_score"]
    has_result = res_count > 0
    r = _first_argmax(res_score, slots[None, :] < res_count[:, None])
    beam_score = final["beam_sum"] / tf.gather(norm, final["n_steps"])[:, None]
    kb = _first_argmax(beam_score, final["alive"])
    score = tf.where(
        has_result, tf.gather(res_score, r, batch_dims=1), tf.gather(beam_score, kb, batch_dims=1)
    )
    last = tf.where(has_result, tf.gather(final["res_end"], r, batch_dims=1), final["n_steps"] - 1)
    end_parent = tf.gather(final["res_parent"], r, batch_dims=1)
    return score, last, has_result, end_parent, kb


def _batched_graph(
    step_fn: Callable,
    init_carry: Any,
    articles: Any,
    batch: int | tf.Tensor,
    sizes: list,
    cfg: rules.SearchRules,
    pad_id: int,
    n_best: bool = False,
) -> dict[str, tf.Tensor]:
    """The graph of `batched_beam_search`: one `tf.while_loop` per batch size in `sizes`.

    The loop state is a `search_state.SearchState`, advanced by `_advance`. Per step the records
    (new beam tokens and parent slots [B, K], attention [B, K, T], p_gen [B, K]) go to
    TensorArrays, always at the article's index in the whole batch. A loop ends when the
    batch is done, or when few enough articles run to continue with the next, smaller
    size. All articles start together, so a running article's t is the loop's step.
    """
    k, m = cfg.beam_size, cfg.max_dec_steps
    compacting = len(sizes) > 1

    def to_whole(x, index):
        """Rows [S, ...] at their articles' places in a [B, ...] tensor (zeros elsewhere)."""
        if not compacting:
            return x
        return tf.scatter_nd(index[:, None], x, tf.concat([[batch], tf.shape(x)[1:]], 0))

    def run(b, next_size, it, state, tas):
        """The loop at batch size b, until done or until next_size rows suffice."""

        def body(it, state, tas):
            state_before = state
            state, records = _advance(step_fn, state, b, cfg)
            tas = tuple(
                ta.write(it, to_whole(r, state_before.index))
                for ta, r in zip(tas, records, strict=True)
            )
            return it + 1, state, tas

        def cond(it, state, tas):
            running = ~state.finished
            go_on = (it < m) & tf.reduce_any(running)
            if next_size:  # hand over to the next size once that many rows suffice
                go_on &= tf.reduce_sum(tf.cast(running, tf.int32)) > next_size
            return go_on

        return tf.while_loop(cond, body, (it, state, tas), maximum_iterations=m)

    # Initial state of the whole batch.
    b = batch
    article_rows = tf.repeat(tf.range(b) * k, k)  # [N]: row b*K of each article
    carry0 = tf.nest.map_structure(
        lambda x: tf.gather(tf.convert_to_tensor(x), article_rows), init_carry
    )
    state = search_state.initial_state(
        b, k, carry0, articles, cfg.start_id, cfg.max_dec_steps if cfg.trigram_blocking else 0
    )
    tas = (
        tf.TensorArray(tf.int32, size=m),
        tf.TensorArray(tf.int32, size=m),
        tf.TensorArray(tf.float32, size=m),
        tf.TensorArray(tf.float32, size=m),
    )
    final = {
        f: getattr(state, f) for f in search_state.FINAL_FIELDS
    }  # per article of the whole batch
    it = tf.constant(0)
    for i, size in enumerate(sizes):
        next_size = sizes[i + 1] if i + 1 < len(sizes) else None
        it, state, tas = run(size, next_size, it, state, tas)
        for f in search_state.FINAL_FIELDS:
            final[f] = (
                tf.tensor_scatter_nd_update(final[f], state.index[:, None], getattr(state, f))
                if compacting
                else getattr(state, f)
            )
        if next_size:
            state = search_state.compact(state, next_size, k)

    score, last, has_result, end_parent, kb = _choose(final, tf.constant(cfg.norm_table()), k)
    tokens, attn, p_gens = search_state.backtrack(
        tas, it, last, has_result, end_parent, kb, cfg.stop_id, pad_id, m
    )
    out = {
        "tokens": tokens,
        "lengths": last + 1,
        "scores": score,
        "attn_dists": attn,
        "p_gens": p_gens,
    }
    if n_best:
        out.update(_final_hypotheses(final, tas, it, cfg, pad_id))
    return out


def _final_hypotheses(final: dict, tas, steps_run, cfg, pad_id: int) -> dict:
    """Every article's K final hypotheses: result r, or (when the article has no result)
    last-beam slot r; with their token ids and summed log-probabilities."""
    k, m = cfg.beam_size, cfg.max_dec_steps
    norm = tf.constant(cfg.norm_table())
    res_count = final["res_count"]
    no_result = res_count == 0
    toks, lens, sums, valid = [], [], [], []
    for r in range(k):
        has = r < res_count
        end = final["res_end"][:, r]
        last = tf.where(has, end, final["n_steps"] - 1)
        slot = tf.fill(tf.shape(res_count), r)
        tokens, _, _ = search_state.backtrack(
            tas, steps_run, last, has, final["res_parent"][:, r], slot, cfg.stop_id, pad_id, m
        )
        toks.append(tokens)
        lens.append(last + 1)
        result_sum = final["res_score"][:, r] * tf.gather(norm, tf.minimum(end + 1, m))
        sums.append(tf.where(has, result_sum, final["beam_sum"][:, r]))
        valid.append(has | (no_result & final["alive"][:, r] & (final["n_steps"] > 0)))
    return {
        "nbest_tokens": tf.stack(toks, axis=1),
        "nbest_lengths": tf.stack(lens, axis=1),
        "nbest_sums": tf.stack(sums, axis=1),
        "nbest_valid": tf.stack(valid, axis=1),
    }
