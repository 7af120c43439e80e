"""`--precision` and `--jit` resolved together, from what the hardware can do.

Pre-training and fine-tuning take `--precision float32 | mixed_bfloat16 |
mixed_float16 | auto` and `--jit auto | on | off`. The two are decided in one
place because the fastest XLA choice depends on the precision:

* `auto` precision is `mixed_bfloat16` where bfloat16 matmuls are native: a
  CPU whose flags (`/proc/cpuinfo`) include `avx512_bf16` or `amx_bf16`, a
  GPU of compute capability 8.0 or more, a TPU. Anywhere else it is float32,
  so a CPU without native bfloat16 keeps exactly today's settings. On a CPU
  it is float32 also for encoders narrower than `MIN_CPU_BFLOAT16_WIDTH`,
  whose steps are not made of large matmuls (BENCHMARKS.md section 24).
* `auto` XLA on a CPU under bfloat16 is off (graph mode): TensorFlow's graph
  mode sends bfloat16 matmuls to oneDNN, XLA's CPU backend does not. Measured
  on an AMD EPYC with `avx512_bf16` (one thread, 4096x256 @ 256x1024,
  `bench.suite.matmul_peak`): bfloat16 1.9x float32 in graph mode, 0.99x
  under XLA; issue 50's run of `bench.suite.step_time` (`small` pre-training
  step, loaded machine): 3.05 s in graph mode with bfloat16 against 4.22 s
  under XLA with float32.
  Otherwise `auto` XLA is `electra_tf.distribution.resolve_jit_compile`'s.
* `mixed_float16` on a CPU is refused: float16 loss scaling there skips every
  update (issue 49: a run ended at step 0 and exported an untrained model).

`resolve_precision` takes a `Hardware` so that the choice can be tested with
any CPU flags or device kind (`detect_hardware` reads this machine's).
"""

from __future__ import annotations

import dataclasses
import logging

from electra_tf.config import PRECISIONS, ConfigError

# What `--precision` accepts: a Keras dtype policy, or `auto`.
PRECISION_CHOICES = ("auto", *PRECISIONS)
# CPU flags (Linux `/proc/cpuinfo`) of native bfloat16 matmuls: AVX-512 BF16
# (AMD Zen 4 and later, Intel Cooper Lake) and AMX (Intel Sapphire Rapids on).
NATIVE_BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")
# The CPU flags a benchmark records (what decides matmul speed).
ISA_FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16")
# GPUs with native bfloat16: Ampere (compute capability 8.0) and later.
MIN_BF16_GPU_CAPABILITY = (8, 0)
# The narrowest encoder (hidden size) that `auto` trains in bfloat16 on a CPU.
# Pre-training step on the EPYC with avx512_bf16, bfloat16 in graph mode
# against float32 under XLA (`bench.suite.step_time`, loaded machine): `demo`
# (64 wide) 0.99x on 2 threads and slower on one; `cpu` (128) 1.45x; `small`
# (256) 1.36x.
MIN_CPU_BFLOAT16_WIDTH = 128

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Hardware:
    """What a run computes on.

    `device`: "cpu", "gpu" or "tpu"; `cpu_flags`: the host CPU's flags;
    `gpu_capability`: the lowest compute capability of the GPUs (None
    without GPUs or when unknown).
    """

    device: str = "cpu"
    cpu_flags: frozenset[str] = frozenset()
    gpu_capability: tuple[int, int] | None = None

    @property
    def native_bfloat16(self) -> bool:
        """True when bfloat16 matmuls run natively on `device`."""
        if self.device == "tpu":
            return True
        if self.device == "gpu":
            capability = self.gpu_capability or (0, 0)
            return tuple(capability) >= MIN_BF16_GPU_CAPABILITY
        return any(flag in self.cpu_flags for flag in NATIVE_BF16_CPU_FLAGS)


@dataclasses.dataclass(frozen=True)
class Resolved:
    """A run's precision (a Keras dtype policy) and whether it compiles with XLA."""

    precision: str
    jit_compile: bool

    def to_dict(self) -> dict:
        return {"precision": self.precision, "jit_compile": self.jit_compile}


def read_cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The first CPU's flags in `path`; empty where there is no such file."""
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def isa_flags(cpu_flags: frozenset[str] | None = None) -> dict[str, bool]:
    """`ISA_FLAGS` present (True) or not in `cpu_flags` (default: this CPU's)."""
    flags = read_cpu_flags() if cpu_flags is None else cpu_flags
    return {flag: flag in flags for flag in ISA_FLAGS}


def detect_hardware(strategy=None) -> Hardware:
    """This host's `Hardware`: a TPU strategy or TPU devices, else GPUs, else
    the CPU, with the CPU's flags either way."""
    import tensorflow as tf

    cpu_flags = read_cpu_flags()
    if isinstance(
        strategy, tf.distribute.TPUStrategy
    ) or tf.config.list_logical_devices("TPU"):
        return Hardware("tpu", cpu_flags)
    gpus = tf.config.list_physical_devices("GPU")
    if gpus:
        capabilities = [
            tf.config.experimental.get_device_details(gpu).get("compute_capability")
            for gpu in gpus
        ]
        known = [tuple(c) for c in capabilities if c]
        return Hardware("gpu", cpu_flags, min(known) if known else None)
    return Hardware("cpu", cpu_flags)


def check_precision(precision: str, hardware: Hardware) -> None:
    """`ConfigError` for a precision that cannot train on `hardware`."""
    if precision not in PRECISION_CHOICES:
        raise ConfigError(
            f"--precision must be one of {', '.join(PRECISION_CHOICES)}, "
            f"got {precision!r}"
        )
    if precision == "mixed_float16" and hardware.device == "cpu":
        raise ConfigError(
            "--precision mixed_float16 needs a GPU: on a CPU float16 loss "
            "scaling skips every update; use mixed_bfloat16 (or auto) or float32"
        )


def resolve_precision(
    precision: str,
    jit: str,
    hardware: Hardware,
    *,
    jit_when_float32: bool,
    width: int | None = None,
) -> Resolved:
    """`--precision` and `--jit` resolved for `hardware` (see the module docstring).

    `jit_when_float32`: what `--jit auto` means for float32 on this device
    (`electra_tf.distribution.resolve_jit_compile` for the run's strategy):
    kept for float32, and for bfloat16 everywhere but a CPU. `width`: the
    encoder's hidden size (None: not known, the hardware alone decides).
    """
    check_precision(precision, hardware)
    if jit not in ("auto", "on", "off"):
        raise ConfigError(f"--jit must be auto, on or off, got {jit!r}")
    if precision == "auto":
        narrow = width is not None and width < MIN_CPU_BFLOAT16_WIDTH
        bfloat16 = hardware.native_bfloat16 and not (
            hardware.device == "cpu" and narrow
        )
        precision = "mixed_bfloat16" if bfloat16 else "float32"
    if jit != "auto":
        jit_compile = jit == "on"
    elif precision == "mixed_bfloat16" and hardware.device == "cpu":
        # Graph mode: oneDNN's bfloat16 matmuls (XLA's CPU dots are slower).
        jit_compile = False
    else:
        jit_compile = jit_when_float32
    return Resolved(precision, jit_compile)


def log_resolved(resolved: Resolved, requested: str, jit: str, hardware: Hardware):
    """Logs the resolved precision and XLA choice, and what they came from."""
    logger.info(
        "precision %s (--precision %s), XLA %s (--jit %s) on %s%s",
        resolved.precision,
        requested,
        "on" if resolved.jit_compile else "off",
        jit,
        hardware.device,
        " with native bfloat16" if hardware.native_bfloat16 else "",
    )


def head_dtype(policy):
    """The dtype policy of a task head on an encoder of `policy`: float32
    under a mixed policy (float32 variables), so that logits, softmax and
    losses are float32 whatever the encoder computes in; else `policy`."""
    return "float32" if policy.variable_dtype == "float32" else policy
