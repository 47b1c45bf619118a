"""Training as the earlier families' papers did it (issue 20, item 2): plain SGD, the
learning rate annealed on validation perplexity, ABS's per-epoch embedding
renormalisation, validation perplexity in TensorBoard and as best-model selection; and
the papers' presets (flagfiles) with their closed-form parameter counts."""

from __future__ import annotations

import logging
import math
import os

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.training import epochs
from pointer_generator.training.optimizers import SGD
from tests import helpers

HERE = os.path.dirname(os.path.abspath(__file__))
PRESETS = os.path.join(os.path.dirname(HERE), "experiments", "families")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return helpers.tiny_setup(tmp_path_factory.mktemp("families_training"), n_train=8, n_val=4)


@pytest.mark.parametrize(
    "rule, nll, best, previous, expected",
    [
        ("plateau", 2.0, 3.0, 3.0, 1.0),  # improved on the best: kept
        ("plateau", 3.0, 3.0, 4.0, 0.5),  # equal to the best is no improvement: halved
        ("plateau", 3.5, 3.0, 4.0, 0.5),  # better than the previous, worse than the best
        ("previous", 3.5, 3.0, 4.0, 1.0),  # NAMAS: only worse than the previous epoch counts
        ("previous", 4.5, 3.0, 4.0, 0.5),
        ("previous", 4.0, 3.0, 4.0, 1.0),
        ("none", 9.0, 3.0, 4.0, 1.0),
        ("plateau", 5.0, math.inf, math.inf, 1.0),  # the first validation
    ],
)
def test_annealing_rules(rule, nll, best, previous, expected):
    assert epochs.anneal(1.0, nll, best, previous, rule, 2.0) == expected


def test_renormalisation_rescales_only_the_long_rows():
    rng = np.random.default_rng(0)
    table = rng.normal(size=(6, 4)) * np.array([[0.1], [3.0], [0.2], [5.0], [1.0], [0.7]])
    var = tf.Variable(table, dtype=tf.float64)
    epochs.renormalise_rows(var, 1.0)
    norms = np.linalg.norm(table, axis=1)
    want = np.where(norms[:, None] > 1.0, table / norms[:, None], table)
    np.testing.assert_allclose(var.numpy(), want, rtol=1e-12)
    assert np.all(np.linalg.norm(var.numpy(), axis=1) <= 1.0 + 1e-12)


def test_sgd_is_plain_gradient_descent():
    var = tf.Variable([[1.0, -2.0], [0.5, 3.0]])
    grad = tf.constant([[0.5, 1.0], [-1.0, 0.0]])
    sgd = SGD(0.1)
    sgd.update(var, grad, None)
    np.testing.assert_allclose(var.numpy(), [[0.95, -2.1], [0.6, 3.0]], rtol=1e-6)
    sgd.learning_rate.assign(0.05)  # annealed between epochs
    sgd.update(var, grad, None)
    np.testing.assert_allclose(var.numpy(), [[0.925, -2.15], [0.65, 3.0]], rtol=1e-6)


def test_the_embedding_tables_of_abs_are_e_f_and_g():
    from pointer_generator.models.abs_model import ABSConfig, ABSModel

    model = ABSModel(ABSConfig(window=2, emb_dim=4, hidden_dim=6), 30).build_weights()
    names = sorted(v.path.split("/")[-2] for v in epochs.embedding_tables(model))
    assert names == ["E", "F", "G"]


def test_sgd_training_validates_every_epoch_keeps_the_best_and_anneals(data, caplog):
    exp = "sgd_abs"
    flags = dict(
        model="abs",
        abs_encoder="attention",
        context_window=2,
        optimizer="sgd",
        lr=50.0,  # so large that the validation loss gets worse: the rate must halve
        lr_decay="plateau",
        embedding_max_norm=1.0,
        valid_data_path=data.val_path,
        epoch_steps=2,
        max_steps=6,
    )
    caplog.set_level(logging.INFO)
    assert helpers.run_main_in_process(helpers.run_args(data, exp, **flags)) == 0
    out = caplog.text
    assert "Epochs of 2 steps: embedding rows renormalised to <= 1.0; validation on" in out
    eval_dir = os.path.join(data.log_root, exp, "eval")
    scalars = helpers.read_scalars(eval_dir)
    ppl = scalars["valid/perplexity"]
    assert [s for s, _ in ppl] == [2, 4, 6]
    loss = [v for _, v in scalars["valid/loss"]]
    fits = np.array(loss) < np.log(3e38)  # TensorBoard scalars are float32
    np.testing.assert_allclose(
        np.array([v for _, v in ppl])[fits], np.exp(np.array(loss)[fits]), rtol=1e-5
    )
    assert np.all(np.isinf(np.array([v for _, v in ppl])[~fits]))
    # The rate after each epoch follows the rule applied to the measured losses.
    lr, best, want = 50.0, math.inf, []
    for nll in loss:
        lr = epochs.anneal(lr, nll, best, math.inf, "plateau", 2.0)
        best = min(best, nll)
        want.append(lr)
    np.testing.assert_allclose([v for _, v in scalars["learning_rate"]], want, rtol=1e-6)
    # The best model is the epoch with the lowest validation loss.
    best_step = [s for s, _ in ppl][int(np.argmin(loss))]
    with open(os.path.join(eval_dir, "checkpoint_best"), encoding="utf-8") as f:
        assert f"bestmodel-{best_step}" in f.read()
    # Resuming continues the schedule: the saved rate and the best loss come back.
    reader = tf.train.load_checkpoint(os.path.join(data.log_root, exp, "train", "model.ckpt-6"))
    keys = reader.get_variable_to_shape_map()
    saved_lr = [k for k in keys if k.startswith("optimizer/learning_rate")]
    assert saved_lr and np.isclose(reader.get_tensor(saved_lr[0]), want[-1])
    best_key = [k for k in keys if k.startswith("validation/best")][0]
    assert np.isclose(reader.get_tensor(best_key), min(loss))
    more = helpers.run_args(data, exp, **{**flags, "max_steps": 8})
    assert helpers.run_main_in_process(more) == 0
    assert [s for s, _ in helpers.read_scalars(eval_dir)["valid/perplexity"]][-1] == 8


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            {"lr_decay": "plateau"},
            "--lr_decay=plateau anneals plain SGD's rate: add --optimizer=sgd",
        ),
        (
            {"lr_decay": "plateau", "optimizer": "sgd"},
            "--lr_decay=plateau decides on validation perplexity: give --valid_data_path",
        ),
        (
            {"valid_data_path": "/nonexistent/v*"},
            "--valid_data_path '/nonexistent/v*' matches no files",
        ),
        ({"embedding_max_norm": -1}, "--embedding_max_norm must be >= 0"),
    ],
)
def test_bad_training_recipes_are_one_error_line(data, capfd, flags, message):
    args = helpers.run_args(data, "bad_recipe", model="abs", **flags)
    assert helpers.run_main_in_process(args) == 2
    err = capfd.readouterr().err
    assert message in err and "Traceback" not in err


def _preset(name: str, **overrides):
    from pointer_generator.models import family_registry

    options = family_registry.option_table()
    fields = {f.name for f in __import__("dataclasses").fields(pg.HParams)} | set(options)
    values = {}
    with open(os.path.join(PRESETS, name + ".flags"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("--"):
                key, value = line[2:].strip().split("=", 1)
                if key in fields:
                    values[key] = value
    hps = helpers.hparams()
    typed = {}
    for key, value in values.items():
        kind = options[key].type if key in options else type(getattr(hps, key))
        typed[key] = value.lower() == "true" if kind is bool else kind(value)
    return hps.replace(**{"pointer_gen": False, **typed, **overrides})


def test_the_paper_presets_have_the_closed_form_parameter_counts():
    """spec abs-ras.md §8.2: ABS-enc3 2DV + HV + 2CDH + 2VH = 111.2M with V = 69,000;
    RAS d V_x + d P + q d^2 + d V_y + (3 or 12) d^2 + 2 V d with P = 100."""
    from pointer_generator.models.family_registry import build_model

    v = 69_000
    hps = _preset("abs_paper")
    window = hps.option("context_window")
    assert (hps.emb_dim, hps.hidden_dim, window, hps.lr, hps.batch_size) == (
        200,
        400,
        5,
        0.05,
        64,
    )
    assert hps.optimizer == "sgd" and hps.embedding_max_norm == 1.0
    n = sum(int(tf.size(w)) for w in build_model(hps, v).trainable_variables)
    d, h, c = 200, 400, 5
    assert n == 2 * d * v + h * v + 2 * c * d * h + 2 * v * h == 111_200_000
    for name, recurrent, lr in (("ras_elman_paper", 3, 0.5), ("ras_lstm_paper", 12, 0.1)):
        hps = _preset(name, max_positions=100)
        assert (hps.hidden_dim, hps.batch_size, hps.max_grad_norm, hps.lr) == (512, 32, 10.0, lr)
        n = sum(int(tf.size(w)) for w in build_model(hps, v).trainable_variables)
        d, q = 512, 5
        assert n == d * v + d * 100 + q * d * d + d * v + recurrent * d * d + 2 * v * d


def test_a_summed_loss_has_the_mean_losss_gradient_times_the_words():
    """--loss_reduction=sum (RAS's printed objective): one SGD step moves every weight by
    `tokens` times the step of the mean loss; the reported loss is the mean either way."""

    batch = helpers.numpy_batch(3, 40, enc_len=6, dec_len=5, pointer_gen=False)
    tokens = float(np.sum(batch["dec_padding_mask"]))
    moves, losses = {}, {}
    for reduction in ("mean", "sum"):
        tf.keras.utils.set_random_seed(1)
        hps = helpers.hparams(model="ras_elman", pointer_gen=False, conv_width=3,
                              max_positions=10, optimizer="sgd", lr=1.0,
                              loss_reduction=reduction, max_grad_norm=1e9)  # fmt: skip
        trainer = pg.Trainer(hps, 40)
        before = [v.numpy().copy() for v in trainer.model.trainable_variables]
        losses[reduction] = trainer.train_step(helpers.repeat_iterator(batch))["loss"]
        moves[reduction] = [
            v.numpy() - b for v, b in zip(trainer.model.trainable_variables, before, strict=True)
        ]
    assert losses["sum"] == pytest.approx(losses["mean"], rel=1e-6)
    for m, s in zip(moves["mean"], moves["sum"], strict=True):
        np.testing.assert_allclose(s, m * tokens, rtol=1e-3, atol=1e-6)
