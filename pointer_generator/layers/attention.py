"""Additive attention with coverage (paper eq. 1-3 and 11; spec 4.6 step 3)."""

import keras
import tensorflow as tf

from pointer_generator.layers.initializers import glorot, glorot_fans

# Smallest normalising sum the safe masked softmax divides by; only all-padding rows get
# anywhere near it (their attention then is all zeros instead of 0/0 = NaN).
_TINY = 1e-30


def masked_softmax(scores, mask, safe: bool = True):
    """Softmax over the real encoder positions.

    Args:
      scores: [batch, enc_len] attention energies e_i.
      mask: [batch, enc_len] float, 1 for real positions and 0 for padding.
      safe: False computes the original's formula (softmax over all positions, zero the
        padding, divide by the sum; NaN when the mass of real positions underflows).
        True takes the max over real positions only and guards the division, which is the
        same on normal inputs and finite (all zeros) on all-padding rows.
    Returns:
      [batch, enc_len] attention distribution a.
    """
    if not safe:
        attn = tf.nn.softmax(scores) * mask
        return attn / tf.reduce_sum(attn, axis=-1, keepdims=True)
    very_negative = tf.fill(tf.shape(scores), tf.constant(-1e30, scores.dtype))
    masked = tf.where(mask > 0, scores, very_negative)
    shifted = masked - tf.stop_gradient(tf.reduce_max(masked, axis=-1, keepdims=True))
    unnorm = tf.exp(shifted) * mask
    total = tf.reduce_sum(unnorm, axis=-1, keepdims=True)
    return unnorm / tf.maximum(total, _TINY)


def attention_energies(features, dec_features, v, coverage=None, w_c=None):
    """e_i = v^T tanh(W_h h_i + W_s s_t + b_attn [+ w_c c_i]) (eq. 1, with coverage eq. 11);
    the one implementation, used by training, eval and decoding.

    features: [..., T, A] W_h h_i; dec_features: [..., A] W_s s_t + b_attn (one row per
    decoder row, broadcast over the T positions); coverage: [..., T] or None; w_c: [A].
    Returns [..., T].
    """
    pre = features + dec_features[..., None, :]
    if coverage is not None:
        pre = pre + coverage[..., None] * w_c
    # A dot, not reduce_sum(v * tanh): XLA's CPU row reductions are ~5x slower here.
    return tf.linalg.matvec(tf.tanh(pre), v)


@keras.saving.register_keras_serializable(package="pointer_generator")
class CoverageAttention(keras.layers.Layer):
    """e_i^t = v^T tanh(W_h h_i + W_s [c_t; s_t] + b_attn [+ w_c c_i^t]), a^t = masked softmax.

    Paper eq. 1-2 (and eq. 11 with coverage); the context vector h*_t = sum_i a_i^t h_i is
    eq. 3. As in the original release (not the paper's text) the decoder feature is taken
    from the full LSTM state [c; h], and `W_h h_i` is computed once per article by
    `encoder_features`.

    Weights: `W_h` [enc_dim, attn_dim] (the original's bias-free 1x1 convolution), `W_s`
    [state_dim, attn_dim] and `b_attn` [attn_dim] (the original's Attention/Linear), `v`
    [attn_dim], and with coverage `w_c` [1, attn_dim].

    Args:
      enc_dim: size of the encoder states h_i (2 * hidden_dim).
      state_dim: size of the decoder state [c; h] (2 * hidden_dim).
      attention_dim: size of the attention features (2 * hidden_dim in the original).
      use_coverage: create `w_c` and add coverage features when a coverage vector is given.
      safe: numerically safe masked softmax (see `masked_softmax`).
    """

    def __init__(
        self,
        enc_dim: int,
        state_dim: int,
        attention_dim: int,
        use_coverage: bool = False,
        safe: bool = True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.enc_dim = enc_dim
        self.state_dim = state_dim
        self.attention_dim = attention_dim
        self.use_coverage = use_coverage
        self.safe = safe

    def build(self, input_shape=None):
        if self.built:
            return
        a = self.attention_dim
        # The original's W_h is a [1, 1, enc_dim, a] conv kernel: Glorot fans enc_dim / a.
        self.W_h = self.add_weight(name="W_h", shape=(self.enc_dim, a), initializer=glorot())
        self.W_s = self.add_weight(name="W_s", shape=(self.state_dim, a), initializer=glorot())
        self.b_attn = self.add_weight(name="b_attn", shape=(a,), initializer="zeros")
        # TF1 Glorot on a 1-D [a] variable uses fan_in = fan_out = a.
        self.v = self.add_weight(name="v", shape=(a,), initializer=glorot_fans(a, a))
        if self.use_coverage:
            # [1, 1, 1, a] conv kernel in the original: fan_in 1, fan_out a.
            self.w_c = self.add_weight(name="w_c", shape=(1, a), initializer=glorot_fans(1, a))
        self.built = True

    def encoder_features(self, enc_states):
        """W_h h_i for all positions: [batch, enc_len, enc_dim] -> [batch, enc_len, attn_dim]."""
        self.build()
        return tf.einsum("btd,da->bta", enc_states, self.W_h)

    def decoder_weights(self) -> tuple:
        """(W_s, b_attn, v, w_c) as tensors, w_c flattened to [attn_dim] (zeros without
        coverage): what the fused training loop (`layers/fused_decoder.py`) computes eq. 1
        and 11 with, in the order it takes them."""
        self.build()
        w_c = (
            tf.reshape(self.w_c, [-1])
            if self.use_coverage
            else tf.zeros([self.attention_dim], self.W_s.dtype)
        )
        return (
            tf.convert_to_tensor(self.W_s),
            tf.convert_to_tensor(self.b_attn),
            tf.convert_to_tensor(self.v),
            w_c,
        )

    def call(self, enc_states, enc_features, enc_padding_mask, dec_state, coverage=None):
        """One attention step.

        Args:
          enc_states: [batch, enc_len, enc_dim] encoder states h_i.
          enc_features: [batch, enc_len, attn_dim] from `encoder_features`.
          enc_padding_mask: [batch, enc_len] float mask.
          dec_state: [batch, state_dim] decoder state [c_t; s_t].
          coverage: [batch, enc_len] coverage vector c^t, or None (no coverage features).
        Returns:
          (context [batch, enc_dim], attention [batch, enc_len]).
        """
        dec_features = tf.matmul(dec_state, self.W_s) + self.b_attn  # [batch, attn_dim]
        use_cov = coverage is not None and self.use_coverage
        scores = attention_energies(
            enc_features,
            dec_features,
            self.v,
            coverage if use_cov else None,
            self.w_c[0] if use_cov else None,
        )  # [batch, enc_len]
        attn = masked_softmax(scores, enc_padding_mask, self.safe)
        context = tf.einsum("bt,btd->bd", attn, enc_states)
        return context, attn

    def beam_attention(self, enc_states, enc_features, enc_padding_mask, dec_state, coverage=None):
        """`call` for N = B*K decoder rows over B articles (beam search), compiled with XLA.

        Row b*K + k of `dec_state` / `coverage` is beam k of article b, and the encoder
        tensors have one row per article: they are not tiled K times, and each step reads
        W_h h_i once for all beams in one fused pass. Same values as `call` with the
        encoder tensors tiled to N rows. Not differentiable (decoding only).

        Args:
          enc_states [B, T, enc_dim], enc_features [B, T, attn_dim], enc_padding_mask
          [B, T]; dec_state [N, state_dim]; coverage [N, T] or None.
        Returns:
          (context [N, enc_dim], attention [N, T]).
        """
        self.build()
        dec_features = tf.matmul(dec_state, self.W_s) + self.b_attn  # [N, attn_dim]
        use_cov = coverage is not None and self.use_coverage
        w_c = (
            tf.reshape(self.w_c, [-1])
            if use_cov
            else tf.zeros([self.attention_dim], dec_features.dtype)
        )
        if coverage is None:
            coverage = tf.zeros(
                [tf.shape(dec_state)[0], tf.shape(enc_features)[1]], dec_features.dtype
            )
        return _beam_attention(
            enc_states,
            enc_features,
            enc_padding_mask,
            dec_features,
            coverage,
            tf.convert_to_tensor(self.v),
            w_c,
            use_cov,
            self.safe,
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            enc_dim=self.enc_dim,
            state_dim=self.state_dim,
            attention_dim=self.attention_dim,
            use_coverage=self.use_coverage,
            safe=self.safe,
        )
        return config


@tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
def _beam_attention(
    enc_states, enc_features, mask, dec_features, coverage, v, w_c, use_coverage, safe
):
    """The attention of `CoverageAttention.beam_attention` (see there); XLA fuses the
    energies of all beams into one pass over `enc_features`."""
    batch, enc_len = tf.shape(enc_features)[0], tf.shape(enc_features)[1]
    dec = tf.reshape(dec_features, [batch, -1, tf.shape(dec_features)[-1]])  # [B, K, A]
    beams = tf.shape(dec)[1]
    cov = tf.reshape(coverage, [batch, beams, enc_len]) if use_coverage else None
    scores = attention_energies(enc_features[:, None], dec, v, cov, w_c)  # [B, K, T]
    mask_k = tf.broadcast_to(mask[:, None], [batch, beams, enc_len])
    attn = masked_softmax(
        tf.reshape(scores, [-1, enc_len]), tf.reshape(mask_k, [-1, enc_len]), safe
    )
    context = tf.einsum("bkt,btd->bkd", tf.reshape(attn, [batch, beams, enc_len]), enc_states)
    return tf.reshape(context, [batch * beams, -1]), attn
