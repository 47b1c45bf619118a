"""The two recurrences of training as fused loops with hand-written gradients.

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

from pointer_generator.layers.attention import attention_energies, masked_softmax


def lstm_cell(z, c):
    """One LSTM step (the one implementation, used by training, eval and decoding).

    z: [B, 4H] pre-activations x W + h U + b in Keras' gate order (i, f, g, o); c: [B, H]
    the previous cell. c' = sigmoid(f) c + sigmoid(i) tanh(g); h' = sigmoid(o) tanh(c').
    Returns (h' [B, H], c' [B, H], the activated gates [B, 4H] that `_lstm_backward` takes).
    """
    zi, zf, zg, zo = tf.split(z, 4, axis=-1)
    i, f, g, o = tf.sigmoid(zi), tf.sigmoid(zf), tf.tanh(zg), tf.sigmoid(zo)
    c_new = f * c + i * g
    return o * tf.tanh(c_new), c_new, tf.concat([i, f, g, o], -1)


def _lstm_backward(acts, c_prev, c_new, dh_new, dc_new):
    """Backward of one LSTM step: returns (dz [B, 4H] pre-activations, dc_prev)."""
    i, f, g, o = tf.split(acts, 4, axis=-1)
    tc = tf.tanh(c_new)
    dc = dc_new + dh_new * o * (1.0 - tc * tc)
    dz = tf.concat(
        [
            dc * g * i * (1.0 - i),
            dc * c_prev * f * (1.0 - f),
            dc * i * (1.0 - g * g),
            dh_new * tc * o * (1.0 - o),
        ],
        axis=-1,
    )
    return dz, dc * f


def _flat(x):
    """[T, B, D] -> [T*B, D]."""
    return tf.reshape(x, [-1, tf.shape(x)[-1]])


def _outer_sum(a, b):
    """sum over the leading two dims of a^T b: [T, B, m], [T, B, n] -> [m, n]."""
    return tf.matmul(_flat(a), _flat(b), transpose_a=True)


def _no_tape(*tensors):
    """The loops' inputs, cut from any gradient tape: the loops are never differentiated
    (their gradient is written by hand), so TensorFlow must not prepare them for it."""
    return [tf.stop_gradient(t) for t in tensors]


def _fill_none(grads, like):
    """Zeros for the gradients of outputs nothing depends on (they arrive as None)."""
    return tuple(tf.zeros_like(y) if g is None else g for g, y in zip(grads, like, strict=True))


def _transposed(*weights):
    """The weights transposed, for the backward loops' products x @ w^T. Passed in
    already transposed: inside the loop XLA's CPU dot with a transposed operand runs
    ~1.4x slower (the encoder's backward loop at the paper's sizes: 143 vs 101 ms)."""
    return [tf.transpose(w) for w in weights]


def _join(parts, axis):
    """The per-chunk results of one output: concatenated along `axis`, or summed (None)."""
    if len(parts) == 1:
        return parts[0]
    return tf.add_n(list(parts)) if axis is None else tf.concat(parts, axis=axis)


def _shift_down(x, first):
    """[first; x[:-1]] along the leading (time) dim."""
    return tf.concat([first[None], x[:-1]], 0)


# ----------------------------------------------------------------------------- encoder
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


def _encoder_backward(
    mask,
    rf_t,
    rb_t,
    c_prev_f,
    c_f,
    act_f,
    c_prev_b,
    c_b,
    act_b,
    d_out_f,
    d_out_b,
    dhf,
    dcf,
    dhb,
    dcb,
):
    """Reverse of `_encoder_forward`: step s handles the forward cell at position T-1-s
    and the backward cell at position s. rf_t, rb_t: the recurrent kernels transposed,
    [4H, H] (see `_transposed`). Returns dz [T, B, 4H] for both directions."""
    t_len = tf.shape(mask)[0]
    dtype = mask.dtype
    tas = (tf.TensorArray(dtype, size=t_len), tf.TensorArray(dtype, size=t_len))

    def cell(p, d_out, dh, dc, c_prev, c_new, acts, r_t):
        m = mask[p]
        # h_p = h_{p-1} + m (h_new - h_{p-1}); the output at p is m * h_p.
        dh_new = m * (dh + d_out[p])
        dz, dc_prev = _lstm_backward(acts[p], c_prev[p], c_new[p], dh_new, m * dc)
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


_encoder_forward_xla = tf.function(_encoder_forward, jit_compile=True, reduce_retracing=True)
_encoder_backward_xla = tf.function(_encoder_backward, jit_compile=True, reduce_retracing=True)


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
        xf = tf.reshape(tf.matmul(_flat(xt), kf) + bf, shape)
        xb = tf.reshape(tf.matmul(_flat(xt), kb) + bb, shape)
        h_f, c_f, act_f, h_b, c_b, act_b = fwd(*_no_tape(xf, xb, mt, rf, rb))
        out = tf.transpose(tf.concat([h_f, h_b], -1) * mt, [1, 0, 2])
        zero = tf.zeros_like(h_f[0])

        def grad(d_out, dhf, dcf, dhb, dcb):
            d_out, dhf, dcf, dhb, dcb = _fill_none(
                (d_out, dhf, dcf, dhb, dcb), (out, zero, zero, zero, zero)
            )
            d_out = tf.transpose(d_out, [1, 0, 2])
            d_out_f, d_out_b = tf.split(d_out, 2, axis=-1)
            c_prev_f = _shift_down(c_f, zero)
            c_prev_b = tf.concat([c_b[1:], zero[None]], 0)
            dzf, dzb = bwd(
                *_no_tape(
                    mt,
                    *_transposed(rf, rb),
                    c_prev_f,
                    c_f,
                    act_f,
                    c_prev_b,
                    c_b,
                    act_b,
                    d_out_f,
                    d_out_b,
                    dhf,
                    dcf,
                    dhb,
                    dcb,
                )
            )
            h_prev_f = _shift_down(h_f, zero)
            h_prev_b = tf.concat([h_b[1:], zero[None]], 0)
            dx = tf.matmul(_flat(dzf), kf, transpose_b=True) + tf.matmul(
                _flat(dzb), kb, transpose_b=True
            )
            dx = tf.transpose(tf.reshape(dx, tf.shape(xt)), [1, 0, 2])
            return (
                dx,
                tf.zeros_like(mask),
                _outer_sum(xt, dzf),
                _outer_sum(h_prev_f, dzf),
                tf.reduce_sum(dzf, [0, 1]),
                _outer_sum(xt, dzb),
                _outer_sum(h_prev_b, dzb),
                tf.reduce_sum(dzb, [0, 1]),
            )

        return (out, h_f[-1], c_f[-1], h_b[0], c_b[0]), grad

    return run(x, mask, *fw, *bw)


# ----------------------------------------------------------------------------- decoder
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
    weights transposed (see `_transposed`). Returns per-step gradients of the step inputs
    (dx, dz, d_dec_features, d_context) [Td, B, .], the accumulated d(features) [B, T, A],
    dv, dw_c [A] and the initial state's dh0, dc0 [B, H]."""
    t_dec = tf.shape(g_x)[0]
    dtype = g_x.dtype
    hidden = tf.shape(h_all)[2]
    tas = tuple(tf.TensorArray(dtype, size=t_dec) for _ in range(4))
    c_prev_all = _shift_down(c_all, c0)

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
        dz, dc = _lstm_backward(act_all[t], c_prev_all[t], c, dh, dc)
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


_decoder_forward_xla = tf.function(_decoder_forward, jit_compile=True, reduce_retracing=True)
_decoder_backward_xla = tf.function(_decoder_backward, jit_compile=True, reduce_retracing=True)


# Batch rows per call of the decoder loops. Each step reads and writes [rows, enc_len,
# attn_dim] tensors (features, tanh, its derivative, the features' gradient): for 16 rows
# at the paper's sizes they are 13 MB each and every pass goes to memory; for 4 rows they
# stay in the last-level cache for all 100 steps. The rows of a batch are independent in
# the recurrence (only the weight gradients are summed), so the batch runs as chunks.
# Measured at the paper shape on a 2-core EPYC (docs/performance.md): backward 1.4x,
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
        weights = _no_tape(w_ctx, kernel, recurrent, bias, w_s, b_attn, v, w_c)
        # Time-major tensors are [Td, B, .]: their rows are sliced on axis 1.
        parts = [
            fwd(
                *_no_tape(y_part[:, r], states[r], features[r], mask[r], h0[r], c0[r]),
                *weights,
                safe,
                use_coverage,
            )
            for r in chunks
        ]
        x, c, h, context, attn, coverage, acts = (_join(p, 1) for p in zip(*parts, strict=True))

        def grad(g_x, g_c, g_h, g_ctx, g_attn):
            g_x, g_c, g_h, g_ctx, g_attn = _fill_none(
                (g_x, g_c, g_h, g_ctx, g_attn), (x, c, h, context, attn)
            )
            w_ctx_, kernel_, recurrent_, _, w_s_, b_attn_, v_, w_c_ = weights
            bwd_weights = (
                *_transposed(w_ctx_, kernel_, recurrent_),
                w_s_,
                *_transposed(w_s_),
                b_attn_,
                v_,
                w_c_,
            )
            parts = [
                bwd(
                    *_no_tape(
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
                _join(p, axis) for p, axis in zip(zip(*parts, strict=True), axes, strict=True)
            )
            ctx_prev = _shift_down(context, tf.zeros_like(context[0]))
            h_prev = _shift_down(h, h0)
            d_states = tf.einsum("tbi,tbd->bid", attn, d_ctx)
            return (
                dx,
                d_states,
                d_feat,
                tf.zeros_like(mask),
                dh0,
                dc0,
                _outer_sum(ctx_prev, dx),
                _outer_sum(x, dz),
                _outer_sum(h_prev, dz),
                tf.reduce_sum(dz, [0, 1]),
                _outer_sum(tf.concat([c, h], -1), d_dec),
                tf.reduce_sum(d_dec, [0, 1]),
                dv,
                dwc,
            )

        return (x, c, h, context, attn), grad

    return run(y_part, states, features, mask, h0, c0, w_ctx, *cell, *attention)
