"""Eval mode (spec 1.5): the concurrent validation job, and a single-pass evaluation.

Concurrent (the original): forever (or `--max_eval_iterations` batches), load the newest
train checkpoint when it changes (waiting `--eval_interval_secs` while there is none, and
retrying when one disappears or is half-written), evaluate one batch, update the running
average of the NLL loss (decay 0.99, clipped at 12) and save `eval/bestmodel-<step>`
whenever the running average is the lowest so far. An addition: `--eval_idle_secs=S` ends
the loop once no new checkpoint has come for S seconds (training has ended); while the
checkpoint stays the same the job says so once a minute.

Single pass (an addition; the original allowed single_pass in decode mode only): the
newest train checkpoint's exact loss over every example of `--data_path` once, printed
and written to `eval/single_pass_loss.txt`.
"""

from __future__ import annotations

import logging
import math
import os
import time

import tensorflow as tf

from pointer_generator.errors import CheckpointError, DataError, OutputError
from pointer_generator.evaluation.config import EvalConfig
from pointer_generator.hparams import HParams
from pointer_generator.models import family_registry
from pointer_generator.models.family import EXAMPLES, TOKENS, token_nll_sum
from pointer_generator.runtime import (
    checkpointing,
    interrupts,
    locks,
    owned_files,
    staging,
    tensorboard,
)
from pointer_generator.runtime.experiment import Experiment
from pointer_generator.runtime.progress import status

log = logging.getLogger(__name__)

RUNNING_AVG_DECAY = 0.99
RUNNING_AVG_CLIP = 12.0
FLUSH_EVERY_STEPS = 100
# The key of a loss term's sum among `Evaluator.evaluate`'s values (`sum/loss`, ...).
SUM_PREFIX = "sum/"


def running_avg_loss(
    loss: float,
    running_avg: float | None,
    decay: float = RUNNING_AVG_DECAY,
    clip: float = RUNNING_AVG_CLIP,
) -> float:
    """The original's early-stopping signal: r = loss at first, then
    r = decay * r + (1 - decay) * loss; finally r = min(r, clip).

    (The original used 0 for "no value yet"; None is used here, so a true 0 loss is fine.)
    """
    r = loss if running_avg is None else running_avg * decay + (1 - decay) * loss
    return min(r, clip)


class Evaluator:
    """The eval model (no optimizer) and its compiled loss computation.

    Args:
      hps: hyper-parameters of the model.
      vocab_size: `Vocab.size()`.
      jit_compile: compile the evaluation step with XLA.
    """

    def __init__(self, hps: HParams, vocab_size: int, jit_compile: bool = False, model=None):
        self.hps = hps
        # What the model's loss is made of (models/family.py): the eval job adds up the
        # terms' sums and divides them by their counts, whatever the family.
        self.family = family_registry.of(hps)
        # A training job's validation passes its own model (the weights being trained).
        self.model = model if model is not None else family_registry.build_model(hps, vocab_size)
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="global_step")
        self.checkpoint = tf.train.Checkpoint(model=self.model, step=self.step)
        self._jit_compile = jit_compile
        self._eval = None
        self._per = None  # {term: EXAMPLES or TOKENS}, known once a batch is traced

    def load(self, path: str) -> None:
        """Restore weights and step from a training checkpoint (its extras are ignored)."""
        checkpointing.restore(self.checkpoint, path, self.model)

    def evaluate(self, batch) -> dict:
        """Losses of one batch of model inputs as Python floats.

        `sum/<term>` for every loss term of the family (`ModelFamily.loss_terms`),
        `examples`, `token_nll_sum`, `tokens` are sums, for exact averages over many
        batches (`values`); `loss`, `coverage_loss` (0 for a family without one),
        `total_loss`, `p_gen_mean` (1 for a family without a pointer) and the family's
        other terms are the batch's values, as the training step defines them.
        """
        if self._eval is None:
            # Batches differ in encoder length (and the last one in size): one trace with
            # every dimension left open instead of one per shape.
            spec = {
                k: tf.TensorSpec([None] * len(v.shape), tf.as_dtype(v.dtype))
                for k, v in batch.items()
            }
            self._eval = tf.function(
                self._eval_batch,
                input_signature=[spec],
                jit_compile=self._jit_compile,
                autograph=False,  # explicit control flow (as the train step's)
            )
        sums = {k: float(v) for k, v in self._eval(batch).items()}
        return {"coverage_loss": 0.0, "p_gen_mean": 1.0, **sums, **self.values(sums)}

    def values(self, sums: dict) -> dict:
        """The loss terms' values over what `sums` adds up (one batch's `evaluate`, or
        many added, `dataset_sums`): each term's sum divided by its count, and
        `total_loss`, the family's objective."""
        counts = {EXAMPLES: sums["examples"], TOKENS: max(sums["tokens"], 1.0)}
        term_sums = {k[len(SUM_PREFIX) :]: v for k, v in sums.items() if k.startswith(SUM_PREFIX)}
        means = {name: total / counts[self._per[name]] for name, total in term_sums.items()}
        return {**means, "total_loss": self.family.objective(self.hps, means, term_sums)}

    def _eval_batch(self, batch):
        out = self.model(batch, training=False)
        mask = batch["dec_padding_mask"]
        terms = self.family.loss_terms(self.hps, out, batch)
        self._per = dict(terms.per)  # (Python, at tracing: the same for every batch)
        result = {SUM_PREFIX + k: tf.cast(v, tf.float32) for k, v in terms.sums.items()}
        result.update(
            examples=tf.cast(tf.shape(mask)[0], tf.float32),
            token_nll_sum=tf.cast(token_nll_sum(out, batch), tf.float32),
            tokens=tf.reduce_sum(mask),
        )
        return result


def run_eval_mode(hps: HParams, vocab, cfg: EvalConfig) -> dict | None:
    """Eval mode: concurrent validation, or --single_pass evaluation."""
    exp = Experiment(os.path.join(cfg.log_root, cfg.exp_name))
    owned_files.make_dir(exp.eval_dir)
    if cfg.distributed:
        log.info("Eval runs on one device (--distribution_strategy applies to training)")
    evaluator = Evaluator(hps, vocab.size(), jit_compile=cfg.xla)
    if cfg.single_pass:
        return single_pass(evaluator, vocab, exp, cfg.data_path, cfg.input_gap)
    concurrent(
        evaluator,
        vocab,
        exp,
        cfg.data_path,
        cfg.eval_interval_secs,
        cfg.max_eval_iterations,
        idle_secs=cfg.eval_idle_secs,
    )
    return None


def _dataset(data_path: str, vocab, hps: HParams, single_pass: bool, control: str | None = None):
    from pointer_generator.data import input_pipeline

    if single_pass and hps.static_shapes:
        # Padding every batch to max_enc_steps would only cost time here: length buckets
        # keep the compiles few and the padding short.
        hps = hps.replace(static_shapes=None)
    dataset = input_pipeline.make_dataset(
        data_path, vocab, hps, "eval", single_pass, control=control
    )
    return dataset.map(input_pipeline.model_inputs)


def concurrent(
    evaluator: Evaluator,
    vocab,
    exp: Experiment,
    data_path: str,
    interval_secs: float,
    max_iterations: int = 0,
    idle_secs: float = 0.0,
) -> float | None:
    """The original's eval loop; returns the final running average (None if none).

    idle_secs: end once the newest checkpoint (or, before the first, none) has stayed the
    same for this long (0 = never, as the original)."""
    from pointer_generator.data.input_pipeline import data_errors

    hps = evaluator.hps
    logged = evaluator.family.logged(hps)
    # One eval job per experiment: two would race to rewrite the best models.
    locks.acquire(exp.eval_dir, "eval job", "give this run another --exp_name")
    best_models = checkpointing.BestModels(exp.eval_dir, evaluator.checkpoint)
    writer = tensorboard.ScalarWriter(exp.eval_dir, tags=evaluator.family.scalar_tags)
    batches = iter(_dataset(data_path, vocab, hps, single_pass=False))
    running_avg, best, loaded, done = None, None, None, 0
    waiting_logged = False
    idle = _IdleClock(idle_secs)
    try:
        while not max_iterations or done < max_iterations:
            interrupts.check()
            latest = checkpointing.latest_checkpoint(exp.train_dir)
            if idle.ended(latest, exp.train_dir):
                break
            if latest is None:
                if not waiting_logged:
                    log.info("Waiting for a checkpoint in %s ...", exp.train_dir)
                    waiting_logged = True
                time.sleep(interval_secs)
                continue
            if latest != loaded:
                try:
                    evaluator.load(latest)
                except (CheckpointError, *checkpointing.TRANSIENT_ERRORS) as e:
                    if _still_there(latest, exp.train_dir) and isinstance(e, CheckpointError):
                        raise  # a real mismatch with the flags, not a race with training
                    # Rotated away or replaced while being read: try the newest soon.
                    log.info("Could not load %s (%s); retrying", latest, type(e).__name__)
                    time.sleep(interval_secs)
                    continue
                loaded = latest
            t0 = time.time()
            with data_errors():
                metrics = evaluator.evaluate(next(batches))
            train_step = int(evaluator.step.numpy())
            running_avg = running_avg_loss(metrics["loss"], running_avg)
            metrics["running_avg_loss"] = running_avg
            log.info(
                "eval step %d (checkpoint %s): loss %.4f%s, running avg %.4f, %.2fs",
                train_step,
                os.path.basename(loaded),
                metrics["loss"],
                "".join(f", {n.replace('_', ' ')} {metrics[n]:.4f}" for n in logged),
                running_avg,
                time.time() - t0,
            )
            writer.write(_summary_metrics(metrics, evaluator), train_step)
            if best is None or running_avg < best:
                best = running_avg
                path = best_models.save(train_step)
                log.info("New best running average %.4f: %s", best, path)
            if train_step % FLUSH_EVERY_STEPS == 0:
                writer.flush()
            done += 1
    finally:
        writer.close()
        locks.release(exp.eval_dir)
    return running_avg


class _IdleClock:
    """How long the newest checkpoint has stayed the same: a line a minute while it does
    (the job is not stuck: it evaluates more batches of it, as the original), and the end
    of the job after `idle_secs` (0 = never)."""

    NOTICE_SECS = 60.0

    def __init__(self, idle_secs: float):
        self.idle_secs = idle_secs
        self.newest = None
        self.since = self.noticed = time.monotonic()

    def ended(self, newest: str | None, train_dir: str) -> bool:
        now = time.monotonic()
        if newest != self.newest:
            self.newest, self.since, self.noticed = newest, now, now
            return False
        unchanged = now - self.since
        what = os.path.basename(newest) if newest else "no checkpoint yet"
        if self.idle_secs and unchanged >= self.idle_secs:
            log.info(
                "No new checkpoint in %s for %.0f s (newest: %s): eval ends (--eval_idle_secs)",
                train_dir,
                unchanged,
                what,
            )
            return True
        if now - self.noticed >= self.NOTICE_SECS:
            self.noticed = now
            ending = (
                f"; ends after {self.idle_secs:.0f} s without one"
                if self.idle_secs
                else " (--eval_idle_secs=S ends eval after S s without one)"
            )
            log.info(
                "Waiting for training's next checkpoint in %s: %s unchanged for %.0f s, "
                "evaluating more batches of it meanwhile%s",
                train_dir,
                what,
                unchanged,
                ending,
            )
        return False


def input_gap_line(other: float, gap: float) -> str:
    """The report of --input_gap: the loss on other articles and what the gap means."""
    text = (
        f"Loss with every abstract paired with another example's article: {other:.6f} "
        f"(input gap {gap:+.4f} nats)"
    )
    if gap < INPUT_GAP_WARNING:
        return (
            f"WARNING: {text}: the model barely uses its input; its summaries hardly depend "
            "on the article (docs/families.md: initialisation and recipes that learn)"
        )
    return text + ": the model reads its input"


def history_gap_line(other: float, gap: float) -> str:
    """The report of --input_gap's second control: the loss with every decoder fed another
    example's summary words, and what the difference means."""
    text = (
        f"Loss with every decoder fed another example's summary words: {other:.6f} "
        f"(history gap {gap:+.4f} nats)"
    )
    if gap < HISTORY_GAP_WARNING:
        return (
            f"WARNING: {text}: the model barely reads the words it has written, so it "
            "repeats them when it decodes (docs/families.md: the pointer-generator's "
            "Adagrad accumulator)"
        )
    return text + ": the model reads what it has written"


def _still_there(path: str, train_dir: str) -> bool:
    """True if `path` is complete and still the newest checkpoint of `train_dir`."""
    return (
        tf.io.gfile.exists(path + ".index") and checkpointing.latest_checkpoint(train_dir) == path
    )


def _summary_metrics(metrics: dict, evaluator: Evaluator) -> dict:
    return {
        "loss": metrics["loss"],
        "running_avg_loss": metrics["running_avg_loss"],
        **tensorboard.model_metrics(metrics, evaluator.family.scalars(evaluator.hps)),
    }


def dataset_sums(evaluator: Evaluator, vocab, data_path: str, control: str | None = None) -> dict:
    """Loss sums of the evaluator's current weights over every example of `data_path`
    once (see `Evaluator.evaluate`); with a `control` ("articles", "summaries":
    `data/controls.py`) every abstract is paired with another example's article, or every
    decoder fed another example's summary words. Raises DataError when it holds no
    example."""
    from pointer_generator.data.input_pipeline import data_errors

    sums = dict.fromkeys(("examples", "token_nll_sum", "tokens"), 0.0)
    with data_errors():
        batches = _dataset(data_path, vocab, evaluator.hps, True, control)
        for batch in batches:
            m = evaluator.evaluate(batch)
            for k in m:
                if k in sums or k.startswith(SUM_PREFIX):
                    sums[k] = sums.get(k, 0.0) + m[k]
    if not sums["examples"]:
        raise DataError(f"{data_path!r} gave no example to evaluate")
    return sums


def perplexity(sums: dict) -> float:
    """exp(mean NLL per target token), [STOP] included (NAMAS counts its implicit </s>)."""
    return math.exp(min(sums["token_nll_sum"] / max(sums["tokens"], 1.0), 700.0))


def _loss(sums: dict, evaluator: Evaluator) -> float:
    """The NLL loss over what `sums` adds up, as the family defines it: pointer-mode NLL
    averages per-example averages over the examples; the baseline's averages over all
    real target tokens (the original's sequence_loss definition)."""
    return evaluator.values(sums)["loss"]


def dataset_loss(evaluator: Evaluator, vocab, data_path: str, control: str | None = None):
    """The NLL loss of the evaluator's weights over every example of `data_path` once;
    with the "articles" control, with every abstract paired with another example's
    article (`--input_gap`: a model that reads its input does clearly worse); with the
    "summaries" control, with every decoder fed another example's summary words (its
    history gap: a decoder that reads what it has written does clearly worse)."""
    return _loss(dataset_sums(evaluator, vocab, data_path, control), evaluator)


# Below this many nats between the loss on other articles and on the right ones, a model
# does not use its input (issue 29: ABS under Keras' initialisation had 0.001).
INPUT_GAP_WARNING = 0.05
# The same for the decoder's own previous words (issue 44: the pointer-generator trained
# 6 passes with the original's Adagrad accumulator 0.1 had 0.02, and stuttered).
HISTORY_GAP_WARNING = 0.1


def single_pass(
    evaluator: Evaluator, vocab, exp: Experiment, data_path: str, input_gap: bool = False
) -> dict:
    """Exact losses of the newest train checkpoint over the whole of `data_path`.

    The losses are those of one batch holding every example (`_loss`). With `input_gap`
    the same loss with every abstract paired with another example's article is measured
    too, and their difference reported: a model that reads its input does clearly worse
    on the wrong articles; one whose loss does not change writes summaries that do not
    depend on the article.
    """
    path = checkpointing.latest_checkpoint(exp.train_dir)
    if path is None:
        raise CheckpointError(
            f"no checkpoint in {exp.train_dir} to evaluate"
            f"{checkpointing.none_intact_note(exp.train_dir)}; train first"
        )
    evaluator.load(path)
    # The pass prints nothing until it ends (tens of seconds on a CPU): say what it does.
    log.info(
        "Evaluating %s once with %s (compiling first, then every batch)%s ...",
        data_path,
        os.path.basename(path),
        ", then with the articles and then the summaries swapped (--input_gap)"
        if input_gap
        else "",
    )
    t0 = time.time()
    sums = dataset_sums(evaluator, vocab, data_path)
    values = evaluator.values(sums)
    loss = values["loss"]
    family = evaluator.family
    result = {
        "checkpoint": path,
        "step": int(evaluator.step.numpy()),
        "examples": int(sums["examples"]),
        "tokens": int(sums["tokens"]),
        "loss": loss,
        "perplexity": perplexity(sums),
    }
    # The scalars the family reports (the coverage and total loss of a coverage model).
    result.update({name: values[name] for name in family.scalars(evaluator.hps)})
    if input_gap:
        if sums["examples"] < 2:
            raise DataError(
                f"--input_gap pairs each abstract with another example's article: "
                f"{data_path} holds only one example; give it at least 2"
            )
        other = dataset_loss(evaluator, vocab, data_path, control="articles")
        result["loss_other_articles"] = other
        result["input_gap"] = other - loss
        history = dataset_loss(evaluator, vocab, data_path, control="summaries")
        result["loss_other_summaries"] = history
        result["history_gap"] = history - loss
    text = "".join(f"{k}: {v}\n" for k, v in result.items())
    try:
        staging.replace_file(exp.single_pass_loss, text)
    except OSError as e:
        raise OutputError(f"cannot write {exp.single_pass_loss}: {e.strerror or e}") from None
    line = (
        f"Single-pass eval of {os.path.basename(path)} (step {result['step']}) over "
        f"{result['examples']} examples in {time.time() - t0:.1f}s: loss {loss:.6f}"
    )
    line += "".join(
        f", {name.replace('_', ' ')} {result[name]:.6f}" for name in family.logged(evaluator.hps)
    )
    print(line, flush=True)
    if input_gap:
        print(input_gap_line(result["loss_other_articles"], result["input_gap"]), flush=True)
        print(history_gap_line(result["loss_other_summaries"], result["history_gap"]), flush=True)
    status(f"Written to {exp.single_pass_loss}")
    return result
