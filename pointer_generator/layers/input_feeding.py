"""Input feeding: the decoder's input x_t = Linear([y_t; h*_{t-1}]) (spec 4.6), the
previous summary word's embedding merged with the previous attention context.

One Dense layer over the concatenation, as the original's; it also gives its two halves
separately, for training, where the embedding half of every step is computed at once
before the recurrence (it does not depend on it) and only the context half runs inside
the loop (`PointerGeneratorModel._decoder_loop`, `layers/fused_decoder.py`).
"""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="pointer_generator")
class InputFeeding(keras.layers.Dense):
    """x_t = [y_t; h*_{t-1}] W + b. Call: [..., emb_dim + context_dim] -> [..., units].

    Args:
      units: the size of x_t (emb_dim in the original: 640 -> 128 at the paper's sizes).
      emb_dim: the size of y_t, the first part of the input.
    """

    def __init__(self, units: int, emb_dim: int, **kwargs):
        super().__init__(units, **kwargs)
        self.emb_dim = emb_dim

    def merge(self, embedded, context):
        """x = [embedded; context] W + b: [N, emb_dim], [N, context_dim] -> [N, units]."""
        return self(tf.concat([embedded, context], -1))

    def embedding_term(self, embedded_steps):
        """y_t W_y + b for every step at once: [T, B, emb_dim] -> [T, B, units]."""
        return tf.einsum("tbe,ek->tbk", embedded_steps, self.kernel[: self.emb_dim]) + self.bias

    def context_kernel(self):
        """W_c, the context half of the kernel: [context_dim, units] (x_t = y-term + h* W_c)."""
        return self.kernel[self.emb_dim :]

    def get_config(self):
        return {**super().get_config(), "emb_dim": self.emb_dim}
