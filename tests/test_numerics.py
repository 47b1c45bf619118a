"""Gradients (finite differences) and the numerically safe paths on adversarial inputs.

`safe_numerics=True` must keep the loss and every gradient finite where the original
formulas (`safe_numerics=False`) produce inf/NaN, and must agree with them on normal inputs.
"""

from __future__ import annotations

import contextlib

import keras
import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.models.tf1_checkpoint import tf1_arrays_to_model
from tests import numpy_reference as ref

VOCAB, HIDDEN, EMB = 20, 4, 3
DEC = "seq2seq/decoder/attention_decoder"


@contextlib.contextmanager
def _float64():
    old = keras.config.dtype_policy()
    keras.config.set_dtype_policy("float64")
    try:
        yield
    finally:
        keras.config.set_dtype_policy(old)


def _params(pointer_gen=True, coverage=True, seed=0, **overrides):
    params = ref.random_tf1_params(
        np.random.default_rng(seed), VOCAB, HIDDEN, EMB, pointer_gen, coverage, scale=0.5
    )
    params.update(overrides)
    return params


def _model(params, pointer_gen=True, coverage=True, safe=True, dtype="float32"):
    hps = pg.HParams(
        hidden_dim=HIDDEN,
        emb_dim=EMB,
        pointer_gen=pointer_gen,
        coverage=coverage,
        safe_numerics=safe,
    )
    with _float64() if dtype == "float64" else contextlib.nullcontext():
        model = pg.PointerGeneratorModel(hps, VOCAB).build_weights()
    tf1_arrays_to_model(model, params)
    return model


def _batch(dtype=tf.float32, **changes):
    """Two rows, article lengths 5 and 3, decoder lengths 4 and 2; row 0 has 2 article OOVs
    (ids 20, 21), row 1 one (20); targets include copy-only ids."""
    b = {
        "enc_batch": [[4, 0, 5, 0, 6], [7, 0, 8, 1, 1]],
        "enc_lens": [5, 3],
        "enc_padding_mask": [[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]],
        "enc_batch_extend_vocab": [[4, 20, 5, 21, 6], [7, 20, 8, 1, 1]],
        "max_art_oovs": 2,
        "dec_batch": [[2, 4, 0, 9], [2, 0, 1, 1]],
        "target_batch": [[4, 20, 9, 3], [20, 3, 1, 1]],
        "dec_padding_mask": [[1, 1, 1, 1], [1, 1, 0, 0]],
    }
    b.update(changes)
    out = {}
    for k, v in b.items():
        float_field = k.endswith("mask")
        out[k] = tf.constant(v, dtype if float_field else tf.int32)
    return out


def _loss_and_grads(model, batch):
    with tf.GradientTape() as tape:
        loss = model(batch)["total_loss"]
    grads = tape.gradient(loss, model.trainable_variables)
    return loss, [tf.convert_to_tensor(g) for g in grads]


def _all_finite(loss, grads) -> bool:
    return bool(np.isfinite(loss.numpy())) and all(np.all(np.isfinite(g.numpy())) for g in grads)


# --------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("pointer_gen,coverage", [(True, True), (False, False)])
def test_gradients_match_finite_differences(pointer_gen, coverage):
    model = _model(_params(pointer_gen, coverage), pointer_gen, coverage, dtype="float64")
    batch = _batch(tf.float64)
    if not pointer_gen:  # baseline targets are plain vocabulary ids
        batch["target_batch"] = tf.constant([[4, 5, 9, 3], [7, 3, 1, 1]])
    loss_fn = tf.function(lambda: model(batch)["total_loss"])
    _, grads = _loss_and_grads(model, batch)
    rng = np.random.default_rng(7)
    eps = 1e-6
    checked = 0
    for var, grad in zip(model.trainable_variables, grads, strict=True):
        grad = grad.numpy()
        base = var.numpy()
        # One random direction over the whole variable, plus one random coordinate.
        coordinate = np.zeros(base.size)
        coordinate[rng.integers(base.size)] = 1.0
        directions = [rng.normal(size=base.shape), coordinate.reshape(base.shape)]
        for d in directions:
            var.assign(base + eps * d)
            up = float(loss_fn())
            var.assign(base - eps * d)
            down = float(loss_fn())
            var.assign(base)
            numeric, analytic = (up - down) / (2 * eps), float(np.sum(grad * d))
            assert abs(numeric - analytic) <= 1e-6 * max(1.0, abs(analytic)), (
                f"{var.path}: finite difference {numeric} vs gradient {analytic}"
            )
            checked += 1
    assert checked == 2 * len(model.trainable_variables)
    # The check is not vacuous: the loss really depends on the LSTM, attention and p_gen.
    nonzero = {
        v.path
        for v, g in zip(model.trainable_variables, grads, strict=True)
        if np.abs(g.numpy()).max() > 1e-6
    }
    assert {"decoder_cell/kernel", "encoder/encoder_bw/lstm_cell/kernel", "attention/v"} <= nonzero
    if coverage:
        assert "attention/w_c" in nonzero and "calculate_pgen/linear/kernel" in nonzero


@pytest.mark.parametrize("pointer_gen,coverage", [(True, True), (True, False)])
def test_safe_equals_original_formula_on_normal_inputs(pointer_gen, coverage):
    """Same loss and gradients (float64, so only the formulas differ, not the rounding of
    float32 arithmetic in a different order)."""
    params = _params(pointer_gen, coverage)
    batch = _batch(tf.float64)
    safe_loss, safe_grads = _loss_and_grads(
        _model(params, pointer_gen, coverage, safe=True, dtype="float64"), batch
    )
    orig_loss, orig_grads = _loss_and_grads(
        _model(params, pointer_gen, coverage, safe=False, dtype="float64"), batch
    )
    np.testing.assert_allclose(safe_loss.numpy(), orig_loss.numpy(), rtol=1e-6)
    for s, o in zip(safe_grads, orig_grads, strict=True):
        np.testing.assert_allclose(
            s.numpy(), o.numpy(), rtol=1e-6, atol=1e-9 * np.abs(o.numpy()).max()
        )


# --------------------------------------------------------------------------- adversarial
def _huge_energy_params():
    """Energies of padded positions (encoder state 0) dwarf those of real positions: b_attn
    = 10 sign(v) drives tanh to sign(v) there (the largest energy possible), while a huge
    W_h gives the real positions tanh = +-1 in mixed directions; |v| = 1000 makes the gap
    thousands of nats, so the original's softmax leaves no mass on real positions."""
    p = _params()
    v = np.sign(p[DEC + "/v"]) * 1000.0
    return _params(
        **{
            DEC + "/v": v.astype(np.float32),
            DEC + "/Attention/Linear/Bias": (10 * np.sign(v)).astype(np.float32),
            DEC + "/W_h": p[DEC + "/W_h"] * 1000,
        }
    )


ADVERSARIAL = {
    # Row 1 has no article at all (enc_len 0): the original divides 0 attention by 0.
    "empty_article": (
        _params,
        dict(
            enc_lens=[5, 0],
            enc_padding_mask=[[1, 1, 1, 1, 1], [0, 0, 0, 0, 0]],
            enc_batch=[[4, 0, 5, 0, 6], [1, 1, 1, 1, 1]],
            enc_batch_extend_vocab=[[4, 20, 5, 21, 6], [1, 1, 1, 1, 1]],
            target_batch=[[4, 20, 9, 3], [5, 3, 1, 1]],
        ),
    ),
    # Row 1 has no decoder step: the per-example average divides 0 by 0.
    "empty_summary": (_params, dict(dec_padding_mask=[[1, 1, 1, 1], [0, 0, 0, 0]])),
    # p_gen = sigmoid(100) = 1 in float32 while a target (20) can only be copied.
    "p_gen_saturated_high": (
        lambda: _params(**{DEC + "/calculate_pgen/Linear/Bias": np.float32([100.0])}),
        {},
    ),
    # p_gen = sigmoid(-100) while targets 9 and 3 are not in the article: P ~ 1e-45.
    "p_gen_saturated_low": (
        lambda: _params(**{DEC + "/calculate_pgen/Linear/Bias": np.float32([-100.0])}),
        {},
    ),
    # Target 21 is row 1's unused OOV column: probability exactly 0.
    "zero_probability_target": (_params, dict(target_batch=[[4, 20, 9, 3], [21, 3, 1, 1]])),
    "huge_energies_at_padding": (_huge_energy_params, {}),
}


@pytest.mark.parametrize("case", sorted(ADVERSARIAL))
def test_safe_numerics_stay_finite(case):
    make_params, changes = ADVERSARIAL[case]
    params, batch = make_params(), _batch(**changes)
    loss, grads = _loss_and_grads(_model(params, safe=True), batch)
    assert _all_finite(loss, grads), case
    assert float(loss) > 0
    if case == "p_gen_saturated_low":  # there the original only loses precision
        return
    original = _model(params, safe=False)
    orig_loss = original(batch)["total_loss"]
    if np.isfinite(orig_loss.numpy()):  # then the gradients must be the non-finite part
        assert not _all_finite(*_loss_and_grads(original, batch)), (
            f"{case}: the original formula stayed finite, so this input proves nothing"
        )


def test_empty_article_row_contributes_its_generation_loss_only():
    """With no article the safe model is a plain generator for that row: its attention and
    context are zero (not NaN) and the other row is unaffected."""
    params = _params()
    model = _model(params, safe=True)
    _, changes = ADVERSARIAL["empty_article"]
    out = model(_batch(**changes))
    np.testing.assert_array_equal(out["attn_dists"].numpy()[1], 0.0)
    alone = model(
        _batch(
            **{k: v[:1] for k, v in changes.items() if k != "max_art_oovs"},
            dec_batch=[[2, 4, 0, 9]],
            dec_padding_mask=[[1, 1, 1, 1]],
        )
    )
    np.testing.assert_allclose(out["step_nll"].numpy()[0], alone["step_nll"].numpy()[0], rtol=1e-5)
