"""Reading and writing original-release (TF1) checkpoints: names, layouts, clear errors."""

from __future__ import annotations

import os

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.errors import CheckpointError
from pointer_generator.models.tf1_checkpoint import (
    load_tf1_checkpoint,
    read_tf1_checkpoint,
    save_tf1_arrays,
    write_tf1_checkpoint,
)
from tests import numpy_reference as ref

VOCAB, HIDDEN, EMB = 50, 8, 6
DEC = "seq2seq/decoder/attention_decoder"


def _model(pointer_gen=True, coverage=False, vocab=VOCAB, seed=None):
    hps = pg.HParams(hidden_dim=HIDDEN, emb_dim=EMB, pointer_gen=pointer_gen, coverage=coverage)
    model = pg.PointerGeneratorModel(hps, vocab).build_weights()
    if seed is not None:  # random, non-trivial weights (the initialisers are tiny)
        rng = np.random.default_rng(seed)
        for v in model.weights:
            v.assign(rng.uniform(-0.5, 0.5, v.shape).astype(np.float32))
    return model


def _snapshot(model):
    return {v.path: v.numpy().copy() for v in model.weights}


def _assert_same(got: dict, want: dict):
    """Equal, except LSTM biases: float32 storage of b + 1 (Keras) and back to b (TF1)
    rounds to the float32 grid near 1, an inherent 1-ulp difference."""
    assert got.keys() == want.keys()
    for k in want:
        atol = 1.2e-7 if k.endswith("cell/bias") else 0.0
        np.testing.assert_allclose(got[k], want[k], rtol=0, atol=atol, err_msg=k)


def _write(tmp_path, arrays, name="model.ckpt-7"):
    return save_tf1_arrays(arrays, os.path.join(tmp_path, name))


def _params(pointer_gen=True, coverage=False, vocab=VOCAB, tf_version="1.2.1", seed=0):
    return ref.random_tf1_params(
        np.random.default_rng(seed), vocab, HIDDEN, EMB, pointer_gen, coverage, tf_version
    )


@pytest.mark.parametrize("tf_version", ["1.2.1", "1.0"])
@pytest.mark.parametrize("pointer_gen,coverage", [(False, False), (True, True)])
def test_round_trip_keeps_every_weight_and_original_names(
    tmp_path, tf_version, pointer_gen, coverage
):
    src = _model(pointer_gen, coverage, seed=1)
    prefix = write_tf1_checkpoint(
        src, os.path.join(tmp_path, "model.ckpt-1234"), tf_version, global_step=1234
    )
    names = dict(tf.train.list_variables(prefix))
    expected = {
        k: list(v)
        for k, v in ref.tf1_shapes(VOCAB, HIDDEN, EMB, pointer_gen, coverage, tf_version).items()
    }
    expected["global_step"] = []
    assert names == expected
    assert tf.train.latest_checkpoint(str(tmp_path)) == prefix

    dst = _model(pointer_gen, coverage)
    result = load_tf1_checkpoint(dst, str(tmp_path))
    assert (result.tf_version, result.global_step, result.adagrad_slots) == (tf_version, 1234, None)
    _assert_same(_snapshot(dst), _snapshot(src))


def test_initial_keras_lstm_bias_is_zero_in_tf1_storage(tmp_path):
    """Keras keeps the forget bias (1) in the stored bias, TF1 adds it at run time: a
    freshly initialised model must export all-zero TF1 LSTM biases, like the original."""
    prefix = write_tf1_checkpoint(_model(), os.path.join(tmp_path, "m"))
    arrays = read_tf1_checkpoint(prefix)
    cell = _model().decoder_cell
    np.testing.assert_array_equal(cell.bias.numpy()[HIDDEN : 2 * HIDDEN], 1.0)
    for scope in (
        "seq2seq/encoder/bidirectional_rnn/fw",
        "seq2seq/encoder/bidirectional_rnn/bw",
        DEC,
    ):
        np.testing.assert_array_equal(arrays[scope + "/lstm_cell/bias"], 0.0)


def test_lstm_layout_conversion_by_hand(tmp_path):
    """Gate blocks i, j, f, o -> i, f, c, o; rows [x; h] -> kernel / recurrent_kernel."""
    params = _params()
    k = np.zeros((EMB + HIDDEN, 4 * HIDDEN), np.float32)
    b = np.zeros(4 * HIDDEN, np.float32)
    for g in range(4):  # value = 10 * gate + (1 if recurrent row)
        k[:EMB, g * HIDDEN : (g + 1) * HIDDEN] = 10 * g
        k[EMB:, g * HIDDEN : (g + 1) * HIDDEN] = 10 * g + 1
        b[g * HIDDEN : (g + 1) * HIDDEN] = g
    params[DEC + "/lstm_cell/kernel"], params[DEC + "/lstm_cell/bias"] = k, b
    _write(tmp_path, params)
    model = _model()
    load_tf1_checkpoint(model, str(tmp_path))
    cell = model.decoder_cell
    blocks = lambda a: [float(x) for x in a.reshape(-1, 4, HIDDEN).mean(axis=(0, 2))]  # noqa: E731
    # Keras order i, f, c(=j), o is TF1 blocks 0, 2, 1, 3; +1 on the f bias.
    assert blocks(cell.kernel.numpy()) == [0.0, 20.0, 10.0, 30.0]
    assert blocks(cell.recurrent_kernel.numpy()) == [1.0, 21.0, 11.0, 31.0]
    assert blocks(cell.bias.numpy()) == [0.0, 3.0, 1.0, 3.0]
    np.testing.assert_array_equal(model.attention.W_h.numpy(), params[DEC + "/W_h"][0, 0])


def _error(model, tmp_path, arrays, **kwargs) -> str:
    _write(tmp_path, arrays)
    before = _snapshot(model)
    with pytest.raises(CheckpointError) as info:
        load_tf1_checkpoint(model, str(tmp_path), **kwargs)
    for k, v in _snapshot(model).items():  # all or nothing: nothing was assigned
        np.testing.assert_array_equal(v, before[k], err_msg=k)
    return str(info.value)


def test_missing_tensor_is_named(tmp_path):
    params = _params()
    del params[DEC + "/v"], params["seq2seq/reduce_final_st/bias_reduce_h"]
    msg = _error(_model(), tmp_path, params)
    assert f"missing: {DEC}/v (expected shape [16])" in msg
    assert "missing: seq2seq/reduce_final_st/bias_reduce_h (expected shape [8])" in msg
    assert "Traceback" not in msg


def test_misshaped_tensor_is_named_with_both_shapes(tmp_path):
    params = _params()
    params[DEC + "/AttnOutputProjection/Linear/Matrix"] = np.zeros((HIDDEN, 3 * HIDDEN), np.float32)
    msg = _error(_model(), tmp_path, params)
    assert (
        f"wrong shape: {DEC}/AttnOutputProjection/Linear/Matrix has shape [8, 24], expected [24, 8]"
    ) in msg


def test_coverage_checkpoint_into_non_coverage_model(tmp_path):
    msg = _error(_model(coverage=False), tmp_path, _params(coverage=True))
    assert f"unexpected: {DEC}/coverage/w_c [1, 1, 1, 16]" in msg
    assert "trained with coverage but the model has coverage=False" in msg


def test_non_coverage_checkpoint_into_coverage_model(tmp_path):
    model = _model(coverage=True)
    msg = _error(model, tmp_path, _params(coverage=False))
    assert f"missing: {DEC}/coverage/w_c (expected shape [1, 1, 1, 16])" in msg
    assert "--convert_to_coverage_model" in msg
    # The original's conversion: everything else loaded, w_c keeps its initial value.
    w_c = model.attention.w_c.numpy().copy()
    result = load_tf1_checkpoint(model, str(tmp_path), allow_missing_coverage=True)
    assert result.kept_initial == [model.attention.w_c.path]
    np.testing.assert_array_equal(model.attention.w_c.numpy(), w_c)
    np.testing.assert_array_equal(model.attention.v.numpy(), _params()[DEC + "/v"])


def test_pointer_checkpoint_into_baseline_model(tmp_path):
    model = _model(pointer_gen=False)
    msg = _error(model, tmp_path, _params(pointer_gen=True))
    assert f"unexpected: {DEC}/calculate_pgen/Linear/Matrix [38, 1]" in msg
    assert "pointer_gen=False" in msg
    # On request the extras are skipped (and reported) while everything else loads.
    result = load_tf1_checkpoint(model, str(tmp_path), allow_unexpected=True)
    assert result.ignored == [
        f"{DEC}/calculate_pgen/Linear/Bias",
        f"{DEC}/calculate_pgen/Linear/Matrix",
    ]
    np.testing.assert_array_equal(model.attention.v.numpy(), _params()[DEC + "/v"])


def test_vocab_size_mismatch_names_the_vocab_tensors(tmp_path):
    msg = _error(_model(vocab=VOCAB), tmp_path, _params(vocab=VOCAB + 7))
    for name, got, want in (
        ("seq2seq/embedding/embedding", "[57, 6]", "[50, 6]"),
        ("seq2seq/output_projection/w", "[8, 57]", "[8, 50]"),
        ("seq2seq/output_projection/v", "[57]", "[50]"),
    ):
        assert f"wrong shape: {name} has shape {got}, expected {want}" in msg
    assert "vocabulary has 57 words but the model 50" in msg
    assert msg.count("wrong shape") == 3


def _with_slots(params, seed=5):
    rng = np.random.default_rng(seed)
    slots = {
        k + "/Adagrad": rng.uniform(0.1, 2.0, v.shape).astype(np.float32) for k, v in params.items()
    }
    return {**params, **slots, "global_step": np.int32(42)}


def test_adagrad_slots_ignored_by_default(tmp_path):
    params = _params()
    _write(tmp_path, _with_slots(params))
    model = _model()
    result = load_tf1_checkpoint(model, str(tmp_path))
    assert result.adagrad_slots is None and result.global_step == 42
    assert len(result.ignored) == len(params)
    assert all(n.endswith("/Adagrad") for n in result.ignored)
    np.testing.assert_array_equal(
        model.embedding.embeddings.numpy(), params["seq2seq/embedding/embedding"]
    )


def test_adagrad_slots_converted_and_round_tripped(tmp_path):
    params = _params()
    full = _with_slots(params)
    _write(tmp_path / "a", full)
    model = _model()
    slots = load_tf1_checkpoint(model, str(tmp_path / "a"), include_optimizer=True).adagrad_slots
    assert set(slots) == {v.path for v in model.trainable_variables}
    for v in model.trainable_variables:
        assert slots[v.path].shape == tuple(v.shape), v.path
    # Accumulators follow the gate reorder but get no forget-bias shift.
    tf1_acc = full[DEC + "/lstm_cell/bias/Adagrad"]
    i, j, f, o = np.split(tf1_acc, 4)
    np.testing.assert_array_equal(slots[model.decoder_cell.bias.path], np.concatenate([i, f, j, o]))
    np.testing.assert_array_equal(slots[model.attention.W_h.path], full[DEC + "/W_h/Adagrad"][0, 0])
    # Writing them back gives the original arrays.
    prefix = write_tf1_checkpoint(
        model, os.path.join(tmp_path, "b", "m"), global_step=42, adagrad_slots=slots
    )
    _assert_same(read_tf1_checkpoint(prefix), full)


def test_include_optimizer_requires_the_slots(tmp_path):
    msg = _error(_model(), tmp_path, _params(), include_optimizer=True)
    assert f"missing: {DEC}/v/Adagrad (include_optimizer=True)" in msg


def test_unreadable_paths_give_checkpoint_errors(tmp_path):
    with pytest.raises(CheckpointError, match="no checkpoint found in directory"):
        load_tf1_checkpoint(_model(), str(tmp_path))
    with pytest.raises(CheckpointError, match="no checkpoint at"):
        load_tf1_checkpoint(_model(), str(tmp_path / "model.ckpt-1"))
    (tmp_path / "bad.index").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="cannot read checkpoint"):
        load_tf1_checkpoint(_model(), str(tmp_path / "bad"))
