"""An independent float64 NumPy oracle of the ORIGINAL release's forward pass.

Written from the equations of the spec (sections 3.1, 4.4-4.9, 4.12), in the TF1
parameterisation: it reads a dict of TF1-named arrays (spec 4.11), uses the TF1 LSTM
layout (one kernel on [x; h], gate columns i, j, f, o, constant forget bias 1.0), the 1x1
conv kernels W_h / w_c, the original's attention normalisation (softmax over all
positions, times the mask, divided by the sum) and the original's losses. Nothing here
imports the package under test, so agreement is evidence, not tautology.

Everything loops over examples/steps in plain NumPy: clarity over speed (tiny sizes only).
"""

from __future__ import annotations

import numpy as np

ENC = "seq2seq/encoder/bidirectional_rnn"
DEC = "seq2seq/decoder/attention_decoder"
EMB = "seq2seq/embedding/embedding"


def lstm_names(scope: str, tf_version: str) -> tuple[str, str]:
    """(kernel, bias) names of an LSTM cell under `scope` in TF 1.2.1 or TF 1.0 naming."""
    if tf_version == "1.0":
        return scope + "/lstm_cell/weights", scope + "/lstm_cell/biases"
    return scope + "/lstm_cell/kernel", scope + "/lstm_cell/bias"


def tf1_shapes(
    vocab: int, hidden: int, emb: int, pointer_gen: bool, coverage: bool, tf_version: str = "1.2.1"
) -> dict[str, tuple[int, ...]]:
    """The original's trainable variables and shapes (spec 4.11), A = 2 * hidden."""
    h, e, a = hidden, emb, 2 * hidden
    shapes = {EMB: (vocab, e)}
    for scope in (ENC + "/fw", ENC + "/bw", DEC):
        k, b = lstm_names(scope, tf_version)
        shapes[k] = (e + h, 4 * h)
        shapes[b] = (4 * h,)
    shapes.update(
        {
            "seq2seq/reduce_final_st/w_reduce_c": (2 * h, h),
            "seq2seq/reduce_final_st/w_reduce_h": (2 * h, h),
            "seq2seq/reduce_final_st/bias_reduce_c": (h,),
            "seq2seq/reduce_final_st/bias_reduce_h": (h,),
            DEC + "/W_h": (1, 1, 2 * h, a),
            DEC + "/v": (a,),
            DEC + "/Linear/Matrix": (e + 2 * h, e),
            DEC + "/Linear/Bias": (e,),
            DEC + "/Attention/Linear/Matrix": (2 * h, a),
            DEC + "/Attention/Linear/Bias": (a,),
            DEC + "/AttnOutputProjection/Linear/Matrix": (3 * h, h),
            DEC + "/AttnOutputProjection/Linear/Bias": (h,),
            "seq2seq/output_projection/w": (h, vocab),
            "seq2seq/output_projection/v": (vocab,),
        }
    )
    if coverage:
        shapes[DEC + "/coverage/w_c"] = (1, 1, 1, a)
    if pointer_gen:
        shapes[DEC + "/calculate_pgen/Linear/Matrix"] = (4 * h + e, 1)
        shapes[DEC + "/calculate_pgen/Linear/Bias"] = (1,)
    return shapes


def random_tf1_params(
    rng: np.random.Generator,
    vocab: int,
    hidden: int,
    emb: int,
    pointer_gen: bool = True,
    coverage: bool = False,
    tf_version: str = "1.2.1",
    scale: float = 0.3,
) -> dict[str, np.ndarray]:
    """Uniform(-scale, scale) float32 weights under the original's names.

    Large enough that the LSTM gates, tanh and the softmaxes are far from trivial, small
    enough that nothing saturates. The embedding, the attention vector v and the output
    projection get wider ranges so that inputs matter and the attention and vocabulary
    distributions are peaked rather than nearly uniform.
    """
    wide = {
        EMB: 0.8,
        DEC + "/v": 2.0,
        DEC + "/W_h": 1.5,
        "seq2seq/output_projection/w": 3.0,
        DEC + "/AttnOutputProjection/Linear/Matrix": 1.0,
    }
    params = {}
    for name, shape in tf1_shapes(vocab, hidden, emb, pointer_gen, coverage, tf_version).items():
        mag = wide.get(name, scale)
        params[name] = rng.uniform(-mag, mag, size=shape).astype(np.float32)
    return params


# --------------------------------------------------------------------------- primitives
def sigmoid(x):
    return np.exp(-np.logaddexp(0.0, -x))


def softmax(x, axis=-1):
    z = x - np.max(x, axis=axis, keepdims=True)
    ez = np.exp(z)
    return ez / np.sum(ez, axis=axis, keepdims=True)


def _f64(params: dict) -> dict:
    return {k: np.asarray(v, np.float64) for k, v in params.items()}


def _lstm_params(p: dict, scope: str):
    for version in ("1.2.1", "1.0"):
        k, b = lstm_names(scope, version)
        if k in p:
            return p[k], p[b]
    raise KeyError(f"no LSTM weights under {scope}")


def lstm_step(kernel, bias, x, c, h):
    """TF1 LSTMCell: z = [x; h] K + b, gates i, j, f, o, forget bias +1.0."""
    z = np.concatenate([x, h], axis=-1) @ kernel + bias
    i, j, f, o = np.split(z, 4, axis=-1)
    c_new = sigmoid(f + 1.0) * c + sigmoid(i) * np.tanh(j)
    h_new = sigmoid(o) * np.tanh(c_new)
    return c_new, h_new


# --------------------------------------------------------------------------- encoder
def encode(params: dict, enc_batch, enc_lens) -> dict:
    """Bidirectional dynamic RNN with true lengths (spec 4.4) and reduce-state (4.5).

    Returns states [B, T, 2H] (zero beyond each length), features [B, T, A] = W_h h_i,
    and the decoder's initial c, h [B, H].
    """
    p = _f64(params)
    emb = p[EMB][np.asarray(enc_batch)]
    batch, length = np.asarray(enc_batch).shape
    kf, bf = _lstm_params(p, ENC + "/fw")
    kb, bb = _lstm_params(p, ENC + "/bw")
    hidden = kf.shape[1] // 4
    states = np.zeros((batch, length, 2 * hidden))
    finals = {n: np.zeros((batch, hidden)) for n in ("c_fw", "h_fw", "c_bw", "h_bw")}
    for b in range(batch):
        n = int(enc_lens[b])
        c = h = np.zeros(hidden)
        for t in range(n):
            c, h = lstm_step(kf, bf, emb[b, t], c, h)
            states[b, t, :hidden] = h
        finals["c_fw"][b], finals["h_fw"][b] = c, h
        c = h = np.zeros(hidden)
        for t in reversed(range(n)):  # starts at the last real token
            c, h = lstm_step(kb, bb, emb[b, t], c, h)
            states[b, t, hidden:] = h
        finals["c_bw"][b], finals["h_bw"][b] = c, h
    rs = "seq2seq/reduce_final_st/"
    c0 = np.maximum(
        0.0,
        np.concatenate([finals["c_fw"], finals["c_bw"]], 1) @ p[rs + "w_reduce_c"]
        + p[rs + "bias_reduce_c"],
    )
    h0 = np.maximum(
        0.0,
        np.concatenate([finals["h_fw"], finals["h_bw"]], 1) @ p[rs + "w_reduce_h"]
        + p[rs + "bias_reduce_h"],
    )
    features = states @ p[DEC + "/W_h"][0, 0]
    return {"states": states, "features": features, "c": c0, "h": h0, **finals}


# --------------------------------------------------------------------------- decoder
def attention(params: dict, enc: dict, mask, c, h, coverage=None):
    """Spec 4.6 step 3: e = v . tanh(W_h h_i + [c; h] W_s + b [+ w_c cov_i]);
    a = softmax(e) * mask / sum. Returns (context [B, 2H], a [B, T])."""
    p = _f64(params)
    d = (
        np.concatenate([c, h], 1) @ p[DEC + "/Attention/Linear/Matrix"]
        + p[DEC + "/Attention/Linear/Bias"]
    )
    pre = enc["features"] + d[:, None, :]
    if coverage is not None:
        pre = pre + coverage[:, :, None] * p[DEC + "/coverage/w_c"][0, 0, 0][None, None, :]
    e = np.sum(p[DEC + "/v"] * np.tanh(pre), axis=-1)
    a = softmax(e) * np.asarray(mask, np.float64)
    a = a / np.sum(a, axis=-1, keepdims=True)
    context = np.einsum("bt,btd->bd", a, enc["states"])
    return context, a


def _output(p: dict, pointer_gen: bool, x, c, h, context, attn, ext_ids, max_oovs):
    """p_gen (4.6 step 4), output projection (4.6 step 5, 4.7), final distribution (4.8)."""
    o = (
        np.concatenate([h, context], 1) @ p[DEC + "/AttnOutputProjection/Linear/Matrix"]
        + p[DEC + "/AttnOutputProjection/Linear/Bias"]
    )
    vocab = softmax(o @ p["seq2seq/output_projection/w"] + p["seq2seq/output_projection/v"])
    if not pointer_gen:
        return vocab, np.ones(len(vocab)), vocab
    z = (
        np.concatenate([context, c, h, x], 1) @ p[DEC + "/calculate_pgen/Linear/Matrix"]
        + p[DEC + "/calculate_pgen/Linear/Bias"]
    )
    p_gen = sigmoid(z)[:, 0]
    batch = vocab.shape[0]
    final = np.concatenate([p_gen[:, None] * vocab, np.zeros((batch, max_oovs))], 1)
    for b in range(batch):
        # np.add.at accumulates repeated article words (tf.scatter_nd sums duplicates).
        np.add.at(final[b], np.asarray(ext_ids[b]), (1.0 - p_gen[b]) * attn[b])
    return vocab, p_gen, final


def _merge_input(p: dict, tokens, context):
    y = p[EMB][np.asarray(tokens)]
    return np.concatenate([y, context], 1) @ p[DEC + "/Linear/Matrix"] + p[DEC + "/Linear/Bias"]


def mask_and_avg(values, mask):
    """Per-example masked mean, then batch mean (the original's `_mask_and_avg`)."""
    mask = np.asarray(mask, np.float64)
    return float(np.mean(np.sum(values * mask, 1) / np.sum(mask, 1)))


def forward(params: dict, batch: dict, pointer_gen: bool, coverage: bool) -> dict:
    """Training/eval forward pass and losses (spec 4.6-4.9).

    batch: numpy arrays enc_batch, enc_lens, enc_padding_mask, enc_batch_extend_vocab,
      max_art_oovs, dec_batch, target_batch, dec_padding_mask (spec 3.2).
    Returns float64 arrays: attn [B, Td, T], p_gens [B, Td], vocab_dists [B, Td, V],
      final_dists [B, Td, V(+oovs)], step_nll [B, Td], coverages [B, Td, T] (the coverage
      each step attended with), and scalars loss, coverage_loss, total_loss.
    """
    p = _f64(params)
    enc = encode(params, batch["enc_batch"], batch["enc_lens"])
    mask = batch["enc_padding_mask"]
    ext = batch["enc_batch_extend_vocab"]
    max_oovs = int(batch["max_art_oovs"]) if pointer_gen else 0
    kd, bd = _lstm_params(p, DEC)
    c, h = enc["c"], enc["h"]
    context = np.zeros((c.shape[0], enc["states"].shape[2]))  # h*_{-1} = 0 in training
    cov = None  # the original starts with no coverage vector
    rec = {k: [] for k in ("attn", "p_gens", "vocab_dists", "final_dists", "coverages")}
    for t in range(batch["dec_batch"].shape[1]):
        x = _merge_input(p, batch["dec_batch"][:, t], context)
        c, h = lstm_step(kd, bd, x, c, h)
        used_cov = cov if coverage else None
        context, a = attention(params, enc, mask, c, h, used_cov)
        rec["coverages"].append(np.zeros_like(a) if used_cov is None else used_cov)
        if coverage:
            cov = a if cov is None else cov + a
        vocab, p_gen, final = _output(p, pointer_gen, x, c, h, context, a, ext, max_oovs)
        for k, v in zip(
            ("attn", "p_gens", "vocab_dists", "final_dists"), (a, p_gen, vocab, final), strict=True
        ):
            rec[k].append(v)
    out = {k: np.stack(v, axis=1) for k, v in rec.items()}
    targets = np.asarray(batch["target_batch"])
    dec_mask = np.asarray(batch["dec_padding_mask"], np.float64)
    gold = np.take_along_axis(out["final_dists"], targets[:, :, None], axis=2)[:, :, 0]
    with np.errstate(divide="ignore"):
        out["step_nll"] = -np.log(gold)
    if pointer_gen:
        out["loss"] = mask_and_avg(out["step_nll"], dec_mask)
    else:  # token-level average of sequence_loss
        out["loss"] = float(np.sum(out["step_nll"] * dec_mask) / (np.sum(dec_mask) + 1e-12))
    if coverage:
        # c_0 = 0, covloss_t = sum_i min(a_t, c_t), c_{t+1} = c_t + a_t.
        running = np.zeros_like(out["attn"][:, 0])
        steps = []
        for t in range(out["attn"].shape[1]):
            steps.append(np.sum(np.minimum(out["attn"][:, t], running), axis=-1))
            running = running + out["attn"][:, t]
        out["coverage_step_losses"] = np.stack(steps, 1)
        out["coverage_loss"] = mask_and_avg(out["coverage_step_losses"], dec_mask)
        out["total_loss"] = out["loss"] + out["coverage_loss"]  # cov_loss_wt = 1
    else:
        out["coverage_loss"] = 0.0
        out["total_loss"] = out["loss"]
    out["enc"] = enc
    return out


def decode_step_original(
    params: dict,
    enc: dict,
    mask,
    ext_ids,
    max_oovs: int,
    tokens,
    c,
    h,
    prev_coverage,
    pointer_gen: bool,
    coverage: bool,
):
    """One step of the decode-mode graph with initial_state_attention=True (spec 4.12).

    The attention is first recomputed from the previous state and coverage; its context
    feeds the input merge and (coverage on) it is added to the coverage, which the step's
    own attention then uses without a further update.

    Returns (final_dist, attn, p_gen, c, h, coverage).
    """
    p = _f64(params)
    kd, bd = _lstm_params(p, DEC)
    prev_context, prev_attn = attention(
        params, enc, mask, c, h, prev_coverage if coverage else None
    )
    cov = prev_coverage + prev_attn if coverage else prev_coverage
    x = _merge_input(p, tokens, prev_context)
    c, h = lstm_step(kd, bd, x, c, h)
    context, a = attention(params, enc, mask, c, h, cov if coverage else None)
    _, p_gen, final = _output(
        p, pointer_gen, x, c, h, context, a, ext_ids, max_oovs if pointer_gen else 0
    )
    return final, a, p_gen, c, h, cov
