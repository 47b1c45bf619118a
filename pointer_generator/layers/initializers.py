"""The original release's weight initialisers (spec 4.2)."""

import math

import keras


def lstm_uniform(magnitude: float) -> keras.initializers.Initializer:
    """U(-magnitude, +magnitude) for every LSTM weight matrix (input and recurrent parts)."""
    return keras.initializers.RandomUniform(-magnitude, magnitude)


def trunc_normal(std: float) -> keras.initializers.Initializer:
    """Truncated normal, truncated at 2 std like TF1's, for the embedding, reduce-state and
    output-projection weights and biases."""
    return keras.initializers.TruncatedNormal(mean=0.0, stddev=std)


def glorot() -> keras.initializers.Initializer:
    """TF1 `get_variable`'s default: Glorot-uniform with limit sqrt(6 / (fan_in + fan_out))."""
    return keras.initializers.GlorotUniform()


def glorot_fans(fan_in: int, fan_out: int) -> keras.initializers.Initializer:
    """Glorot-uniform with explicit fans, for weights stored in another shape than TF1's."""
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    return keras.initializers.RandomUniform(-limit, limit)
