"""The layers of RAS (Chopra, Auli & Rush 2016; spec abs-ras.md §3), as printed.

Notation: B batch, M input length, d the embedding size = the decoder state size (the
attention is a dot product z_j · h_{t-1}), q the convolution width.

* `RASEncoder`   a_i = x_i + l_i; z_i = Σ_h a_{i+h} B_{q/2+h} (width-q convolution, d
                 kernels, no bias, no non-linearity) (§3.1)
* `ras_attention`  α_j ∝ exp(z_j · h_{t-1}) over real positions; c_t = Σ_j α_j x_j, the
                 plain word embeddings (§3.1); or, as a switch, exp(s · cos(z_j, h_{t-1}))
* `ElmanCell`    h_t = σ(W1 y_{t-1} + W2 h_{t-1} + W3 c_t), sigmoid, not tanh (§3.2)
* `RASLSTMCell`  the printed LSTM: c_t enters all four gates, h_t = m_t ⊙ o_t with no
                 tanh (§3.3); `standard=True` gives o_t ⊙ tanh(m_t), the only difference
                 from Keras' LSTMCell
* the output, log ρ(W4 h_t + W5 c_t) (§3.2), is `log_softmax_output.py`

No biases: the printed equations have none (`use_bias` adds them, as a switch).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from pointer_generator.layers.attention import masked_softmax


@keras.saving.register_keras_serializable(package="pointer_generator")
class RASEncoder(keras.layers.Layer):
    """Attention keys z [B, M, d] from words x [B, M, d] (already embedded) and the mask
    [B, M]: learned absolute position embeddings l_i (max_positions of them) are added,
    padding is zeroed (so a padded row equals the unpadded one), then a "same" width-q
    cross-correlation with d output channels, no bias."""

    def __init__(self, width: int = 5, max_positions: int = 200, **kwargs):
        super().__init__(**kwargs)
        if width % 2 != 1:
            raise ValueError(f"the convolution width q must be odd, got {width}")
        self.width, self.max_positions = width, max_positions

    def build(self, words_shape, mask_shape=None):
        d = words_shape[-1]
        self.positions = self.add_weight(name="positions", shape=(self.max_positions, d))
        self.conv = keras.layers.Conv1D(
            d, self.width, padding="same", use_bias=False, name="B", dtype=self.dtype_policy
        )
        self.conv.build((None, None, d))
        self.built = True

    def torch_fan_ins(self) -> list:
        """The positions are a lookup table (its convolution is a Conv1D of its own;
        layers/torch_init.py)."""
        return [(self.positions, None)]

    def call(self, words, mask):
        m = tf.shape(words)[1]
        a = words + self.positions[None, :m]
        a = a * tf.cast(mask, a.dtype)[..., None]
        return self.conv(a)

    def get_config(self):
        return {**super().get_config(), "width": self.width, "max_positions": self.max_positions}


def ras_attention(keys, words, mask, h_prev, cosine_scale: float | None = None):
    """(c_t [B, d], α [B, M]): α_j ∝ exp(z_j · h_{t-1}) over the real positions, c_t the
    α-weighted plain word embeddings x_j. keys, words [B, M, d]; h_prev [B, d].

    `cosine_scale` s (not the paper's; `--ras_attention=cosine`): α_j ∝ exp(s · cos(z_j,
    h_{t-1})), logits bounded by ±s. The printed dot product has no bound, and in
    training it saturates onto one input position within a few steps, after which its
    gradient is ~0 (docs/families.md, "RAS: the attention locks onto one position")."""
    if cosine_scale is not None:
        keys = tf.math.l2_normalize(keys, axis=-1)
        h_prev = cosine_scale * tf.math.l2_normalize(h_prev, axis=-1)
    alpha = masked_softmax(tf.einsum("bmd,bd->bm", keys, h_prev), tf.cast(mask, keys.dtype))
    return tf.einsum("bm,bmd->bd", alpha, words), alpha


def _matrix(layer, name, rows, cols):
    return layer.add_weight(name=name, shape=(rows, cols), initializer="glorot_uniform")


@keras.saving.register_keras_serializable(package="pointer_generator")
class ElmanCell(keras.layers.Layer):
    """h_t = σ(W1 y_{t-1} + W2 h_{t-1} + W3 c_t). Call: y [B, E], h_prev [B, d],
    context [B, d] -> h_t [B, d]."""

    def __init__(self, units: int, use_bias: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.units, self.use_bias = units, use_bias

    def build(self, y_shape, h_prev_shape=None, context_shape=None):
        d = self.units
        self.w1 = _matrix(self, "W1", y_shape[-1], d)
        self.w2 = _matrix(self, "W2", d, d)
        self.w3 = _matrix(self, "W3", context_shape[-1], d)
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=(d,), initializer="zeros")
        self.built = True

    def torch_fan_ins(self) -> list:
        """Each of W1, W2, W3 an nn.Linear of its own input (the bias: W1's)."""
        out = [(w, int(w.shape[0])) for w in (self.w1, self.w2, self.w3)]
        return out + ([(self.bias, int(self.w1.shape[0]))] if self.use_bias else [])

    def call(self, y, h_prev, context):
        pre = tf.matmul(y, self.w1) + tf.matmul(h_prev, self.w2) + tf.matmul(context, self.w3)
        if self.use_bias:
            pre = pre + self.bias
        return tf.sigmoid(pre)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "use_bias": self.use_bias}


@keras.saving.register_keras_serializable(package="pointer_generator")
class RASLSTMCell(keras.layers.Layer):
    """The printed LSTM (spec §3.3), gates i, i' (g), f, o each from y_{t-1}, h_{t-1}
    and c_t:  m_t = m_{t-1} ⊙ f_t + i_t ⊙ i'_t;  h_t = m_t ⊙ o_t.

    Weights are kept as three [., 4d] matrices (input y, state h, context c), gate order
    i, f, g, o (Keras' order, so `standard=True` with zero context equals LSTMCell on the
    same kernel and recurrent kernel). Call: y [B, E], h_prev, m_prev [B, d],
    context [B, d] -> (h_t, m_t).
    """

    def __init__(self, units: int, standard: bool = False, use_bias: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.units, self.standard, self.use_bias = units, standard, use_bias

    def build(self, y_shape, h_prev_shape=None, m_prev_shape=None, context_shape=None):
        d = self.units
        self.kernel = _matrix(self, "kernel", y_shape[-1], 4 * d)
        self.recurrent_kernel = _matrix(self, "recurrent_kernel", d, 4 * d)
        self.context_kernel = _matrix(self, "context_kernel", context_shape[-1], 4 * d)
        if self.use_bias:
            self.bias = self.add_weight(name="bias", shape=(4 * d,), initializer="zeros")
        self.built = True

    def torch_fan_ins(self) -> list:
        """Each of the input, state and context matrices an nn.Linear of its own input."""
        weights = (self.kernel, self.recurrent_kernel, self.context_kernel)
        out = [(w, int(w.shape[0])) for w in weights]
        return out + ([(self.bias, int(self.kernel.shape[0]))] if self.use_bias else [])

    def call(self, y, h_prev, m_prev, context):
        z = (
            tf.matmul(y, self.kernel)
            + tf.matmul(h_prev, self.recurrent_kernel)
            + tf.matmul(context, self.context_kernel)
        )
        if self.use_bias:
            z = z + self.bias
        zi, zf, zg, zo = tf.split(z, 4, axis=-1)
        m = m_prev * tf.sigmoid(zf) + tf.sigmoid(zi) * tf.tanh(zg)
        o = tf.sigmoid(zo)
        return (o * tf.tanh(m) if self.standard else m * o), m

    def get_config(self):
        return {
            **super().get_config(),
            "units": self.units,
            "standard": self.standard,
            "use_bias": self.use_bias,
        }
