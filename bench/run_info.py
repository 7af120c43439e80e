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
_PACKAGES = ("tensorflow", "keras", "keras_hub", "torch", "transformers", "tokenizers")


def machine() -> str:
    """CPU model, core count and memory, from /proc where there is one."""
    model, memory = "unknown CPU", ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as meminfo:
            kib = int(meminfo.readline().split()[1])
            memory = f", {kib / 2**20:.0f} GiB"
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores{memory}"


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
    """The checkout's commit (with "+changes" if the tree differs), or "unknown"."""
    try:
        head = _git("rev-parse", "--short", "HEAD").strip()
        changed = _git("status", "--porcelain", "--untracked-files=no").strip()
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
        "versions": versions(),
    }
