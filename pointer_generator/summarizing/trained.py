"""Opening a trained experiment: its settings, its vocabulary, a checkpoint, the model.

Every user of a trained model goes through `open_trained`: decode mode, `summarize`,
`export`, `tune_features`, `serve` and `pg.Summarizer`. It builds the model of the
experiment's family with the vocabulary the experiment keeps (its own checked copy,
runtime/experiment_settings.py) and loads the newest checkpoint that reads completely,
a named one, or an original TF1 checkpoint; `TrainedModel.decoder(settings)` then gives
the batched search over it.

The command line fills the hyper-parameters from its flags (which take the stored
settings as defaults, cli/stored_settings.py); the Python API reads them from the
experiment (`stored_settings`); both through the one resolver,
`runtime.experiment_settings.resolve`, so an experiment is the same model either way.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import time

import tensorflow as tf

from pointer_generator.data.vocab import Vocab
from pointer_generator.errors import CheckpointError, FlagError
from pointer_generator.hparams import HParams
from pointer_generator.models import family_registry
from pointer_generator.models.family_registry import build_model
from pointer_generator.runtime import checkpointing, experiment_settings, interrupts, progress
from pointer_generator.runtime.experiment import TRAIN_SUBDIR, check_own_folders
from pointer_generator.search.beam_decoder import BeamSearchDecoder
from pointer_generator.search.settings import SearchSettings

log = logging.getLogger(__name__)

WAIT_SECS = 10  # the original retries every 10 s while train/ has no checkpoint


@dataclasses.dataclass
class TrainedModel:
    """A trained experiment, ready to search.

    root: the experiment folder; hps: its hyper-parameters; vocab: its vocabulary;
    model: the built model with the weights of `checkpoint` (a path) loaded.
    """

    root: str
    hps: HParams
    vocab: Vocab
    model: object
    checkpoint: str

    def decoder(self, settings: SearchSettings | None = None, **options) -> BeamSearchDecoder:
        """The batched search over this model (`options`: jit_compile, top_k,
        min_compact_size)."""
        return BeamSearchDecoder(self.model, self.vocab, self.hps, settings, **options)


def open_trained(
    root: str,
    hps: HParams,
    vocab: Vocab | str,
    *,
    checkpoint: str | None = None,
    tf1_checkpoint: str | None = None,
    wait: bool = False,
    strategy: tf.distribute.Strategy | None = None,
    announce: bool = False,
) -> TrainedModel:
    """The experiment at `root` as trained.

    Args:
      hps: its hyper-parameters (the model's family and sizes).
      vocab: its vocabulary, or the path of it (the experiment's own checked copy, as
        the stored settings give).
      checkpoint: a checkpoint prefix to load (an eval job's best model, one pinned for
        decode shards) instead of train/'s newest intact one.
      tf1_checkpoint: an original TF1 checkpoint to load instead.
      wait: while train/ has no checkpoint, wait for one (concurrent decoding).
      strategy: build the model under it (mirrored variables for replicated decoding).
      announce: print the model's start-up line (its family and size).
    Raises CheckpointError when there is no checkpoint, or it does not fit the model.
    """
    check_own_folders(root)
    vocab = vocab if isinstance(vocab, Vocab) else Vocab(vocab, hps.vocab_size)
    with strategy.scope() if strategy is not None else contextlib.nullcontext():
        model = build_model(hps, vocab.size())
    if announce:
        progress.status(model.parameter_summary())
    if checkpoint:
        if not tf.io.gfile.exists(checkpoint + ".index"):
            raise CheckpointError(f"no checkpoint {checkpoint} (no {checkpoint}.index)")
        load_checkpoint(model, checkpoint)
        path = checkpoint
    else:
        path = load_weights(model, os.path.join(root, TRAIN_SUBDIR), tf1_checkpoint, wait)
    return TrainedModel(root, hps, vocab, model, path)


def stored_settings(root: str, vocab_path: str | None = None, **given) -> tuple[HParams, dict, str]:
    """(hyper-parameters, search settings, vocabulary path) of the experiment at `root` as
    the command line's `summarize` resolves them (`experiment_settings.resolve`: the
    stored flags, the values of flags they predate, the family's defaults, the experiment's
    saved search; its checked vocabulary, or `vocab_path` if it has the same content),
    with `given` (HParams or SearchSettings fields) on top. The search settings are
    {field: value} of those known (the saved search's, the given ones).
    FlagError for a folder without settings."""
    from pointer_generator.search.settings import SEARCH_FLAGS

    resolved = experiment_settings.resolve(
        root, given, families=family_registry, vocab_path=vocab_path or None, saved_search=True
    )
    if resolved.stored is None:
        raise FlagError(
            f"no {experiment_settings.settings_path(root)}: is {root} an experiment "
            "trained by this version?"
        )
    values = {**resolved.values, **given}
    model_fields = {f.name for f in dataclasses.fields(HParams)}
    family = family_registry.get(values.get("model", HParams.model))
    own = {o.name for o in family.options}
    hps = HParams(**{k: v for k, v in values.items() if k in model_fields})
    # Every option of the family, as the command line holds them (its flags' values).
    hps = hps.replace(options={k: v for k, v in values.items() if k in own})
    hps = hps.replace(options=family.option_values(hps))
    search = {k: v for k, v in values.items() if k in SEARCH_FLAGS}
    if "length_penalty" in resolved.values and not search["length_penalty"]:
        search["length_penalty"] = None  # saved as the flag: 0 = none
    return hps, search, resolved.vocab_path


def load_checkpoint(model, path: str) -> None:
    """Load the checkpoint at prefix `path` (checked against the model) into `model`."""
    checkpointing.restore(tf.train.Checkpoint(model=model), path, model)
    log.info("Loaded checkpoint %s", path)


def load_weights(
    model,
    train_dir: str,
    tf1_path: str | None = None,
    wait: bool = True,
    max_wait_secs: float | None = None,
) -> str:
    """Load the newest checkpoint of `train_dir` (or an original TF1 checkpoint) into model.

    Waits (every 10 s, like the original) while train/ has no checkpoint yet, up to
    `max_wait_secs`. Returns the loaded checkpoint's path.
    """
    if tf1_path:
        from pointer_generator.models import tf1_checkpoint

        return tf1_checkpoint.load_tf1_checkpoint(model, tf1_path).path
    start = time.time()
    while True:
        interrupts.check()
        path = checkpointing.latest_checkpoint(train_dir)
        if path is not None:
            try:
                load_checkpoint(model, path)
                return path
            except checkpointing.TRANSIENT_ERRORS:
                pass  # being written or deleted by the training job right now
        if not wait or (max_wait_secs is not None and time.time() - start > max_wait_secs):
            raise CheckpointError(
                f"no checkpoint in {train_dir}{checkpointing.none_intact_note(train_dir)}; "
                "train a model first (or give --tf1_checkpoint)"
            )
        log.info("No checkpoint in %s yet; retrying in %d s", train_dir, WAIT_SECS)
        time.sleep(WAIT_SECS)
