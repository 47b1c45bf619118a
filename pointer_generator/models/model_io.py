"""What flows into and out of the model's parts: the batch fields it reads and the
encoder's output that every decoder step (training, eval, decoding) reads."""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

# Batch fields the model reads (the input pipeline yields these and some strings).
MODEL_INPUT_KEYS = (
    "enc_batch",
    "enc_lens",
    "enc_padding_mask",
    "enc_batch_extend_vocab",
    "max_art_oovs",
    "dec_batch",
    "target_batch",
    "dec_padding_mask",
)


class EncoderOutput(NamedTuple):
    """What the decoder needs from the encoder.

    states: [batch, enc_len, 2*hidden] h_i (zero at padded positions).
    features: [batch, enc_len, attn_dim] W_h h_i.
    padding_mask: [batch, enc_len] float.
    c, h: [batch, hidden] reduced initial decoder state.
    """

    states: tf.Tensor
    features: tf.Tensor
    padding_mask: tf.Tensor
    c: tf.Tensor
    h: tf.Tensor
