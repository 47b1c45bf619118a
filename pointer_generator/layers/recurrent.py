"""The LSTM step, and the pieces shared by the two fused recurrences of training.

`lstm_cell` is the one LSTM step of the library (training, eval and decoding call it);
`lstm_backward` is its hand-written gradient. The fused loops themselves live in
`fused_encoder.py` (the masked bidirectional encoder) and `fused_decoder.py` (the
training decoder with attention and coverage); see `fused_encoder.py` for why they exist.
"""

from __future__ import annotations

import tensorflow as tf


def lstm_cell(z, c):
    """One LSTM step (the one implementation, used by training, eval and decoding).

    z: [B, 4H] pre-activations x W + h U + b in Keras' gate order (i, f, g, o); c: [B, H]
    the previous cell. c' = sigmoid(f) c + sigmoid(i) tanh(g); h' = sigmoid(o) tanh(c').
    Returns (h' [B, H], c' [B, H], the activated gates [B, 4H] that `lstm_backward` takes).
    """
    zi, zf, zg, zo = tf.split(z, 4, axis=-1)
    i, f, g, o = tf.sigmoid(zi), tf.sigmoid(zf), tf.tanh(zg), tf.sigmoid(zo)
    c_new = f * c + i * g
    return o * tf.tanh(c_new), c_new, tf.concat([i, f, g, o], -1)


def keras_cell_step(cell, x, h, c):
    """One LSTM step (`lstm_cell`) with a Keras LSTMCell's weights (decoding, the Keras path).

    x: [batch, in_dim]; h, c: [batch, hidden]. Returns (h_new, c_new).
    """
    z = tf.matmul(x, cell.kernel) + tf.matmul(h, cell.recurrent_kernel) + cell.bias
    h_new, c_new, _ = lstm_cell(z, c)
    return h_new, c_new


def lstm_backward(acts, c_prev, c_new, dh_new, dc_new):
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


def flat(x):
    """[T, B, D] -> [T*B, D]."""
    return tf.reshape(x, [-1, tf.shape(x)[-1]])


def outer_sum(a, b):
    """sum over the leading two dims of a^T b: [T, B, m], [T, B, n] -> [m, n]."""
    return tf.matmul(flat(a), flat(b), transpose_a=True)


def no_tape(*tensors):
    """The loops' inputs, cut from any gradient tape: the loops are never differentiated
    (their gradient is written by hand), so TensorFlow must not prepare them for it."""
    return [tf.stop_gradient(t) for t in tensors]


def fill_none(grads, like):
    """Zeros for the gradients of outputs nothing depends on (they arrive as None)."""
    return tuple(tf.zeros_like(y) if g is None else g for g, y in zip(grads, like, strict=True))


def transposed(*weights):
    """The weights transposed, for the backward loops' products x @ w^T. Passed in
    already transposed: inside the loop XLA's CPU dot with a transposed operand runs
    ~1.4x slower (the encoder's backward loop at the paper's sizes: 143 vs 101 ms)."""
    return [tf.transpose(w) for w in weights]


def join(parts, axis):
    """The per-chunk results of one output: concatenated along `axis`, or summed (None)."""
    if len(parts) == 1:
        return parts[0]
    return tf.add_n(list(parts)) if axis is None else tf.concat(parts, axis=axis)


def shift_down(x, first):
    """[first; x[:-1]] along the leading (time) dim."""
    return tf.concat([first[None], x[:-1]], 0)
