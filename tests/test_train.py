"""Train mode: the optimizer, the train step, the training loop and its outputs."""

import os
import signal
import types

import keras
import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.cli import configs
from pointer_generator.cli.inspect_checkpoint import inspect
from pointer_generator.errors import NonFiniteLossError
from pointer_generator.models import family_registry
from pointer_generator.runtime import checkpointing, tensorboard
from pointer_generator.runtime.experiment import Experiment
from pointer_generator.training import train
from pointer_generator.training import trainer as trainer_lib
from tests import helpers


def _tf1_adagrad(w, acc, grads, lr):
    """NumPy TF1 AdagradOptimizer: acc += g^2; w -= lr * g / sqrt(acc)."""
    w, acc = w.copy(), acc.copy()
    for g in grads:
        acc += g * g
        w -= lr * g / np.sqrt(acc)
    return w, acc


def _grads(shape, n=3, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=shape).astype(np.float32) * s for s in (1.0, 0.01, 3.0)][:n]


def test_adagrad_equals_the_tf1_update_rule():
    w0 = np.random.default_rng(1).normal(size=(5, 3)).astype(np.float32)
    grads = _grads(w0.shape)
    want_w, want_acc = _tf1_adagrad(w0, np.full_like(w0, 0.1), grads, lr=0.15)

    opt = trainer_lib.Adagrad(0.15, 0.1)
    var = tf.Variable(w0)
    opt.build([keras.Variable(w0, name="w")])  # accumulator shapes only
    acc = next(iter(opt.accumulators.values()))
    np.testing.assert_array_equal(acc.numpy(), np.full_like(w0, 0.1))
    for g in grads:
        opt.update(var, tf.constant(g), acc)
    np.testing.assert_allclose(var.numpy(), want_w, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(acc.numpy(), want_acc, rtol=1e-6)


def test_keras_adagrad_without_epsilon_is_the_same_rule():
    """Documented in docs/training.md: Keras' Adagrad(epsilon=0) computes TF1's rule too
    (it is not used because it all-reduces inside apply_gradients, before clipping)."""
    w0 = np.random.default_rng(2).normal(size=(4,)).astype(np.float32)
    grads = _grads(w0.shape, seed=3)
    want_w, _ = _tf1_adagrad(w0, np.full_like(w0, 0.1), grads, lr=0.15)
    var = keras.Variable(w0)
    opt = keras.optimizers.Adagrad(learning_rate=0.15, initial_accumulator_value=0.1, epsilon=0.0)
    for g in grads:
        opt.apply_gradients([(tf.constant(g), var)])
    np.testing.assert_allclose(var.numpy(), want_w, rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------------------ trainer
@pytest.fixture(scope="module")
def trainer():
    """One traced pointer-generator Trainer shared by the tests of this module.

    max_grad_norm is small so that the first step's gradients are clipped.
    """
    keras.utils.set_random_seed(5)
    return train.Trainer(helpers.hparams(max_grad_norm=0.1, lr=0.15), 100)


def test_one_step_is_clip_by_global_norm_then_tf1_adagrad(trainer):
    batch = helpers.numpy_batch(4, 100, seed=11)
    variables = trainer.model.trainable_variables
    w0 = [v.numpy() for v in variables]
    acc0 = [trainer.optimizer.accumulator(v).numpy() for v in variables]
    with tf.GradientTape() as tape:
        out = trainer.model(batch, training=True)
    raw = tape.gradient(out["total_loss"], variables)
    grads = [tf.convert_to_tensor(g).numpy() for g in raw]
    # The original's tf.global_norm: the embedding gradient as one row per lookup
    # (tests/test_grad_norm.py checks this against rows captured at the lookups).
    parts = [g.values.numpy() if isinstance(g, tf.IndexedSlices) else g.numpy() for g in raw]
    norm = float(np.sqrt(sum(np.sum(p.astype(np.float64) ** 2) for p in parts)))
    assert norm > 0.1, "the test needs clipping to be active"
    clipped = [g * (0.1 / norm) for g in grads]

    step0 = int(trainer.step.numpy())
    metrics = trainer.train_step(helpers.repeat_iterator(batch))

    assert metrics["finite"]
    assert int(trainer.step.numpy()) == step0 + 1
    assert metrics["loss"] == pytest.approx(float(out["loss"]), rel=1e-5)
    assert metrics["global_norm"] == pytest.approx(norm, rel=1e-4)  # before clipping
    for v, w, a, g in zip(variables, w0, acc0, clipped, strict=True):
        want_w, want_acc = _tf1_adagrad(w, a, [g], lr=0.15)
        np.testing.assert_allclose(v.numpy(), want_w, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(
            trainer.optimizer.accumulator(v).numpy(), want_acc, rtol=1e-4, atol=1e-7
        )


def test_loss_decreases_on_a_repeated_batch():
    # A trainer of its own: the shared one's Adagrad accumulators grow with every test
    # that steps it, and in another test order its 25 steps descended less.
    keras.utils.set_random_seed(5)
    trainer = train.Trainer(helpers.hparams(max_grad_norm=0.1, lr=0.15), 100)
    it = helpers.repeat_iterator(helpers.numpy_batch(4, 100, seed=12))
    losses = [trainer.train_step(it)["loss"] for _ in range(25)]
    assert all(np.isfinite(losses))
    # Steady descent (updates are clipped to norm 0.1, so it is slow but monotone).
    assert losses[-1] < 0.9 * losses[0], losses
    assert all(b < a for a, b in zip(losses[::5], losses[5::5], strict=False)), losses


def test_a_python_iterator_is_refused_not_read_once(trainer):
    """The step's graph calls next(): a list's iterator would give its first batch at
    tracing and that batch ever after (the train_step benchmark timed one batch so)."""
    batch = helpers.numpy_batch(4, 100, seed=14)
    step = int(trainer.step.numpy())
    with pytest.raises(TypeError, match="tf.data iterator"):
        trainer.train_step(iter([batch, batch]))
    assert int(trainer.step.numpy()) == step  # nothing trained


def test_non_finite_step_changes_nothing(trainer):
    batch = helpers.numpy_batch(4, 100, seed=13)
    variables = trainer.model.trainable_variables
    before = [v.numpy() for v in variables]
    acc_before = [trainer.optimizer.accumulator(v).numpy() for v in variables]
    step = int(trainer.step.numpy())
    bad = trainer.model.output_projection.bias
    saved_bias = bad.numpy()
    bad.assign(np.full_like(saved_bias, np.nan))
    try:
        metrics = trainer.train_step(helpers.repeat_iterator(batch))
    finally:
        bad.assign(saved_bias)
    assert not metrics["finite"]
    assert int(trainer.step.numpy()) == step
    for v, w, a in zip(variables, before, acc_before, strict=True):
        if v is not bad:
            np.testing.assert_array_equal(v.numpy(), w)
        np.testing.assert_array_equal(trainer.optimizer.accumulator(v).numpy(), a)


# ------------------------------------------------------------------------------ the loop
@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return helpers.tiny_setup(tmp_path_factory.mktemp("train_data"))


def _loop_flags(data, exp_name, **overrides):
    values = dict(
        data_path=data.train_path,
        vocab_path=data.vocab_path,
        log_root=data.log_root,
        exp_name=exp_name,
    )
    values.update(overrides)
    return helpers.flag_namespace(**values)


def _run_loop(trainer, data, exp_name, **overrides):
    flags = _loop_flags(data, exp_name, **overrides)
    exp = Experiment(os.path.join(flags.log_root, flags.exp_name))
    os.makedirs(exp.train_dir, exist_ok=True)
    vocab = pg.Vocab(flags.vocab_path, flags.vocab_size)
    train.train_loop(trainer, vocab, exp, configs.train_config(flags))
    return exp


@pytest.fixture(scope="module")
def trained(trainer, data):
    """A training run of 7 steps that saves after every step (save interval 0)."""
    trainer.step.assign(0)
    exp = _run_loop(trainer, data, "loop", max_steps=7, save_checkpoint_secs=1e-9)
    return exp


def test_checkpoints_are_named_by_step_and_the_newest_3_kept(trained):
    assert helpers.checkpoint_steps(trained.train_dir) == [5, 6, 7]
    assert checkpointing.latest_checkpoint(trained.train_dir).endswith("model.ckpt-7")
    state = tf.train.get_checkpoint_state(trained.train_dir)
    assert [os.path.basename(p) for p in state.all_model_checkpoint_paths] == [
        "model.ckpt-5",
        "model.ckpt-6",
        "model.ckpt-7",
    ]
    keys = checkpointing.variable_shapes(os.path.join(trained.train_dir, "model.ckpt-7"))
    assert keys["step/.ATTRIBUTES/VARIABLE_VALUE"] == []
    assert any(k.startswith("optimizer/accumulators/") for k in keys)
    assert any(k.startswith("data/") for k in keys)  # the input pipeline position


def test_summaries_have_the_expected_tags_at_every_step(trained):
    scalars = helpers.read_scalars(trained.train_dir)
    for tag in (tensorboard.LOSS, tensorboard.GLOBAL_NORM, "seq2seq/p_gen_mean"):
        assert [s for s, _ in scalars[tag]] == list(range(1, 8)), tag
    assert tensorboard.STEPS_PER_SEC in scalars and tensorboard.EXAMPLES_PER_SEC in scalars
    assert "seq2seq/loss/coverage_loss/coverage_loss" not in scalars  # written only with coverage
    assert all(np.isfinite(v) and v > 0 for _, v in scalars[tensorboard.LOSS])


def test_projector_files_point_at_the_embedding(trained, data):
    words = open(trained.vocab_metadata, encoding="utf-8").read().splitlines()
    assert words[:4] == ["[UNK]", "[PAD]", "[START]", "[STOP]"]
    assert len(words) == 100
    config = open(trained.projector_config, encoding="utf-8").read()
    key = family_registry.embedding_key(
        checkpointing.variable_shapes(checkpointing.latest_checkpoint(trained.train_dir))
    )
    assert f'tensor_name: "{key}"' in config
    assert 'metadata_path: "vocab_metadata.tsv"' in config


def test_sigterm_stops_after_the_step_and_saves(trainer, data, monkeypatch):
    trainer.step.assign(0)
    real_step = trainer.train_step
    calls = []

    def step_then_signal(iterator):
        metrics = real_step(iterator)
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGTERM)  # as `kill <pid>` would, mid-training
        return metrics

    monkeypatch.setattr(trainer, "train_step", step_then_signal)
    exp = _run_loop(trainer, data, "sigterm", max_steps=0, save_checkpoint_secs=3600)
    assert int(trainer.step.numpy()) == 3
    # Saved at the step it stopped at, although the save interval had not passed.
    assert helpers.checkpoint_steps(exp.train_dir) == [0, 3]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_max_steps_already_reached_trains_nothing(trainer, trained, data):
    _run_loop(trainer, data, "loop", max_steps=7)
    assert int(trainer.step.numpy()) == 7  # restored from model.ckpt-7, no step taken
    assert helpers.checkpoint_steps(trained.train_dir) == [5, 6, 7]


def test_absurd_learning_rate_stops_before_saving_the_bad_update(data, capsys):
    flags = _loop_flags(
        data, "nan", lr=1e30, coverage=True, max_steps=50, save_checkpoint_secs=3600
    )
    exp = Experiment(os.path.join(flags.log_root, flags.exp_name))
    os.makedirs(exp.train_dir, exist_ok=True)
    vocab = pg.Vocab(flags.vocab_path, flags.vocab_size)
    with pytest.raises(NonFiniteLossError) as err:
        train.run_train_mode(configs.hparams(flags), vocab, configs.train_config(flags))
    message = str(err.value)
    newest = checkpointing.latest_checkpoint(exp.train_dir)
    assert "loss is not finite at training step 2" in message
    assert f"last good checkpoint: {newest}" in message
    assert newest.endswith("model.ckpt-0")
    assert inspect(newest).passed
    assert "trainable parameters" in capsys.readouterr().out  # parameter summary shown
    # Coverage runs also write the coverage and total loss (step 1 was finite).
    scalars = helpers.read_scalars(exp.train_dir)
    assert [s for s, _ in scalars["seq2seq/loss/coverage_loss/coverage_loss"]] == [1]
    assert [s for s, _ in scalars["seq2seq/loss/total_loss"]] == [1]


def test_training_starts_from_an_original_tf1_checkpoint(trainer, data, caplog):
    from pointer_generator.models import tf1_checkpoint

    weights = [w.numpy() for w in trainer.model.weights]
    slots = {v.path: np.full(v.shape, 0.7, np.float32) for v in trainer.model.trainable_variables}
    prefix = str(data.log_root) + "_tf1/model.ckpt-30"
    tf1_checkpoint.write_tf1_checkpoint(trainer.model, prefix, global_step=30, adagrad_slots=slots)
    for w in trainer.model.weights:
        w.assign(tf.zeros_like(w))

    exp = _run_loop(trainer, data, "from_tf1", max_steps=30, tf1_checkpoint=prefix)
    assert helpers.checkpoint_steps(exp.train_dir) == [30]
    for w, want in zip(trainer.model.weights, weights, strict=True):
        np.testing.assert_allclose(w.numpy(), want, rtol=1e-6, atol=1e-7)
    for v in trainer.model.trainable_variables:
        np.testing.assert_allclose(trainer.optimizer.accumulator(v).numpy(), 0.7)

    # Restarting with the same flags resumes from train/, not from the TF1 checkpoint.
    caplog.set_level("WARNING")
    _run_loop(trainer, data, "from_tf1", max_steps=31, tf1_checkpoint=prefix)
    assert helpers.checkpoint_steps(exp.train_dir) == [30, 31]
    assert "--tf1_checkpoint ignored" in caplog.text


def test_progress_line_shows_step_losses_speed_and_eta(monkeypatch):
    from pointer_generator.runtime import progress

    clock = iter([100.0, 110.0, 112.0, 114.0])
    # Only the progress module's clock (logging reads time.time too).
    monkeypatch.setattr(progress, "time", types.SimpleNamespace(time=lambda: next(clock)))
    p = progress.Progress(start_step=10, max_steps=110, examples_per_step=16)
    p.update(11, {"loss": 5.0})  # the first step includes compilation: 10 s
    p.update(12, {"loss": 4.5})  # 2 s per step from here on
    speed = p.update(13, {"loss": 4.0})
    assert speed["steps_per_sec"] == pytest.approx(0.5)
    assert speed["examples_per_sec"] == pytest.approx(8.0)
    line = p.line(13, {"loss": 4.0, "coverage_loss": 0.25})
    assert line == (
        "step 13/110 | loss 4.0000 | coverage loss 0.2500 | 0.50 steps/s | "
        "8.0 examples/s | ETA 03:14"
    )


def test_check_numerics_report_is_summarised():
    message = (
        "Graph execution error:\n\n!!! Detected Infinity or NaN in output 0 of graph "
        'op "MatMul" (# of outputs: 1) !!!\n  dtype: float32\n ... \n : Tensor had '
        "-Inf and +Inf values\n\t [[{{node model/lstm/MatMul/CheckNumericsV2}}]]"
    )
    assert train._check_numerics_summary(message) == (
        'op "MatMul" (model/lstm/MatMul/CheckNumericsV2) produced -Inf and +Inf values'
    )
