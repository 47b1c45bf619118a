"""Epochs, as the earlier families were trained (spec abs-ras.md §2.5, §3.4).

At the start of every epoch the embedding rows may be renormalised (ABS: every row of
E, F and G to L2 norm <= 1, NAMAS's `renorm_tables`). At its end, training measures the
validation perplexity of `--valid_data_path` (TensorBoard `valid/perplexity` and
`valid/loss` in eval/), keeps the weights as `eval/bestmodel-<step>` when the perplexity
is the lowest so far (the eval job's best-model files, so `--restore_best_model` and
decode's best-model use work the same), and anneals plain SGD's learning rate
(`--lr_decay`): divided by `--lr_decay_factor` when the perplexity is no better than the
best so far ("plateau", the papers' "halved when validation does not improve") or worse
than the previous epoch's ("previous", NAMAS's `run_valid`).

An epoch is `--epoch_steps` training steps, by default one pass over the training data
(its examples over the global batch, rounded up). The best and previous validation
values are saved in the training checkpoint, so a resumed job anneals the same way.
"""

from __future__ import annotations

import logging
import math

import keras
import numpy as np
import tensorflow as tf

from pointer_generator.errors import FlagError
from pointer_generator.runtime import checkpointing, locks, owned_files, tensorboard

log = logging.getLogger(__name__)


def anneal(
    learning_rate: float, valid_nll: float, best: float, previous: float, rule: str, factor: float
) -> float:
    """The learning rate for the next epoch after one whose validation NLL was `valid_nll`
    (`best`, `previous`: the lowest and the last earlier values, inf if none)."""
    if rule == "plateau" and not valid_nll < best:
        return learning_rate / factor
    if rule == "previous" and valid_nll > previous:
        return learning_rate / factor
    return learning_rate


def embedding_tables(model) -> list:
    """The embedding matrices of every Keras `Embedding` layer of `model`."""
    return [
        layer.embeddings
        for layer in model._flatten_layers(include_self=False)
        if isinstance(layer, keras.layers.Embedding)
    ]


def renormalise_rows(variable, max_norm: float) -> None:
    """Rescale each row longer than `max_norm` (L2) to exactly `max_norm` (Torch's
    `renorm(2, 1, maxnorm)`, which NAMAS calls on its lookup tables)."""
    table = tf.convert_to_tensor(variable)
    norms = tf.norm(table, axis=1, keepdims=True)
    scale = tf.where(norms > max_norm, max_norm / tf.maximum(norms, 1e-30), tf.ones_like(norms))
    variable.assign(table * scale)


def steps_per_epoch(data_path: str, batch_size: int) -> int:
    """One pass over the training files, in global batches (the last one partial)."""
    from pointer_generator.data.bin_dataset import list_files
    from pointer_generator.data.binfile import count_records

    examples = sum(count_records(f) for f in list_files(data_path))
    return max(1, math.ceil(examples / batch_size))


class ValidationState(tf.Module):
    """The lowest and the last validation NLL per token (inf before the first)."""

    def __init__(self):
        super().__init__(name="validation")
        self.best = tf.Variable(np.inf, dtype=tf.float64, trainable=False, name="best")
        self.previous = tf.Variable(np.inf, dtype=tf.float64, trainable=False, name="previous")


class Epochs:
    """The epoch-boundary work of one training job (see the module docstring).

    Args:
      trainer: the `Trainer` (its model, optimizer and step are used).
      vocab: the vocabulary, for the validation pipeline.
      exp: the experiment (best models and summaries go to its eval/).
      cfg: the `TrainConfig` (data paths, epoch_steps).
      chief: whether this worker writes (every worker validates, so all anneal alike).
    """

    def __init__(self, trainer, vocab, exp, cfg, chief: bool = True):
        hps = trainer.hps
        self.trainer, self.vocab, self.exp, self.chief = trainer, vocab, exp, chief
        self.valid_data_path = cfg.valid_data_path
        self.state = ValidationState()
        self.tables = []
        if hps.embedding_max_norm > 0:
            self.tables = embedding_tables(trainer.model)
            if not self.tables:
                raise FlagError(
                    f"--embedding_max_norm: the {hps.model} model has no Embedding layer"
                )
        self.active = bool(self.valid_data_path or self.tables)
        self.steps = 0
        if self.active:
            self.steps = cfg.epoch_steps or steps_per_epoch(cfg.data_path, hps.batch_size)
        self._evaluator = None
        self._writer = None
        self._best_models = None

    def checkpoint_objects(self) -> dict:
        """What the training checkpoint saves for the epochs (nothing when inactive)."""
        return {"validation": self.state} if self.valid_data_path else {}

    def restore(self, path: str) -> None:
        """Take the validation state from `path` if it has one (older runs do not)."""
        if self.valid_data_path and any(
            k.startswith("validation/") for k in checkpointing.variable_shapes(path)
        ):
            tf.train.Checkpoint(validation=self.state).restore(path).expect_partial()

    def start(self) -> None:
        """Take eval/'s lock (the best models are written there) and say what happens."""
        if not self.active:
            return
        if self.valid_data_path and self.chief:
            owned_files.make_dir(self.exp.eval_dir)
            locks.acquire(
                self.exp.eval_dir,
                "training job's validation",
                "stop the eval job of this experiment, or train without --valid_data_path",
            )
        what = []
        if self.tables:
            what.append(f"embedding rows renormalised to <= {self.trainer.hps.embedding_max_norm}")
        if self.valid_data_path:
            what.append(f"validation on {self.valid_data_path}")
        log.info("Epochs of %d steps: %s", self.steps, "; ".join(what))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close_quietly()
        if self.valid_data_path and self.chief:
            locks.release(self.exp.eval_dir)

    # ------------------------------------------------------------------ boundaries
    def before_step(self, step: int) -> None:
        """At the start of an epoch (step = the steps done so far): renormalise."""
        if self.tables and step % self.steps == 0:
            max_norm = self.trainer.hps.embedding_max_norm
            for table in self.tables:
                renormalise_rows(table, max_norm)

    def after_step(self, step: int) -> dict | None:
        """At the end of an epoch: validate, keep the best model, anneal. Returns the
        validation metrics, or None when `step` ends no epoch or nothing is validated."""
        if not self.valid_data_path or step % self.steps:
            return None
        from pointer_generator.evaluation.evaluate import Evaluator, dataset_sums

        trainer, hps = self.trainer, self.trainer.hps
        if self._evaluator is None:
            self._evaluator = Evaluator(hps, self.vocab.size(), model=trainer.model)
        sums = dataset_sums(self._evaluator, self.vocab, self.valid_data_path)
        nll = sums["token_nll_sum"] / sums["tokens"]
        ppl = math.exp(min(nll, 700.0))
        best, previous = float(self.state.best.numpy()), float(self.state.previous.numpy())
        metrics = {"valid_loss": nll, "valid_perplexity": ppl}
        optimizer = trainer.optimizer
        if hps.lr_decay != "none":
            lr = float(optimizer.learning_rate.numpy())
            new_lr = anneal(lr, nll, best, previous, hps.lr_decay, hps.lr_decay_factor)
            if new_lr != lr:
                optimizer.learning_rate.assign(new_lr)
                log.info("Learning rate %.6g -> %.6g (--lr_decay=%s)", lr, new_lr, hps.lr_decay)
        if hasattr(optimizer, "learning_rate") and isinstance(optimizer.learning_rate, tf.Variable):
            metrics["learning_rate"] = float(optimizer.learning_rate.numpy())
        improved = nll < best
        self.state.best.assign(min(nll, best))
        self.state.previous.assign(nll)
        log.info(
            "epoch %d (step %d): validation perplexity %.5g (loss %.4f over %d tokens)%s",
            step // self.steps,
            step,
            ppl,
            nll,
            int(sums["tokens"]),
            ", the best so far" if improved else "",
        )
        if self.chief:
            self._write(metrics, step, improved)
        return metrics

    def _write(self, metrics: dict, step: int, improved: bool) -> None:
        if self._writer is None:
            owned_files.make_dir(self.exp.eval_dir)
            self._writer = tensorboard.ScalarWriter(self.exp.eval_dir)
            self._best_models = checkpointing.BestModels(
                self.exp.eval_dir, self.trainer.weights_checkpoint()
            )
        self._writer.write(metrics, step)
        self._writer.flush()
        if improved:
            self._best_models.save(step)
