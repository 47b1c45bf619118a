"""The distribution-aware training step (spec 1.6): `Trainer`.

One training step, on every replica of a `tf.distribute` strategy:

1. take this replica's rows of the global batch (every replica sees the same global
   batch the single-device job would see, so the data order does not depend on the
   number of devices);
2. compute the loss scaled so that the sum over replicas is the single-device loss of
   the global batch (see `Trainer._scaled_losses`), and its gradients;
3. all-reduce (sum) the gradients and losses, take the global norm the way the
   original's `tf.global_norm` did (the embedding gradient as one row per looked-up
   token, `grad_norm.py`; `--grad_norm=dense` for the norm of the summed gradient), and
   clip with `tf.clip_by_global_norm(grads, max_grad_norm, use_norm=norm)`;
4. if the loss and the norm are finite, apply the optimizer's update (TF1's Adagrad, or
   the earlier families' plain SGD, `optimizers.py`) and increment the
   global step; otherwise apply nothing (train mode then stops, `train.py`).
"""

from __future__ import annotations

import logging

import keras
import numpy as np
import tensorflow as tf

from pointer_generator.errors import FlagError
from pointer_generator.hparams import HParams
from pointer_generator.models import family_registry
from pointer_generator.models.family import EXAMPLES, TOKENS, term_means
from pointer_generator.training import distribution, grad_norm
from pointer_generator.training.optimizers import Adagrad, make_optimizer  # noqa: F401

log = logging.getLogger(__name__)

SUM = tf.distribute.ReduceOp.SUM


def _tf_variable(v):
    """The tf.Variable (possibly distributed) behind a Keras variable."""
    return v.value if isinstance(v, keras.Variable) else v


# ------------------------------------------------------------------------------ trainer
class Trainer:
    """Model, optimizer, global step and the compiled train step under one strategy.

    Args:
      hps: hyper-parameters (batch_size is the global batch).
      vocab_size: `Vocab.size()`.
      strategy: a tf.distribute strategy (default: TensorFlow's default strategy).
      jit_compile: compile each replica's forward/backward pass with XLA.
    """

    def __init__(
        self,
        hps: HParams,
        vocab_size: int,
        strategy: tf.distribute.Strategy | None = None,
        jit_compile: bool = False,
    ):
        self.hps = hps
        # What the model's loss is made of and what training minimises (models/family.py).
        self.family = family_registry.of(hps)
        self.strategy = strategy or tf.distribute.get_strategy()
        self.local_replicas = distribution.num_local_replicas(self.strategy)
        self.num_workers = distribution.num_workers(self.strategy)
        n = self.strategy.num_replicas_in_sync
        if hps.batch_size % n:
            raise FlagError(
                f"--batch_size={hps.batch_size} does not divide evenly over the {n} replicas"
            )
        with self.strategy.scope():
            self.model = family_registry.build_model(hps, vocab_size)
            self.optimizer = make_optimizer(hps)
            self.optimizer.build(self.model.trainable_variables)
            self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        # autograph=False: the step's control flow is explicit (tf.where, the layers'
        # tf.while_loops); converting its Python was seconds of every first step.
        self._grads = (
            tf.function(self._loss_and_grads, jit_compile=True, autograph=False)
            if jit_compile
            else self._loss_and_grads
        )
        self._step_fn = tf.function(self._distributed_step, autograph=False)
        self._agree_fn = tf.function(self._agree_replicas, autograph=False)

    # ---------------------------------------------------------------- the train step
    def train_step(self, iterator) -> dict:
        """Run one step on the next batch of `iterator`; returns Python float metrics.

        The iterator yields this worker's share of the global batch (model inputs only).
        `metrics["finite"]` is False when the step was skipped for a non-finite loss;
        `metrics["batch_shape"]` is the batch's shape (every input's dimensions, a tuple
        of ints): the first step of each compiles.
        """
        if not isinstance(iterator, (tf.data.Iterator, tf.distribute.DistributedIterator)):
            # The compiled step calls next() inside its graph: a Python iterator would be
            # read once, when the step is traced, and that batch trained on ever after.
            raise TypeError(
                "Trainer.train_step takes a tf.data iterator (iter(dataset), e.g. of "
                f"pg.make_dataset(...).map(pg.model_inputs)), not {type(iterator).__name__}: "
                "a Python iterator would be read once, when the step is compiled"
            )
        out = self._step_fn(iterator)
        shape = tuple(out.pop("batch_shape").numpy().tolist())  # one copy, not one per dim
        metrics = {k: float(v) for k, v in out.items()}
        metrics["finite"] = bool(metrics["finite"])
        metrics["batch_shape"] = shape
        return metrics

    def _distributed_step(self, iterator):
        batch = next(iterator)
        out = self.strategy.run(self._replica_step, args=(batch,))
        # Every replica returns the same all-reduced values.
        out = {k: self.strategy.experimental_local_results(v)[0] for k, v in out.items()}
        out["batch_shape"] = tf.concat([tf.shape(batch[k]) for k in sorted(batch)], 0)
        return out

    def _replica_batch(self, batch):
        """This replica's rows of the worker batch (the same batch is given to all)."""
        n = self.local_replicas
        if n == 1:
            return batch
        ctx = tf.distribute.get_replica_context()
        index = tf.math.floormod(tf.cast(ctx.replica_id_in_sync_group, tf.int32), n)

        def rows(x):
            if x.shape.rank == 0:
                return x  # max_art_oovs: the worker batch's value is valid for every part
            split = tf.reshape(x, tf.concat([[n, -1], tf.shape(x)[1:]], 0))
            return tf.gather(split, index)

        return {k: rows(v) for k, v in batch.items()}

    def _replica_step(self, batch):
        ctx = tf.distribute.get_replica_context()
        batch = self._replica_batch(batch)
        mask = batch["dec_padding_mask"]
        examples = tf.cast(tf.shape(mask)[0], tf.float32)
        global_examples, global_tokens = ctx.all_reduce(SUM, [examples, tf.reduce_sum(mask)])
        metrics, grads, row_sq, is_rows = self._grads(batch, global_examples, global_tokens)
        grads, metrics, row_sq = ctx.all_reduce(SUM, (grads, metrics, row_sq))
        norm = grad_norm.global_norm(grads, row_sq, is_rows, self.hps.grad_norm)
        finite = tf.math.is_finite(metrics["total_loss"]) & tf.math.is_finite(norm)
        clipped, _ = tf.clip_by_global_norm(grads, self.hps.max_grad_norm, use_norm=norm)
        # A skipped step applies exact zeros: Adagrad then changes nothing at all.
        clipped = [tf.where(finite, g, tf.zeros_like(g)) for g in clipped]
        ctx.merge_call(self._apply, args=(clipped, finite))
        metrics["global_norm"] = norm
        metrics["finite"] = tf.cast(finite, tf.float32)
        return metrics

    def _loss_and_grads(self, batch, global_examples, global_tokens):
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            metrics = self._scaled_losses(batch, global_examples, global_tokens)
        # The embedding's gradient comes as one row per lookup, which the original's
        # clipping norm needs (grad_norm.py); the optimizer takes the summed rows.
        grads, row_sq, is_rows = grad_norm.split_gradients(
            tape.gradient(metrics["total_loss"], variables)
        )
        grads = [
            tf.zeros_like(v) if g is None else g for g, v in zip(grads, variables, strict=True)
        ]
        return metrics, grads, row_sq, is_rows

    def _scaled_losses(self, batch, global_examples, global_tokens):
        """This replica's share of the global batch's losses (they sum to the global ones).

        The family gives each loss term as this replica's sum and what it is divided by
        (`ModelFamily.loss_terms`): the examples (the pointer loss and the coverage loss,
        averages of per-example averages) or the real target tokens (the baseline's loss).
        Dividing a replica's sum by the global count makes the replicas' values add up to
        the global batch's; the objective (`ModelFamily.objective`) is linear in them, or
        a sum (--loss_reduction=sum), so it adds up too.

        Returns {"loss", "coverage_loss" (0 for a family without one), "total_loss" (the
        objective), "p_gen_mean" (1 for a family without a pointer), and any other term
        of the family}: the same keys on every replica, for the all-reduce.
        """
        hps, family = self.hps, self.family
        out = self.model(batch, training=True)
        mask = batch["dec_padding_mask"]
        terms = family.loss_terms(hps, out, batch)
        # max(tokens, 1): a batch without a real target token has 0 loss, not NaN.
        tokens = tf.maximum(global_tokens, 1.0)
        means = term_means(terms, {EXAMPLES: global_examples, TOKENS: tokens})
        total = family.objective(hps, means, terms.sums)
        metrics = {name: tf.cast(value, tf.float32) for name, value in means.items()}
        metrics.setdefault("coverage_loss", tf.zeros([]))
        # Without a pointer every word is generated (p_gen = 1): this replica's share of 1.
        metrics.setdefault("p_gen_mean", tf.reduce_sum(mask) / tokens)
        metrics["total_loss"] = tf.cast(total, tf.float32)
        return metrics

    def _apply(self, strategy, grads, finite):
        for var, grad in zip(self.model.trainable_variables, grads, strict=True):
            strategy.extended.update(
                _tf_variable(var),
                self.optimizer.update,
                args=(grad, self.optimizer.accumulator(var)),
                group=False,
            )
        strategy.extended.update(
            self.step, lambda s, f: s.assign_add(tf.cast(f, tf.int64)), args=(finite,), group=False
        )

    # ---------------------------------------------------------------- multi-worker
    def agree(self, *wanted: bool) -> list[bool]:
        """Whether any worker wants each of `wanted` (all workers must call this).

        Time- and signal-based decisions (save now, stop now) differ between machines;
        acting on them alone would leave the others waiting in a collective.
        """
        if self.num_workers == 1:
            return list(wanted)
        out = self._agree_fn(tf.constant([float(w) for w in wanted]))
        return [bool(v > 0) for v in self.strategy.experimental_local_results(out)[0].numpy()]

    def _agree_replicas(self, wanted):
        # tf.distribute has no MAX reduction; a sum of 0/1 flags is > 0 when any is set.
        # (The identity places the input on the replica's device, which all_reduce needs.)
        return self.strategy.run(
            lambda w: tf.distribute.get_replica_context().all_reduce(SUM, tf.identity(w)),
            args=(wanted,),
        )

    # ---------------------------------------------------------------- state
    def checkpoint(self, data=None, data_config=None, extra=None) -> tf.train.Checkpoint:
        """The training checkpoint: model, optimizer, step (and the data iterator with the
        settings it was made with, and `extra` objects such as the validation state)."""
        objects = {"model": self.model, "optimizer": self.optimizer, "step": self.step}
        if data is not None:
            objects.update(data=data, data_config=data_config)
        objects.update(extra or {})
        return tf.train.Checkpoint(**objects)

    def weights_checkpoint(self) -> tf.train.Checkpoint:
        """Model and step only (eval's best models; restores that reset Adagrad)."""
        return tf.train.Checkpoint(model=self.model, step=self.step)

    def load_tf1(self, path: str, *, converting: bool = False, with_optimizer: bool = True) -> None:
        """Start from an original TF1 checkpoint: weights, step, Adagrad slots if present
        (`converting`: the model is a conversion's target, whose added weights the
        checkpoint lacks; the family loads it: `ModelFamily.load_original`)."""
        result = self.family.load_original(
            self.model, path, with_optimizer=with_optimizer, converting=converting
        )
        if result.adagrad_slots:
            self.optimizer.assign_accumulators(result.adagrad_slots)
        if result.global_step is not None:
            self.step.assign(result.global_step)
        log.info(
            "Loaded TF1 checkpoint %s (TF %s names, step %s%s)",
            path,
            result.tf_version,
            result.global_step,
            ", with Adagrad slots" if result.adagrad_slots else "",
        )

    def all_finite(self) -> bool:
        return all(bool(np.all(np.isfinite(v.numpy()))) for v in self.model.weights)
