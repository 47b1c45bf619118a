"""Analytical FLOP counts of the pointer-generator and a measured matmul rate.

FLOPs count multiply-adds as 2. Only matrix products are counted (elementwise work such as
the attention's tanh is memory-bound and left out), and a training step is taken as 3x
the forward pass (the backward pass does two products per forward product).
"""

from __future__ import annotations

import time


def forward_flops(
    batch: int,
    enc_len: int,
    dec_len: int,
    vocab: int,
    hidden: int = 256,
    emb: int = 128,
    pointer_gen: bool = True,
) -> dict:
    """Forward-pass matmul FLOPs per batch, by part (spec section 4 shapes).

    Encoder: 2 directions x enc_len steps x 2*B*(E+H)*4H.
    Reduce state: 2 x 2*B*2H*H. Attention W_h h_i: 2*B*T*2H*A with A = 2H.
    Decoder, per step: input merge 2*B*(E+2H)*E, LSTM 2*B*(E+H)*4H, W_s 2*B*2H*A,
      energies v.tanh(.) 2*B*T*A, context 2*B*T*2H.
    After the loop, per step: p_gen 2*B*(4H+E), output projection 2*B*3H*H,
      vocabulary projection 2*B*H*V.
    """
    a = 2 * hidden
    b, t, d = batch, enc_len, dec_len
    parts = {
        "encoder": 2 * t * 2 * b * (emb + hidden) * 4 * hidden,
        "reduce_state": 2 * 2 * b * 2 * hidden * hidden,
        "attention_features": 2 * b * t * 2 * hidden * a,
        "decoder_steps": d
        * (
            2 * b * (emb + 2 * hidden) * emb
            + 2 * b * (emb + hidden) * 4 * hidden
            + 2 * b * 2 * hidden * a
            + 2 * b * t * a
            + 2 * b * t * 2 * hidden
        ),
        "output_projection": d * 2 * b * 3 * hidden * hidden,
        "vocab_projection": d * 2 * b * hidden * vocab,
    }
    if pointer_gen:
        parts["p_gen"] = d * 2 * b * (4 * hidden + emb)
    parts["total"] = sum(parts.values())
    return parts


def train_step_flops(**kwargs) -> float:
    """FLOPs of one training step: forward + backward = 3 x forward."""
    return 3.0 * forward_flops(**kwargs)["total"]


def measured_matmul_rate(seconds: float = 3.0) -> float:
    """Dense float32 matmul FLOP/s of this machine, measured now with TensorFlow.

    Takes the best of a large square product and the model's dominant shape
    ([1600, 256] x [256, 50000], the vocabulary projection), each timed for ~`seconds`.
    """
    import tensorflow as tf

    best = 0.0
    for m, k, n in ((2048, 2048, 2048), (1600, 256, 50000)):
        x = tf.random.uniform([m, k])
        y = tf.random.uniform([k, n])

        @tf.function
        def prod(x=x, y=y):
            return tf.reduce_sum(tf.matmul(x, y))

        prod().numpy()  # warm-up / trace
        reps, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds:
            prod().numpy()
            reps += 1
        elapsed = time.perf_counter() - start
        best = max(best, 2.0 * m * k * n * reps / elapsed)
    return best
