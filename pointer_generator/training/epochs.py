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

Early stopping (`--early_stop_epochs=N`, 0 = off): training ends, with a final checkpoint
as at `--max_steps`, after N epochs in a row whose validation NLL is not below the best
so far (`bad_epochs`, `should_stop`).

An epoch is `--epoch_steps` training steps, by default one pass over the training data
(its examples over the global batch, rounded up). The best and previous validation
values, the step of the best and the count of epochs without improvement are saved in
the training checkpoint, so a resumed job anneals and stops the same way (and the same
command run again after an early stop trains no further).
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


def bad_epochs(valid_nll: float, best: float, count: int) -> int:
    """The count of epochs in a row without improvement after one whose validation NLL
    was `valid_nll` (`best`: the lowest earlier value, inf if none; `count`: the count
    before it). An epoch improves when its NLL is below the best (equal, NaN: it does not)."""
    return 0 if valid_nll < best else count + 1


def should_stop(count: int, patience: int) -> bool:
    """Whether training stops after `count` epochs in a row without improvement, with
    `--early_stop_epochs=patience` (0 = never)."""
    return patience > 0 and count >= patience


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
    """The lowest and the last validation NLL per token (inf before the first), the step
    of the lowest (-1 before the first), and the epochs in a row without improvement
    (early stopping). A checkpoint of a run from before `step_of_best` and `bad_epochs`
    existed restores the other two and leaves these at -1 and 0 (`restore_state`)."""

    def __init__(self):
        super().__init__(name="validation")
        self.best = tf.Variable(np.inf, dtype=tf.float64, trainable=False, name="best")
        self.previous = tf.Variable(np.inf, dtype=tf.float64, trainable=False, name="previous")
        # (Not `best_step`: readers find the best NLL by the key prefix `validation/best`.)
        self.step_of_best = tf.Variable(-1, dtype=tf.int64, trainable=False, name="step_of_best")
        self.bad_epochs = tf.Variable(0, dtype=tf.int64, trainable=False, name="bad_epochs")


def restore_state(state: ValidationState, path: str) -> bool:
    """Take `state` from the checkpoint `path` if it has one (runs without validation do
    not); returns whether it had. The variables the checkpoint lacks (an older run's:
    `step_of_best`, `bad_epochs`) keep their initial values: a restore only fills what it
    finds, and `expect_partial` silences the rest of the checkpoint (model, optimizer)."""
    if not any(k.startswith("validation/") for k in checkpointing.variable_shapes(path)):
        return False
    tf.train.Checkpoint(validation=state).restore(path).expect_partial()
    return True


def early_stop_line(state: ValidationState, step: int) -> str:
    """The line training logs when it stops early (or finds it has stopped)."""
    best = float(state.best.numpy())
    step_of_best = int(state.step_of_best.numpy())
    where = f" at step {step_of_best}" if step_of_best >= 0 else ""
    count = int(state.bad_epochs.numpy())
    return (
        f"early stop: validation perplexity has not improved for {count} "
        f"epoch{'s' if count != 1 else ''} (best {math.exp(min(best, 700.0)):.5g}{where}); "
        f"stopping at step {step}"
    )


class Epochs:
    """The epoch-boundary work of one training job (see the module docstring).

    Args:
      trainer: the `Trainer` (its model, optimizer and step are used).
      vocab: the vocabulary, for the validation pipeline.
      exp: the experiment (best models and summaries go to its eval/).
      cfg: the `TrainConfig` (data paths, epoch_steps, early_stop_epochs).
      chief: whether this worker writes (every worker validates, so all anneal alike).
    """

    def __init__(self, trainer, vocab, exp, cfg, chief: bool = True):
        hps = trainer.hps
        self.trainer, self.vocab, self.exp, self.chief = trainer, vocab, exp, chief
        self.valid_data_path = cfg.valid_data_path
        self.patience = cfg.early_stop_epochs if self.valid_data_path else 0
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
        if self.valid_data_path:
            restore_state(self.state, path)

    def stopped(self) -> bool:
        """Whether early stopping ends training now: after the epoch that made the count
        of epochs without improvement reach `--early_stop_epochs`, or at the start of a
        run whose restored count already has (the same command run again)."""
        return should_stop(int(self.state.bad_epochs.numpy()), self.patience)

    def stop_line(self, step: int) -> str:
        """What training logs when `stopped()`."""
        return early_stop_line(self.state, step)

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
        """At the end of an epoch: validate, keep the best model, anneal, count the epochs
        without improvement (`stopped()` then says whether training ends). Returns the
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
        count = bad_epochs(nll, best, int(self.state.bad_epochs.numpy()))
        self.state.bad_epochs.assign(count)
        if improved:
            self.state.best.assign(nll)  # (a NaN is never the best)
            self.state.step_of_best.assign(step)
        self.state.previous.assign(nll)
        note = ", the best so far" if improved else ""
        if not improved and self.patience:
            note = f", no improvement for {count} of {self.patience} epochs (--early_stop_epochs)"
        log.info(
            "epoch %d (step %d): validation perplexity %.5g (loss %.4f over %d tokens)%s",
            step // self.steps,
            step,
            ppl,
            nll,
            int(sums["tokens"]),
            note,
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
