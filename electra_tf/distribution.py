"""`tf.distribute` strategies and Keras dtype policies for a run."""

from __future__ import annotations

import contextlib
import os

import keras
import tensorflow as tf

from electra_tf.config import ConfigError
from electra_tf.errors import ElectraError


class DistributionError(ElectraError, RuntimeError):
    """A strategy cannot be set up here (no TPU, a bad TF_CONFIG, ...)."""


def make_strategy(
    name: str,
    tpu: str | None = None,
    tpu_zone: str | None = None,
    gcp_project: str | None = None,
    devices: list[str] | None = None,
) -> tf.distribute.Strategy:
    """Returns the strategy called `name`.

    * `default`: one device (the first GPU if any, else the CPU).
    * `mirrored`: all local GPUs (or `devices`), all-reduce between them.
    * `multi_worker`: `MultiWorkerMirroredStrategy` configured from TF_CONFIG.
    * `tpu`: `TPUStrategy` on the TPU named by `tpu` (a name, a grpc://
      address, or "local" on a TPU VM), connected and initialised here.
    """
    if name == "default":
        return tf.distribute.get_strategy()
    if name == "mirrored":
        if devices:
            _check_local_devices(devices)
        return tf.distribute.MirroredStrategy(devices=devices)
    if name == "multi_worker":
        try:
            return tf.distribute.MultiWorkerMirroredStrategy()
        except (ValueError, RuntimeError) as error:
            raise DistributionError(
                "cannot start MultiWorkerMirroredStrategy: check TF_CONFIG "
                f"({os.environ.get('TF_CONFIG', 'unset')}); the strategy must be "
                f"created before any other TensorFlow op. {_first_line(error)}"
            ) from error
    if name == "tpu":
        return _tpu_strategy(tpu, tpu_zone, gcp_project)
    raise DistributionError(f"Unknown strategy {name!r}")


def check_global_batch(batch_size: int, strategy: tf.distribute.Strategy) -> None:
    """The global batch must split evenly over the strategy's replicas."""
    replicas = strategy.num_replicas_in_sync
    if batch_size % replicas:
        raise ConfigError(
            f"batch_size {batch_size} is not divisible by the {replicas} "
            "replicas of the strategy"
        )


def _check_local_devices(devices: list[str]) -> None:
    """Refuses devices this host does not have (MirroredStrategy would accept
    a missing GPU and fail later, or not at all)."""
    available = {
        (spec.device_type, spec.device_index)
        for spec in (
            tf.DeviceSpec.from_string(device.name)
            for device in tf.config.list_logical_devices()
        )
    }
    names = sorted(f"/{kind.lower()}:{index}" for kind, index in available)
    for device in devices:
        try:
            spec = tf.DeviceSpec.from_string(device)
        except ValueError as error:
            raise DistributionError(f"--devices: {device!r} is not a device") from error
        if (spec.device_type, spec.device_index) not in available:
            raise DistributionError(
                f"--devices: {device} is not on this host (it has {', '.join(names)})"
            )


def _tpu_strategy(tpu, tpu_zone, gcp_project) -> tf.distribute.TPUStrategy:
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            tpu=tpu or "", zone=tpu_zone, project=gcp_project
        )
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    # Any failure: a TPU name is resolved through the GCE metadata server and
    # the Cloud TPU API, which fail with urllib, googleapiclient or ImportError
    # exceptions, the local runtime with TF's own; each is chained below.
    except Exception as error:  # noqa: BLE001
        raise DistributionError(
            f"no TPU reachable for --tpu={tpu or '(unset)'} (--tpu-zone="
            f"{tpu_zone or '(unset)'}, --gcp-project={gcp_project or '(unset)'}). "
            "Check: on a Cloud TPU VM, pass --tpu=local and install the TPU build "
            "of TensorFlow (libtpu; a CPU/GPU wheel has no TPU kernels, e.g. 'No "
            "OpKernel ... ConfigureDistributedTPU'); from another VM, pass the TPU "
            "node's name with its --tpu-zone and --gcp-project, check that it is "
            "READY (gcloud compute tpus list) and reachable from this VM's network. "
            f"Underlying error: {type(error).__name__}: {_first_line(error)}"
        ) from error
    return tf.distribute.TPUStrategy(resolver)


def _first_line(error: Exception) -> str:
    text = getattr(error, "message", None) or str(error)
    return text.strip().splitlines()[0] if text.strip() else "(no message)"


def is_chief(strategy: tf.distribute.Strategy) -> bool:
    """True on the worker that writes checkpoints, logs and exports.

    That is the `chief` task, or worker 0 when TF_CONFIG names no chief (the
    `MultiWorkerMirroredStrategy` convention); always True on one host.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    return resolver.task_type == "chief" or (
        resolver.task_type == "worker" and resolver.task_id == 0
    )


def worker_temp_dir(model_dir: str, strategy: tf.distribute.Strategy) -> str:
    """Where a non-chief worker writes what every worker must write.

    Under `MultiWorkerMirroredStrategy` saving a checkpoint is a collective
    operation: every worker must save, or the chief waits forever. Non-chief
    workers save into this directory, private to their task, and delete it
    (the pattern of TensorFlow's multi-worker guides).
    """
    resolver = strategy.cluster_resolver
    return os.path.join(
        model_dir, f"workertemp_{resolver.task_type}_{resolver.task_id}"
    )


def set_precision(precision: str) -> None:
    """Sets the global Keras dtype policy; models must be built after this."""
    keras.mixed_precision.set_global_policy(precision)


@contextlib.contextmanager
def precision_policy(precision: str):
    """The global Keras dtype policy is `precision` inside, and the caller's
    again afterwards (also after an error): models built inside compute in
    it, what the caller builds later (a study, a test) is not affected."""
    previous = keras.mixed_precision.global_policy()
    set_precision(precision)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def accelerators_present(strategy: tf.distribute.Strategy | None = None) -> bool:
    """True when the strategy (or this host) has a GPU or TPU."""
    if isinstance(strategy, tf.distribute.TPUStrategy):
        return True
    return bool(tf.config.list_logical_devices("GPU")) or bool(
        tf.config.list_logical_devices("TPU")
    )


def resolve_jit_compile(mode: str, strategy=None, on_cpu: bool = True) -> bool:
    """`on`/`off`, or `auto`: XLA on GPUs and TPUs, and on one CPU if `on_cpu`.

    Pre-training compiles with XLA on a CPU too: its step has much besides
    matmuls (sampling, losses, metrics, the optimizer over the embedding
    table) that XLA fuses. Measured on 2 idle CPU cores (BENCHMARKS.md
    section 3), the `small` step ran 1.19x as fast with XLA (median of 4
    rounds) on 16% less CPU time. (XLA on CPUs used to lose 10x: Keras'
    dropout draws with a stateless RNG that XLA compiles into very slow CPU
    code; the encoders now use `HashedDropout`.)
    Not measured, and so left in graph mode: several CPU replicas (where
    cross-replica sums would sit inside the XLA program) and callers that pass
    `on_cpu=False` (fine-tuning).
    """
    if mode not in ("auto", "on", "off"):
        raise DistributionError(f"jit mode must be auto, on or off, got {mode!r}")
    if mode == "off":
        return False
    if mode == "on" or accelerators_present(strategy):
        return True
    replicas = 1 if strategy is None else strategy.num_replicas_in_sync
    return on_cpu and replicas == 1
