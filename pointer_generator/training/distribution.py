"""Choosing devices and the tf.distribute strategy for training.

* `default`: TensorFlow's default strategy (one device: the first GPU if any, else CPU).
* `mirrored`: synchronous data parallelism over the local GPUs (`--num_gpus`), or over
  `--num_cpu_devices` logical CPU devices on a machine without GPUs.
* `multi_worker_mirrored`: the same across machines described by the TF_CONFIG
  environment variable (all workers run the same command; worker 0, or the `chief`
  task, writes checkpoints and summaries).
* `tpu`: `TPUStrategy` on the TPU at `--tpu` (single host; needs `--static_shapes`).

Device configuration must happen before TensorFlow initialises its devices, so
`configure_devices` is the first TensorFlow call of a training run.
"""

from __future__ import annotations

import logging
import os

import tensorflow as tf

from pointer_generator.errors import FlagError
from pointer_generator.runtime import json_files
from pointer_generator.runtime.devices import local_mirrored_strategy

log = logging.getLogger(__name__)


def configure_devices(num_gpus: int = -1, num_cpu_devices: int = 1) -> None:
    """Hide GPUs beyond `num_gpus` (-1 = keep all) and split the CPU into logical devices.

    Call before any TensorFlow op runs; afterwards TensorFlow refuses to change devices,
    which is reported as a FlagError.
    """
    try:
        gpus = tf.config.list_physical_devices("GPU")
        if num_gpus >= 0 and len(gpus) > num_gpus:
            tf.config.set_visible_devices(gpus[:num_gpus], "GPU")
        for gpu in gpus[: num_gpus if num_gpus >= 0 else None]:
            tf.config.experimental.set_memory_growth(gpu, True)
        if num_cpu_devices > 1:
            cpu = tf.config.list_physical_devices("CPU")[0]
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * num_cpu_devices
            )
    except RuntimeError as e:
        raise FlagError(
            f"cannot configure devices after TensorFlow started using them ({e})"
        ) from None


def make_strategy(name: str, tpu: str = "") -> tf.distribute.Strategy:
    """The strategy called `name` (one of flags.STRATEGIES)."""
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        return local_mirrored_strategy()
    if name == "multi_worker_mirrored":
        if "TF_CONFIG" not in os.environ:
            log.warning("multi_worker_mirrored without TF_CONFIG: training on this machine only")
        else:
            try:
                json_files.loads(os.environ["TF_CONFIG"])
            except ValueError as e:
                raise FlagError(f"TF_CONFIG is not valid JSON ({e})") from None
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu="" if tpu == "local" else tpu
        )
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return tf.distribute.TPUStrategy(resolver)
    raise FlagError(f"unknown distribution strategy {name!r}")


def _task(strategy) -> tuple[str | None, int]:
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) or resolver is None:
        return None, 0
    return resolver.task_type, int(resolver.task_id or 0)


def num_workers(strategy) -> int:
    """Machines taking part (1 unless multi-worker)."""
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return 1
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return max(1, len(spec.get("worker", [])) + len(spec.get("chief", [])))


def worker_index(strategy) -> int:
    """This machine's index among the workers (the chief task counts as worker 0)."""
    task_type, task_id = _task(strategy)
    if task_type is None or task_type == "chief":
        return 0
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    return task_id + (1 if spec.get("chief") else 0)


def is_chief(strategy) -> bool:
    """True on the worker that writes checkpoints and summaries."""
    return worker_index(strategy) == 0


def num_local_replicas(strategy) -> int:
    """Replicas on this machine (devices the strategy uses here)."""
    return max(1, strategy.num_replicas_in_sync // num_workers(strategy))


def describe(strategy) -> str:
    """One line for the start-up log."""
    kind = type(strategy).__name__
    n = strategy.num_replicas_in_sync
    workers = num_workers(strategy)
    where = f", worker {worker_index(strategy)} of {workers}" if workers > 1 else ""
    return f"{kind} with {n} replica(s){where}"
