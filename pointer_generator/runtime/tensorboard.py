"""TensorBoard event files and the embedding projector set-up (spec 1.3, 4.9).

Scalars are written with `tf.summary.write` and the scalars plugin's metadata, which is
what `tf.summary.scalar` produces, so they need no TensorBoard installation to write and
show up in TensorBoard's Scalars tab.

Tags (the original's where it had them; TF1 prefixed the loss tags with the name scope
`seq2seq/loss/`, kept here explicitly), see METRIC_TAGS: loss, coverage loss, total loss,
global_norm (before clipping), mean p_gen, global_step/sec, examples/sec (train/) and
running_avg_loss/decay=0.990000 (eval/).
"""

from __future__ import annotations

import contextlib
import os

import tensorflow as tf
from tensorflow.core.framework import summary_pb2

from pointer_generator.errors import OutputError
from pointer_generator.runtime import staging
from pointer_generator.runtime.checkpointing import write_failure_reason

LOSS = "seq2seq/loss/loss"
COVERAGE_LOSS = "seq2seq/loss/coverage_loss/coverage_loss"
TOTAL_LOSS = "seq2seq/loss/total_loss"
GLOBAL_NORM = "global_norm"
P_GEN = "seq2seq/p_gen_mean"
STEPS_PER_SEC = "global_step/sec"  # the original Supervisor's tag
EXAMPLES_PER_SEC = "examples/sec"
RUNNING_AVG_LOSS = "running_avg_loss/decay=0.990000"
# The in-training validation of the earlier families' recipes (training/epochs.py).
VALID_PERPLEXITY = "valid/perplexity"
VALID_LOSS = "valid/loss"
LEARNING_RATE = "learning_rate"

# Metric name (as the train/eval steps return them) -> tag.
METRIC_TAGS = {
    "loss": LOSS,
    "coverage_loss": COVERAGE_LOSS,
    "total_loss": TOTAL_LOSS,
    "global_norm": GLOBAL_NORM,
    "p_gen_mean": P_GEN,
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
    model's family reports beyond `loss` (`ModelFamily.scalars`: coverage_loss and
    total_loss with coverage, as the original wrote them, p_gen_mean in pointer mode)."""
    return {name: metrics[name] for name in names}


class ScalarWriter:
    """Writes named metrics as TensorBoard scalars in one directory.

    Args:
      logdir: directory of the event files (train/ or eval/).
      enabled: False makes every call a no-op (non-chief workers).

    Writing errors (a full disk, a read-only file system) raise OutputError naming the
    directory and the reason.
    """

    def __init__(self, logdir: str, enabled: bool = True):
        self.logdir = logdir
        self._writer = None
        if enabled:
            with self._output_errors():
                self._writer = tf.summary.create_file_writer(logdir)

    def write(self, metrics: dict, step: int) -> None:
        """Write every metric (None: skipped) under its tag in METRIC_TAGS, or under its own
        name: a model family's own scalars (`ModelFamily.scalars`) need no line here."""
        if self._writer is None:
            return
        with self._output_errors(), self._writer.as_default(step=int(step)):
            for name, value in metrics.items():
                tag = METRIC_TAGS.get(name, name)
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
