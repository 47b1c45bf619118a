"""Which lengths batches are padded to, and which examples are batched together.

Articles (spec 3.3 and docs/input_pipeline.md): by default each batch up to one of
`--length_buckets` evenly spaced lengths (`bucket_lengths`, `encoder_width`); summaries
(`--decoder_buckets`) to max_dec_steps as the original, or to one of a few lengths
(`decoder_width`). Training and eval pools are sorted before they are cut into batches
(`bucket_order`): by article length as the original, or by article bucket, then summary
length.
"""

from __future__ import annotations

import tensorflow as tf

from pointer_generator.hparams import HParams


def bucket_order(enc_lens, batch_size: int, seed, dec_lens=None, enc_bounds=None):
    """Order of a pool for length bucketing (spec 3.3).

    Stable sort by `enc_lens` ([n], n a multiple of batch_size), cut into consecutive
    groups of batch_size, groups in a random order. With `dec_lens` ([n], summary lengths;
    --decoder_buckets) the sort is by the article's length bucket (the first of the
    ascending `enc_bounds` that holds it), then by summary length, so that a group's
    summaries are alike as well. Returns [n] int32 indices.
    """
    key = tf.cast(enc_lens, tf.int64)
    if dec_lens is not None:
        # [n]: the index of the smallest bound that holds each article.
        bucket = tf.searchsorted(
            tf.constant(enc_bounds, tf.int64), key, side="left", out_type=tf.int64
        )
        dec = tf.cast(dec_lens, tf.int64)
        key = bucket * (tf.reduce_max(dec) + 1) + dec
    groups = tf.reshape(tf.argsort(key, stable=True), [-1, batch_size])
    return tf.reshape(tf.random.experimental.stateless_shuffle(groups, seed), [-1])


def bucket_lengths(max_len: int, buckets: int) -> list[int]:
    """The encoder lengths batches are padded to by default: `buckets` evenly spaced
    lengths up to `max_len`, each rounded up to a multiple of 8 (vector-friendly), the
    last `max_len` itself. E.g. (400, 4) -> [104, 200, 304, 400]; (50, 4) -> [16, 32,
    40, 50].

    Evenly spaced rather than fitted to a corpus: every mode and every dataset of an
    experiment (train, eval, decode, a user's own text) then pads to the same few
    lengths, so each is compiled once. The padding costs at most max_len / buckets
    positions per batch, and training batches are sorted by length (spec 3.3), so most
    batches sit just under a bucket."""
    lengths = {min(max_len, -(-(max_len * i // buckets) // 8) * 8) for i in range(1, buckets)}
    return sorted(n for n in lengths if 0 < n < max_len) + [max_len]


def padded_lengths(hps: HParams) -> list[int] | None:
    """Every article length `encoder_width` pads to: the length buckets, max_enc_steps
    alone with static shapes, None with each batch's own longest (static_shapes=False)."""
    if hps.static_shapes is True:
        return [hps.max_enc_steps]
    if hps.static_shapes is False:
        return None
    return bucket_lengths(hps.max_enc_steps, hps.length_buckets)


def encoder_width(enc_lens, hps: HParams):
    """T_enc of a batch with encoder lengths `enc_lens` [B]: max_enc_steps with
    static_shapes=True, the smallest of `bucket_lengths` that holds the longest article by
    default (static_shapes=None), the longest article itself with static_shapes=False.
    Returns an int, a scalar int32 tensor, or None (= the longest)."""
    if hps.static_shapes is True:
        return hps.max_enc_steps
    if hps.static_shapes is False:
        return None
    return _smallest_holding(enc_lens, bucket_lengths(hps.max_enc_steps, hps.length_buckets))


def decoder_width(dec_lens, hps: HParams):
    """T_dec of a batch with summary lengths `dec_lens` [B] (each <= max_dec_steps):
    max_dec_steps with decoder_buckets 1 (the original's) or static_shapes=True, else the
    smallest of `bucket_lengths(max_dec_steps, decoder_buckets)` that holds the longest
    summary. Returns an int or a scalar int32 tensor. The positions past a summary's end
    are masked out of every loss, so the padding changes no value (only the work)."""
    if hps.decoder_buckets <= 1 or hps.static_shapes is True:
        return hps.max_dec_steps
    return _smallest_holding(dec_lens, bucket_lengths(hps.max_dec_steps, hps.decoder_buckets))


def _smallest_holding(lens, lengths: list[int]):
    """The smallest of the ascending `lengths` that holds the longest of `lens` [B] (the
    last where none does), as a scalar int32 tensor."""
    bounds = tf.constant(lengths, tf.int32)
    longest = tf.reduce_max(tf.concat([lens, [1]], 0))
    index = tf.searchsorted(bounds, longest[None], side="left")[0]
    return bounds[tf.minimum(index, tf.size(bounds) - 1)]
