"""The generation probability gate p_gen (paper eq. 8; spec 4.6 step 4)."""

import keras
import tensorflow as tf

from pointer_generator.layers.initializers import glorot


@keras.saving.register_keras_serializable(package="pointer_generator")
class GenerationProbability(keras.layers.Layer):
    """p_gen = sigmoid(w_h*^T h*_t + w_s^T s_t + w_x^T x_t + b_ptr).

    With the original release's inputs: the context h*_t, the new LSTM cell state c_t, the
    new hidden state s_t and the merged decoder input x_t, concatenated in that order, so
    the kernel is [enc_dim + 2 * hidden_dim + emb_dim, 1] (1152 x 1 at the paper's sizes).

    Inputs may have any leading shape `[...]`; the output is `[..., 1]`.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(
            1, kernel_initializer=glorot(), bias_initializer="zeros", name="linear"
        )

    def build(self, input_shapes=None):
        if self.built:
            return
        if input_shapes is not None:
            self.dense.build(input_shapes)
        self.built = True

    def logit(self, context, cell, hidden, merged_input):
        """The pre-sigmoid value z, so losses can use log_sigmoid(z) and log_sigmoid(-z)."""
        return self.dense(tf.concat([context, cell, hidden, merged_input], axis=-1))

    def call(self, context, cell, hidden, merged_input):
        return tf.sigmoid(self.logit(context, cell, hidden, merged_input))
