"""Train mode (spec 1.4, 1.7, 4.9, 4.10): the training loop around `trainer.Trainer`.

Checkpoints: every `--save_checkpoint_secs`, at `--max_steps` or an early stop
(`--early_stop_epochs`, epochs.py), on SIGTERM / Ctrl-C, and when a run starts from
scratch (like the original's Supervisor). A restarted job resumes from the newest
checkpoint: weights, Adagrad accumulators, step, and the input pipeline's position (the
tf.data iterator is part of the checkpoint on single-worker jobs). The one-off operations
`--convert_to_coverage_model` and `--restore_best_model` are started here (conversions.py).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import threading

import keras
import tensorflow as tf

from pointer_generator.errors import NonFiniteLossError, OutputError
from pointer_generator.hparams import HParams
from pointer_generator.models import family_registry
from pointer_generator.runtime import (
    checkpointing,
    experiment_settings,
    interrupts,
    locks,
    owned_files,
    tensorboard,
)
from pointer_generator.runtime.experiment import VOCAB_METADATA, Experiment
from pointer_generator.runtime.progress import Progress, status
from pointer_generator.training import distribution
from pointer_generator.training.config import TrainConfig
from pointer_generator.training.conversions import convert, restore_best_model
from pointer_generator.training.epochs import Epochs
from pointer_generator.training.trainer import Trainer

log = logging.getLogger(__name__)

FLUSH_EVERY_STEPS = 100  # the original flushed its summary writer every 100 steps


# ------------------------------------------------------------------------------ helpers
class StopRequest:
    """SIGTERM and the first Ctrl-C ask the loop to stop after the current step.

    The loop then saves a checkpoint and exits normally; a second Ctrl-C interrupts at
    once (KeyboardInterrupt).
    """

    def __init__(self):
        self.requested = False
        self._previous = {}

    def _handle(self, signum, frame):
        self.requested = True
        log.warning(
            "Received %s: stopping after this step and saving a checkpoint",
            signal.Signals(signum).name,
        )
        if signum == signal.SIGINT:
            # The next Ctrl-C stops at once, without the save; its exception is raised
            # once out of TensorFlow's code, where it would corrupt the heap (interrupts).
            signal.signal(signal.SIGINT, interrupts.handler())

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                if signal.getsignal(sig) is signal.SIG_IGN:
                    continue  # a job started with `&` or nohup keeps ignoring it
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        return False


def make_iterator(data_path: str, vocab, hps: HParams, trainer: Trainer, seed: int):
    """This worker's training batches (model inputs only), as a checkpointable iterator."""
    from pointer_generator.data import input_pipeline

    worker_batch = hps.batch_size // trainer.num_workers
    dataset = input_pipeline.make_dataset(
        data_path,
        vocab,
        hps.replace(batch_size=worker_batch),
        "train",
        single_pass=False,
        seed=seed,
        num_replicas=trainer.num_workers,
        replica_index=distribution.worker_index(trainer.strategy),
    )
    options = tf.data.Options()
    # The pipeline's lookup tables and logging ops hold no position: saving the iterator
    # may ignore them (they are rebuilt from the flags when the job restarts).
    options.experimental_external_state_policy = tf.data.experimental.ExternalStatePolicy.IGNORE
    return iter(dataset.map(input_pipeline.model_inputs).with_options(options))


def write_projector_files(exp: Experiment, vocab, checkpoint_path: str) -> None:
    """vocab_metadata.tsv + projector_config.pbtxt pointing at the embedding (spec 4.3)."""
    key = family_registry.embedding_key(checkpointing.variable_shapes(checkpoint_path))
    if key is None:
        log.warning("No embedding found in %s; projector config not written", checkpoint_path)
        return
    try:
        # Replaced, never written in place: a link planted there is not followed.
        owned_files.replace_file(exp.vocab_metadata, vocab.metadata_text())
        tensorboard.write_projector_config(exp.train_dir, key, VOCAB_METADATA)
    except (OSError, tf.errors.OpError) as e:
        raise OutputError(
            f"cannot write the embedding projector files in {exp.train_dir}: "
            f"{checkpointing.write_failure_reason(e)}"
        ) from None


def _worker_directory(exp: Experiment, trainer: Trainer) -> str:
    """Where this worker saves: train/ on the chief, a scratch directory elsewhere.

    Every multi-worker replica must take part in saving; the others' copies are deleted.
    """
    if distribution.is_chief(trainer.strategy):
        return exp.train_dir
    index = distribution.worker_index(trainer.strategy)
    return os.path.join(exp.root, f".worker_{index}_scratch")


def _remove_scratch(directory: str) -> None:
    """Remove a non-chief worker's scratch folder (its copies of the chief's saves).
    shutil's rmtree, not TensorFlow's: that one follows links to folders inside and
    deletes what they point to."""
    owned_files.refuse_link(directory)
    shutil.rmtree(directory, ignore_errors=True)


# ------------------------------------------------------------------------------ modes
def run_train_mode(hps: HParams, vocab, cfg: TrainConfig) -> None:
    """Train mode: a one-off conversion, or the training loop."""
    exp = Experiment(os.path.join(cfg.log_root, cfg.exp_name))
    try:
        if cfg.conversion:
            lock_train_dir(exp)
            conversion = family_registry.of(hps).conversion(cfg.conversion)
            path = convert(conversion, hps, vocab, exp, cfg.tf1_checkpoint)
        elif cfg.restore_best_model:
            lock_train_dir(exp)
            path = restore_best_model(hps, vocab, exp)
        else:
            return _train(hps, vocab, cfg, exp)
        # The model now in train/ is made with these settings.
        experiment_settings.write(exp.root, cfg.settings)
        return path
    finally:
        locks.release(exp.train_dir)


def lock_train_dir(exp: Experiment) -> None:
    """Become train/'s one writer (a second training job or conversion is refused)."""
    locks.acquire(exp.train_dir, "training job", "give this run another --exp_name")


def _train(hps: HParams, vocab, cfg: TrainConfig, exp: Experiment) -> None:
    strategy = distribution.make_strategy(cfg.distribution_strategy, cfg.tpu)
    keras.utils.set_random_seed(hps.seed)
    if cfg.debug:
        tf.debugging.enable_check_numerics()
    try:
        trainer = Trainer(hps, vocab.size(), strategy, jit_compile=cfg.xla)
        status(trainer.model.parameter_summary())
        log.info("Devices: %s", distribution.describe(strategy))
        train_loop(trainer, vocab, exp, cfg)
    finally:
        if cfg.debug:
            tf.debugging.disable_check_numerics()


def _start(trainer: Trainer, vocab, exp: Experiment, cfg: TrainConfig, epochs: Epochs):
    """Restore or initialise the state; returns (iterator, checkpoints, fresh_start)."""
    chief = distribution.is_chief(trainer.strategy)
    if chief:
        lock_train_dir(exp)
        latest = checkpointing.recover_train_dir(exp.train_dir)
    else:
        latest = checkpointing.latest_checkpoint(exp.train_dir)
    if latest:
        checkpointing.restore(trainer.checkpoint(), latest, trainer.model)
        epochs.restore(latest)
        log.info("Resuming from %s (step %d)", latest, int(trainer.step.numpy()))
        if cfg.tf1_checkpoint:
            log.warning("--tf1_checkpoint ignored: train/ already has checkpoints")
    elif cfg.tf1_checkpoint:
        trainer.load_tf1(cfg.tf1_checkpoint)
    if chief:
        # Only now: the flags have passed the checkpoint's checks.
        experiment_settings.write(exp.root, cfg.settings)
    keep_data = cfg.checkpoint_data_position and trainer.num_workers == 1
    iterator, data_config = training_data(trainer, vocab, cfg, latest if keep_data else None)
    directory = _worker_directory(exp, trainer)
    extra = epochs.checkpoint_objects()
    if keep_data:
        checkpoint = trainer.checkpoint(
            iterator, tf.Variable(data_config, trainable=False), extra=extra
        )
    else:
        checkpoint = trainer.checkpoint(extra=extra)
    ckpts = checkpointing.TrainCheckpoints(
        directory,
        checkpoint,
        trainer.step,
        fallback=trainer.checkpoint(extra=extra) if keep_data else None,
    )
    if not chief:
        owned_files.make_dir(directory)  # removed recursively at the end: never a link
    return iterator, ckpts, latest is None


def pipeline_settings(cfg: TrainConfig, vocab, trainer: Trainer) -> dict:
    """What a saved data position depends on (the seed is stored next to it)."""
    hps = trainer.hps
    return {
        "data_path": os.path.abspath(cfg.data_path),
        "worker_batch_size": hps.batch_size // trainer.num_workers,
        "max_enc_steps": hps.max_enc_steps,
        "max_dec_steps": hps.max_dec_steps,
        # Whether targets hold article words as extended ids (the pointer's batches).
        "pointer_gen": bool(family_registry.of(hps).copies_words(hps)),
        "vocab_size": vocab.size(),
        # Length buckets pad the batches the original padding makes (same examples, same
        # order): a position saved under either serves the other.
        "static_shapes": hps.static_shapes is True,
        "max_oovs": hps.max_oovs,
    }


def training_data(trainer: Trainer, vocab, cfg: TrainConfig, latest: str | None):
    """The training batches, continuing at `latest`'s data position when it can.

    The position is used only if the data settings are unchanged (a restored tf.data
    state would otherwise keep serving the old files and batch shapes for a while).
    Without a usable position a resumed job reshuffles with seed `seed + step` rather
    than replaying the first batches of the run.
    Returns (iterator, data config JSON to save with the position).
    """
    settings = pipeline_settings(cfg, vocab, trainer)
    saved = checkpointing.saved_data_config(latest) if latest else None
    if saved is not None:
        if saved.get("pipeline") == settings:
            iterator = make_iterator(cfg.data_path, vocab, trainer.hps, trainer, saved["seed"])
            if checkpointing.restore_data_position(iterator, latest):
                return iterator, json.dumps(saved, sort_keys=True)
        else:
            log.warning(
                "The data settings changed since %s; the input pipeline starts afresh", latest
            )
    step = int(trainer.step.numpy())
    seed = trainer.hps.seed + step
    iterator = make_iterator(cfg.data_path, vocab, trainer.hps, trainer, seed)
    return iterator, json.dumps({"pipeline": settings, "seed": seed}, sort_keys=True)


def train_loop(trainer: Trainer, vocab, exp: Experiment, cfg: TrainConfig) -> None:
    """Train until --max_steps, an early stop (--early_stop_epochs), a stop signal, or a
    non-finite loss; save at the end."""
    chief = distribution.is_chief(trainer.strategy)
    epochs = Epochs(trainer, vocab, exp, cfg, chief)
    iterator, ckpts, fresh = _start(trainer, vocab, exp, cfg, epochs)
    try:
        _train_from(trainer, vocab, exp, cfg, iterator, ckpts, fresh, epochs)
    finally:
        epochs.close()


def _train_from(trainer, vocab, exp, cfg, iterator, ckpts, fresh: bool, epochs) -> None:
    chief = distribution.is_chief(trainer.strategy)
    if fresh:
        ckpts.save()  # like the Supervisor: a checkpoint at once, for eval/decode jobs
    if chief and ckpts.latest:
        write_projector_files(exp, vocab, ckpts.latest)
    step = int(trainer.step.numpy())
    if cfg.max_steps and step >= cfg.max_steps:
        log.info("Step %d already reached --max_steps=%d; nothing to train", step, cfg.max_steps)
        if not chief:
            _remove_scratch(ckpts.directory)
        return
    if epochs.stopped():
        # An earlier run of this experiment stopped early (its count is in the checkpoint).
        log.info("%s", epochs.stop_line(step))
        if not chief:
            _remove_scratch(ckpts.directory)
        return
    writer = tensorboard.ScalarWriter(exp.train_dir, enabled=chief, tags=trainer.family.scalar_tags)
    epochs.start()
    reason = _guarded_steps(trainer, iterator, ckpts, writer, cfg, epochs)
    path = _final_save(trainer, ckpts, writer, chief)
    log.info(
        "Training stopped at step %d (%s); newest checkpoint: %s",
        int(trainer.step.numpy()),
        reason,
        path,
    )


def _guarded_steps(
    trainer: Trainer, iterator, ckpts, writer, cfg: TrainConfig, epochs: Epochs
) -> str:
    """`_run_steps`, keeping what each kind of failure allows; returns why it ended."""
    from pointer_generator.data.input_pipeline import data_errors

    try:
        with StopRequest() as stop, data_errors():
            return _run_steps(trainer, iterator, ckpts, writer, stop, cfg, epochs)
    except NonFiniteLossError:
        writer.close_quietly()  # and no save: the newest checkpoint stays the last good one
        raise
    except tf.errors.InvalidArgumentError as e:
        writer.close_quietly()
        if cfg.debug and "Infinity or NaN" in (e.message or ""):
            raise NonFiniteLossError(
                f"--debug: {_check_numerics_summary(e.message)} in training step "
                f"{int(trainer.step.numpy()) + 1}; nothing of that step was applied or "
                f"saved; last good checkpoint: {ckpts.latest}"
            ) from None
        raise
    except KeyboardInterrupt:
        return "interrupted"
    except OutputError as e:
        # A full disk or a read-only file system: stop with the reason. One last save is
        # tried (it may fit where an event file did not); it never replaces a good one.
        writer.close_quietly()
        if "cannot write checkpoint" not in str(e):
            _save_after_error(trainer, ckpts, OutputError, report=False)
        raise _output_stopped(e, trainer, ckpts) from None
    except Exception:
        # The state is consistent between steps: keep what was trained.
        _save_after_error(trainer, ckpts, Exception)
        writer.close_quietly()
        raise


def _save_after_error(
    trainer: Trainer, ckpts, ignored: type[Exception], report: bool = True
) -> None:
    """Try to save after a failed step (one worker only: the others of a multi-worker job
    may be gone). A save error of type `ignored` does not replace the original error; it
    is logged if `report` (a full disk's second failure says nothing new)."""
    if trainer.num_workers != 1:
        return
    try:
        ckpts.save()
    except ignored as save_error:
        if report:
            log.error("Could not save a checkpoint after the error: %s", save_error)


def _final_save(trainer: Trainer, ckpts, writer, chief: bool) -> str:
    """Save the last step and close the summaries; returns the newest checkpoint."""
    try:
        path = ckpts.save()
        writer.close()
    except OutputError as e:
        writer.close_quietly()
        raise _output_stopped(e, trainer, ckpts) from None
    if not chief:
        _remove_scratch(ckpts.directory)
        return "written by the chief worker"
    return path or ckpts.latest


def _shape_note(hps) -> str:
    """What the first steps' compiles will be, by the batches' padding."""
    from pointer_generator.data.input_pipeline import bucket_lengths

    if hps.static_shapes is True:
        return "one batch shape (--static_shapes=1)"
    summaries = ""
    if hps.decoder_buckets > 1:
        lengths = bucket_lengths(hps.max_dec_steps, hps.decoder_buckets)
        summaries = (
            f" and {len(lengths)} summary lengths ({', '.join(map(str, lengths))}; "
            "--decoder_buckets)"
        )
    if hps.static_shapes is None:
        lengths = bucket_lengths(hps.max_enc_steps, hps.length_buckets)
        return (
            f"batches are padded to {len(lengths)} article lengths "
            f"({', '.join(map(str, lengths))}; --length_buckets){summaries}: the first "
            "step at each is slow"
        )
    return (
        f"each batch is padded to its longest article (--static_shapes=0){summaries}, so "
        "the first step of every new length is slow"
    )


def _run_steps(
    trainer: Trainer, iterator, ckpts, writer, stop: StopRequest, cfg: TrainConfig, epochs: Epochs
) -> str:
    """The step loop; returns why it ended. Raises NonFiniteLossError."""
    hps = trainer.hps
    reported, logged = trainer.family.scalars(hps), trainer.family.logged(hps)
    step = int(trainer.step.numpy())
    progress = Progress(
        step,
        cfg.max_steps,
        hps.batch_size,
        cfg.log_every_n_steps,
        log_every_secs=cfg.log_every_secs,
    )
    log.info("Compiling the training step: %s", _shape_note(hps))
    while True:
        epochs.before_step(step)
        metrics = trainer.train_step(iterator)
        if not metrics["finite"]:
            raise _non_finite(metrics, step + 1, ckpts.latest)
        step = int(trainer.step.numpy())
        shown = {"loss": metrics["loss"], **{name: metrics[name] for name in logged}}
        metrics.update(progress.update(step, shown, metrics["batch_shape"]))
        writer.write(_summary_metrics(metrics, reported), step)
        if step % FLUSH_EVERY_STEPS == 0:
            writer.flush()
        if epochs.active and step % epochs.steps == 0:
            epochs.after_step(step)
            progress.pause()  # validation time is not training speed
        done = bool(cfg.max_steps) and step >= cfg.max_steps
        # (Every worker validates the same model: all of them stop at the same step.)
        early = epochs.stopped()
        save, halt = trainer.agree(
            ckpts.seconds_since_save() >= cfg.save_checkpoint_secs, stop.requested
        )
        if early:
            log.info("%s", epochs.stop_line(step))
            return "early stop on validation perplexity, --early_stop_epochs"
        if done:
            return "reached --max_steps"
        if halt:
            return "stop requested"
        if save:
            ckpts.save()
            writer.flush()


def _output_stopped(error: OutputError, trainer: Trainer, ckpts) -> OutputError:
    """`error` with where training stopped and which checkpoint to resume from."""
    text = f"{error}; training stopped at step {int(trainer.step.numpy())}"
    if "newest" not in text:
        text += f"; newest checkpoint: {ckpts.latest or 'none'}"
    return OutputError(text)


def _check_numerics_summary(message: str) -> str:
    """`op "MatMul" (dtype float32, shape (None, 32)) produced -Inf and +Inf values`
    from the long report of tf.debugging.enable_check_numerics."""
    op = re.search(r'graph op "([^"]+)"', message)
    values = re.search(r"Tensor had ([^\n]+?) values", message)
    node = re.search(r"\{\{node ([^}]+)\}\}", message)
    text = f'op "{op.group(1)}"' if op else "an op"
    if node:
        text += f" ({node.group(1)})"
    return text + f" produced {values.group(1) if values else 'non-finite'} values"


def _summary_metrics(metrics: dict, reported) -> dict:
    """The metrics the original wrote, plus the speed, and those the model's family
    reports (`reported`, `ModelFamily.scalars`)."""
    out = {k: metrics.get(k) for k in ("loss", "global_norm", "steps_per_sec", "examples_per_sec")}
    return {**out, **tensorboard.model_metrics(metrics, reported)}


def _non_finite(metrics: dict, step: int, last_good: str | None) -> NonFiniteLossError:
    where = f"last good checkpoint: {last_good}" if last_good else "no checkpoint was written yet"
    return NonFiniteLossError(
        f"loss is not finite at training step {step} (loss={metrics['loss']}, "
        f"global_norm={metrics['global_norm']}); that update was not applied and nothing "
        f"after the last checkpoint was saved; {where}. Restart from it (e.g. with a lower "
        "--lr) or start from the eval job's best model with --restore_best_model=1"
    )
