"""The fused recurrences (hand-written gradients, XLA loops) equal the Keras/autodiff path:
same outputs, same gradients of every weight, on a tiny batch with padding on both sides
and copied OOV targets."""

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.layers import fused_decoder

VOCAB = 40


def _batch(pointer_gen: bool) -> dict:
    rng = np.random.default_rng(0)
    b, t, d = 3, 9, 6
    lens, dec_lens = np.array([9, 5, 2]), np.array([6, 4, 1])
    enc = rng.integers(4, VOCAB, (b, t)).astype(np.int32)
    ext = enc.copy()
    target = rng.integers(4, VOCAB, (b, d)).astype(np.int32)
    if pointer_gen:  # two article OOVs, both copied by the targets
        ext[0, 1], ext[1, 2], target[0, 2], target[1, 0] = VOCAB, VOCAB + 1, VOCAB, VOCAB + 1
    mask = (np.arange(t)[None] < lens[:, None]).astype(np.float32)
    dec_mask = (np.arange(d)[None] < dec_lens[:, None]).astype(np.float32)
    batch = {
        "enc_batch": enc,
        "enc_lens": lens.astype(np.int32),
        "enc_padding_mask": mask,
        "enc_batch_extend_vocab": ext,
        "max_art_oovs": np.int32(2 if pointer_gen else 0),
        "dec_batch": rng.integers(2, VOCAB, (b, d)).astype(np.int32),
        "target_batch": target,
        "dec_padding_mask": dec_mask,
    }
    return {k: tf.constant(v) for k, v in batch.items()}


def _run(model, batch):
    with tf.GradientTape() as tape:
        out = model(batch, training=True)
        # Every output of the loops gets a gradient (p_gen reads x, c, h and the context).
        loss = out["total_loss"] + 0.1 * tf.reduce_sum(out["p_gens"] * out["attn_dists"][..., 0])
    grads = tape.gradient(loss, model.trainable_variables)
    return out, [tf.convert_to_tensor(g).numpy() for g in grads]


@pytest.mark.parametrize(
    "pointer_gen,coverage,safe,row_chunk",
    [
        (True, True, True, fused_decoder.ROW_CHUNK),
        (False, False, False, fused_decoder.ROW_CHUNK),
        (True, True, True, 2),
    ],
)  # 3 rows as chunks of 2 + 1: each runs the loops on its own
def test_fused_recurrence_equals_keras_and_autodiff(
    pointer_gen, coverage, safe, row_chunk, monkeypatch
):
    monkeypatch.setattr(fused_decoder, "ROW_CHUNK", row_chunk)
    hps = pg.HParams(
        hidden_dim=8,
        emb_dim=6,
        pointer_gen=pointer_gen,
        coverage=coverage,
        safe_numerics=safe,
        rand_unif_init_mag=0.5,
        trunc_norm_init_std=0.5,
    )
    tf.keras.utils.set_random_seed(1)
    reference = pg.PointerGeneratorModel(hps.replace(fused_recurrence=False), VOCAB).build_weights()
    fused = pg.PointerGeneratorModel(hps, VOCAB).build_weights()
    fused.set_weights(reference.get_weights())
    batch = _batch(pointer_gen)
    out_ref, grads_ref = _run(reference, batch)
    out_fused, grads_fused = _run(fused, batch)
    for key in ("total_loss", "attn_dists", "p_gens", "vocab_logits", "step_nll"):
        np.testing.assert_allclose(out_fused[key], out_ref[key], rtol=1e-5, atol=1e-6, err_msg=key)
    for var, g_ref, g_fused in zip(
        reference.trainable_variables, grads_ref, grads_fused, strict=True
    ):
        assert np.abs(g_ref).max() > 0 or "w_c" in var.path, var.path
        scale = np.abs(g_ref).max() + 1e-12
        np.testing.assert_allclose(g_fused / scale, g_ref / scale, atol=5e-5, err_msg=var.path)
