"""TensorBoard event files and the embedding projector set-up (spec 1.3, 4.9).

Scalars are written with `tf.summary.write` and the scalars plugin's metadata, which is
what `tf.summary.scalar` produces, so they need no TensorBoard installation to write and
show up in TensorBoard's Scalars tab.

Tags (the original's where it had them; TF1 prefixed the loss tags with the name scope
`seq2seq/loss/`, kept here explicitly), see METRIC_TAGS: loss, global_norm (before
clipping), global_step/sec, examples/sec (train/) and running_avg_loss/decay=0.990000
(eval/); a model family's own scalars under the tags it gives (`ModelFamily.scalar_tags`:
the pointer-generator's coverage loss, total loss and mean p_gen).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping

import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from pointer_generator.errors import OutputError
from pointer_generator.runtime import staging
from pointer_generator.runtime.checkpointing import write_failure_reason

LOSS = "seq2seq/loss/loss"
GLOBAL_NORM = "global_norm"
STEPS_PER_SEC = "global_step/sec"  # the original Supervisor's tag
EXAMPLES_PER_SEC = "examples/sec"
RUNNING_AVG_LOSS = "running_avg_loss/decay=0.990000"
# The in-training validation of the earlier families' recipes (training/epochs.py).
VALID_PERPLEXITY = "valid/perplexity"
VALID_LOSS = "valid/loss"
LEARNING_RATE = "learning_rate"

# Metric name (as the train/eval steps return them) -> tag; a model family's own scalars
# are written under the tags it gives (`ModelFamily.scalar_tags`), else their names.
METRIC_TAGS = {
    "loss": LOSS,
    "global_norm": GLOBAL_NORM,
    "steps_per_sec": STEPS_PER_SEC,
    "examples_per_sec": EXAMPLES_PER_SEC,
    "running_avg_loss": RUNNING_AVG_LOSS,
    "valid_perplexity": VALID_PERPLEXITY,
    "valid_loss": VALID_LOSS,
    "learning_rate": LEARNING_RATE,
}

_SCALAR_METADATA = summary_pb2.SummaryMetadata(
    plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")
)


def model_metrics(metrics: dict, names) -> dict:
    """The metrics that exist only for some models, those in `names`: the scalars the
    model's family reports beyond `loss` (`ModelFamily.scalars`)."""
    return {name: metrics[name] for name in names}


class ScalarWriter:
    """Writes named metrics as TensorBoard scalars in one directory.

    Args:
      logdir: directory of the event files (train/ or eval/).
      enabled: False makes every call a no-op (non-chief workers).
      tags: {metric name: tag} beyond METRIC_TAGS (`ModelFamily.scalar_tags`).

    Writing errors (a full disk, a read-only file system) raise OutputError naming the
    directory and the reason.
    """

    def __init__(self, logdir: str, enabled: bool = True, tags: Mapping | None = None):
        self.logdir = logdir
        self.tags = {**METRIC_TAGS, **(tags or {})}
        self._writer = None
        if enabled:
            with self._output_errors():
                self._writer = tf.summary.create_file_writer(logdir)

    def write(self, metrics: dict, step: int) -> None:
        """Write every metric (None: skipped) under its tag (METRIC_TAGS and the `tags`
        given: a model family's `scalar_tags`), or under its own name."""
        if self._writer is None:
            return
        with self._output_errors(), self._writer.as_default(step=int(step)):
            for name, value in metrics.items():
                tag = self.tags.get(name, name)
                if value is not None:
                    tf.summary.write(
                        tag, tf.constant(float(value), tf.float32), metadata=_SCALAR_METADATA
                    )

    def flush(self) -> None:
        if self._writer is not None:
            with self._output_errors():
                self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            with self._output_errors():
                writer.close()

    def close_quietly(self) -> None:
        """Close, ignoring write errors (on the way out after another error)."""
        try:
            self.close()
        except OutputError:
            pass

    @contextlib.contextmanager
    def _output_errors(self):
        try:
            yield
        except (tf.errors.OpError, OSError) as e:
            raise OutputError(
                f"cannot write TensorBoard summaries in {self.logdir}: {write_failure_reason(e)}"
            ) from None


def write_projector_config(logdir: str, tensor_name: str, metadata_file: str) -> str:
    """Write `logdir/projector_config.pbtxt` linking `tensor_name` to `metadata_file`.

    `tensor_name` is the embedding's key in the training checkpoints (the projector reads
    the newest checkpoint of `logdir`); `metadata_file` is relative to `logdir`. The text
    proto TensorBoard's `projector.visualize_embeddings` would write, written the way the
    project writes every file (that function opens the path for writing, through a link
    planted there).
    """
    path = os.path.join(logdir, "projector_config.pbtxt")
    try:
        from google.protobuf import text_format
        from tensorboard.plugins import projector
    except ImportError:
        projector = None
    if projector is not None:
        config = projector.ProjectorConfig()
        emb = config.embeddings.add()
        emb.tensor_name = tensor_name
        emb.metadata_path = metadata_file
        staging.replace_file(path, text_format.MessageToString(config))
        return path
    text = (
        "embeddings {\n"
        f"  tensor_name: {_quote(tensor_name)}\n"
        f"  metadata_path: {_quote(metadata_file)}\n"
        "}\n"
    )
    staging.replace_file(path, text)
    return path


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
