"""The optimizers the trainer applies: TF1's Adagrad (the pointer-generator) and plain
SGD with a learning rate that can be annealed (ABS and RAS, spec abs-ras.md §2.5, §3.4).

Both are `tf.Module`s with the same small interface the trainer's distributed apply
calls: `build(variables)`, `accumulator(variable)` (the per-variable slot, None for SGD)
and `update(variable, gradient, slot)`. The trainer clips by the *global* norm of the
all-reduced gradients first, which Keras optimizers leave no place for (they all-reduce
inside `apply_gradients`).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from pointer_generator.errors import CheckpointError

OPTIMIZERS = ("adagrad", "sgd")


class Adagrad(tf.Module):
    """TF1's `AdagradOptimizer` update: acc += g^2; w -= lr * g / sqrt(acc) (no epsilon).

    It runs TF1's own kernel (`ResourceApplyAdagrad`), so the arithmetic is the
    original's. (Keras' Adagrad with epsilon=0 computes the same rule, see
    tests/test_train.py.)

    Accumulators are keyed by the model variable's path, the keys `tf1_checkpoint` uses
    for converted TF1 slots.
    """

    def __init__(
        self, learning_rate: float, initial_accumulator_value: float, name: str = "adagrad"
    ):
        super().__init__(name=name)
        self.learning_rate = float(learning_rate)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.accumulators = {}

    def build(self, variables) -> None:
        """Create one accumulator per variable (call under the strategy's scope)."""
        for v in variables:
            if v.path not in self.accumulators:
                self.accumulators[v.path] = tf.Variable(
                    tf.fill(v.shape, tf.constant(self.initial_accumulator_value, v.dtype)),
                    trainable=False,
                    name="accumulator",
                )

    def accumulator(self, variable) -> tf.Variable:
        return self.accumulators[variable.path]

    def assign_accumulators(self, values: dict) -> None:
        """Set accumulators from {variable path: array} (e.g. converted TF1 slots)."""
        unknown = sorted(set(values) - set(self.accumulators))
        if unknown:
            raise CheckpointError(f"accumulators for unknown variables: {', '.join(unknown)}")
        for path, value in values.items():
            self.accumulators[path].assign(np.asarray(value, np.float32))

    def update(self, variable, gradient, accumulator):
        """Apply one variable's update (per-device variables inside `extended.update`)."""
        return tf.raw_ops.ResourceApplyAdagrad(
            var=variable.handle,
            accum=accumulator.handle,
            lr=tf.constant(self.learning_rate, variable.dtype),
            grad=gradient,
            use_locking=False,
            update_slots=True,
        )


class SGD(tf.Module):
    """Plain mini-batch SGD, w -= lr * g, no momentum and no weight decay (what NAMAS's
    `updateParameters(lr)` does and what Chopra et al. describe).

    The learning rate is a variable (saved with the checkpoint) because the annealing
    schedule (`schedule.py`) halves it between epochs.
    """

    def __init__(self, learning_rate: float, name: str = "sgd"):
        super().__init__(name=name)
        self.learning_rate = tf.Variable(
            float(learning_rate), dtype=tf.float32, trainable=False, name="learning_rate"
        )

    def build(self, variables) -> None:
        """SGD keeps no per-variable state."""

    def accumulator(self, variable):
        return None

    def update(self, variable, gradient, slot):
        del slot
        return tf.raw_ops.ResourceApplyGradientDescent(
            var=variable.handle,
            alpha=tf.cast(self.learning_rate, variable.dtype),
            delta=gradient,
            use_locking=False,
        )


def make_optimizer(hps):
    """The optimizer `hps.optimizer` names, at `hps.lr`."""
    if hps.optimizer == "sgd":
        return SGD(hps.lr)
    return Adagrad(hps.lr, hps.adagrad_init_acc)


def current_learning_rate(optimizer) -> float:
    return float(tf.convert_to_tensor(optimizer.learning_rate))
