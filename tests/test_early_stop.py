"""Early stopping on validation perplexity (`--early_stop_epochs`, training/epochs.py):
the decision against hand cases, a tiny SGD run whose validation gets worse stopping
before `--max_steps` with one line and a final checkpoint, the same command run again
training no further, an older checkpoint without the count restoring, and the flag
refused without `--valid_data_path` or outside train mode."""

from __future__ import annotations

import logging
import math
import os

import numpy as np
import pytest
import tensorflow as tf

import pointer_generator as pg
from pointer_generator.errors import FlagError
from pointer_generator.training import epochs
from tests import helpers

PATIENCE = 2
MAX_STEPS = 24


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return helpers.tiny_setup(tmp_path_factory.mktemp("early_stop"), n_train=8, n_val=4)


def _flags(data, **more) -> dict:
    return dict(
        model="abs",
        context_window=2,
        optimizer="sgd",
        lr=50.0,  # so large that the validation loss gets worse after the first epochs
        valid_data_path=data.val_path,
        epoch_steps=1,
        early_stop_epochs=PATIENCE,
        max_steps=MAX_STEPS,
        **more,
    )


# ------------------------------------------------------------------ the decision
@pytest.mark.parametrize(
    "nll, best, count, expected",
    [
        (5.0, math.inf, 0, 0),  # the first validation improves on nothing
        (2.0, 3.0, 2, 0),  # below the best: the count starts again
        (3.0, 3.0, 0, 1),  # equal to the best is no improvement
        (3.5, 3.0, 1, 2),  # better than the previous epoch is not enough
        (math.inf, math.inf, 0, 1),  # an overflowing loss never improves
        (math.nan, 3.0, 4, 5),  # nor does a NaN
    ],
)
def test_the_count_of_epochs_without_improvement(nll, best, count, expected):
    assert epochs.bad_epochs(nll, best, count) == expected


@pytest.mark.parametrize(
    "count, patience, expected",
    [(0, 0, False), (9, 0, False), (0, 1, False), (1, 1, True), (2, 3, False), (3, 3, True)],
    ids=str,
)
def test_stop_when_the_count_reaches_the_patience(count, patience, expected):
    assert epochs.should_stop(count, patience) is expected


def test_the_stop_line_names_the_count_the_best_and_the_step():
    state = epochs.ValidationState()
    state.best.assign(math.log(61.2))
    state.step_of_best.assign(1240)
    state.bad_epochs.assign(3)
    assert epochs.early_stop_line(state, 1550) == (
        "early stop: validation perplexity has not improved for 3 epochs "
        "(best 61.2 at step 1240); stopping at step 1550"
    )
    state.step_of_best.assign(-1)  # (restored from a run that did not record it)
    state.bad_epochs.assign(1)
    assert "for 1 epoch (best 61.2); stopping" in epochs.early_stop_line(state, 9)


def test_a_checkpoint_from_before_the_count_restores(tmp_path):
    old = tf.Module()
    old.best = tf.Variable(1.5, dtype=tf.float64, name="best")
    old.previous = tf.Variable(2.5, dtype=tf.float64, name="previous")
    path = tf.train.Checkpoint(validation=old, step=tf.Variable(7)).save(str(tmp_path / "ckpt"))
    state = epochs.ValidationState()
    assert epochs.restore_state(state, path)
    assert float(state.best.numpy()) == 1.5 and float(state.previous.numpy()) == 2.5
    assert int(state.bad_epochs.numpy()) == 0 and int(state.step_of_best.numpy()) == -1
    other = tf.train.Checkpoint(step=tf.Variable(7)).save(str(tmp_path / "none"))
    assert not epochs.restore_state(epochs.ValidationState(), other)


# ------------------------------------------------------------------ a training run
def _stop_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "early stop: " in line]


def _replay(steps: list[int], losses: list[float]):
    """(best NLL, its step, the count, the stop step or None) of the rule applied to the
    validation losses of TensorBoard (float32, as the run measured them in float64: the
    comparisons come out the same for losses this far apart)."""
    best, best_step, count, stop = math.inf, -1, 0, None
    for step, nll in zip(steps, losses, strict=True):
        assert stop is None, "validated after the stop"
        count = epochs.bad_epochs(nll, best, count)
        if nll < best:
            best, best_step = nll, step
        if epochs.should_stop(count, PATIENCE):
            stop = step
    return best, best_step, count, stop


def _validations(data, exp: str) -> tuple[list[int], list[float]]:
    scalars = helpers.read_scalars(os.path.join(data.log_root, exp, "eval"))
    return [s for s, _ in scalars["valid/loss"]], [v for _, v in scalars["valid/loss"]]


def _saved(train_dir: str, step: int, name: str):
    reader = tf.train.load_checkpoint(os.path.join(train_dir, f"model.ckpt-{step}"))
    keys = [k for k in reader.get_variable_to_shape_map() if k.startswith(f"validation/{name}/")]
    return reader.get_tensor(keys[0])


def test_training_stops_early_and_a_rerun_trains_no_further(data, caplog):
    exp = "stops"
    args = helpers.run_args(data, exp, **_flags(data))
    caplog.set_level(logging.INFO)
    assert helpers.run_main_in_process(args) == 0
    lines = _stop_lines(caplog.text)
    assert len(lines) == 1, caplog.text
    # The stop follows the rule applied to the measured losses, before --max_steps.
    steps, losses = _validations(data, exp)
    best, best_step, count, stop = _replay(steps, losses)
    assert stop is not None and stop < MAX_STEPS, losses
    assert steps == list(range(1, stop + 1))
    ppl = math.exp(min(best, 700.0))
    want = (
        f"early stop: validation perplexity has not improved for {PATIENCE} epochs "
        f"(best {ppl:.5g} at step {best_step}); stopping at step {stop}"
    )
    assert lines[0].endswith(want), (lines[0], want)
    assert f"Training stopped at step {stop} (early stop" in caplog.text
    # A final checkpoint at the stop, holding the count.
    train_dir = os.path.join(data.log_root, exp, "train")
    assert helpers.checkpoint_steps(train_dir)[-1] == stop
    assert _saved(train_dir, stop, "bad_epochs") == count == PATIENCE
    assert _saved(train_dir, stop, "step_of_best") == best_step
    # The same command again: the same line, no step, no validation, no checkpoint.
    caplog.clear()
    assert helpers.run_main_in_process(args) == 0
    rerun = _stop_lines(caplog.text)
    assert len(rerun) == 1 and rerun[0].endswith(want), caplog.text
    assert "Training stopped" not in caplog.text
    assert helpers.checkpoint_steps(train_dir)[-1] == stop
    again = _validations(data, exp)
    assert again[0] == steps
    np.testing.assert_allclose(again[1], losses)
    # Eval mode refuses the training flag (the experiment now exists).
    refused = helpers.run_args(data, exp, mode="eval", early_stop_epochs=PATIENCE)
    assert helpers.run_main_in_process(refused) == 2


def test_a_resumed_job_counts_on(data):
    """A job ended (here by --max_steps) after an epoch without improvement, resumed with
    the same flags, goes on counting from the checkpoint: it stops where the rule applied
    to all its epochs says (had it counted from 0, it would validate after that step)."""
    exp = "resumed"
    train_dir = os.path.join(data.log_root, exp, "train")
    first = helpers.run_args(data, exp, **{**_flags(data), "max_steps": 2})
    assert helpers.run_main_in_process(first) == 0
    _, _, count, stop = _replay(*_validations(data, exp))
    assert stop is None and count > 0, "the first run ends after an epoch without improvement"
    assert _saved(train_dir, 2, "bad_epochs") == count
    assert helpers.run_main_in_process(helpers.run_args(data, exp, **_flags(data))) == 0
    steps, losses = _validations(data, exp)
    stop = _replay(steps, losses)[3]
    assert stop is not None and steps[-1] == stop < MAX_STEPS
    assert helpers.checkpoint_steps(train_dir)[-1] == stop


# ------------------------------------------------------------------ refusals
def test_the_flag_is_refused_without_validation(data, capfd):
    args = helpers.run_args(data, "refused", model="abs", early_stop_epochs=3)
    assert helpers.run_main_in_process(args) == 2
    err = capfd.readouterr().err
    assert (
        "error: --early_stop_epochs=3 stops on validation perplexity: give --valid_data_path" in err
    )
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not os.path.exists(os.path.join(data.log_root, "refused", "train"))


def test_the_flag_is_refused_outside_train_mode_and_below_zero():
    from pointer_generator.cli.flag_bounds import check_numbers
    from pointer_generator.cli.flag_checks import _validate_epochs

    with pytest.raises(FlagError, match=r"^--early_stop_epochs is a train mode flag"):
        _validate_epochs(helpers.flag_namespace(mode="eval", early_stop_epochs=2))
    with pytest.raises(FlagError, match=r"^--early_stop_epochs must be >= 0 \(0 = off\)"):
        check_numbers(helpers.flag_namespace(early_stop_epochs=-1))
    # From Python too.
    with pytest.raises(FlagError, match="give --valid_data_path"):
        pg.TrainConfig(early_stop_epochs=2)
    with pytest.raises(FlagError, match="must be >= 0"):
        pg.TrainConfig(valid_data_path="v", early_stop_epochs=-1)
    assert pg.TrainConfig(valid_data_path="v", early_stop_epochs=2).early_stop_epochs == 2
