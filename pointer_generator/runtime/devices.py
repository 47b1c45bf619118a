"""The local devices a job spreads over: shared by mirrored training and decoding."""

from __future__ import annotations

import tensorflow as tf


def local_mirrored_strategy() -> tf.distribute.MirroredStrategy:
    """A MirroredStrategy over this machine's GPUs, or (none) its logical CPU devices
    (`--num_cpu_devices`, made by `training.distribution.configure_devices`)."""
    gpus = tf.config.list_logical_devices("GPU")
    devices = [d.name for d in gpus] or [d.name for d in tf.config.list_logical_devices("CPU")]
    return tf.distribute.MirroredStrategy(devices)
