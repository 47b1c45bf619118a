"""The RAS models: their log-probabilities against the NumPy composition of the printed
equations, the search step against the training pass, overfitting, the closed-form sizes."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from pointer_generator.models.ras_model import RASConfig, RASModel
from tests import numpy_abs_ras as ref
from tests.test_abs_model import _batch, check_greedy_search_matches_log_probs, check_overfits

V = 30


def _model(decoder="elman", **kw):
    tf.keras.utils.set_random_seed(4)
    config = RASConfig(decoder=decoder, **{"dim": 6, "width": 3, "max_positions": 12, **kw})
    return RASModel(config, V).build_weights()


@pytest.mark.parametrize(
    "initial_state, attention", [("zeros", "dot"), ("learned", "dot"), ("zeros", "cosine")]
)
@pytest.mark.parametrize("decoder", ["elman", "lstm"])
def test_log_probs_are_the_printed_equations_composed(decoder, initial_state, attention):
    rng = np.random.default_rng(0)
    batch = _batch(rng)
    model = _model(decoder, initial_state=initial_state, attention=attention, attention_scale=3.0)
    cosine = 3.0 if attention == "cosine" else None
    h0, m0 = np.zeros(6), np.zeros(6)
    if initial_state == "learned":  # trained vectors are not zero: give them values
        h0, m0 = rng.uniform(0.1, 0.9, 6), rng.normal(size=6)
        model.h0.assign(h0.astype(np.float32))
        if decoder == "lstm":
            model.m0.assign(m0.astype(np.float32))
    lp = model.log_probs(batch["enc_batch"], batch["enc_padding_mask"], batch["dec_batch"])
    x_emb, y_emb = model.x_emb.embeddings.numpy(), model.y_emb.embeddings.numpy()
    positions, kernel = model.encoder.positions.numpy(), model.encoder.conv.kernel.numpy()
    w4, w5 = model.out.a.numpy(), model.out.b.numpy()
    d = 6
    for b, n in enumerate((6, 4)):
        x = x_emb[batch["enc_batch"][b, :n]]
        z = ref.ras_keys(x, positions[:n], kernel)
        h, m = h0.copy(), (m0.copy() if decoder == "lstm" else np.zeros(d))
        for t in range(5):
            c, _ = ref.ras_context(z, x, h, cosine)
            y = y_emb[batch["dec_batch"][b, t]]
            if decoder == "elman":
                cell = model.cell
                h = ref.elman_step(y, h, c, cell.w1.numpy(), cell.w2.numpy(), cell.w3.numpy())
            else:
                ks = [model.cell.kernel, model.cell.recurrent_kernel, model.cell.context_kernel]
                ks = [k.numpy() for k in ks]
                w = {g: tuple(k[:, j * d : (j + 1) * d] for k in ks) for j, g in enumerate("ifgo")}
                h, m = ref.ras_lstm_step(y, h, m, c, w)
            np.testing.assert_allclose(lp[b, t], ref.ras_output(h, c, w4, w5), atol=2e-5)


@pytest.mark.parametrize("decoder", ["elman", "lstm"])
def test_the_decode_step_equals_the_training_forward_pass(decoder):
    check_greedy_search_matches_log_probs(_model(decoder), _batch(np.random.default_rng(1)))


@pytest.mark.parametrize("decoder", ["elman", "lstm"])
def test_a_learned_initial_state_reaches_the_search(decoder):
    model = _model(decoder, initial_state="learned")
    model.h0.assign(np.linspace(0.1, 0.9, 6).astype(np.float32))
    check_greedy_search_matches_log_probs(model, _batch(np.random.default_rng(1)))


def test_with_zeros_the_first_attention_is_uniform_and_a_learned_state_lifts_it():
    """Why `--ras_initial_state=learned` exists: α_1 ∝ exp(z_j · h_0) is uniform for
    h_0 = 0, whatever the input (docs/families.md)."""
    batch = _batch(np.random.default_rng(2))
    for state, uniform in (("zeros", True), ("learned", False)):
        model = _model("elman", initial_state=state)
        if state == "learned":
            model.h0.assign(np.linspace(-1, 1, 6).astype(np.float32))
        art = model.search_articles(batch["enc_batch"][:1, :6], batch["enc_padding_mask"][:1, :6])
        carry = model.initial_carry(1)
        _, _, alpha, _ = model._recur(model.y_emb(batch["dec_batch"][:1, 0]), carry, art)
        assert np.allclose(alpha.numpy(), 1 / 6, atol=1e-6) == uniform


def test_checkpoints_say_which_initial_state_they_hold(tmp_path):
    learned = _model("elman", initial_state="learned")
    path = tf.train.Checkpoint(model=learned).save(str(tmp_path / "ckpt"))
    shapes = dict(tf.train.list_variables(path))
    assert RASModel.implied_settings(shapes)["ras_initial_state"] == "learned"
    problems = _model("elman").checkpoint_mismatches(shapes)
    assert "its initial state is learned but --ras_initial_state=zeros" in problems
    assert learned.checkpoint_mismatches(shapes) == []


@pytest.mark.parametrize("decoder", ["elman", "lstm"])
def test_ras_overfits_a_few_pairs(decoder):
    check_overfits(_model(decoder, dim=24))


@pytest.mark.parametrize("decoder, size", [("elman", 143_460_352), ("lstm", 145_819_648)])
def test_the_paper_configuration_has_the_closed_form_size(decoder, size):
    """Spec §8.2: d = 512, q = 5, P_max = 100, V_x = V_y = 69,000."""
    model = RASModel(RASConfig(decoder=decoder), 69_000).build_weights()
    assert model.count_params() == size


def test_config_round_trip_and_errors():
    model = _model("lstm")
    assert RASModel.from_config(model.get_config()).get_config() == model.get_config()
    with pytest.raises(ValueError, match="decoder must be one of"):
        RASConfig(decoder="gru")
    with pytest.raises(ValueError, match="longer than the 12 positions"):
        model.search_articles(tf.zeros([1, 13], tf.int32), tf.ones([1, 13]))


def test_the_attention_diagnostic_reads_a_uniform_attention_as_one_fixed_position():
    """experiments.families.ras_attention on keys of zero: every α_t is uniform over the
    real positions, so max α = 1/M, the largest weight stays on position 0 (one position
    visited), and a summary word is "on target" exactly when it is the input's first word."""
    from experiments.families.ras_attention import STEPS_READ, attention_summary

    model, M = _model("elman"), 10
    model.encoder.conv.kernel.assign(tf.zeros_like(model.encoder.conv.kernel))
    rng = np.random.default_rng(0)
    enc = rng.integers(4, V, size=(3, M)).astype(np.int32)
    target = rng.integers(4, V, size=(3, 9)).astype(np.int32)
    target[0, 2] = enc[0, 0]  # on target: the first input word
    target[1, 3] = enc[1, 4]  # in the input, but not at position 0
    batch = {
        "enc_batch": tf.constant(enc),
        "enc_padding_mask": tf.ones([3, M]),
        "dec_batch": tf.constant(np.concatenate([np.full((3, 1), 2), target[:, :-1]], 1)),
        "target_batch": tf.constant(target),
    }
    in_input = [
        enc[b, 0] == target[b, t]
        for t in STEPS_READ
        for b in range(3)
        if (enc[b] == target[b, t]).any()
    ]
    max_alpha, positions, on_target = attention_summary(model, batch)
    np.testing.assert_allclose(max_alpha, 1 / M, rtol=1e-5)
    assert positions == 1.0
    assert on_target == pytest.approx(np.mean(in_input))
    assert 0 < on_target < 1
