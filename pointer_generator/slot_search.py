"""Continuous batching for beam search: a fixed table of article slots, refilled with new
articles as others finish.

`batched_beam_search` decodes a batch until its last article ends; rows of articles that
ended early are computed for nothing (or, when it compacts, the batch shrinks and each
step does less work per call). `SlotSearch` keeps S slots busy instead: the search runs in
*segments*, each a compiled loop of `beam_search._advance` steps (every slot at its own
step), which ends once `refill` slots have finished; their summaries are read off, and
new articles take their slots. Per article the search is exactly the original's
(`beam_search_single`): the same selection code with the article's own step counter.

Model-agnostic: articles come as groups (keys, initial carry [R*K, ...], per-article
tensors [R, ...]) from an iterator, and the step function is the batched search's
`step_fn(tokens, carry, articles)`. Every slot needs tensors of the same shapes, so the
caller pads articles to one encoder length.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import tensorflow as tf

from pointer_generator.beam_search import (
    _FINAL_FIELDS,
    MIN_COMPACT_SIZE,
    _advance,
    _beam_rows,
    _choose,
    _Config,
    _gather_articles,
    _initial_state,
    _SearchState,
    chunked_top_k,
)

# Finished slots that end a segment: a larger number means fewer segment boundaries but
# more slots idle meanwhile (docs/beam_search.md).
DEFAULT_REFILL = 4


class SlotSearch:
    """Beam search over a stream of articles with `num_slots` articles in flight.

    Args:
      step_fn: step_fn(tokens [S*K], carry, articles) -> (probs or Candidates, attn,
        p_gen, new_carry), as for `batched_beam_search(articles=...)`; S = num_slots.
      num_slots: S, articles decoded at once.
      refill: a segment ends once this many slots have finished (fewer at the end).
      jit_compile: compile each segment with XLA.
      min_slots: when no article is left to start, the table halves (as the batched
        search does) while the running articles fit, down to this many slots.
      Other arguments as in `batched_beam_search` (beam_size, vocab_size, max_dec_steps,
      min_dec_steps, start_id, stop_id, unk_id, trigram_blocking, length_penalty, top_k).
    """

    def __init__(self, step_fn: Callable, *, num_slots: int, beam_size: int, vocab_size: int,
                 max_dec_steps: int, min_dec_steps: int, start_id: int, stop_id: int,
                 unk_id: int, trigram_blocking: bool = False,
                 length_penalty: float | None = None, top_k: Callable | None = None,
                 refill: int = DEFAULT_REFILL, jit_compile: bool = False,
                 min_slots: int = MIN_COMPACT_SIZE):
        if num_slots < 1:
            raise ValueError(f"num_slots must be >= 1, got {num_slots}")
        if not 1 <= refill <= num_slots:
            raise ValueError(f"refill must be in [1, num_slots={num_slots}], got {refill}")
        self.cfg = _Config(beam_size, vocab_size, max_dec_steps, min_dec_steps, start_id,
                           stop_id, unk_id, trigram_blocking, length_penalty,
                           top_k or chunked_top_k)
        self.step_fn, self.num_slots, self.refill = step_fn, num_slots, refill
        self.jit_compile, self.min_slots = jit_compile, min_slots
        self._segment = tf.function(self._segment_graph, jit_compile=jit_compile)
        self._fill = tf.function(self._fill_graph)
        self._gather = tf.function(
            lambda state, slots: _gather_articles(state, slots, self.cfg.beam_size))

    # ------------------------------------------------------------------ compiled parts
    def _segment_graph(self, state: _SearchState, stop_after: tf.Tensor):
        """Advance every running slot until `stop_after` more slots have finished (or none
        runs). Returns the state, the records [>= G, S, ...] of the G steps run (tokens,
        parents, attention, p_gen, as `_advance` records them), G, and each slot's
        answer (`_choose`)."""
        cfg, s = self.cfg, state.finished.shape[0]  # fewer than num_slots once draining
        done_before = tf.reduce_sum(tf.cast(state.finished, tf.int32))
        # XLA needs TensorArrays of a fixed size: max_dec_steps, of which the first G are
        # written (the caller keeps those); without XLA they grow to G.
        size = cfg.max_dec_steps if self.jit_compile else 0
        tas = tuple(tf.TensorArray(dtype, size=size, dynamic_size=not self.jit_compile)
                    for dtype in (tf.int32, tf.int32, tf.float32, tf.float32))

        def cond(it, state, tas):
            done = tf.reduce_sum(tf.cast(state.finished, tf.int32))
            return (done < s) & (done - done_before < stop_after)

        def body(it, state, tas):
            state, records = _advance(self.step_fn, state, s, cfg)
            return it + 1, state, tuple(ta.write(it, r)
                                        for ta, r in zip(tas, records, strict=True))

        steps, state, tas = tf.while_loop(cond, body, (tf.constant(0), state, tas),
                                          maximum_iterations=cfg.max_dec_steps)
        final = {f: getattr(state, f) for f in _FINAL_FIELDS}
        answer = _choose(final, tf.constant(cfg.norm_table()), cfg.beam_size)
        return state, tuple(ta.stack() for ta in tas), steps, answer

    def _fill_graph(self, state: _SearchState, slots: tf.Tensor, carry: Any, articles: Any):
        """`state` with the articles of `carry` ([R*K, ...], row r*K = article r) and
        `articles` ([R, ...]) at step 0 in `slots` [R] (a slot may repeat with the same
        article: padding)."""
        k = self.cfg.beam_size
        r = tf.shape(slots)[0]
        fresh = _initial_state(r, k, carry, articles, self.cfg)
        rows = _beam_rows(slots, k)

        def put(old, new, index):
            if old.shape.num_elements() == 0:  # no history without trigram blocking
                return old
            return tf.tensor_scatter_nd_update(old, index[:, None], new)

        parts = {}
        for name, old in state._asdict().items():
            new = getattr(fresh, name)
            if name == "index":
                parts[name] = old
            elif name == "carry":
                parts[name] = tf.nest.map_structure(lambda o, n: put(o, n, rows), old, new)
            else:
                parts[name] = tf.nest.map_structure(lambda o, n: put(o, n, slots), old, new)
        return _SearchState(**parts)

    # ------------------------------------------------------------------ the driver
    def _empty_state(self, carry_row: Any, article_row: Any) -> _SearchState:
        """All slots empty (finished), shaped like one article's carry and tensors."""
        s, k = self.num_slots, self.cfg.beam_size

        def like(x, n):
            return tf.zeros(tf.concat([[n], tf.shape(x)[1:]], 0), x.dtype)

        carry = tf.nest.map_structure(lambda x: like(x, s * k), carry_row)
        articles = tf.nest.map_structure(lambda x: like(x, s), article_row)
        state = _initial_state(s, k, carry, articles, self.cfg)
        return state._replace(finished=tf.ones([s], tf.bool))

    def run(self, groups: Iterable) -> Iterator[tuple[Any, dict]]:
        """Decode every article of `groups`; yield (key, result) as articles finish.

        groups: iterable of (keys, init_carry, articles): keys a list of R hashable
          labels; init_carry a nest [R*K, ...] (row r*K: article r's initial carry, as
          `tile_beams` makes it); articles a nest [R, ...]. Read lazily, as slots free up.
        result: tokens int32 [L] (generated ids, the final [STOP] included if any), score
          float, attn_dists float32 [L, T], p_gens float32 [L].
        """
        queue = _ArticleQueue(groups, self.cfg.beam_size)
        state = None
        occupant: list = [None] * self.num_slots  # key of the article in each slot
        history: list = [[] for _ in range(self.num_slots)]  # record chunks per slot

        while True:
            free = [i for i, key in enumerate(occupant) if key is None]
            keys, carry, arts = queue.take(len(free))
            if keys:
                if state is None:
                    state = self._empty_state(carry, arts)
                for lo in range(0, len(keys), self.refill):  # fills of `refill` rows
                    state = self._fill_chunk(state, free[lo:lo + self.refill],
                                             keys[lo:lo + self.refill], carry, arts, lo)
                for slot, key in zip(free, keys, strict=False):
                    occupant[slot], history[slot] = key, []
            if all(key is None for key in occupant):
                return
            if queue.may_have_more():
                stop_after = self.refill
            else:  # draining: the running articles move to smaller tables
                state, occupant, history = self._shrink(state, occupant, history)
                size, running = len(occupant), sum(key is not None for key in occupant)
                # Stop when the table can halve again, else run to the end.
                stop_after = (running - size // 2 if size // 2 >= self.min_slots
                              else size + 1)
            state, records, steps, answer = self._segment(state, tf.constant(stop_after))
            records = [r.numpy()[:int(steps)] for r in records]
            finished = state.finished.numpy()
            answer = [a.numpy() for a in answer]
            for slot, key in enumerate(occupant):
                if key is None:
                    continue
                history[slot].append([r[:, slot] for r in records])
                if finished[slot]:
                    yield key, _backtrack_one(history[slot], [a[slot] for a in answer],
                                              self.cfg.stop_id)
                    occupant[slot], history[slot] = None, []

    def _shrink(self, state, occupant, history):
        """Once no article is left to start, halve the table (down to `min_slots`)
        while the running articles fit in half: they keep their rows of the state, so the
        steps still to run cost less. Returns the state, occupants and histories."""
        size = len(occupant)
        running = [i for i, key in enumerate(occupant) if key is not None]
        while size // 2 >= max(len(running), self.min_slots) and size > 1:
            size //= 2
        if size == len(occupant):
            return state, occupant, history
        idle = [i for i, key in enumerate(occupant) if key is None]
        order = running + idle[:size - len(running)]
        state = self._gather(state, tf.constant(order, tf.int32))
        return state, [occupant[i] for i in order], [history[i] for i in order]

    def _fill_chunk(self, state, slots, keys, carry, arts, lo):
        """Fill `slots` with rows lo.. of carry/arts, padded to `refill` rows (the last
        one repeated) so that the fill is traced once."""
        k, n, size = self.cfg.beam_size, len(keys), self.refill
        slots = list(slots[:n])
        rows = list(range(lo, lo + n)) + [lo + n - 1] * (size - n)
        index = tf.constant(rows, tf.int32)
        carry_index = _beam_rows(index, k)
        return self._fill(state, tf.constant(slots + [slots[-1]] * (size - n), tf.int32),
                          tf.nest.map_structure(lambda x: tf.gather(x, carry_index), carry),
                          tf.nest.map_structure(lambda x: tf.gather(x, index), arts))


class _ArticleQueue:
    """The articles of an iterable of groups (keys, carry [R*K, ...], articles [R, ...]),
    handed out a few rows at a time; groups are read only when needed."""

    def __init__(self, groups: Iterable, beam_size: int):
        self.source, self.k = iter(groups), beam_size
        self.pending: deque = deque()  # [keys, carry, articles, next row]
        self.exhausted = False

    def may_have_more(self) -> bool:
        return bool(self.pending) or not self.exhausted

    def _next_group(self) -> bool:
        try:
            keys, carry, articles = next(self.source)
        except StopIteration:
            self.exhausted = True
            return False
        self.pending.append([list(keys), carry, articles, 0])
        return True

    def take(self, n: int):
        """Up to n articles: (keys, carry [n'*K, ...], articles [n', ...]), or ([], None,
        None) when none is left."""
        k = self.k
        keys, carries, arts = [], [], []
        while len(keys) < n:
            if not self.pending and (self.exhausted or not self._next_group()):
                break
            group = self.pending[0]
            start = group[3]
            stop = min(len(group[0]), start + n - len(keys))
            keys += group[0][start:stop]
            carries.append(tf.nest.map_structure(
                lambda x, a=start, b=stop: x[a * k:b * k], group[1]))
            arts.append(tf.nest.map_structure(lambda x, a=start, b=stop: x[a:b], group[2]))
            group[3] = stop
            if stop == len(group[0]):
                self.pending.popleft()
        if not keys:
            return [], None, None
        concat = (lambda *xs: tf.concat(xs, 0)) if len(carries) > 1 else (lambda x: x)
        return (keys, tf.nest.map_structure(concat, *carries),
                tf.nest.map_structure(concat, *arts))


def _backtrack_one(chunks: list, answer: list, stop_id: int) -> dict:
    """One article's summary from its per-step records (`beam_search._backtrack` for one
    article, in NumPy).

    chunks: per segment [tokens [G, K], parents [G, K], attn [G, K, T], p_gen [G, K]],
    the article's steps in order from its step 0. answer: (score, last, has_result,
    end_parent, end_slot) of `_choose`.
    """
    tok_h, par_h, attn_h, pgen_h = (np.concatenate(parts, 0) for parts in zip(*chunks,
                                                                           strict=True))
    score, last, has_result, end_parent, end_slot = answer
    last = int(last)
    tokens = np.zeros([last + 1], np.int32)
    attn = np.zeros([last + 1, attn_h.shape[-1]], np.float32)
    p_gens = np.zeros([last + 1], np.float32)
    slot = 0 if has_result else int(end_slot)
    for t in range(last, -1, -1):
        if t == last and has_result:  # the [STOP] itself
            tokens[t], cur = stop_id, int(end_parent)
        else:
            tokens[t], cur = tok_h[t, slot], int(par_h[t, slot])
        attn[t], p_gens[t] = attn_h[t, cur], pgen_h[t, cur]
        slot = cur
    return {"tokens": tokens, "score": float(score), "attn_dists": attn, "p_gens": p_gens}
