"""The top of the final distribution (paper eq. 9) without building it: beam search's
fast path.

Beam search reads only the 2K most probable ids of each step's extended-vocabulary
distribution P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: w_i = w} a_i (K = beam size).
A word that is not in the article has P(w) = p_gen P_vocab(w), which grows with its
logit; so the top 2K lie among the 2K words with the largest logits and the article's
own words. `final_candidates` computes P for the 2K + 1 largest logits (one spare:
with one id blocked, `--block_unk`, the top 2K of the rest are still among them) and
the enc_len article ids only (`candidate_count`). Per step this
replaces writing the [N, vocab + OOVs] distribution, scattering the attention into it
and searching it with a log-sum-exp over the logits and a top 2K of them.

The values are the full computation's up to float rounding (the softmax normaliser and
the copy sums are added in another order), so the beam search picks the same tokens
except where two candidates are within that rounding of each other. The decoders'
`full_final_dist` option (`--full_final_dist`) builds the whole distribution, as the
original does.

The vocabulary projection is computed in column pieces (`PIECES`): on a CPU, four
[N, 256] x [256, V/4] matmuls run ~1.3x faster than one [N, 256] x [256, V]
(`experiments/benchmarks/decode.py` measures the whole effect), and the per-piece
reductions read each piece while it is still in cache.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import tensorflow as tf

from pointer_generator.layers.top_k import Candidates, top_k_of_chunks

CHUNK = 256  # entries per chunk of the top-k search (top_k.top_k_of_chunks)
PIECES = 4  # column pieces of the vocabulary projection


class VocabProjection(NamedTuple):
    """The output projection's weights, padded to a whole number of chunks per piece.

    kernels: `pieces` x [hidden, width] in the compute dtype (float32, or bfloat16 for
    mixed precision); biases: `pieces` x [width] float32, -inf on the padding columns
    (their logits are -inf: never in the top k, zero in the normaliser).
    vocab_size: V, the real columns.
    """

    kernels: tuple
    biases: tuple
    vocab_size: int


class ArticleWords(NamedTuple):
    """Each decoder row's article words, indexed once per batch (`article_words`).

    ids [N, T] int32: extended-vocab ids. valid [N, T] bool: not padding.
    first [N, T] bool: valid and the first position holding its id.
    segment [N * T] int32: for the copy sums, row * (T + 1) + the first position holding
      the same id (row * (T + 1) + T for padding, a slot that is dropped).
    """

    ids: tf.Tensor
    valid: tf.Tensor
    first: tf.Tensor
    segment: tf.Tensor


class CandidateSetup(NamedTuple):
    """What `final_candidates` needs besides the step's tensors; built once per search.

    k: how many top entries the search takes (2 * beam size). words: None without the
    pointer (baseline model).
    """

    projection: VocabProjection
    words: ArticleWords | None
    k: int


def candidate_count(beam_size: int) -> int:
    """How many of the largest logits a step's candidates hold: the search takes the top
    2K entries, and one spare keeps that exact when the search blocks one id ([UNK])."""
    return 2 * beam_size + 1


def vocab_projection(
    kernel, bias, pieces: int = PIECES, compute_dtype: tf.DType = tf.float32
) -> VocabProjection:
    """Split a Dense layer's kernel [hidden, V] and bias [V] into padded column pieces;
    the kernel is cast to `compute_dtype` (the logits are float32 either way)."""
    kernel = tf.cast(tf.convert_to_tensor(kernel), compute_dtype)
    bias = tf.convert_to_tensor(bias)
    v = int(kernel.shape[-1])
    pieces = max(1, min(pieces, v // CHUNK))
    width = -(-v // (pieces * CHUNK)) * CHUNK
    pad = pieces * width - v
    kernel = tf.pad(kernel, [[0, 0], [0, pad]])
    bias = tf.concat([bias, tf.fill([pad], tf.constant(-np.inf, bias.dtype))], 0)
    return VocabProjection(
        tuple(tf.split(kernel, pieces, axis=1)), tuple(tf.split(bias, pieces)), v
    )


class ArticleIndex(NamedTuple):
    """Each article's words, indexed once per batch (`article_index`); all [B, T].

    ids: extended-vocab ids. valid: not padding. first: valid and the first position
    holding its id. slot: that first position (T for padding).
    """

    ids: tf.Tensor
    valid: tf.Tensor
    first: tf.Tensor
    slot: tf.Tensor


def article_index(enc_batch_extend_vocab, enc_padding_mask) -> ArticleIndex:
    """Index the articles' words: enc_batch_extend_vocab [B, T] int32, enc_padding_mask
    [B, T] (1 = real token). One [B, T, T] comparison per batch."""
    ids = tf.convert_to_tensor(enc_batch_extend_vocab, tf.int32)
    valid = tf.convert_to_tensor(enc_padding_mask) > 0
    t = tf.shape(ids)[1]
    same = tf.equal(ids[:, :, None], ids[:, None, :]) & valid[:, None, :]  # [B, T, T]
    first_pos = tf.argmax(tf.cast(same, tf.int8), axis=2, output_type=tf.int32)
    first = valid & tf.equal(first_pos, tf.range(t)[None, :])
    return ArticleIndex(ids, valid, first, tf.where(valid, first_pos, t))


def tile_article_words(index: ArticleIndex, beams: int) -> ArticleWords:
    """`ArticleWords` for decoder rows tiled `beams` times (row b*K + k = article b)."""
    t = tf.shape(index.ids)[1]
    ids, valid, first, slot = (tf.repeat(x, beams, axis=0) for x in index)
    rows = tf.range(tf.shape(ids)[0])[:, None]
    return ArticleWords(ids, valid, first, tf.reshape(rows * (t + 1) + slot, [-1]))


def article_words(enc_batch_extend_vocab, enc_padding_mask, beams: int) -> ArticleWords:
    """Index the articles' words for rows tiled `beams` times (row b*K + k = article b).

    enc_batch_extend_vocab [B, T] int32; enc_padding_mask [B, T] (1 = real token).
    """
    return tile_article_words(article_index(enc_batch_extend_vocab, enc_padding_mask), beams)


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _piece_stats(logits):
    """One piece [N, width]: chunk maxima [N, width/CHUNK], max [N], sum exp(l - max) [N].

    An all-padding piece has max -inf and sum 0 (never NaN)."""
    n = tf.shape(logits)[0]
    chunk_max = tf.reduce_max(tf.reshape(logits, [n, -1, CHUNK]), axis=-1)
    top = tf.reduce_max(chunk_max, axis=-1)
    shift = tf.where(tf.math.is_finite(top), top, tf.zeros_like(top))
    return chunk_max, top, tf.reduce_sum(tf.exp(logits - shift[:, None]), axis=-1)


def vocab_logits(x, projection: VocabProjection):
    """x [N, hidden] -> (logits [N, V'], chunk maxima [N, V'/CHUNK], log-normaliser [N]).

    V' >= V is the padded width; log-normaliser = log sum_w exp(logit_w) (the softmax's).
    """
    x_in = tf.cast(x, projection.kernels[0].dtype)
    pieces = [
        tf.cast(tf.matmul(x_in, k), b.dtype) + b
        for k, b in zip(projection.kernels, projection.biases, strict=True)
    ]
    stats = [_piece_stats(p) for p in pieces]
    chunk_max = tf.concat([s[0] for s in stats], axis=1)
    maxima = tf.stack([s[1] for s in stats], axis=1)  # [N, pieces]
    sums = tf.stack([s[2] for s in stats], axis=1)
    top = tf.reduce_max(maxima, axis=1, keepdims=True)
    log_norm = top[:, 0] + tf.math.log(tf.reduce_sum(sums * tf.exp(maxima - top), axis=1))
    logits = pieces[0] if len(pieces) == 1 else tf.concat(pieces, axis=1)
    return logits, chunk_max, log_norm


def final_candidates(x, p_gen, attn, setup: CandidateSetup) -> Candidates:
    """Entries of the final distribution sure to hold its top `setup.k` (module doc).

    Args:
      x: [N, hidden] the decoder output that the vocabulary projection reads.
      p_gen: [N, 1] generation probability (eq. 8), or None without the pointer.
      attn: [N, T] attention of this step (eq. 2); unused without the pointer.
    Returns:
      Candidates with probs/ids [N, k + T] (pointer) or [N, k] (baseline).
    """
    logits, chunk_max, log_norm = vocab_logits(x, setup.projection)
    n = tf.shape(logits)[0]
    top_logits, top_ids = top_k_of_chunks(tf.reshape(logits, [n, -1, CHUNK]), chunk_max, setup.k)
    if p_gen is None:
        return Candidates(tf.exp(top_logits - log_norm[:, None]), top_ids)
    w = setup.words
    probs, ids = _pointer_candidates(
        logits,
        log_norm,
        top_logits,
        top_ids,
        p_gen,
        attn,
        w.ids,
        w.valid,
        w.first,
        w.segment,
        setup.projection.vocab_size,
    )
    return Candidates(probs, ids)


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _pointer_candidates(
    logits, log_norm, top_logits, top_ids, p_gen, attn, ids, valid, first, segment, vocab_size
):
    """Eq. 9 at the top-k vocabulary words and at each article word's first position.

    A top-k word that is also in the article is dropped there (prob -1) and counted at
    its article position, which adds its copy probability."""
    n, t = tf.shape(attn)[0], tf.shape(attn)[1]
    log_norm = log_norm[:, None]
    in_vocab = ids < vocab_size
    art_logits = tf.gather(logits, tf.where(in_vocab, ids, 0), batch_dims=1)
    p_vocab = tf.where(in_vocab, tf.exp(art_logits - log_norm), 0.0)
    copied = tf.math.unsorted_segment_sum(tf.reshape(attn, [-1]), segment, n * (t + 1))
    copied = tf.reshape(copied, [n, t + 1])[:, :t]
    p_article = tf.where(first, p_gen * p_vocab + (1.0 - p_gen) * copied, -1.0)
    in_article = tf.reduce_any(
        tf.equal(top_ids[:, :, None], ids[:, None, :]) & valid[:, None, :], axis=-1
    )
    p_top = tf.where(in_article, -1.0, p_gen * tf.exp(top_logits - log_norm))
    return tf.concat([p_top, p_article], axis=1), tf.concat([top_ids, ids], axis=1)
