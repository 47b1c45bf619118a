"""Each custom layer against NumPy written from the paper's equations, its serialisation,
and the model's parameter counts and initialiser statistics at the paper's sizes."""

from __future__ import annotations

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.layers import (
    CoverageAttention,
    FinalDistribution,
    GenerationProbability,
    ReduceState,
    masked_softmax,
)

RNG = np.random.default_rng(1234)


def _randomise(layer, scale=0.5):
    for w in layer.weights:
        w.assign(RNG.uniform(-scale, scale, w.shape).astype(np.float32))


def _copy(layer):
    """A layer rebuilt from its config with the same weights (serialisation check)."""
    clone = type(layer).from_config(layer.get_config())
    return clone


def _close(a, b, rtol=1e-5, atol=1e-7):
    np.testing.assert_allclose(
        np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=rtol, atol=atol
    )


# --------------------------------------------------------------------------- attention
def _np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _np_attention(w, states, mask, dec_state, coverage):
    """Eq. 1 (+11): e_i = v . tanh(W_h h_i + W_s s + b [+ w_c c_i]); eq. 2 masked softmax;
    eq. 3 context = sum_i a_i h_i."""
    pre = states @ w["W_h"] + (dec_state @ w["W_s"] + w["b_attn"])[:, None, :]
    if coverage is not None:
        pre = pre + coverage[:, :, None] * w["w_c"][0]
    e = np.tanh(pre) @ w["v"]
    a = np.where(
        mask > 0, np.exp(e - np.max(np.where(mask > 0, e, -np.inf), -1, keepdims=True)), 0.0
    )
    a = a / a.sum(-1, keepdims=True)
    return np.einsum("bt,btd->bd", a, states), a


@pytest.mark.parametrize("use_coverage", [False, True])
def test_coverage_attention_matches_equations(use_coverage):
    b, t, enc_dim, state_dim, att = 3, 7, 6, 4, 5
    layer = CoverageAttention(enc_dim, state_dim, att, use_coverage=use_coverage)
    layer.build()
    _randomise(layer, 0.8)
    states = RNG.normal(size=(b, t, enc_dim)).astype(np.float32)
    mask = np.ones((b, t), np.float32)
    mask[1, 4:] = 0
    mask[2, 1:] = 0  # a single real position: all the mass must go there
    states *= mask[:, :, None]
    dec_state = RNG.normal(size=(b, state_dim)).astype(np.float32)
    cov = RNG.uniform(0, 2, (b, t)).astype(np.float32) if use_coverage else None
    w = {x.name: x.numpy().astype(np.float64) for x in layer.weights}
    assert set(w) == {"W_h", "W_s", "b_attn", "v"} | ({"w_c"} if use_coverage else set())

    feats = layer.encoder_features(tf.constant(states))
    _close(feats, states @ w["W_h"])
    ctx, attn = layer(
        tf.constant(states),
        feats,
        tf.constant(mask),
        tf.constant(dec_state),
        None if cov is None else tf.constant(cov),
    )
    want_ctx, want_attn = _np_attention(w, states.astype(np.float64), mask, dec_state, cov)
    _close(attn, want_attn)
    _close(ctx, want_ctx)
    assert np.all(attn.numpy()[mask == 0] == 0)
    _close(attn.numpy()[2, 0], 1.0)
    if use_coverage:  # coverage features really enter the energies
        _, attn0 = layer(
            tf.constant(states),
            feats,
            tf.constant(mask),
            tf.constant(dec_state),
            tf.zeros_like(cov),
        )
        assert np.max(np.abs(attn0.numpy() - attn.numpy())) > 1e-4

    clone = _copy(layer)
    clone.build()
    clone.set_weights(layer.get_weights())
    assert (clone.use_coverage, clone.safe, clone.attention_dim) == (use_coverage, True, att)
    ctx2, attn2 = clone(
        tf.constant(states),
        clone.encoder_features(tf.constant(states)),
        tf.constant(mask),
        tf.constant(dec_state),
        None if cov is None else tf.constant(cov),
    )
    np.testing.assert_array_equal(attn2.numpy(), attn.numpy())
    np.testing.assert_array_equal(ctx2.numpy(), ctx.numpy())


def test_masked_softmax_safe_and_original_agree_and_differ_where_expected():
    scores = tf.constant(RNG.normal(size=(2, 5)) * 3, tf.float32)
    mask = tf.constant([[1, 1, 1, 0, 0], [1, 0, 1, 1, 1]], tf.float32)
    _close(
        masked_softmax(scores, mask, safe=True), masked_softmax(scores, mask, safe=False), rtol=1e-6
    )
    empty = tf.zeros((1, 5))
    assert np.all(np.isnan(masked_softmax(scores[:1], empty, safe=False).numpy()))
    np.testing.assert_array_equal(masked_softmax(scores[:1], empty, safe=True).numpy(), 0.0)


# --------------------------------------------------------------------------- p_gen
def test_generation_probability_matches_eq8():
    b, t, ctx_d, h, e = 2, 3, 6, 3, 4
    layer = GenerationProbability()
    layer.build((None, ctx_d + 2 * h + e))
    _randomise(layer, 0.7)
    ctx, c, s, x = (RNG.normal(size=(b, t, d)).astype(np.float32) for d in (ctx_d, h, h, e))
    k = layer.dense.kernel.numpy().astype(np.float64)
    bias = layer.dense.bias.numpy().astype(np.float64)
    # Eq. 8 with the original's input order: w_h* h*_t + w_c c_t + w_s s_t + w_x x_t + b.
    z = (
        ctx @ k[:ctx_d]
        + c @ k[ctx_d : ctx_d + h]
        + s @ k[ctx_d + h : ctx_d + 2 * h]
        + x @ k[ctx_d + 2 * h :]
        + bias
    )
    p = layer(ctx, c, s, x)
    assert p.shape == (b, t, 1)
    _close(p, 1 / (1 + np.exp(-z)))
    _close(layer.logit(ctx, c, s, x), z)

    clone = _copy(layer)
    clone.build((None, ctx_d + 2 * h + e))
    clone.set_weights(layer.get_weights())
    np.testing.assert_array_equal(clone(ctx, c, s, x).numpy(), p.numpy())


# --------------------------------------------------------------------------- final dist
def test_final_distribution_matches_eq9_with_duplicates_and_oovs():
    vocab, max_oovs = 6, 3
    ext = np.array([[4, 7, 4, 6, 1], [5, 2, 2, 2, 1]], np.int32)  # 4 twice; 2 thrice
    attn = np.array([[0.1, 0.2, 0.3, 0.4, 0.0], [0.25, 0.25, 0.25, 0.125, 0.125]])
    vocab_dist = _np_softmax(RNG.normal(size=(2, vocab)))
    p_gen = np.array([[0.3], [0.8]])
    got = FinalDistribution()(
        tf.constant(vocab_dist, tf.float32),
        tf.constant(attn, tf.float32),
        tf.constant(p_gen, tf.float32),
        tf.constant(ext),
        tf.constant(max_oovs),
    ).numpy()
    want = np.zeros((2, vocab + max_oovs))
    want[:, :vocab] = p_gen * vocab_dist
    for b in range(2):
        for i, w in enumerate(ext[b]):  # eq. 9: sum over every position holding w
            want[b, w] += (1 - p_gen[b, 0]) * attn[b, i]
    _close(got, want)
    _close(got[0, 4], 0.3 * vocab_dist[0, 4] + 0.7 * 0.4)  # duplicates accumulate
    _close(got[0, 8], 0.0)  # an OOV column this article does not use
    _close(got[1, 2], 0.8 * vocab_dist[1, 2] + 0.2 * 0.625)
    _close(got.sum(-1), [1.0, 1.0])
    config = FinalDistribution(name="fd").get_config()
    assert FinalDistribution.from_config(config).name == "fd"


# --------------------------------------------------------------------------- reduce state
def test_reduce_state_is_relu_of_linear():
    h, b = 5, 4
    layer = ReduceState(h, init_std=1e-4)
    layer.build()
    _randomise(layer, 0.8)
    c_fw, c_bw, h_fw, h_bw = (RNG.normal(size=(b, h)).astype(np.float32) for _ in range(4))
    c0, h0 = layer(c_fw, c_bw, h_fw, h_bw)
    w = {x.name: x.numpy().astype(np.float64) for x in layer.weights}
    want_c = np.maximum(0, np.concatenate([c_fw, c_bw], 1) @ w["w_reduce_c"] + w["bias_reduce_c"])
    want_h = np.maximum(0, np.concatenate([h_fw, h_bw], 1) @ w["w_reduce_h"] + w["bias_reduce_h"])
    _close(c0, want_c)
    _close(h0, want_h)
    assert (c0.numpy() == 0).any() and (c0.numpy() > 0).any()  # the ReLU was exercised

    clone = _copy(layer)
    assert (clone.hidden_dim, clone.init_std) == (h, 1e-4)
    clone.build()
    clone.set_weights(layer.get_weights())
    np.testing.assert_array_equal(clone(c_fw, c_bw, h_fw, h_bw)[1].numpy(), h0.numpy())


def test_model_config_round_trip_gives_same_loss():
    hps = pg.HParams(hidden_dim=4, emb_dim=3, coverage=True, decode_attention="train_consistent")
    model = pg.PointerGeneratorModel(hps, 20).build_weights()
    _randomise(model, 0.3)
    clone = pg.PointerGeneratorModel.from_config(model.get_config()).build_weights()
    assert clone.hps == hps and clone.vocab_size == 20
    clone.set_weights(model.get_weights())
    batch = {
        "enc_batch": tf.constant([[4, 5, 6], [7, 8, 1]]),
        "enc_lens": tf.constant([3, 2]),
        "enc_padding_mask": tf.constant([[1.0, 1, 1], [1, 1, 0]]),
        "enc_batch_extend_vocab": tf.constant([[4, 20, 6], [7, 8, 1]]),
        "max_art_oovs": tf.constant(1),
        "dec_batch": tf.constant([[2, 4], [2, 7]]),
        "target_batch": tf.constant([[20, 3], [7, 3]]),
        "dec_padding_mask": tf.constant([[1.0, 1], [1, 1]]),
    }
    assert float(model(batch)["total_loss"]) == float(clone(batch)["total_loss"])


# --------------------------------------------------------------------------- paper sizes
PAPER = dict(hidden_dim=256, emb_dim=128)
PAPER_VOCAB = 50_000


def _count(model):
    return sum(int(np.prod(v.shape)) for v in model.trainable_variables)


@pytest.fixture(scope="module")
def paper_model():
    """Pointer-generator + coverage at the paper's sizes (21.5M parameters)."""
    keras.utils.set_random_seed(111)
    hps = pg.HParams(pointer_gen=True, coverage=True, **PAPER)
    return pg.PointerGeneratorModel(hps, PAPER_VOCAB).build_weights()


def test_parameter_counts_match_the_paper(paper_model):
    baseline = pg.PointerGeneratorModel(
        pg.HParams(pointer_gen=False, coverage=False, **PAPER), PAPER_VOCAB
    ).build_weights()
    assert _count(baseline) == 21_499_600
    del baseline
    # The pointer adds the 1152 x 1 + 1 p_gen layer, coverage the 512-vector w_c.
    assert _count(paper_model) == 21_499_600 + 1_153 + 512
    assert "21,501,265 trainable parameters" in paper_model.parameter_summary()


def test_initialiser_statistics(paper_model):
    m = paper_model
    cells = (m.encoder.forward_layer.cell, m.encoder.backward_layer.cell, m.decoder_cell)
    h = 256
    for cell in cells:
        for w in (cell.kernel.numpy(), cell.recurrent_kernel.numpy()):
            assert np.abs(w).max() <= 0.02 and np.abs(w).max() > 0.0199  # U(-0.02, 0.02)
            assert abs(w.std() - 0.02 / math.sqrt(3)) < 3e-4
        bias = cell.bias.numpy()
        np.testing.assert_array_equal(bias[h : 2 * h], 1.0)  # Keras f block = TF1 forget bias
        np.testing.assert_array_equal(np.delete(bias, np.s_[h : 2 * h]), 0.0)
    # Truncated normal(1e-4) cut at 2 std: the sample std is 0.8796e-4, |x| <= 2e-4.
    for w in (
        m.embedding.embeddings,
        m.output_projection.kernel,
        m.output_projection.bias,
        m.reduce_state.w_reduce_c,
        m.reduce_state.bias_reduce_h,
    ):
        x = w.numpy()
        assert np.abs(x).max() <= 2e-4, w.path
        assert abs(x.std() / 1e-4 - 0.8796) < (0.01 if x.size > 1e5 else 0.1), w.path
    emb = m.embedding.embeddings.numpy()
    assert abs(emb.mean()) < 1e-6 and 0.85e-4 < emb.std() < 0.91e-4
    # Glorot-uniform with TF1's fans: limit sqrt(6 / (fan_in + fan_out)).
    glorot = [
        (m.attention.W_h, 512, 512),
        (m.attention.W_s, 512, 512),
        (m.attention.v, 512, 512),
        (m.attention.w_c, 1, 512),
        (m.input_merge.kernel, 640, 128),
        (m.p_gen_layer.dense.kernel, 1152, 1),
        (m.attn_output_projection.kernel, 768, 256),
    ]
    for w, fan_in, fan_out in glorot:
        limit = math.sqrt(6 / (fan_in + fan_out))
        x = np.abs(w.numpy())
        assert x.max() <= limit and x.max() > 0.95 * limit, w.path
    for b in (
        m.attention.b_attn,
        m.input_merge.bias,
        m.p_gen_layer.dense.bias,
        m.attn_output_projection.bias,
    ):
        np.testing.assert_array_equal(b.numpy(), 0.0)
