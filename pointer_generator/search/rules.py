"""The rules of the beam search: its settings, how a hypothesis is scored, and what it
may not generate (trigram blocking). Shared by the batched search (`beam_search.py`)
and the tests' one-article reference search, so both score with identical numbers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import tensorflow as tf

from pointer_generator.layers.top_k import Candidates
from pointer_generator.search.settings import SearchSettings


@dataclasses.dataclass(frozen=True, kw_only=True)
class SearchRules(SearchSettings):
    """One search as `batched_beam_search` runs it: the `SearchSettings` (their fields
    and their checks, defined once there) for a vocabulary of `vocab_size` words with
    these special ids, and the top-k function. Built from the search's keywords
    (`SearchSettings.search_keywords` gives them), so the fields the decoder applies to
    the step before the search (block_unk, the features, the whole distribution) keep
    their defaults here."""

    vocab_size: int
    start_id: int
    stop_id: int
    unk_id: int
    top_k: Callable = None  # (values [N, V], k) -> (values, indices) [N, k]; see below

    def __post_init__(self):
        super().__post_init__()
        if self.vocab_size < 1:
            raise ValueError(f"vocab_size must be >= 1, got {self.vocab_size}")

    def check_dist(self, dist: tf.Tensor | Candidates) -> None:
        """A step function's distribution (or candidates) must hold at least 2K entries;
        trigram blocking must see the whole distribution."""
        if isinstance(dist, Candidates):
            if self.trigram_blocking:
                raise ValueError(
                    "trigram blocking needs the step function's whole distribution, not Candidates"
                )
            dist = dist.probs
        v_ext = dist.shape[-1]
        if v_ext is not None and v_ext < 2 * self.beam_size:
            raise ValueError(
                f"the step function's distribution has {v_ext} entries; beam "
                f"search takes the top 2*beam_size = {2 * self.beam_size}"
            )

    def norm_table(self) -> np.ndarray:
        """float32 [max_dec_steps + 1]: the score divisor for g generated tokens.

        The original divides the log-prob sum by len(tokens) = g + 1 ([START] counts).
        With `length_penalty` alpha it is GNMT's ((5 + g) / 6) ** alpha. One table used by
        both searches, so both divide by bit-identical numbers.
        """
        g = np.arange(self.max_dec_steps + 1, dtype=np.float64)
        if self.length_penalty is None:
            return (g + 1.0).astype(np.float32)
        return (((5.0 + g) / 6.0) ** float(self.length_penalty)).astype(np.float32)


def trigram_block_mask(history: tf.Tensor, t: tf.Tensor, v_ext: tf.Tensor) -> tf.Tensor:
    """bool [B, K, V_ext]: tokens that would repeat a trigram of the hypothesis.

    history: int32 [B, K, M], the K hypotheses' generated tokens, valid in [0, t[b]) for
    article b (t: int32 [B]).
    """
    m = history.shape[-1]
    b, k = tf.shape(history)[0], tf.shape(history)[1]
    if m < 3:
        return tf.zeros([b, k, v_ext], tf.bool)

    def at(pos):  # history[b, k, pos[b]] as [B, K, 1]
        return tf.gather(history, tf.broadcast_to(pos[:, None, None], [b, k, 1]), batch_dims=2)

    prev2, prev1 = at(tf.maximum(t - 2, 0)), at(tf.maximum(t - 1, 0))
    # Trigram i is (h[i], h[i+1], h[i+2]); it counts once fully generated: i + 2 <= t - 1.
    complete = tf.range(m - 2)[None, None, :] + 2 <= t[:, None, None] - 1
    match = complete & tf.equal(history[..., :-2], prev2) & tf.equal(history[..., 1:-1], prev1)
    bi, ki, _ = tf.meshgrid(tf.range(b), tf.range(k), tf.range(m - 2), indexing="ij")
    index = tf.stack([bi, ki, history[..., 2:]], axis=-1)
    # Max-scatter: unmatched positions add a 0 and cannot un-block a matched token.
    blocked = tf.tensor_scatter_nd_max(
        tf.zeros([b, k, v_ext], tf.int32),
        tf.reshape(index, [-1, 3]),
        tf.reshape(tf.cast(match, tf.int32), [-1]),
    )
    return blocked > 0


def block_token(dist: tf.Tensor | Candidates, token_id: int) -> tf.Tensor | Candidates:
    """A step's distribution [N, V_ext] (or its candidates) with `token_id` at
    probability 0, so the search never writes it (`--block_unk`). Not renormalised, as
    NAMAS's search blocks <unk>. The pointer-generator's candidates hold one spare entry
    (`final_candidates.candidate_count`), so the top 2K of the rest are still among them.
    """
    if isinstance(dist, Candidates):
        # Unused slots (probs < 0, whatever their id) stay unused.
        blocked = tf.equal(dist.ids, token_id) & (dist.probs >= 0)
        return Candidates(tf.where(blocked, 0.0, dist.probs), dist.ids)
    return tf.where(tf.range(tf.shape(dist)[-1]) == token_id, tf.zeros_like(dist), dist)
