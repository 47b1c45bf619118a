"""experiments.families.weight_scales: the initial RMS of each initialiser, checked
against draws of the same distributions (NumPy's uniform, TensorFlow's truncated normal,
Keras' Glorot uniform)."""

import math

import numpy as np
import pytest
import tensorflow as tf

from experiments.families import weight_scales


def _rms(x) -> float:
    return float(np.sqrt(np.mean(np.square(np.asarray(x, np.float64)))))


def test_initial_rms_matches_draws_of_each_initialiser():
    rng = np.random.default_rng(0)
    uniform = rng.uniform(-0.02, 0.02, size=200_000)
    assert weight_scales.initial_rms("uniform", (64, 512), 0.02, 1e-4) == pytest.approx(
        _rms(uniform), rel=0.01
    )
    truncated = tf.random.truncated_normal([200_000], stddev=1e-4, seed=1)
    assert weight_scales.initial_rms("truncated", (10, 64), 0.02, 1e-4) == pytest.approx(
        _rms(truncated), rel=0.01
    )
    glorot = tf.keras.initializers.GlorotUniform(seed=2)((320, 64))
    assert weight_scales.initial_rms("glorot", (320, 64), 0.02, 1e-4) == pytest.approx(
        _rms(glorot), rel=0.02
    )
    assert weight_scales.initial_rms("uniform", (1, 1), 0.3, 0) == pytest.approx(0.3 / math.sqrt(3))
