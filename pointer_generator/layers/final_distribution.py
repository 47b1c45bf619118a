"""The extended-vocabulary final distribution (paper eq. 9; spec 4.8)."""

import keras
import tensorflow as tf


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
        batch = tf.shape(vocab_dist)[0]
        gen = p_gen * vocab_dist
        gen = tf.concat([gen, tf.zeros([batch, max_art_oovs], gen.dtype)], axis=1)
        copy = (1.0 - p_gen) * attn
        enc_len = tf.shape(enc_batch_extend_vocab)[1]
        rows = tf.tile(tf.range(batch)[:, None], [1, enc_len])
        indices = tf.stack([rows, enc_batch_extend_vocab], axis=2)  # [batch, enc_len, 2]
        copied = tf.scatter_nd(indices, copy, tf.shape(gen))
        return gen + copied
