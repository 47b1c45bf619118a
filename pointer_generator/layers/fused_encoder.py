"""The masked bidirectional encoder (spec 4.4) as a fused loop with a hand-written gradient.

This module and `fused_decoder.py` hold the two recurrences of training.

`bidirectional_lstm` (the masked encoder, spec 4.4) and `attention_decoder` (the training
decoder loop, spec 4.6) compute exactly what the Keras layers and the autodiff'd
`tf.while_loop` compute (the tests compare both, values and gradients), but:

* every product that does not depend on the recurrence is taken once for all steps as
  one large matmul: the encoder's input projections before the loop; after the backward
  loop, every weight gradient (`sum_t x_t^T dz_t` over all steps at once) and the gradient
  of the encoder states through the context vectors (`sum_t a_t dctx_t^T`);
* the forward loop saves only small per-step tensors (gates, states, attention, coverage);
  the backward loop recomputes tanh(W_h h_i + W_s s_t + ...) instead of keeping a
  [batch, enc_len, attn_dim] tensor per step (no per-step tensor is larger than
  [batch, enc_len]);
* both loops are compiled with XLA (`jit=True`), which fuses each step's elementwise
  work on the decoder's [batch, enc_len, attn_dim] attention tensor and removes the
  per-op overhead of small steps; the reductions over that tensor are written as dots,
  which XLA's CPU backend runs much faster than `reduce_sum` over the last axis.
  Each new batch shape compiles once.

Weights are passed in as tensors, so the model keeps its Keras weight objects (and the
TF1 checkpoint mapping) unchanged; the gradients flow back to them as usual.
"""

from __future__ import annotations

import tensorflow as tf

from pointer_generator.layers.recurrent import (
    fill_none,
    flat,
    lstm_backward,
    lstm_cell,
    no_tape,
    outer_sum,
    shift_down,
    transposed,
)


def _encoder_forward(xf, xb, mask, rf, rb):
    """Both directions in one loop. xf, xb [T, B, 4H] input projections (with bias),
    mask [T, B, 1]; step s runs the forward cell at position s and the backward cell at
    position T-1-s. Returns states after each position (at that position) and gates."""
    t_len, batch = tf.shape(xf)[0], tf.shape(xf)[1]
    hidden = tf.shape(rf)[0]
    dtype = xf.dtype
    zero = tf.zeros([batch, hidden], dtype)
    tas = [tf.TensorArray(dtype, size=t_len) for _ in range(6)]

    def cell(x, m, h, c, r):
        h_new, c_new, acts = lstm_cell(x + tf.matmul(h, r), c)
        # Past a sequence's end the state is carried through unchanged (TF1 dynamic_rnn).
        real = m > 0
        return tf.where(real, h_new, h), tf.where(real, c_new, c), acts

    def body(s, hf, cf, hb, cb, tas):
        p = t_len - 1 - s
        hf, cf, af = cell(xf[s], mask[s], hf, cf, rf)
        hb, cb, ab = cell(xb[p], mask[p], hb, cb, rb)
        tas = (
            tas[0].write(s, hf),
            tas[1].write(s, cf),
            tas[2].write(s, af),
            tas[3].write(p, hb),
            tas[4].write(p, cb),
            tas[5].write(p, ab),
        )
        return s + 1, hf, cf, hb, cb, tas

    _, _, _, _, _, tas = tf.while_loop(
        lambda s, *_: s < t_len, body, (tf.constant(0), zero, zero, zero, zero, tuple(tas))
    )
    return tuple(ta.stack() for ta in tas)


def _encoder_backward(mask, rf_t, rb_t, fw, bw):
    """Reverse of `_encoder_forward`: step s handles the forward cell at position T-1-s
    and the backward cell at position s. rf_t, rb_t: the recurrent kernels transposed,
    [4H, H] (see `transposed`). Returns dz [T, B, 4H] for both directions.
    fw, bw: (c_prev, c_new, acts, d_out, dh, dc) of each direction: the cells before and
    after each position and the gates [T, B, .], the outputs' gradient [T, B, H], and the
    gradient of the final state [B, H]."""
    c_prev_f, c_f, act_f, d_out_f, dhf, dcf = fw
    c_prev_b, c_b, act_b, d_out_b, dhb, dcb = bw
    t_len = tf.shape(mask)[0]
    dtype = mask.dtype
    tas = (tf.TensorArray(dtype, size=t_len), tf.TensorArray(dtype, size=t_len))

    def cell(p, d_out, dh, dc, c_prev, c_new, acts, r_t):
        m = mask[p]
        # h_p = h_{p-1} + m (h_new - h_{p-1}); the output at p is m * h_p.
        dh_new = m * (dh + d_out[p])
        dz, dc_prev = lstm_backward(acts[p], c_prev[p], c_new[p], dh_new, m * dc)
        dh = (1.0 - m) * dh + tf.matmul(dz, r_t)
        dc = (1.0 - m) * dc + dc_prev
        return dz, dh, dc

    def body(s, dhf, dcf, dhb, dcb, tas):
        p = t_len - 1 - s
        dzf, dhf, dcf = cell(p, d_out_f, dhf, dcf, c_prev_f, c_f, act_f, rf_t)
        dzb, dhb, dcb = cell(s, d_out_b, dhb, dcb, c_prev_b, c_b, act_b, rb_t)
        return s + 1, dhf, dcf, dhb, dcb, (tas[0].write(p, dzf), tas[1].write(s, dzb))

    _, _, _, _, _, tas = tf.while_loop(
        lambda s, *_: s < t_len, body, (tf.constant(0), dhf, dcf, dhb, dcb, tas)
    )
    return tas[0].stack(), tas[1].stack()


_encoder_forward_xla = tf.function(
    _encoder_forward, jit_compile=True, reduce_retracing=True, autograph=False
)
_encoder_backward_xla = tf.function(
    _encoder_backward, jit_compile=True, reduce_retracing=True, autograph=False
)


def bidirectional_lstm(x, mask, fw, bw, jit: bool = True):
    """Masked bidirectional LSTM, as TF1's bidirectional_dynamic_rnn with sequence lengths.

    Args:
      x: [batch, T, in_dim] inputs; mask: [batch, T] float, 1 at real positions (a
        prefix of each row).
      fw, bw: (kernel [in_dim, 4H], recurrent_kernel [H, 4H], bias [4H]) of the two cells
        (Keras LSTMCell layout, gates i, f, g, o).
      jit: compile the loops with XLA.
    Returns:
      (outputs [batch, T, 2H] = [fw; bw], zero at padding, h_fw, c_fw, h_bw, c_bw), the
      final states [batch, H] at each sequence's end (the backward one at position 0).
    """
    fwd = _encoder_forward_xla if jit else _encoder_forward
    bwd = _encoder_backward_xla if jit else _encoder_backward

    @tf.custom_gradient
    def run(x, mask, kf, rf, bf, kb, rb, bb):
        xt = tf.transpose(x, [1, 0, 2])  # [T, B, in]
        mt = tf.transpose(mask, [1, 0])[:, :, None]  # [T, B, 1]
        shape = tf.concat([tf.shape(xt)[:2], [-1]], 0)
        xf = tf.reshape(tf.matmul(flat(xt), kf) + bf, shape)
        xb = tf.reshape(tf.matmul(flat(xt), kb) + bb, shape)
        h_f, c_f, act_f, h_b, c_b, act_b = fwd(*no_tape(xf, xb, mt, rf, rb))
        out = tf.transpose(tf.concat([h_f, h_b], -1) * mt, [1, 0, 2])
        zero = tf.zeros_like(h_f[0])

        def grad(d_out, dhf, dcf, dhb, dcb):
            d_out, dhf, dcf, dhb, dcb = fill_none(
                (d_out, dhf, dcf, dhb, dcb), (out, zero, zero, zero, zero)
            )
            d_out = tf.transpose(d_out, [1, 0, 2])
            d_out_f, d_out_b = tf.split(d_out, 2, axis=-1)
            c_prev_f = shift_down(c_f, zero)
            c_prev_b = tf.concat([c_b[1:], zero[None]], 0)
            dzf, dzb = bwd(
                *no_tape(mt, *transposed(rf, rb)),
                no_tape(c_prev_f, c_f, act_f, d_out_f, dhf, dcf),
                no_tape(c_prev_b, c_b, act_b, d_out_b, dhb, dcb),
            )
            h_prev_f = shift_down(h_f, zero)
            h_prev_b = tf.concat([h_b[1:], zero[None]], 0)
            dx = tf.matmul(flat(dzf), kf, transpose_b=True) + tf.matmul(
                flat(dzb), kb, transpose_b=True
            )
            dx = tf.transpose(tf.reshape(dx, tf.shape(xt)), [1, 0, 2])
            return (
                dx,
                tf.zeros_like(mask),
                outer_sum(xt, dzf),
                outer_sum(h_prev_f, dzf),
                tf.reduce_sum(dzf, [0, 1]),
                outer_sum(xt, dzb),
                outer_sum(h_prev_b, dzb),
                tf.reduce_sum(dzb, [0, 1]),
            )

        return (out, h_f[-1], c_f[-1], h_b[0], c_b[0]), grad

    return run(x, mask, *fw, *bw)
