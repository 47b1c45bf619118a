"""The reduce-state layer: encoder final states -> decoder initial state (spec 4.5)."""

import keras
import tensorflow as tf

from pointer_generator.layers.initializers import trunc_normal


@keras.saving.register_keras_serializable(package="pointer_generator")
class ReduceState(keras.layers.Layer):
    """c_0 = ReLU([c_fw; c_bw] W_rc + b_rc), h_0 = ReLU([h_fw; h_bw] W_rh + b_rh).

    Weights [2 * hidden_dim, hidden_dim] and biases [hidden_dim], all truncated-normal
    like the original (ReLU, so the initial decoder state is non-negative).

    Call args: c_fw, c_bw, h_fw, h_bw each [batch, hidden_dim].
    Returns: (c_0, h_0), each [batch, hidden_dim].
    """

    def __init__(self, hidden_dim: int, init_std: float = 1e-4, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.init_std = init_std

    def build(self, input_shape=None):
        if self.built:
            return
        h, init = self.hidden_dim, trunc_normal(self.init_std)
        self.w_reduce_c = self.add_weight(name="w_reduce_c", shape=(2 * h, h), initializer=init)
        self.w_reduce_h = self.add_weight(name="w_reduce_h", shape=(2 * h, h), initializer=init)
        self.bias_reduce_c = self.add_weight(name="bias_reduce_c", shape=(h,), initializer=init)
        self.bias_reduce_h = self.add_weight(name="bias_reduce_h", shape=(h,), initializer=init)
        self.built = True

    def call(self, c_fw, c_bw, h_fw, h_bw):
        c = tf.nn.relu(tf.matmul(tf.concat([c_fw, c_bw], 1), self.w_reduce_c) + self.bias_reduce_c)
        h = tf.nn.relu(tf.matmul(tf.concat([h_fw, h_bw], 1), self.w_reduce_h) + self.bias_reduce_h)
        return c, h

    def get_config(self):
        config = super().get_config()
        config.update(hidden_dim=self.hidden_dim, init_std=self.init_std)
        return config
