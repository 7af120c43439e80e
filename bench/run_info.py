"""The header every benchmark and study puts first in its result JSON: command,
commit, date, machine and package versions (`run_info`)."""

from __future__ import annotations

import datetime
import importlib
import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
_PACKAGES = (
    "tensorflow",
    "keras",
    "keras_hub",
    "torch",
    "transformers",
    "tokenizers",
    "sklearn",
)
# /proc/cpuinfo flag and its name, widest first.
_VECTORS = (("avx512f", "AVX-512"), ("avx2", "AVX2"))


def machine(cpuinfo="/proc/cpuinfo", meminfo="/proc/meminfo") -> str:
    """CPU model, its widest vector instructions, core count and memory, from
    /proc where there is one: "AMD EPYC (AVX-512), 2 cores, 24 GiB". Machines
    of one model name here differ in AVX-512, which changes both speed and the
    rounding of a run (a rerun on the other kind is not the same run)."""
    model, vectors, memory = "unknown CPU", "", ""
    try:
        fields = {}
        with open(cpuinfo) as lines:
            for line in lines:  # the first CPU's fields
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
        model = fields.get("model name", model)
        flags = fields.get("flags", "").split()
        vectors = next((f" ({name})" for flag, name in _VECTORS if flag in flags), "")
        with open(meminfo) as lines:
            kib = int(lines.readline().split()[1])
            memory = f", {kib / 2**20:.0f} GiB"
    except OSError:
        pass
    return f"{model}{vectors}, {os.cpu_count()} cores{memory}"


def cpu_flags() -> dict[str, bool]:
    """`electra_tf.precision.ISA_FLAGS`, each present (True) or not on this CPU."""
    from electra_tf.precision import isa_flags

    return isa_flags()


def versions() -> dict:
    """Versions of the packages already imported (importing none)."""
    found = {}
    for name in _PACKAGES:
        if name in sys.modules:
            found[name] = getattr(importlib.import_module(name), "__version__", "?")
    return found


def _git(*args: str) -> str:
    command = ["git", "-C", str(REPO), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=30).stdout


def commit() -> str:
    """The checkout's commit (with "+changes" if the tree differs), or "unknown".

    Changed result files (`bench/results/`) do not count: a study rewrites
    its committed report after every unit while its next units run."""
    try:
        head = _git("rev-parse", "--short", "HEAD").strip()
        changed = _git(
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ".",
            ":!bench/results",
        ).strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (head or "unknown") + ("+changes" if head and changed else "")


def run_info(script: str) -> dict:
    """The `command`, `commit`, `date`, `machine` and `versions` of a report."""
    module = pathlib.Path(os.path.relpath(os.path.abspath(script), REPO))
    return {
        "command": " ".join(
            ["python -m " + ".".join(module.with_suffix("").parts)] + sys.argv[1:]
        ),
        "commit": commit(),
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        # The CPU flags that decide matmul speed (bfloat16 is native with
        # avx512_bf16 or amx_bf16).
        "cpu_flags": cpu_flags(),
        "versions": versions(),
    }
