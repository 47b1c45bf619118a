"""The one-article beam search: the original algorithm step for step (spec section 5),
a plain Python loop over one article's K beams.

It is the reference the batched search (`pointer_generator.search.beam_search`) is
tested against, and the search of the re-enacted original decoding in
`experiments/benchmarks/original_decode.py`; the library itself decodes with the
batched search only.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import tensorflow as tf

from pointer_generator.layers.top_k import top_of
from pointer_generator.search.beam_search import StepFn
from pointer_generator.search.rules import SearchRules


def _repeated_trigram_ends(generated: list[int]) -> set[int]:
    """Tokens w such that generated + [w] would end in a trigram already in `generated`."""
    n = len(generated)
    if n < 2:
        return set()
    a, b = generated[-2], generated[-1]
    return {generated[i + 2] for i in range(n - 2) if generated[i] == a and generated[i + 1] == b}


@dataclasses.dataclass
class Hypothesis:
    """One beam hypothesis of `beam_search_single`.

    tokens:       [START] then the generated ids (extended vocab).
    log_probs:    one per token, 0.0 for [START]; float32.
    attn_dists:   one float32 [T] per generated token (the step that produced it).
    p_gens:       one float per generated token.
    log_prob_sum: float32 running sum of log_probs.
    score:        what the search sorts on: avg_log_prob unless a length penalty is set.
    carry_source, carry_row: the step function's carry after the last token is row
                  `carry_row` of the nest `carry_source` (shared by the whole beam, so a
                  step gathers its rows instead of slicing and re-stacking each one).
    """

    tokens: list[int]
    log_probs: list[np.float32]
    attn_dists: list[np.ndarray]
    p_gens: list[float]
    log_prob_sum: np.float32
    score: np.float32
    carry_source: Any = dataclasses.field(repr=False)
    carry_row: int

    @property
    def latest_token(self) -> int:
        return self.tokens[-1]

    @property
    def avg_log_prob(self) -> np.float32:
        """Sum of log-probs / len(tokens), [START] included (the original's score)."""
        return np.float32(self.log_prob_sum / np.float32(len(self.tokens)))

    @property
    def carry(self) -> Any:
        """This hypothesis' carry, without the leading row dimension."""
        return tf.nest.map_structure(lambda x: x[self.carry_row], self.carry_source)


def _extend(
    h: Hypothesis,
    token: int,
    log_prob: np.float32,
    attn: np.ndarray,
    p_gen: float,
    carry_source: Any,
    carry_row: int,
    norm: np.ndarray,
) -> Hypothesis:
    # Running float32 sum in token order: the batched search adds in the same order.
    total = np.float32(h.log_prob_sum + log_prob)
    return Hypothesis(
        tokens=h.tokens + [token],
        log_probs=h.log_probs + [log_prob],
        attn_dists=h.attn_dists + [attn],
        p_gens=h.p_gens + [p_gen],
        log_prob_sum=total,
        score=np.float32(total / norm[len(h.tokens)]),
        carry_source=carry_source,
        carry_row=carry_row,
    )


def _stack_carries(rows: list[Hypothesis]) -> Any:
    """The carries of `rows` as one nest with leading dim len(rows)."""
    source = rows[0].carry_source
    if all(h.carry_source is source for h in rows):  # always, as a beam comes from one step
        index = tf.constant([h.carry_row for h in rows], tf.int32)
        return tf.nest.map_structure(lambda x: tf.gather(x, index), source)
    return tf.nest.map_structure(lambda *xs: tf.stack(xs), *[h.carry for h in rows])


def beam_search_single(step_fn: StepFn, init_carry: Any, **settings) -> Hypothesis:
    """Beam search for one article, exactly the original algorithm (spec section 5).

    Args:
      step_fn: the one-step decoder, called with N = beam_size rows.
      init_carry: nested tensors with leading dim 1 or beam_size; row 0 is every
        hypothesis' initial carry (as in the original).
      settings: the fields of `SearchRules` (the batched search's keywords): beam_size K,
        vocab_size V (fed ids outside [0, V) become `unk_id`), max_dec_steps and
        min_dec_steps (a [STOP] produced at step index < min_dec_steps is discarded),
        start_id, stop_id, unk_id; trigram_blocking and length_penalty are optional
        extras, off = the original.

    Returns:
      The best finished hypothesis, or the best of the last beam if none finished.
    """
    cfg = SearchRules(**{"trigram_blocking": False, "length_penalty": None, **settings})
    k, start_id, stop_id, unk_id = cfg.beam_size, cfg.start_id, cfg.stop_id, cfg.unk_id
    norm = cfg.norm_table()
    init_carry = tf.nest.map_structure(tf.convert_to_tensor, init_carry)
    zero = np.float32(0.0)
    start = Hypothesis(
        tokens=[start_id],
        log_probs=[zero],
        attn_dists=[],
        p_gens=[],
        log_prob_sum=zero,
        score=np.float32(zero / norm[0]),
        carry_source=init_carry,
        carry_row=0,
    )
    hyps = [start] * k
    results: list[Hypothesis] = []
    steps = 0
    while steps < cfg.max_dec_steps and len(results) < k:
        # The beam is only short of K when trigram blocking skipped candidates; pad the
        # rows so step_fn always sees N = K (padded rows are never expanded).
        rows = hyps + [hyps[-1]] * (k - len(hyps))
        tokens = tf.constant(
            [h.latest_token if 0 <= h.latest_token < cfg.vocab_size else unk_id for h in rows],
            tf.int32,
        )
        probs, attn, p_gen, new_carry = step_fn(tokens, _stack_carries(rows))
        cfg.check_dist(probs)
        n_expand = 1 if steps == 0 else len(hyps)
        blocked = [
            _repeated_trigram_ends(h.tokens[1:]) if cfg.trigram_blocking else set()
            for h in hyps[:n_expand]
        ]
        if cfg.trigram_blocking:
            probs = np.array(probs, dtype=np.float32)
            for i, ids in enumerate(blocked):
                probs[i, sorted(ids)] = 0.0
        top_p, top_ids = top_of(probs, 2 * k, tf.math.top_k)
        top_logp = tf.math.log(top_p).numpy()
        top_ids = top_ids.numpy()
        attn = np.asarray(attn, dtype=np.float32)
        p_gen = np.asarray(p_gen, dtype=np.float32).reshape(-1)

        candidates = []
        for i in range(n_expand):
            for j in range(2 * k):
                token = int(top_ids[i, j])
                if token in blocked[i]:
                    continue
                candidates.append(
                    _extend(
                        hyps[i], token, top_logp[i, j], attn[i], float(p_gen[i]), new_carry, i, norm
                    )
                )
        candidates.sort(key=lambda h: h.score, reverse=True)  # stable, like the original

        new_hyps = []
        for h in candidates:
            if h.latest_token == stop_id:
                if steps >= cfg.min_dec_steps:
                    results.append(h)
            else:
                new_hyps.append(h)
            if len(new_hyps) == k or len(results) == k:
                break
        if not new_hyps:  # results just filled up, or trigram blocking left nothing to extend
            break
        hyps = new_hyps
        steps += 1

    final = results if results else hyps
    return max(final, key=lambda h: h.score)  # max() keeps the first of equal scores
