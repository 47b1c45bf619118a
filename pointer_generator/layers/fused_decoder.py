"""The training decoder's recurrence (spec 4.6) as a fused loop with a hand-written gradient.

Per step: input feeding, the LSTM (`recurrent.lstm_cell`), attention with coverage
(`attention.attention_energies`, eq. 1-2 and 11) and the context vector (eq. 3). Why the
loop is fused, and how, is in `fused_encoder.py`'s docstring.
"""

from __future__ import annotations

import tensorflow as tf

from pointer_generator.layers.attention import attention_energies, masked_softmax
from pointer_generator.layers.recurrent import (
    fill_none,
    join,
    lstm_backward,
    lstm_cell,
    no_tape,
    outer_sum,
    shift_down,
    transposed,
)


def _decoder_forward(
    y_part,
    states,
    features,
    mask,
    h,
    c,
    w_ctx,
    kernel,
    recurrent,
    bias,
    w_s,
    b_attn,
    v,
    w_c,
    safe,
    use_coverage,
):
    """The training decoder loop (see `attention_decoder`); also returns what the
    backward loop needs: coverage before each step [Td, B, T] and the gates [Td, B, 4H]."""
    t_dec = tf.shape(y_part)[0]
    batch, enc_len = tf.shape(states)[0], tf.shape(states)[1]
    dtype = y_part.dtype
    tas = tuple(tf.TensorArray(dtype, size=t_dec) for _ in range(7))

    def body(t, h, c, context, coverage, tas):
        x = y_part[t] + tf.matmul(context, w_ctx)
        h, c, acts = lstm_cell(tf.matmul(x, kernel) + tf.matmul(h, recurrent) + bias, c)
        dec_features = tf.matmul(tf.concat([c, h], 1), w_s) + b_attn
        scores = attention_energies(
            features, dec_features, v, coverage if use_coverage else None, w_c
        )
        attn = masked_softmax(scores, mask, safe)
        context = tf.einsum("bt,btd->bd", attn, states)
        tas = tuple(
            ta.write(t, val)
            for ta, val in zip(tas, (x, c, h, context, attn, coverage, acts), strict=True)
        )
        return t + 1, h, c, context, coverage + attn, tas

    init = (
        tf.constant(0),
        h,
        c,
        tf.zeros([batch, tf.shape(states)[2]], dtype),
        tf.zeros([batch, enc_len], dtype),
        tas,
    )
    *_, tas = tf.while_loop(lambda t, *_: t < t_dec, body, init)
    return tuple(ta.stack() for ta in tas)


def _decoder_backward(
    states,
    features,
    mask,
    c0,
    c_all,
    h_all,
    cov_all,
    attn_all,
    act_all,
    g_x,
    g_c,
    g_h,
    g_ctx,
    g_attn,
    w_ctx_t,
    kernel_t,
    recurrent_t,
    w_s,
    w_s_t,
    b_attn,
    v,
    w_c,
    use_coverage,
):
    """Reverse of `_decoder_forward`. w_ctx_t, kernel_t, recurrent_t, w_s_t: those
    weights transposed (see `transposed`). Returns per-step gradients of the step inputs
    (dx, dz, d_dec_features, d_context) [Td, B, .], the accumulated d(features) [B, T, A],
    dv, dw_c [A] and the initial state's dh0, dc0 [B, H]."""
    t_dec = tf.shape(g_x)[0]
    dtype = g_x.dtype
    hidden = tf.shape(h_all)[2]
    tas = tuple(tf.TensorArray(dtype, size=t_dec) for _ in range(4))
    c_prev_all = shift_down(c_all, c0)

    def body(s, dh, dc, dctx_next, dcov, d_feat, dv, dwc, tas):
        t = t_dec - 1 - s
        attn, coverage = attn_all[t], cov_all[t]
        c, h = c_all[t], h_all[t]
        d_context = g_ctx[t] + dctx_next  # this step's context feeds step t+1's input
        # coverage_{t+1} = coverage_t + attn_t.
        d_attn = g_attn[t] + dcov + tf.einsum("btd,bd->bt", states, d_context)
        d_scores = attn * (d_attn - tf.reduce_sum(attn * d_attn, -1, keepdims=True))
        dec_features = tf.matmul(tf.concat([c, h], 1), w_s) + b_attn
        pre = features + dec_features[:, None, :]
        if use_coverage:
            pre = pre + coverage[:, :, None] * w_c
        th = tf.tanh(pre)
        # d_pre = d_scores (x) g: every reduction of d_pre is a dot with g (fast on CPU).
        g = v * (1.0 - th * th)
        d_feat += d_scores[:, :, None] * g
        dv += tf.einsum("bt,bta->a", d_scores, th)
        if use_coverage:
            dwc += tf.einsum("bt,bta->a", coverage * d_scores, g)
            dcov = dcov + d_scores * tf.linalg.matvec(g, w_c)
        d_dec_features = tf.einsum("bt,bta->ba", d_scores, g)
        d_state = tf.matmul(d_dec_features, w_s_t)
        dh = dh + g_h[t] + d_state[:, hidden:]
        dc = dc + g_c[t] + d_state[:, :hidden]
        dz, dc = lstm_backward(act_all[t], c_prev_all[t], c, dh, dc)
        dh = tf.matmul(dz, recurrent_t)
        dx = g_x[t] + tf.matmul(dz, kernel_t)
        tas = (
            tas[0].write(t, dx),
            tas[1].write(t, dz),
            tas[2].write(t, d_dec_features),
            tas[3].write(t, d_context),
        )
        return (s + 1, dh, dc, tf.matmul(dx, w_ctx_t), dcov, d_feat, dv, dwc, tas)

    zero_bh = tf.zeros_like(c0)
    init = (
        tf.constant(0),
        zero_bh,
        zero_bh,
        tf.zeros_like(g_ctx[0]),
        tf.zeros_like(attn_all[0]),
        tf.zeros_like(features),
        tf.zeros_like(v),
        tf.zeros_like(v),
        tas,
    )
    _, dh0, dc0, _, _, d_feat, dv, dwc, tas = tf.while_loop(lambda s, *_: s < t_dec, body, init)
    return tuple(ta.stack() for ta in tas) + (d_feat, dv, dwc, dh0, dc0)


_decoder_forward_xla = tf.function(
    _decoder_forward, jit_compile=True, reduce_retracing=True, autograph=False
)
_decoder_backward_xla = tf.function(
    _decoder_backward, jit_compile=True, reduce_retracing=True, autograph=False
)


# Batch rows per call of the decoder loops. Each step reads and writes [rows, enc_len,
# attn_dim] tensors (features, tanh, its derivative, the features' gradient): for 16 rows
# at the paper's sizes they are 13 MB each and every pass goes to memory; for 4 rows they
# stay in the last-level cache for all 100 steps. The rows of a batch are independent in
# the recurrence (only the weight gradients are summed), so the batch runs as chunks.
# At the paper shape on a 2-core EPYC (experiments/results/performance_history.md): backward 1.4x,
# forward 1.2x faster than one call over 16 rows.
ROW_CHUNK = 4


def _row_chunks(batch) -> list:
    """Slices of the batch dimension for the decoder loops: chunks of ROW_CHUNK rows when
    the batch size is known when tracing, else one slice of everything."""
    if batch is None or batch <= ROW_CHUNK:
        return [slice(None)]
    return [slice(i, min(i + ROW_CHUNK, batch)) for i in range(0, batch, ROW_CHUNK)]


def attention_decoder(
    y_part,
    states,
    features,
    mask,
    h0,
    c0,
    w_ctx,
    cell,
    attention,
    *,
    use_coverage: bool,
    safe: bool,
    jit: bool = True,
):
    """The training decoder's recurrence over all steps (spec 4.6).

    Per step t (input feeding, LSTM, attention with coverage):
      x_t = y_part_t + context_{t-1} w_ctx
      (h_t, c_t) = LSTM(x_t, h_{t-1}, c_{t-1})
      e_t = v . tanh(features + [c_t; h_t] W_s + b_attn [+ coverage_t w_c])
      attn_t = masked_softmax(e_t); context_t = attn_t . states; coverage_{t+1} += attn_t

    Args:
      y_part: [Td, B, E] the embedding half of the input merge, bias included.
      states, features: [B, T, 2H] encoder states, [B, T, A] W_h states; mask [B, T].
      h0, c0: [B, H] initial state. w_ctx: [2H, E] the context half of the input merge.
      cell: (kernel [E, 4H], recurrent_kernel [H, 4H], bias [4H]) of the decoder LSTM.
      attention: (W_s [2H, A], b_attn [A], v [A], w_c [A]) (w_c unused without coverage).
      use_coverage, safe: as in `CoverageAttention`. jit: compile the loops with XLA.
    Returns:
      time-major x [Td, B, E], c, h [Td, B, H], context [Td, B, 2H], attn [Td, B, T].
    """
    fwd = _decoder_forward_xla if jit else _decoder_forward
    bwd = _decoder_backward_xla if jit else _decoder_backward

    chunks = _row_chunks(states.shape[0])

    @tf.custom_gradient
    def run(
        y_part, states, features, mask, h0, c0, w_ctx, kernel, recurrent, bias, w_s, b_attn, v, w_c
    ):
        weights = no_tape(w_ctx, kernel, recurrent, bias, w_s, b_attn, v, w_c)
        # Time-major tensors are [Td, B, .]: their rows are sliced on axis 1.
        parts = [
            fwd(
                *no_tape(y_part[:, r], states[r], features[r], mask[r], h0[r], c0[r]),
                *weights,
                safe,
                use_coverage,
            )
            for r in chunks
        ]
        x, c, h, context, attn, coverage, acts = (join(p, 1) for p in zip(*parts, strict=True))

        def grad(g_x, g_c, g_h, g_ctx, g_attn):
            g_x, g_c, g_h, g_ctx, g_attn = fill_none(
                (g_x, g_c, g_h, g_ctx, g_attn), (x, c, h, context, attn)
            )
            w_ctx_, kernel_, recurrent_, _, w_s_, b_attn_, v_, w_c_ = weights
            bwd_weights = (
                *transposed(w_ctx_, kernel_, recurrent_),
                w_s_,
                *transposed(w_s_),
                b_attn_,
                v_,
                w_c_,
            )
            parts = [
                bwd(
                    *no_tape(
                        states[r],
                        features[r],
                        mask[r],
                        c0[r],
                        c[:, r],
                        h[:, r],
                        coverage[:, r],
                        attn[:, r],
                        acts[:, r],
                        g_x[:, r],
                        g_c[:, r],
                        g_h[:, r],
                        g_ctx[:, r],
                        g_attn[:, r],
                    ),
                    *bwd_weights,
                    use_coverage,
                )
                for r in chunks
            ]
            axes = (1, 1, 1, 1, 0, None, None, 0, 0)  # None: summed over the chunks
            dx, dz, d_dec, d_ctx, d_feat, dv, dwc, dh0, dc0 = (
                join(p, axis) for p, axis in zip(zip(*parts, strict=True), axes, strict=True)
            )
            ctx_prev = shift_down(context, tf.zeros_like(context[0]))
            h_prev = shift_down(h, h0)
            d_states = tf.einsum("tbi,tbd->bid", attn, d_ctx)
            return (
                dx,
                d_states,
                d_feat,
                tf.zeros_like(mask),
                dh0,
                dc0,
                outer_sum(ctx_prev, dx),
                outer_sum(x, dz),
                outer_sum(h_prev, dz),
                tf.reduce_sum(dz, [0, 1]),
                outer_sum(tf.concat([c, h], -1), d_dec),
                tf.reduce_sum(d_dec, [0, 1]),
                dv,
                dwc,
            )

        return (x, c, h, context, attn), grad

    return run(y_part, states, features, mask, h0, c0, w_ctx, *cell, *attention)
