"""What the earlier families' models share (ABS, RAS): a frozen config, the NLL outputs
the trainer and the eval job read, building, and the Keras config round trip.

A family defines `CONFIG` (its config dataclass), `KIND` (its start-up name) and
`log_probs(enc_batch, enc_padding_mask, dec_batch) -> [B, T, V]`, plus the search step
(`search_articles`, `initial_carry`, `decode_step`; see models/families.py).
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from pointer_generator.models.families import parameter_summary


def nll_outputs(log_probs, batch) -> dict:
    """The trainer's and eval job's outputs from per-step log-probabilities [B, T, V]:
    the mean NLL per real target token (like the original's baseline sequence loss)."""
    gold = tf.gather(log_probs, batch["target_batch"], batch_dims=2)
    mask = tf.cast(batch["dec_padding_mask"], gold.dtype)
    loss = -tf.reduce_sum(gold * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)
    return {
        "loss": loss,
        "step_nll": -gold,
        "coverage_loss": tf.zeros([], gold.dtype),
        "total_loss": loss,
        "p_gens": tf.ones_like(gold),
        "p_gen_mean": tf.ones([], gold.dtype),
        "log_probs": log_probs,
    }


class SentenceSummarizer(keras.Model):
    """Base of the ABS and RAS models (not a model by itself)."""

    CONFIG: type = None
    KIND = "sentence summarizer"

    def __init__(self, config, vocab_size: int, **kwargs):
        super().__init__(**kwargs)
        self.config, self.vocab_size = config, vocab_size

    def kind(self) -> str:
        """The family's name in the start-up line."""
        return self.KIND

    def parameter_summary(self) -> str:
        return parameter_summary(self, self.kind())

    def build_weights(self):
        """Create every weight by running a one-token batch."""
        ids = tf.zeros([1, 2], tf.int32)
        self.log_probs(ids, tf.ones([1, 2]), ids)
        self.built = True
        return self

    def call(self, batch, training=False):
        """`nll_outputs`: "loss" (mean NLL per real target token; perplexity = exp(loss)),
        "step_nll" [B, T], "log_probs" [B, T, V], ..."""
        lp = self.log_probs(batch["enc_batch"], batch["enc_padding_mask"], batch["dec_batch"])
        return nll_outputs(lp, batch)

    def get_config(self):
        return {
            "config": dataclasses.asdict(self.config),
            "vocab_size": self.vocab_size,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        return cls(cls.CONFIG(**config.pop("config")), **config)
