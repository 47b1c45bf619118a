"""The clipping norm is the original's `tf.global_norm` over per-lookup embedding rows.

The reference is computed in NumPy from the gradient of the loss with respect to every
looked-up embedding vector (captured at the embedding layer's output, one row per token
occurrence in the encoder and decoder inputs), never from the trainer's own norm.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from pointer_generator.training import grad_norm, train
from tests import helpers

VOCAB = 12  # ids 4..11 only: every batch repeats words many times
LR = 0.15


# ------------------------------------------------------------------------------ unit
def test_split_and_norm_of_indexed_slices_against_numpy():
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(6, 3)).astype(np.float32)
    ids = np.array([1, 4, 1, 1, 0, 4])  # duplicates
    dense_w = rng.normal(size=(2, 5)).astype(np.float32)
    grads = [
        tf.IndexedSlices(tf.constant(rows), tf.constant(ids), tf.constant([5, 3])),
        tf.constant(dense_w),
        None,
    ]
    dense, row_sq, is_rows = grad_norm.split_gradients(grads)

    summed = np.zeros((5, 3), np.float64)
    np.add.at(summed, ids, rows)
    np.testing.assert_allclose(dense[0].numpy(), summed, rtol=1e-6)
    assert dense[2] is None
    assert is_rows.numpy().tolist() == [True, False, False]
    np.testing.assert_allclose(float(row_sq), np.sum(rows.astype(np.float64) ** 2), rtol=1e-6)

    present = dense[:2]
    want_original = np.sqrt(np.sum(rows.astype(np.float64) ** 2) + np.sum(dense_w**2.0))
    want_dense = np.sqrt(np.sum(summed**2) + np.sum(dense_w**2.0))
    assert abs(want_original - want_dense) > 0.05 * want_dense  # the duplicates matter
    got = grad_norm.global_norm(present, row_sq, is_rows[:2], "original")
    assert float(got) == pytest.approx(want_original, rel=1e-6)
    got = grad_norm.global_norm(present, row_sq, is_rows[:2], "dense")
    assert float(got) == pytest.approx(want_dense, rel=1e-6)


def test_a_non_finite_dense_form_of_the_rows_does_not_leak_into_the_norm_mask():
    """The rows' own dense form is masked out with a select, not a product (0 * inf)."""
    big = tf.constant([[3e38, 3e38]], tf.float32)  # its square overflows to inf
    dense = [big, tf.constant([3.0, 4.0])]
    norm = grad_norm.global_norm(dense, tf.constant(1.0), tf.constant([True, False]))
    assert float(norm) == pytest.approx(np.sqrt(1.0 + 25.0))


# ------------------------------------------------------------------------------ trainer
class _RecordLookups:
    """Wraps the model's embedding layer call to keep every lookup's ids and output."""

    def __init__(self, layer):
        self.layer, self.original, self.lookups = layer, layer.call, []

    def __enter__(self):
        def call(inputs, *args, **kwargs):
            out = self.original(inputs, *args, **kwargs)
            self.lookups.append((np.asarray(inputs), out))
            return out

        self.layer.call = call
        return self

    def __exit__(self, *exc):
        self.layer.call = self.original


def numpy_reference(model, batch):
    """{"original", "dense"} norms and the float64 dense gradients of a training step.

    Rows are d total_loss / d emb(x) for every looked-up token x of the batch.
    """
    variables = model.trainable_variables
    with _RecordLookups(model.embedding) as rec, tf.GradientTape() as tape:
        out = model(batch, training=True)
    outputs = [o for _, o in rec.lookups]
    grads = tape.gradient(out["total_loss"], variables + outputs)
    var_grads, lookup_grads = grads[: len(variables)], grads[len(variables) :]
    assert len(rec.lookups) == 2, "one encoder and one decoder lookup"
    ids = np.concatenate([i.reshape(-1) for i, _ in rec.lookups])
    rows = np.concatenate([g.numpy().reshape(-1, g.shape[-1]) for g in lookup_grads])
    rows = rows.astype(np.float64)
    assert len(ids) == batch["enc_batch"].size + batch["dec_batch"].size
    assert np.bincount(ids).max() > 4, "the batch must repeat words"

    emb_index = [v.path for v in variables].index(model.embedding.embeddings.path)
    dense = [tf.convert_to_tensor(g).numpy().astype(np.float64) for g in var_grads]
    summed = np.zeros(dense[emb_index].shape)
    np.add.at(summed, ids, rows)
    # The tape's dense embedding gradient is the per-lookup rows summed by word.
    np.testing.assert_allclose(dense[emb_index], summed, rtol=1e-5, atol=1e-10)

    other = sum(np.sum(g**2) for i, g in enumerate(dense) if i != emb_index)
    return {
        "original": float(np.sqrt(other + np.sum(rows**2))),
        "dense": float(np.sqrt(other + np.sum(summed**2))),
        "grads": dense,
    }


def adagrad_after_clipping(weights, grads, norm, max_grad_norm, init_acc=0.1):
    """NumPy clip_by_global_norm with `norm`, then TF1's Adagrad step."""
    scale = min(1.0, max_grad_norm / norm)
    out = []
    for w, g in zip(weights, grads, strict=True):
        g = g * scale
        out.append(w - LR * g / np.sqrt(init_acc + g * g))
    return out


@pytest.fixture(scope="module", params=["fused_coverage", "keras"])
def case(request):
    """The default (fused) model with coverage, and the Keras/autodiff model."""
    fused = request.param == "fused_coverage"
    keras.utils.set_random_seed(7)
    hps = helpers.hparams(lr=LR, fused_recurrence=fused, coverage=fused, trunc_norm_init_std=0.1)
    batch = helpers.numpy_batch(4, VOCAB, seed=21)
    probe = train.Trainer(hps, VOCAB)
    ref = numpy_reference(probe.model, batch)
    return {
        "hps": hps,
        "batch": batch,
        "ref": ref,
        "weights": [v.numpy() for v in probe.model.trainable_variables],
    }


def _step(case, jit_compile=False, **changes):
    trainer = train.Trainer(case["hps"].replace(**changes), VOCAB, jit_compile=jit_compile)
    for v, w in zip(trainer.model.trainable_variables, case["weights"], strict=True):
        v.assign(w)
    metrics = trainer.train_step(helpers.repeat_iterator(case["batch"]))
    return metrics, [v.numpy().astype(np.float64) for v in trainer.model.trainable_variables]


def test_reported_norm_is_the_per_lookup_norm_and_differs_from_the_dense_one(case):
    ref = case["ref"]
    assert abs(ref["original"] - ref["dense"]) > 2e-4 * ref["dense"]
    metrics, _ = _step(case, max_grad_norm=1e6)
    assert metrics["global_norm"] == pytest.approx(ref["original"], rel=2e-5)
    assert metrics["global_norm"] != pytest.approx(ref["dense"], rel=2e-5)
    metrics, _ = _step(case, max_grad_norm=1e6, grad_norm="dense")
    assert metrics["global_norm"] == pytest.approx(ref["dense"], rel=2e-5)


def test_the_xla_compiled_step_reports_the_same_norm(case):
    metrics, _ = _step(case, jit_compile=True, max_grad_norm=1e6)
    assert metrics["global_norm"] == pytest.approx(case["ref"]["original"], rel=2e-5)


@pytest.mark.parametrize("mode", ["original", "dense"])
def test_norms_either_side_of_max_grad_norm_clip_as_the_chosen_norm_says(case, mode):
    """max_grad_norm between the two norms: only one of them clips."""
    ref, w0 = case["ref"], case["weights"]
    limit = float(np.sqrt(ref["original"] * ref["dense"]))
    assert min(ref["original"], ref["dense"]) < limit < max(ref["original"], ref["dense"])
    want = adagrad_after_clipping(w0, ref["grads"], ref[mode], limit)
    other = adagrad_after_clipping(
        w0, ref["grads"], ref["dense" if mode == "original" else "original"], limit
    )
    _, got = _step(case, max_grad_norm=limit, grad_norm=mode)

    def distance(a, b):
        return np.sqrt(sum(np.sum((x - y) ** 2) for x, y in zip(a, b, strict=True)))

    separation = distance(want, other)
    assert separation > 0
    # The step matches the chosen norm's clipping far more closely than the other's.
    assert distance(got, want) < 0.1 * separation, (distance(got, want), separation)
