"""Train mode's one-off operations on train/ (spec 1.6, 1.7): a model family's
conversion (`ModelFamily.conversion`: the pointer-generator's --convert_to_coverage_model
makes a non-coverage model a coverage one), and the eval job's best model put back as the
one training resumes from (`--restore_best_model`). The caller holds train/'s lock.
"""

from __future__ import annotations

import logging
import os

from pointer_generator.errors import CheckpointError
from pointer_generator.hparams import HParams
from pointer_generator.models.family import Conversion
from pointer_generator.runtime import checkpointing
from pointer_generator.runtime.experiment import Experiment
from pointer_generator.training.trainer import Trainer

log = logging.getLogger(__name__)


def convert(
    conversion: Conversion, hps: HParams, vocab, exp: Experiment, tf1_path: str = ""
) -> str:
    """Run a family's one-off `conversion` (spec 1.6 for the pointer-generator's
    --convert_to_coverage_model): the newest checkpoint of train/ (of a model with the
    conversion's source settings) -> `<it><suffix>`, a model with its target settings
    whose added weights keep their initial values. Without a checkpoint in train/, an
    original TF1 checkpoint (`tf1_path`) is the source.

    The step is kept; every Adagrad accumulator restarts at --adagrad_init_acc (as in
    the original, which restored no Adagrad slot). The next train run resumes from it.
    """
    trainer = Trainer(hps.replace(**conversion.target), vocab.size())
    latest = checkpointing.latest_checkpoint(exp.train_dir)
    if latest:
        shapes = checkpointing.variable_shapes(latest)
        if any(conversion.added(k) for k in shapes):
            raise CheckpointError(
                f"{latest} already has {conversion.what_is_added}; nothing to convert "
                f"(train on with {_flags(conversion.target)})"
            )
        # Restore into a model of the source settings (every weight must be found), then
        # copy into the target model, whose added weights keep their initial values.
        source = Trainer(hps.replace(**conversion.source), vocab.size())
        checkpointing.restore(source.weights_checkpoint(), latest, source.model)
        weights = {v.path: v for v in source.model.weights}
        for v in trainer.model.weights:
            if v.path in weights:
                v.assign(weights[v.path].numpy())
        trainer.step.assign(source.step)
        source_name = latest
    elif tf1_path:
        trainer.load_tf1(tf1_path, converting=True, with_optimizer=False)
        source_name = os.path.join(
            exp.train_dir, f"{checkpointing.TRAIN_CHECKPOINT_NAME}-{int(trainer.step.numpy())}"
        )
    else:
        raise CheckpointError(
            f"no checkpoint in {exp.train_dir} to convert; train with "
            f"{_flags(conversion.source)} first (or give --tf1_checkpoint)"
        )
    prefix = os.path.join(exp.train_dir, os.path.basename(source_name) + conversion.suffix)
    path = checkpointing.write_named(trainer.checkpoint(), prefix)
    log.info("Wrote %s; %s", path, conversion.then)
    return path


def _flags(settings) -> str:
    """`--coverage=1` for {"coverage": True}."""
    return " ".join(f"--{k}={int(v) if isinstance(v, bool) else v}" for k, v in settings.items())


def restore_best_model(hps: HParams, vocab, exp: Experiment) -> str:
    """Spec 1.7: eval/bestmodel-<step> -> train/model-<step> with fresh Adagrad slots."""
    best = checkpointing.latest_checkpoint(exp.eval_dir, checkpointing.BEST_STATE_FILE)
    if best is None:
        raise CheckpointError(
            f"no best model in {exp.eval_dir} (its "
            f"'{checkpointing.BEST_STATE_FILE}' names none); run an eval "
            "job alongside training first"
        )
    trainer = Trainer(hps, vocab.size())
    checkpointing.restore(trainer.weights_checkpoint(), best, trainer.model)
    name = os.path.basename(best).replace(checkpointing.BEST_CHECKPOINT_NAME, "model", 1)
    path = checkpointing.write_named(trainer.checkpoint(), os.path.join(exp.train_dir, name))
    log.info("Restored best model %s as %s; training resumes from it", best, path)
    return path
