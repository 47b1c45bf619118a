"""The layers of ABS (Rush, Chopra & Weston 2015; spec docs: ../shared/spec/abs-ras.md §2).

Each implements one printed equation; the paper's form is the default, and where the
official Lua code (NAMAS) differs the difference is a constructor switch, named after
what it adds (spec §2.9). Notation: B batch, M input length, C context window, D context
embedding size, H hidden / encoder size.

* `NNLMHidden`       h = tanh(U ỹ_c) over the C concatenated E-embeddings (§2.2)
* `BagOfWordsEncoder` enc1 = mean of the input embeddings F x_j (§2.3)
* `ConvEncoder`       enc2: L x (conv width 2Q+1, max-pool 2, tanh), max over time (§2.3)
* `AttentionEncoder`  enc3 = p^T x̄, p = softmax(x̃ P ỹ'_c), x̄ the ±Q-smoothed x̃ (§2.3)
* the output, log p = log_softmax(V h + W enc) (§2.4), is `log_softmax_output.py`

Padding: every encoder gives for a padded row exactly what it gives for the same row
unpadded (padded positions are zeroed before every window and excluded from every
softmax, mean and max).
"""

from __future__ import annotations

import keras
import tensorflow as tf

from pointer_generator.layers.attention import masked_softmax

SMOOTHING_DIVISORS = ("Q", "2Q+1")


def _masked(x, mask):
    """x [B, M, H] with the padded positions (mask [B, M] == 0) set to zero."""
    return x * tf.cast(mask, x.dtype)[..., None]


def window_sum(x, mask, q: int):
    """Σ_{j=i-Q}^{i+Q} x_j for every position i, padding and the edges counted as zeros:
    x [B, M, H], mask [B, M] -> [B, M, H]."""
    x = _masked(x, mask)
    padded = tf.pad(x, [[0, 0], [q, q], [0, 0]])
    m = tf.shape(x)[1]
    return tf.add_n([padded[:, k : k + m] for k in range(2 * q + 1)])


@keras.saving.register_keras_serializable(package="pointer_generator")
class NNLMHidden(keras.layers.Layer):
    """h = tanh(U ỹ_c): the feed-forward language model's hidden layer (spec §2.2).

    Call: context [B, C, D] (the E-embeddings of the last C summary words) -> [B, H].
    use_bias: NAMAS's U has a bias (paper: none).
    """

    def __init__(self, hidden: int, use_bias: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.hidden, self.use_bias = hidden, use_bias
        self.u = keras.layers.Dense(hidden, use_bias=use_bias, name="U", dtype=self.dtype_policy)

    def build(self, input_shape):
        c, d = input_shape[-2], input_shape[-1]
        self.u.build((None, c * d))
        self.built = True

    def call(self, context):
        flat = tf.reshape(context, [tf.shape(context)[0], -1])
        return tf.tanh(self.u(flat))

    def get_config(self):
        return {**super().get_config(), "hidden": self.hidden, "use_bias": self.use_bias}


@keras.saving.register_keras_serializable(package="pointer_generator")
class BagOfWordsEncoder(keras.layers.Layer):
    """enc1(x, y_c) = p^T x̃, p = [1/M, ..., 1/M] over the M real positions (spec §2.3).

    Call: embedded [B, M, H] (x̃ = F x_j), mask [B, M] -> [B, H].
    extra_linear: NAMAS applies a Linear(H -> H) with bias after the mean.
    """

    def __init__(self, extra_linear: bool = False, **kwargs):
        super().__init__(**kwargs)
        self.extra_linear = extra_linear
        self.linear = None

    def build(self, input_shape):
        if self.extra_linear:
            self.linear = keras.layers.Dense(
                input_shape[-1], name="extra_linear", dtype=self.dtype_policy
            )
            self.linear.build((None, input_shape[-1]))
        self.built = True

    def call(self, embedded, mask):
        length = tf.reduce_sum(tf.cast(mask, embedded.dtype), axis=1, keepdims=True)
        enc = tf.reduce_sum(_masked(embedded, mask), axis=1) / tf.maximum(length, 1.0)
        return self.linear(enc) if self.linear is not None else enc

    def get_config(self):
        return {**super().get_config(), "extra_linear": self.extra_linear}


@keras.saving.register_keras_serializable(package="pointer_generator")
class ConvEncoder(keras.layers.Layer):
    """enc2 (spec §2.3): for l = 1..L, x̄ˡ_i = Qˡ x̃ˡ⁻¹_[i-Q..i+Q] (a width-2Q+1 temporal
    convolution, H -> H, no bias), x̃ˡ_i = tanh(max{x̄ˡ_2i-1, x̄ˡ_2i}); enc2 = max_i x̃ᴸ_i.

    Call: embedded [B, M, H], mask [B, M] -> [B, H]. A real position pools with its pair
    partner only if that partner is real too (an odd length keeps its last one alone).
    """

    def __init__(self, layers: int = 3, q: int = 2, **kwargs):
        super().__init__(**kwargs)
        self.num_layers, self.q = layers, q

    def build(self, input_shape):
        h = input_shape[-1]
        for i in range(self.num_layers):
            conv = keras.layers.Conv1D(
                h,
                2 * self.q + 1,
                padding="same",
                use_bias=False,
                name=f"Q{i + 1}",
                dtype=self.dtype_policy,
            )
            conv.build((None, None, h))
            # One attribute per layer: TensorFlow's checkpoints did not see a list made
            # here, and saved no kernel of this encoder (issue 29).
            setattr(self, f"q{i + 1}", conv)
        self.built = True

    @property
    def convs(self) -> list:
        """Q1..QL, the convolutions in order."""
        return [getattr(self, f"q{i + 1}") for i in range(self.num_layers)]

    def call(self, embedded, mask):
        x, mask = embedded, tf.cast(mask, embedded.dtype)
        for conv in self.convs:
            xbar = conv(_masked(x, mask))
            # Pairs (2i-1, 2i): pad to an even length with a padded position.
            odd = tf.shape(xbar)[1] % 2
            xbar = tf.pad(xbar, [[0, 0], [0, odd], [0, 0]])
            mask = tf.pad(mask, [[0, 0], [0, odd]])
            very_negative = tf.fill(tf.shape(xbar), tf.constant(-1e30, xbar.dtype))
            xbar = tf.where(mask[..., None] > 0, xbar, very_negative)
            b, m2 = tf.shape(xbar)[0], tf.shape(xbar)[1] // 2
            pairs = tf.reshape(xbar, [b, m2, 2, -1])
            mask = tf.reduce_max(tf.reshape(mask, [b, m2, 2]), axis=2)
            x = _masked(tf.tanh(tf.reduce_max(pairs, axis=2)), mask)
        very_negative = tf.fill(tf.shape(x), tf.constant(-1e30, x.dtype))
        return tf.reduce_max(tf.where(mask[..., None] > 0, x, very_negative), axis=1)

    def get_config(self):
        return {**super().get_config(), "layers": self.num_layers, "q": self.q}


@keras.saving.register_keras_serializable(package="pointer_generator")
class AttentionEncoder(keras.layers.Layer):
    """enc3 (spec §2.3): p ∝ exp(x̃ P ỹ'_c) over the real input positions,
    x̄_i = Σ_{q=i-Q}^{i+Q} x̃_q / divisor (zero-padded edges), enc3 = p^T x̄.

    The printed smoothing line has two typos (x̃_i for x̃_q; 2Q+1 terms over Q): the sum
    runs over x̃_q, and the divisor is `smoothing_divisor`, "Q" as printed (default) or
    "2Q+1" (the true mean). Keys are the unsmoothed x̃, values the smoothed x̄.

    Call: embedded [B, M, H] (x̃ = F x_j), mask [B, M], context [B, C, D] (the G
    embeddings ỹ'_c) -> (enc [B, H], p [B, M]); or context [B, T, C, D] (T queries of
    one input) -> (enc [B, T, H], p [B, T, M]).
    NAMAS switches (spec §2.9): `p_bias` (P with a bias), `learned_smoothing` (the window
    sum times a learned scalar plus a learned bias, instead of 1/divisor), `extra_linear`
    (a Linear(H -> H) with bias after p^T x̄).
    """

    def __init__(
        self,
        q: int = 2,
        smoothing_divisor: str = "Q",
        p_bias: bool = False,
        learned_smoothing: bool = False,
        extra_linear: bool = False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if smoothing_divisor not in SMOOTHING_DIVISORS:
            raise ValueError(
                f"smoothing_divisor must be one of {SMOOTHING_DIVISORS}, got {smoothing_divisor!r}"
            )
        self.q, self.smoothing_divisor = q, smoothing_divisor
        self.p_bias, self.learned_smoothing, self.extra_linear = (
            p_bias,
            learned_smoothing,
            extra_linear,
        )
        self.linear = None

    def build(self, embedded_shape, mask_shape=None, context_shape=None):
        h = embedded_shape[-1]
        c, d = context_shape[-2], context_shape[-1]
        self.p = keras.layers.Dense(h, use_bias=self.p_bias, name="P", dtype=self.dtype_policy)
        self.p.build((None, c * d))
        if self.learned_smoothing:
            self.smooth_weight = self.add_weight(name="smooth_weight", shape=(), initializer="ones")
            self.smooth_bias = self.add_weight(name="smooth_bias", shape=(), initializer="zeros")
        if self.extra_linear:
            self.linear = keras.layers.Dense(h, name="extra_linear", dtype=self.dtype_policy)
            self.linear.build((None, h))
        self.built = True

    def divisor(self) -> float:
        return float(self.q if self.smoothing_divisor == "Q" else 2 * self.q + 1)

    def call(self, embedded, mask, context):
        # Several queries per input ([B, T, C, D], one per summary position) share the
        # input's embeddings: no copy of the input per query.
        several = len(context.shape) == 4
        if not several:
            context = context[:, None]
        shape = tf.shape(context)
        query = self.p(tf.reshape(context, [shape[0], shape[1], -1]))  # P ỹ'_c [B, T, H]
        scores = tf.einsum("bmh,bth->btm", embedded, query)
        p = masked_softmax(scores, tf.cast(mask, embedded.dtype)[:, None, :])
        summed = window_sum(embedded, mask, self.q)
        if self.learned_smoothing:
            smoothed = self.smooth_weight * summed + self.smooth_bias
        else:
            smoothed = summed / self.divisor()
        enc = tf.einsum("btm,bmh->bth", p, smoothed)
        if self.linear is not None:
            enc = self.linear(enc)
        if not several:
            enc, p = enc[:, 0], p[:, 0]
        return enc, p

    def get_config(self):
        return {
            **super().get_config(),
            "q": self.q,
            "smoothing_divisor": self.smoothing_divisor,
            "p_bias": self.p_bias,
            "learned_smoothing": self.learned_smoothing,
            "extra_linear": self.extra_linear,
        }
