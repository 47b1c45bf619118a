"""The earlier families' packed loss (models/sentence_model.py, `gold_log_probs`): the
output layer applied at the real target words only gives the loss, the masked per-step
NLL and the gradients of the dense computation from `log_probs` (every position
projected, the gold word gathered, masked, averaged), eagerly (`tf.where`) and under XLA
(the bucketed path), for every ABS encoder and both RAS decoders."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from pointer_generator.data.vocab import PAD_ID, START_ID, STOP_ID
from pointer_generator.models import sentence_model
from pointer_generator.models.abs_model import ABSConfig, ABSModel
from pointer_generator.models.ras_model import RASConfig, RASModel

V = 30
TARGET_LENGTHS = (6, 2, 5, 1)  # of 6 decoder steps: 14 of 24 positions real
ABS = dict(window=3, emb_dim=5, hidden_dim=7, smoothing=1, conv_layers=2)
RAS = dict(dim=6, width=3, max_positions=12)
MODELS = {
    "abs_bow": lambda: ABSModel(ABSConfig(encoder="bow", **ABS), V),
    "abs_conv": lambda: ABSModel(ABSConfig(encoder="conv", **ABS), V),
    "abs_attention": lambda: ABSModel(ABSConfig(encoder="attention", **ABS), V),
    # NAMAS's layers: the output layer has a bias
    "abs_attention_namas": lambda: ABSModel(ABSConfig(encoder="attention", namas=True, **ABS), V),
    "ras_elman": lambda: RASModel(RASConfig(decoder="elman", **RAS), V),
    "ras_lstm": lambda: RASModel(RASConfig(decoder="lstm", **RAS), V),
}


def _model(name):
    tf.keras.utils.set_random_seed(5)
    return MODELS[name]().build_weights()


def _batch(lengths=TARGET_LENGTHS, dec_len=6, enc_len=7, seed=0):
    """Targets of varied lengths, padded as the input pipeline pads them ([PAD], mask 0)."""
    rng = np.random.default_rng(seed)
    b = len(lengths)
    mask = (np.arange(dec_len)[None, :] < np.array(lengths)[:, None]).astype(np.float32)
    words = rng.integers(4, V, size=(b, dec_len)).astype(np.int32)
    target = np.where(mask > 0, words, PAD_ID).astype(np.int32)
    target[np.arange(b), np.maximum(np.array(lengths) - 1, 0)] = STOP_ID
    target[mask == 0] = PAD_ID
    dec = np.concatenate([np.full((b, 1), START_ID), target[:, :-1]], axis=1).astype(np.int32)
    dec[mask == 0] = PAD_ID
    return {
        "enc_batch": rng.integers(4, V, size=(b, enc_len)).astype(np.int32),
        "enc_padding_mask": np.ones((b, enc_len), np.float32),
        "dec_batch": dec,
        "target_batch": target,
        "dec_padding_mask": mask,
    }


def _dense(model, batch):
    """The loss as computed before the packed output: from every position's [V]."""
    lp = model.log_probs(batch["enc_batch"], batch["enc_padding_mask"], batch["dec_batch"])
    gold = tf.gather(lp, batch["target_batch"], batch_dims=2)
    mask = batch["dec_padding_mask"]
    return -tf.reduce_sum(gold * mask) / tf.maximum(tf.reduce_sum(mask), 1.0), -gold * mask


def _packed(model, batch):
    out = model(batch)
    return out["loss"], out["step_nll"] * batch["dec_padding_mask"]


def _with_gradients(model, loss_fn):
    def run(batch):
        with tf.GradientTape() as tape:
            loss, step_nll = loss_fn(model, batch)
        grads = tape.gradient(loss, model.trainable_variables)
        return loss, step_nll, [tf.convert_to_tensor(g) for g in grads]

    return run


def _assert_same(got, want):
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), atol=1e-5, rtol=1e-5)
    assert len(got[2]) == len(want[2])
    for g, w in zip(got[2], want[2], strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("mode", ["eager", "xla"])
def test_the_packed_loss_and_gradients_equal_the_dense_ones(name, mode, monkeypatch):
    model, batch = _model(name), _batch()
    bucketed = []
    original = sentence_model._bucketed_gold
    monkeypatch.setattr(
        sentence_model, "_bucketed_gold", lambda *a: bucketed.append(1) or original(*a)
    )
    want = _with_gradients(model, _dense)(batch)
    run = _with_gradients(model, _packed)
    if mode == "xla":
        run = tf.function(run, jit_compile=True)
    got = run(batch)
    _assert_same(got, want)
    assert bool(bucketed) == (mode == "xla")  # XLA gets the static-shape path
    assert float(want[0]) > 1.0  # a real loss (about ln 30), not zeros compared


def test_the_bucketed_path_is_right_outside_xla_too_and_the_padding_gets_zero():
    """`_bucketed_gold` (what runs when XLA cannot be detected) eagerly, against the
    gather path, for batches filling different buckets, an all-padding row included."""
    model = _model("abs_attention_namas")
    for lengths in [(6, 2, 5, 1), (6, 6, 6, 6), (1, 0, 0, 0), (0, 0, 0, 0)]:
        batch = _batch(lengths)
        first, second = model.output_inputs(
            batch["enc_batch"], batch["enc_padding_mask"], batch["dec_batch"]
        )
        args = (model.out, first, second, batch["target_batch"], batch["dec_padding_mask"])
        with tf.GradientTape(persistent=True) as tape:
            tape.watch([first, second])
            where = sentence_model.gold_log_probs(*args)
            bucketed = sentence_model._bucketed_gold(*args)
        np.testing.assert_allclose(bucketed.numpy(), where.numpy(), atol=1e-5)
        assert np.all(where.numpy()[batch["dec_padding_mask"] == 0] == 0)
        targets = [first, second, *model.out.trainable_variables]
        for a, b in zip(
            tape.gradient(bucketed, targets), tape.gradient(where, targets), strict=True
        ):
            np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5)


def test_an_xla_evaluation_with_open_shapes_and_no_log_probs_output():
    """The eval job traces once with every dimension open (evaluation/evaluate.py);
    `call` no longer returns the [B, T, V] log-probabilities."""
    model, batch = _model("ras_elman"), _batch()
    spec = {k: tf.TensorSpec([None] * v.ndim, tf.as_dtype(v.dtype)) for k, v in batch.items()}
    fn = tf.function(lambda b: model(b), input_signature=[spec], jit_compile=True)
    for lengths in [(5, 2, 4, 1), (3, 4, 2)]:
        b = _batch(lengths, dec_len=5, enc_len=9, seed=1)
        out = fn(b)
        assert "log_probs" not in out
        np.testing.assert_allclose(out["loss"].numpy(), _dense(model, b)[0].numpy(), atol=1e-5)
        assert out["step_nll"].shape == b["dec_padding_mask"].shape
