"""--mixed_precision: a bfloat16 vocabulary projection with float32 variables, logits,
softmax and loss; close to the float32 model, never silently on."""

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.layers.top_k import top_of
from pointer_generator.models import final_candidates as fc
from tests import helpers

VOCAB = 300


def _models(**hp):
    """The same weights in a float32 and a mixed-precision model."""
    out = []
    for mixed in (False, True):
        hps = helpers.hparams(mixed_precision=mixed, **hp)
        tf.keras.utils.set_random_seed(5)
        model = pg.PointerGeneratorModel(hps, VOCAB).build_weights()
        for v in model.trainable_variables:  # larger weights: logits of a few units
            v.assign(tf.random.uniform(v.shape, -0.3, 0.3, seed=11))
        out.append(model)
    return out


def _loss_and_grads(model, batch):
    with tf.GradientTape() as tape:
        result = model(batch, training=True)
    grads = tape.gradient(result["total_loss"], model.trainable_variables)
    return result, grads


@pytest.mark.parametrize("pointer", [True, False])
def test_mixed_precision_training_pass_is_close_to_float32(pointer):
    f32, mixed = _models(pointer_gen=pointer, coverage=pointer)
    assert not f32.hps.mixed_precision  # the default is float32
    batch = {
        k: tf.constant(v) for k, v in helpers.numpy_batch(4, VOCAB, pointer_gen=pointer).items()
    }
    r32, g32 = _loss_and_grads(f32, batch)
    r16, g16 = _loss_and_grads(mixed, batch)
    assert r16["vocab_logits"].dtype == tf.float32
    assert all(v.dtype == tf.float32 for v in mixed.trainable_variables)
    logits32, logits16 = r32["vocab_logits"].numpy(), r16["vocab_logits"].numpy()
    assert not np.array_equal(logits32, logits16)  # bfloat16 really was used
    # bfloat16 keeps 8 significant bits: ~0.4% per input, errors partly cancel in the sum.
    np.testing.assert_allclose(logits16, logits32, rtol=0, atol=0.02 * np.abs(logits32).max())
    loss32, loss16 = float(r32["total_loss"]), float(r16["total_loss"])
    assert loss16 == pytest.approx(loss32, rel=1e-2)
    flat32 = np.concatenate([tf.reshape(g, [-1]).numpy() for g in g32])
    flat16 = np.concatenate([tf.reshape(g, [-1]).numpy() for g in g16])
    assert np.all(np.isfinite(flat16))
    cosine = flat32 @ flat16 / (np.linalg.norm(flat32) * np.linalg.norm(flat16))
    assert cosine > 0.99


def test_mixed_precision_decode_candidates_are_close_to_float32():
    f32, mixed = _models()
    rng = np.random.default_rng(1)
    x = tf.constant(rng.standard_normal((6, f32.hps.hidden_dim)).astype(np.float32))
    ext = tf.constant(rng.integers(4, 60, size=(3, 10)).astype(np.int32))
    mask = tf.ones([3, 10])
    attn = tf.nn.softmax(tf.constant(rng.standard_normal((6, 10)).astype(np.float32)))
    p_gen = tf.fill([6, 1], 0.7)
    tops = []
    for model in (f32, mixed):
        setup = model.candidate_setup(ext, mask, 2)
        assert setup.projection.kernels[0].dtype == (
            tf.bfloat16 if model.hps.mixed_precision else tf.float32
        )
        tops.append(top_of(fc.final_candidates(x, p_gen, attn, setup), 4, None))
    (p32, i32), (p16, i16) = tops
    assert p16.dtype == tf.float32
    np.testing.assert_allclose(p16.numpy(), p32.numpy(), rtol=0.05)
    # The largest candidates (copied article words here) agree.
    np.testing.assert_array_equal(i16.numpy()[:, 0], i32.numpy()[:, 0])
    # The dense decode path takes the same projection.
    dense32 = tf.nn.softmax(f32.vocab_logits(x)).numpy()
    dense16 = tf.nn.softmax(mixed.vocab_logits(x)).numpy()
    np.testing.assert_allclose(dense16, dense32, rtol=0.05, atol=1e-6)


def test_train_from_the_command_line_with_mixed_precision(tmp_path, capsys):
    import os

    data = helpers.tiny_setup(tmp_path, n_train=8, n_val=4)
    args = helpers.cli_args(
        mode="train",
        data_path=data.train_path,
        vocab_path=data.vocab_path,
        log_root=data.log_root,
        exp_name=data.exp_name,
        max_steps=3,
        mixed_precision=True,
        batch_size=2,
    )
    assert helpers.run_main_in_process(args) == 0
    train_dir = os.path.join(data.log_root, data.exp_name, "train")
    assert helpers.checkpoint_steps(train_dir)[-1] == 3
    scalars = helpers.read_scalars(train_dir)
    losses = [v for tag, points in scalars.items() if tag.endswith("loss") for _, v in points]
    assert len(losses) >= 3 and all(np.isfinite(losses))
