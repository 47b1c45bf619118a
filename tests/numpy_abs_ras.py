"""Independent NumPy references of the ABS and RAS equations (spec abs-ras.md §2-3),
written from the printed equations with plain loops over positions, one example at a
time (no padding: each example is its real length). float64 throughout."""

from __future__ import annotations

import numpy as np


def softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


# ------------------------------------------------------------------------------ ABS
def nnlm_hidden(context, u, u_bias=None):
    """h = tanh(U ỹ_c): context [C, D] (E-embeddings), u [C*D, H]."""
    pre = context.reshape(-1) @ u
    if u_bias is not None:
        pre = pre + u_bias
    return np.tanh(pre)


def bow_encoder(embedded):
    """enc1 = (1/M) Σ_j x̃_j: embedded [M, H] (real positions only)."""
    return sum(embedded[j] for j in range(len(embedded))) / len(embedded)


def conv_encoder(embedded, kernels, q):
    """enc2: kernels[l] [2Q+1, H, H] (Keras Conv1D layout: tap, in, out)."""
    x = embedded
    for kernel in kernels:
        m, h = x.shape
        xbar = np.zeros((m, kernel.shape[2]))
        for i in range(m):
            for k in range(2 * q + 1):
                j = i - q + k
                if 0 <= j < m:
                    xbar[i] += x[j] @ kernel[k]
        pooled = []
        for i in range(0, m, 2):
            pair = xbar[i : i + 2]  # an odd length leaves the last one alone
            pooled.append(np.tanh(pair.max(axis=0)))
        x = np.stack(pooled)
    return x.max(axis=0)


def attention_encoder(embedded, context, p_matrix, q, divisor):
    """enc3 = p^T x̄, p = softmax(x̃ P ỹ'_c), x̄_i = Σ_{j=i-Q}^{i+Q} x̃_j / divisor.

    embedded [M, H]; context [C, D] (G-embeddings); p_matrix [C*D, H] (the Dense kernel,
    so P ỹ' = ỹ' @ p_matrix). Returns (enc [H], p [M])."""
    m = len(embedded)
    query = context.reshape(-1) @ p_matrix
    p = softmax(np.array([embedded[i] @ query for i in range(m)]))
    smoothed = np.zeros_like(embedded)
    for i in range(m):
        for j in range(i - q, i + q + 1):
            if 0 <= j < m:
                smoothed[i] += embedded[j]
    smoothed /= divisor
    return sum(p[i] * smoothed[i] for i in range(m)), p


def abs_output(h, enc, v, w, bias=None):
    """log_softmax(V h + W enc): v [H_lm, V], w [H_enc, V]."""
    logits = h @ v + enc @ w
    if bias is not None:
        logits = logits + bias
    return logits - np.log(np.exp(logits - logits.max()).sum()) - logits.max()


# ------------------------------------------------------------------------------ RAS
def ras_keys(words, positions, kernel):
    """z_ik = Σ_{h=-q/2}^{q/2} a_{i+h} · b^k_{q/2+h}, a_i = x_i + l_i (zero outside).

    words, positions [M, d]; kernel [q, d, d] (tap, in, out). Returns z [M, d]."""
    a = words + positions
    m, d = a.shape
    q = kernel.shape[0]
    z = np.zeros((m, kernel.shape[2]))
    for i in range(m):
        for k in range(kernel.shape[2]):
            for h in range(-(q // 2), q // 2 + 1):
                if 0 <= i + h < m:
                    z[i, k] += a[i + h] @ kernel[q // 2 + h, :, k]
    return z


def ras_context(keys, words, h_prev, cosine_scale=None):
    """α_j = softmax_j(z_j · h_{t-1}); c_t = Σ_j α_j x_j (plain word embeddings). With
    `cosine_scale` s: α_j = softmax_j(s · z_j · h_{t-1} / (|z_j| |h_{t-1}|))."""
    if cosine_scale is None:
        scores = [keys[j] @ h_prev for j in range(len(keys))]
    else:
        unit = lambda v: v / max(np.linalg.norm(v), 1e-6)  # noqa: E731 (a zero h_0 stays 0)
        scores = [cosine_scale * unit(keys[j]) @ unit(h_prev) for j in range(len(keys))]
    alpha = softmax(np.array(scores))
    return sum(alpha[j] * words[j] for j in range(len(words))), alpha


def elman_step(y, h_prev, c, w1, w2, w3):
    """h_t = σ(W1 y_{t-1} + W2 h_{t-1} + W3 c_t) (row-vector form: y @ w1 ...)."""
    return sigmoid(y @ w1 + h_prev @ w2 + c @ w3)


def ras_lstm_step(y, h_prev, m_prev, c, w, standard=False):
    """The printed LSTM (spec §3.3): w = {"i": (Wy, Wh, Wc), "g": ..., "f": ..., "o": ...};
    h_t = m_t ⊙ o_t (standard=True: o_t ⊙ tanh(m_t))."""

    def gate(name):
        wy, wh, wc = w[name]
        return y @ wy + h_prev @ wh + c @ wc

    i, g, f, o = sigmoid(gate("i")), np.tanh(gate("g")), sigmoid(gate("f")), sigmoid(gate("o"))
    m = m_prev * f + i * g
    return (o * np.tanh(m) if standard else m * o), m


def ras_output(h, c, w_h, w_c):
    """log ρ(W4 h_t + W5 c_t)."""
    logits = h @ w_h + c @ w_c
    return logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
