"""What the earlier families' models share (ABS, RAS): a frozen config, the NLL outputs
the trainer and the eval job read, building, the search and checkpoint parts of the
family contract (models/family.py), and the Keras config round trip.

A family defines `CONFIG` (its config dataclass), `KIND` (its start-up name),
`from_hparams`, `EMBEDDING` (the checkpoint key of its summary-word embedding and the
flag that sets its width) and `log_probs(enc_batch, enc_padding_mask, dec_batch) ->
[B, T, V]`, plus its search step (`search_articles`, `initial_carry`, `decode_step`).
"""

from __future__ import annotations

import dataclasses

import keras
import tensorflow as tf

from pointer_generator.layers import torch_init
from pointer_generator.models.family import (
    SearchInputs,
    SearchStart,
    embedding_mismatches,
    parameter_summary,
)


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
    FAMILY = ""  # its --model value(s), for messages
    # (checkpoint key of the summary-word embedding [V, width], the flag of its width)
    EMBEDDING: tuple[str, str] = ("", "")

    def __init__(self, config, vocab_size: int, **kwargs):
        super().__init__(**kwargs)
        self.config, self.vocab_size = config, vocab_size

    def embedding_width(self) -> int:
        """The width of the `EMBEDDING` table (its flag's value)."""
        raise NotImplementedError

    @property
    def family(self) -> str:
        """Its --model value."""
        return self.FAMILY

    # ------------------------------------------------------------------ the family contract
    def search_start(self, inputs: SearchInputs, beam_size: int, full_final_dist: bool = False):
        """The batched search over `decode_step` (models/family.py); the articles'
        encoding is computed once (`search_articles`), tiled to the hypotheses in each
        step. `full_final_dist` changes nothing: the step's distribution is whole."""
        batch = inputs.enc_batch.shape[0]
        if batch is None:
            batch = tf.shape(inputs.enc_batch)[0]
        articles = self.search_articles(inputs.enc_batch, inputs.enc_padding_mask)

        def step(tokens, carry, art):
            return self.decode_step(tokens, carry, art, beam_size)

        return SearchStart(step, self.initial_carry(batch * beam_size), articles)

    def checkpoint_mismatches(self, shapes: dict) -> list[str]:
        """What disagrees between this model's flags and a checkpoint ({key: shape})."""
        key, flag = self.EMBEDDING
        if key not in shapes:
            return [f"it is not a checkpoint of --model={self.family} (it has no {key})"]
        problems = embedding_mismatches(shapes[key], self.vocab_size, self.embedding_width())
        return [
            p.replace("--emb_dim", f"--{flag}").replace("emb_dim=", f"{flag}=") for p in problems
        ]

    @classmethod
    def implied_settings(cls, shapes: dict) -> dict | None:
        """vocab_size and the width flag a checkpoint of this family implies, and its
        --model; None when it is none of this family's."""
        key, flag = cls.EMBEDDING
        shape = shapes.get(key)
        if shape is None or len(shape) != 2:
            return None
        return {"vocab_size": int(shape[0]), flag: int(shape[1]), "model": cls.FAMILY}

    @classmethod
    def embedding_key(cls, shapes: dict) -> str | None:
        return cls.EMBEDDING[0] if cls.EMBEDDING[0] in shapes else None

    def kind(self) -> str:
        """The family's name in the start-up line."""
        return self.KIND

    def parameter_summary(self) -> str:
        return parameter_summary(self, self.kind())

    def build_weights(self):
        """Create every weight by running a one-token batch, then draw them as the
        family's code did (`config.init`: Torch's defaults, layers/torch_init.py)."""
        ids = tf.zeros([1, 2], tf.int32)
        self.log_probs(ids, tf.ones([1, 2]), ids)
        self.built = True
        if getattr(self.config, "init", torch_init.KERAS) == torch_init.TORCH:
            torch_init.initialize(self, self.config.init_seed)
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
