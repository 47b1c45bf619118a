"""The output layer of the earlier sentence summarizers: log_softmax(A a + B b).

ABS: log p = log_softmax(V h + W enc) (spec abs-ras.md §2.4); RAS: log P_t =
log_softmax(W4 h_t + W5 c_t) (§3.2). One equation, one layer; the weight names are the
paper's.
"""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="pointer_generator")
class LogSoftmaxOutput(keras.layers.Layer):
    """log_softmax(first A + second B [+ bias]) over the vocabulary.

    Call: first [N, F], second [N, S] -> [N, vocab_size]. `names`: the paper's names of
    A and B; `use_bias`: a bias (NAMAS's output layer has one; the papers' none).
    """

    def __init__(self, vocab_size: int, names=("A", "B"), use_bias: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.names, self.use_bias = vocab_size, tuple(names), use_bias

    def build(self, first_shape, second_shape=None):
        v = self.vocab_size
        self.a = self.add_weight(name=self.names[0], shape=(first_shape[-1], v))
        self.b = self.add_weight(name=self.names[1], shape=(second_shape[-1], v))
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=(v,), initializer="zeros")
        self.built = True

    def torch_fan_ins(self) -> list:
        """NAMAS's output is one nn.Linear over [first; second]: every part has that fan-in
        (layers/torch_init.py)."""
        fan = int(self.a.shape[0]) + int(self.b.shape[0])
        weights = [self.a, self.b] + ([self.bias] if self.use_bias else [])
        return [(w, fan) for w in weights]

    def call(self, first, second):
        logits = tf.matmul(first, self.a) + tf.matmul(second, self.b)
        if self.use_bias:
            logits = logits + self.bias
        return tf.nn.log_softmax(logits, axis=-1)

    def get_config(self):
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "names": list(self.names),
            "use_bias": self.use_bias,
        }
