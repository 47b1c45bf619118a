"""The ABS and RAS layers against the NumPy references of their printed equations
(tests/numpy_abs_ras.py), float64, on padded batches compared row by row with the
unpadded examples; configs round-trip; parameter counts equal the closed forms."""

from __future__ import annotations

import keras
import numpy as np
import pytest

from pointer_generator.layers import abs_layers, ras_layers
from pointer_generator.layers.log_softmax_output import LogSoftmaxOutput
from tests import numpy_abs_ras as ref

LENGTHS = [5, 3, 1]  # padded to 5: the short rows must give what they give alone
H, C, D = 6, 3, 4


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def _batch(rng, dim, lengths=LENGTHS):
    m = max(lengths)
    x = rng.normal(size=(len(lengths), m, dim))
    mask = np.array([[1.0] * n + [0.0] * (m - n) for n in lengths])
    # Garbage at padded positions must not leak into any result.
    x[mask == 0] = 1e3
    return x, mask


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-9)


def _roundtrip(layer):
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config


# ------------------------------------------------------------------------------ ABS
def test_nnlm_hidden_is_tanh_of_u_times_the_concatenated_context(rng):
    context = rng.normal(size=(2, C, D))
    for use_bias in (False, True):
        layer = abs_layers.NNLMHidden(H, use_bias=use_bias, dtype="float64")
        out = layer(context)
        u = layer.u.kernel.numpy()
        bias = layer.u.bias.numpy() + 0.3 if use_bias else None
        if use_bias:
            layer.u.bias.assign(bias)
            out = layer(context)
        for b in range(2):
            _close(out[b], ref.nnlm_hidden(context[b], u, bias))
        assert layer.count_params() == C * D * H + (H if use_bias else 0)
        _roundtrip(layer)


def test_bag_of_words_is_the_mean_over_the_real_positions(rng):
    x, mask = _batch(rng, H)
    layer = abs_layers.BagOfWordsEncoder(dtype="float64")
    out = layer(x, mask)
    for b, n in enumerate(LENGTHS):
        _close(out[b], ref.bow_encoder(x[b, :n]))
    assert layer.count_params() == 0  # F (the input embedding) is the only parameter
    namas = abs_layers.BagOfWordsEncoder(extra_linear=True, dtype="float64")
    namas(x, mask)
    assert namas.count_params() == H * H + H
    _roundtrip(namas)


@pytest.mark.parametrize("lengths", [LENGTHS, [7, 4, 2]])
def test_conv_encoder_layers_of_convolution_pooling_and_tanh(rng, lengths):
    x, mask = _batch(rng, H, lengths)
    layer = abs_layers.ConvEncoder(layers=2, q=1, dtype="float64")
    out = layer(x, mask)
    kernels = [conv.kernel.numpy() for conv in layer.convs]
    for b, n in enumerate(lengths):
        _close(out[b], ref.conv_encoder(x[b, :n], kernels, q=1))
    assert layer.count_params() == 2 * (3 * H * H)  # L layers of Qˡ ∈ R^{H x (2Q+1)H}
    _roundtrip(layer)


@pytest.mark.parametrize("divisor", ["Q", "2Q+1"])
def test_attention_encoder_smooths_the_values_not_the_keys(rng, divisor):
    x, mask = _batch(rng, H)
    context = rng.normal(size=(len(LENGTHS), C, D))
    layer = abs_layers.AttentionEncoder(q=2, smoothing_divisor=divisor, dtype="float64")
    enc, p = layer(x, mask, context)
    p_matrix = layer.p.kernel.numpy()
    for b, n in enumerate(LENGTHS):
        want_enc, want_p = ref.attention_encoder(
            x[b, :n], context[b], p_matrix, q=2, divisor=2.0 if divisor == "Q" else 5.0
        )
        _close(enc[b], want_enc)
        _close(p[b, :n], want_p)
        assert np.all(np.asarray(p[b, n:]) == 0.0)
    assert layer.count_params() == C * D * H  # P ∈ R^{H x CD}
    _roundtrip(layer)


def test_attention_encoder_namas_switches(rng):
    x, mask = _batch(rng, H)
    context = rng.normal(size=(len(LENGTHS), C, D))
    plain = abs_layers.AttentionEncoder(q=2, dtype="float64")
    namas = abs_layers.AttentionEncoder(
        q=2, p_bias=True, learned_smoothing=True, extra_linear=True, dtype="float64"
    )
    plain(x, mask, context)
    namas(x, mask, context)
    namas.p.kernel.assign(plain.p.kernel)
    # A learned smoothing weight of 1/Q and no bias, an identity extra linear: the paper.
    namas.smooth_weight.assign(0.5)
    namas.linear.kernel.assign(np.eye(H))
    _close(namas(x, mask, context)[0], plain(x, mask, context)[0])
    assert namas.count_params() == C * D * H + H + 2 + H * H + H
    with pytest.raises(ValueError, match="smoothing_divisor"):
        abs_layers.AttentionEncoder(smoothing_divisor="Q+1")


def test_abs_output_is_log_softmax_of_vh_plus_w_enc(rng):
    h, enc = rng.normal(size=(2, H)), rng.normal(size=(2, 5))
    layer = LogSoftmaxOutput(11, ("V", "W"), dtype="float64")
    out = layer(h, enc)
    for b in range(2):
        _close(out[b], ref.abs_output(h[b], enc[b], layer.a.numpy(), layer.b.numpy()))
    assert layer.count_params() == 11 * H + 11 * 5  # |V| + |W|, no bias (paper)
    biased = LogSoftmaxOutput(11, ("V", "W"), use_bias=True, dtype="float64")
    biased(h, enc)
    biased.a.assign(layer.a), biased.b.assign(layer.b), biased.bias.assign(np.full(11, 0.2))
    _close(biased(h, enc), out)  # a constant bias cancels in the softmax
    assert [w.name for w in layer.weights] == ["V", "W"]
    _roundtrip(biased)


# ------------------------------------------------------------------------------ RAS
def test_ras_keys_are_the_literal_double_sum_over_positions_and_kernels(rng):
    d = 4
    words, mask = _batch(rng, d)
    layer = ras_layers.RASEncoder(width=3, max_positions=10, dtype="float64")
    z = layer(words, mask)
    kernel, positions = layer.conv.kernel.numpy(), layer.positions.numpy()
    for b, n in enumerate(LENGTHS):
        _close(z[b, :n], ref.ras_keys(words[b, :n], positions[:n], kernel))
    assert layer.count_params() == 10 * d + 3 * d * d  # P_max·d + q·d²
    _roundtrip(layer)
    with pytest.raises(ValueError, match="odd"):
        ras_layers.RASEncoder(width=4)


@pytest.mark.parametrize("cosine_scale", [None, 7.0])
def test_ras_attention_queries_with_the_previous_state_and_averages_plain_words(rng, cosine_scale):
    d = 4
    words, mask = _batch(rng, d)
    keys = 5 * rng.normal(size=words.shape)  # dot-product scores far beyond ±7
    h_prev = 5 * rng.normal(size=(len(LENGTHS), d))
    context, alpha = ras_layers.ras_attention(keys, words, mask, h_prev, cosine_scale)
    for b, n in enumerate(LENGTHS):
        want_c, want_alpha = ref.ras_context(keys[b, :n], words[b, :n], h_prev[b], cosine_scale)
        _close(context[b], want_c)
        _close(alpha[b, :n], want_alpha)
    np.testing.assert_allclose(np.asarray(alpha).sum(axis=1), 1.0)
    # Bounded scores: no weight beyond e^(2s) times another's (s = 7), which the dot
    # product's scores here do exceed.
    ratios = [np.asarray(alpha)[b, :n].max() / np.asarray(alpha)[b, :n].min()
              for b, n in enumerate(LENGTHS)]  # fmt: skip
    if cosine_scale:
        assert max(ratios) <= np.exp(2 * cosine_scale) * (1 + 1e-9)
    else:
        assert max(ratios) > np.exp(2 * 7.0)


def test_elman_cell_is_a_sigmoid_recurrence_with_the_context(rng):
    y, h, c = rng.normal(size=(2, 3)), rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    cell = ras_layers.ElmanCell(4, dtype="float64")
    out = cell(y, h, c)
    w1, w2, w3 = cell.w1.numpy(), cell.w2.numpy(), cell.w3.numpy()
    for b in range(2):
        _close(out[b], ref.elman_step(y[b], h[b], c[b], w1, w2, w3))
    assert cell.count_params() == 3 * 4 + 2 * 4 * 4  # W1 (E x d), W2, W3 (d x d)
    _roundtrip(cell)


@pytest.mark.parametrize("standard", [False, True])
def test_ras_lstm_cell_is_the_printed_one(rng, standard):
    d = 4
    y, h, m, c = (rng.normal(size=(2, n)) for n in (3, d, d, d))
    cell = ras_layers.RASLSTMCell(d, standard=standard, dtype="float64")
    h_new, m_new = cell(y, h, m, c)
    ky, kh, kc = cell.kernel.numpy(), cell.recurrent_kernel.numpy(), cell.context_kernel.numpy()

    def gate(k):  # column block k of each matrix (order i, f, g, o)
        return tuple(w[:, k * d : (k + 1) * d] for w in (ky, kh, kc))

    w = {"i": gate(0), "f": gate(1), "g": gate(2), "o": gate(3)}
    for b in range(2):
        want_h, want_m = ref.ras_lstm_step(y[b], h[b], m[b], c[b], w, standard=standard)
        _close(h_new[b], want_h)
        _close(m_new[b], want_m)
    assert cell.count_params() == 4 * d * (3 + d + d)  # 12 matrices (y, h, c into 4 gates)
    _roundtrip(cell)


def test_the_standard_switch_is_the_only_difference_from_keras_lstm(rng):
    d = 4
    y, h, m = rng.normal(size=(2, 3)), rng.normal(size=(2, d)), rng.normal(size=(2, d))
    cell = ras_layers.RASLSTMCell(d, standard=True, dtype="float64")
    cell(y, h, m, np.zeros((2, d)))
    keras_cell = keras.layers.LSTMCell(d, dtype="float64")
    keras_cell.build((None, 3))
    keras_cell.kernel.assign(cell.kernel)
    keras_cell.recurrent_kernel.assign(cell.recurrent_kernel)
    keras_cell.bias.assign(np.zeros(4 * d))
    want_h, (_, want_m) = keras_cell(y, [h, m])
    got_h, got_m = cell(y, h, m, np.zeros((2, d)))
    _close(got_h, want_h)
    _close(got_m, want_m)
    printed, _ = ras_layers.RASLSTMCell(d, dtype="float64")(y, h, m, np.zeros((2, d)))
    assert not np.allclose(printed, got_h)  # no tanh on the cell: another output


def test_ras_output_is_log_softmax_of_the_state_and_context(rng):
    h, c = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    layer = LogSoftmaxOutput(9, ("W4", "W5"), dtype="float64")
    out = layer(h, c)
    for b in range(2):
        _close(out[b], ref.ras_output(h[b], c[b], layer.a.numpy(), layer.b.numpy()))
    assert layer.count_params() == 2 * 4 * 9
