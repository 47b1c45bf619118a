"""The extended-vocabulary final distribution (paper eq. 9; spec 4.8)."""

import keras
import tensorflow as tf


def final_distribution(vocab_dist, attn, p_gen, enc_batch_extend_vocab, max_art_oovs):
    """Eq. 9 over the extended vocabulary (the one implementation; see FinalDistribution).

    vocab_dist [N, vocab], attn [N, T], p_gen [N, 1], enc_batch_extend_vocab [N, T] int32,
    max_art_oovs int32 scalar -> [N, vocab + max_art_oovs].
    """
    batch = tf.shape(vocab_dist)[0]
    gen = p_gen * vocab_dist
    gen = tf.concat([gen, tf.zeros([batch, max_art_oovs], gen.dtype)], axis=1)
    rows = tf.broadcast_to(tf.range(batch)[:, None], tf.shape(enc_batch_extend_vocab))
    indices = tf.stack([rows, enc_batch_extend_vocab], axis=2)  # [N, T, 2]
    return gen + tf.scatter_nd(indices, (1.0 - p_gen) * attn, tf.shape(gen))


@keras.saving.register_keras_serializable(package="pointer_generator")
class FinalDistribution(keras.layers.Layer):
    """P(w) = p_gen P_vocab(w) + (1 - p_gen) sum_{i: w_i = w} a_i over the extended vocab.

    `P_vocab` is extended with `max_art_oovs` zero columns; the attention is scatter-added
    onto the article's extended-vocabulary ids, so repeated article words accumulate
    (`tf.scatter_nd` sums duplicate indices). Padded positions carry zero attention.

    Call args:
      vocab_dist: [batch, vocab] P_vocab.
      attn: [batch, enc_len] attention a.
      p_gen: [batch, 1] generation probability.
      enc_batch_extend_vocab: [batch, enc_len] int32 extended ids of the article.
      max_art_oovs: int32 scalar, number of extra columns.
    Returns:
      [batch, vocab + max_art_oovs] final distribution.
    """

    def call(self, vocab_dist, attn, p_gen, enc_batch_extend_vocab, max_art_oovs):
        return final_distribution(vocab_dist, attn, p_gen, enc_batch_extend_vocab, max_art_oovs)


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _final_distribution_xla(logits, attn, p_gen, enc_batch_extend_vocab, max_art_oovs):
    """`decode_final_distribution` in one fused XLA pass (a small function, compiled once
    per batch shape and number of article OOVs)."""
    return final_distribution(
        tf.nn.softmax(logits, axis=-1), attn, p_gen, enc_batch_extend_vocab, max_art_oovs
    )


def decode_final_distribution(logits, attn, p_gen, enc_batch_extend_vocab, max_art_oovs):
    """`FinalDistribution` of softmax(logits), for decoding: the same values in one pass.

    Args:
      logits [N, vocab]; attn [N, T]; p_gen [N, 1]; enc_batch_extend_vocab [N, T] int32;
      max_art_oovs: int32 scalar.
    Returns:
      [N, vocab + max_art_oovs].
    """
    return _final_distribution_xla(logits, attn, p_gen, enc_batch_extend_vocab, max_art_oovs)
