"""`losses.fused_gold_log_prob` (log P_vocab(target) with a hand-written gradient through
the vocabulary projection) against NumPy written from the equations: values, and the
gradients of x, kernel and bias through the gold log-probabilities, through the logits,
and through both; article-OOV targets get -1e30 and no gradient."""

import numpy as np
import pytest
import tensorflow as tf

from pointer_generator.layers import losses

B, T, H, V = 2, 3, 5, 7


def _inputs(dtype=np.float64):
    rng = np.random.default_rng(3)
    x = rng.normal(size=(B, T, H)).astype(dtype)
    kernel = rng.normal(size=(H, V)).astype(dtype)
    bias = rng.normal(size=V).astype(dtype)
    targets = np.array([[0, 6, V], [3, V + 2, 3]], np.int32)  # two article OOVs
    return x, kernel, bias, targets


def _logits(x, kernel, bias):
    return tf.einsum("bth,hv->btv", x, kernel) + bias


def _numpy(x, kernel, bias, targets, c_gold, c_logits):
    """Values and gradients of L = sum c_gold * gold (in-vocab rows) + sum c_logits * logits."""
    logits = x @ kernel + bias  # [B, T, V]
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    in_vocab = targets < V
    gold = np.where(
        in_vocab,
        np.take_along_axis(log_probs, np.minimum(targets, V - 1)[..., None], -1)[..., 0],
        -1e30,
    )
    onehot = np.eye(V)[np.minimum(targets, V - 1)]
    # d gold / d logits = onehot - softmax; rows of OOV targets contribute nothing.
    d_logits = np.where(in_vocab, c_gold, 0.0)[..., None] * (onehot - np.exp(log_probs)) + c_logits
    d_x = d_logits @ kernel.T
    d_kernel = np.einsum("bth,btv->hv", x, d_logits)
    d_bias = d_logits.sum((0, 1))
    return logits, gold, (d_x, d_kernel, d_bias)


@pytest.mark.parametrize("use_gold,use_logits", [(True, False), (False, True), (True, True)])
def test_values_and_gradients_match_numpy(use_gold, use_logits):
    x, kernel, bias, targets = _inputs()
    rng = np.random.default_rng(4)
    c_gold = rng.normal(size=(B, T)) if use_gold else np.zeros((B, T))
    c_logits = rng.normal(size=(B, T, V)) if use_logits else np.zeros((B, T, V))
    tx, tk, tb = (tf.constant(a) for a in (x, kernel, bias))
    with tf.GradientTape() as tape:
        tape.watch([tx, tk, tb])
        logits = _logits(tx, tk, tb)
        gold = losses.fused_gold_log_prob(logits, tx, tk, tb, tf.constant(targets))
        loss = tf.zeros([], tf.float64)
        if use_gold:
            loss += tf.reduce_sum(tf.where(targets < V, gold, 0.0) * c_gold)
        if use_logits:
            loss += tf.reduce_sum(logits * c_logits)
    grads = tape.gradient(loss, [tx, tk, tb])
    want_logits, want_gold, want_grads = _numpy(x, kernel, bias, targets, c_gold, c_logits)
    np.testing.assert_allclose(logits.numpy(), want_logits, rtol=1e-12)
    np.testing.assert_allclose(gold.numpy(), want_gold, rtol=1e-12)
    assert gold.numpy()[0, 2] == -1e30 and gold.numpy()[1, 1] == -1e30
    for name, got, want in zip(("x", "kernel", "bias"), grads, want_grads, strict=True):
        assert np.abs(want).max() > 1e-3, name  # not vacuous
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12, err_msg=name)


def test_oov_rows_get_no_gradient_even_when_the_loss_reads_them():
    """The -1e30 of an article-OOV target is a constant: a loss that uses it directly
    (as the safe log-sum-exp of eq. 9 does) sends nothing back to the projection."""
    x, kernel, bias, _ = _inputs()
    targets = np.full((B, T), V + 1, np.int32)
    tx, tk, tb = (tf.constant(a) for a in (x, kernel, bias))
    with tf.GradientTape() as tape:
        tape.watch([tx, tk, tb])
        gold = losses.fused_gold_log_prob(_logits(tx, tk, tb), tx, tk, tb, tf.constant(targets))
        loss = tf.reduce_sum(gold * 1e-30)
    for g in tape.gradient(loss, [tx, tk, tb]):
        assert np.all(g.numpy() == 0.0)


def test_bfloat16_backward_keeps_float32_gradients():
    x, kernel, bias, targets = _inputs(np.float32)
    tx, tk, tb = (tf.constant(a) for a in (x, kernel, bias))
    with tf.GradientTape() as tape:
        tape.watch([tx, tk, tb])
        logits = _logits(tx, tk, tb)
        gold = losses.fused_gold_log_prob(
            logits, tx, tk, tb, tf.constant(targets), compute_dtype=tf.bfloat16
        )
        loss = tf.reduce_sum(tf.where(targets < V, gold, 0.0))
    grads = tape.gradient(loss, [tx, tk, tb])
    assert gold.dtype == tf.float32
    assert all(g.dtype == tf.float32 for g in grads)
    want_logits, want_gold, want_grads = _numpy(
        x.astype(np.float64),
        kernel.astype(np.float64),
        bias.astype(np.float64),
        targets,
        np.ones((B, T)),
        np.zeros((B, T, V)),
    )
    np.testing.assert_allclose(logits.numpy(), want_logits, rtol=1e-5)
    np.testing.assert_allclose(gold.numpy()[targets < V], want_gold[targets < V], rtol=1e-5)
    # bfloat16 keeps 8 bits of mantissa: agreement to a few percent, not to rounding.
    for got, want in zip(grads, want_grads, strict=True):
        np.testing.assert_allclose(got.numpy(), want, atol=0.05 * np.abs(want).max())
