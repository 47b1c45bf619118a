"""What the earlier families' models share (ABS, RAS): a frozen config, the NLL outputs
the trainer and the eval job read, building, the search and checkpoint parts of the
family contract (models/family.py), and the Keras config round trip.

A family defines `CONFIG` (its config dataclass), `KIND` (its start-up name),
`from_hparams`, `EMBEDDING` (the checkpoint key of its summary-word embedding and the
flag that sets its width), its output layer `out` (a `LogSoftmaxOutput`) and
`output_inputs(enc_batch, enc_padding_mask, dec_batch) -> (first [B, T, F], second
[B, T, S])`, the output layer's two inputs at every decoder step, plus its search step
(`search_articles`, `initial_carry`, `decode_step`); `log_probs` is the output layer at
every step, [B, T, V].

Training and evaluation (`call`) apply the output layer only at the real target words
(`gold_log_probs`): batches pad every summary to max_dec_steps, and the [., V]
projection, most of a step's work, would otherwise be computed for padding too.
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

# A batch's rows are packed into the smallest of PACKED_BUCKETS fixed sizes (n/8, 2n/8, ...,
# n for n = B * T positions) that holds its real target words, under XLA.
PACKED_BUCKETS = 8


def compiling_with_xla() -> bool:
    """Whether the code is being traced into an XLA computation (tf.function with
    jit_compile=True). TensorFlow says so only through an internal module; without it the
    answer is True (`gold_log_probs`' XLA path is right everywhere, only slower)."""
    if tf.executing_eagerly():
        return False
    try:
        from tensorflow.python.ops import control_flow_util

        return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())
    except Exception:  # noqa: BLE001 (a private module that may move or change)
        return True


def gold_log_probs(out, first, second, targets, mask):
    """log p(target) from the output layer `out` (a `LogSoftmaxOutput`), computed only
    at the real target positions.

    Args:
      out: the output layer, log_softmax(first A + second B [+ bias]) over V words.
      first: [B, T, F] and second: [B, T, S], its inputs at every decoder step.
      targets: [B, T] int target ids; mask: [B, T] float, > 0 at the real positions.
    Returns:
      [B, T]: the gold log-probability at the real positions, 0 at the others; equal to
      gathering `targets` from out(first, second) and zeroing the padding.

    Outside XLA the N real positions are gathered (`tf.where`, [N, F] and [N, S]) and
    only [N, V] is computed. Under XLA `tf.where`'s N is a dynamic size bounded by B * T
    and XLA computes the bound, every position (on CPU, a training step of that form at
    V = 14,677, B * T = 1,920 had not finished its first call after 7 minutes; the dense
    one's took 1.5 s), so there the positions are sorted real-first and the first K of
    them projected, K the smallest of `PACKED_BUCKETS` static sizes >= N
    (`_bucketed_gold`).
    """
    if not out.built:
        out(first[:1, 0], second[:1, 0])
    if compiling_with_xla():
        return _bucketed_gold(out, first, second, targets, mask)
    real = tf.where(mask > 0)  # [N, 2]
    log_p = out(tf.gather_nd(first, real), tf.gather_nd(second, real))  # [N, V]
    gold = tf.gather(log_p, tf.gather_nd(targets, real), batch_dims=1)  # [N]
    return tf.scatter_nd(real, gold, tf.shape(targets, out_type=tf.int64))


def _bucketed_gold(out, first, second, targets, mask):
    """`gold_log_probs` with static shapes only (for XLA): [B, T].

    The n = B * T positions are sorted real-first (stably); with N real ones, one branch
    of a `tf.switch_case` projects the first K = ceil(n i / PACKED_BUCKETS) >= N of them,
    for the smallest such i. The gradient is written by hand, one branch per size too:
    autodiff of a branch would return every other branch's [K', V] intermediates as
    zeros, constants that XLA folds (minutes of compiling at V = 15K). d logits =
    -g (softmax - onehot(target)) for the gradient g of the gold log-probabilities,
    from the forward's logits (kept, padded to [n, V]), then the products with the
    inputs and weights; the bias' gradient is its column sums. The layer's equation is
    repeated here on its weights `a`, `b` (and `bias`): tests/test_sentence_packed_loss.py
    compares both paths with `out` itself.
    """
    shape = tf.shape(targets)
    n = shape[0] * shape[1]
    f = tf.reshape(first, [n, tf.shape(first)[-1]])
    s = tf.reshape(second, [n, tf.shape(second)[-1]])
    labels = tf.reshape(targets, [n])
    real = tf.reshape(mask, [n]) > 0
    order = tf.argsort(tf.cast(tf.logical_not(real), tf.int32), stable=True)  # real first
    count = tf.reduce_sum(tf.cast(real, tf.int32))
    sizes = [(n * i + PACKED_BUCKETS - 1) // PACKED_BUCKETS for i in range(1, PACKED_BUCKETS + 1)]
    which = tf.reduce_sum(tf.cast(tf.stack(sizes) < count, tf.int32))  # the smallest >= N
    a, b = tf.convert_to_tensor(out.a), tf.convert_to_tensor(out.b)
    use_bias = out.use_bias
    bias = tf.convert_to_tensor(out.bias) if use_bias else tf.zeros([out.vocab_size], a.dtype)

    @tf.custom_gradient
    def packed(f, s, a, b, bias):
        def forward(k):
            def branch():
                rows = order[:k]
                logits = tf.matmul(tf.gather(f, rows), a) + tf.matmul(tf.gather(s, rows), b)
                if use_bias:
                    logits = logits + bias
                log_norm = tf.reduce_logsumexp(logits, axis=1)
                gold = tf.gather(logits, tf.gather(labels, rows), batch_dims=1) - log_norm
                rest = n - k
                return (
                    tf.pad(gold, [[0, rest]]),
                    tf.pad(logits, [[0, rest], [0, 0]]),
                    tf.pad(log_norm, [[0, rest]]),
                )

            return branch

        gold, logits, log_norm = tf.switch_case(which, [forward(k) for k in sizes])

        def grad(d_gold):  # [n], sorted order (IndexedSlices from the gather below)
            d_gold = tf.convert_to_tensor(d_gold)

            def backward(k):
                def branch():
                    rows = order[:k]
                    onehot = tf.one_hot(tf.gather(labels, rows), out.vocab_size, dtype=a.dtype)
                    probs = tf.exp(logits[:k] - log_norm[:k, None])
                    d_logits = -d_gold[:k, None] * (probs - onehot)  # [K, V]
                    d_f = tf.matmul(d_logits, a, transpose_b=True)
                    d_s = tf.matmul(d_logits, b, transpose_b=True)
                    d_a = tf.matmul(tf.gather(f, rows), d_logits, transpose_a=True)
                    d_b = tf.matmul(tf.gather(s, rows), d_logits, transpose_a=True)
                    return (
                        tf.scatter_nd(rows[:, None], d_f, tf.shape(f)),
                        tf.scatter_nd(rows[:, None], d_s, tf.shape(s)),
                        d_a,
                        d_b,
                        tf.reduce_sum(d_logits, axis=0),
                    )

                return branch

            return tf.switch_case(which, [backward(k) for k in sizes])

        return gold, grad

    sorted_gold = packed(f, s, a, b, bias)  # [n]: the first N real, then 0 or padding's
    gold = tf.gather(sorted_gold, tf.math.invert_permutation(order))
    return tf.reshape(tf.where(real, gold, tf.zeros_like(gold)), shape)


def nll_outputs(gold, batch) -> dict:
    """The trainer's and eval job's outputs from the gold log-probabilities [B, T]
    (`gold_log_probs`, 0 at padding): "loss", the mean NLL per real target token (like
    the original's baseline sequence loss), and "step_nll" [B, T] (0 at padding)."""
    mask = tf.cast(batch["dec_padding_mask"], gold.dtype)
    loss = -tf.reduce_sum(gold * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)
    return {
        "loss": loss,
        "step_nll": -gold,
        "coverage_loss": tf.zeros([], gold.dtype),
        "total_loss": loss,
        "p_gens": tf.ones_like(gold),
        "p_gen_mean": tf.ones([], gold.dtype),
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

    def log_probs(self, enc_batch, enc_padding_mask, dec_batch):
        """log p(y_{t+1} | x, y_1..y_t) for every decoder step: [B, T, V] (the output layer
        on every `output_inputs`; the tests and ABS+ read it, training does not)."""
        first, second = self.output_inputs(enc_batch, enc_padding_mask, dec_batch)
        shape = tf.shape(first)
        flat = self.out(
            tf.reshape(first, [-1, tf.shape(first)[-1]]),
            tf.reshape(second, [-1, tf.shape(second)[-1]]),
        )
        return tf.reshape(flat, [shape[0], shape[1], self.vocab_size])

    def call(self, batch, training=False):
        """`nll_outputs`: "loss" (mean NLL per real target token; perplexity = exp(loss)),
        "step_nll" [B, T] (0 at padding), ... The output layer is applied at the real
        target positions only (`gold_log_probs`): no [B, T, V] log-probabilities are made
        (`log_probs` gives them)."""
        first, second = self.output_inputs(
            batch["enc_batch"], batch["enc_padding_mask"], batch["dec_batch"]
        )
        gold = gold_log_probs(
            self.out, first, second, batch["target_batch"], batch["dec_padding_mask"]
        )
        return nll_outputs(gold, batch)

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
