"""What each benchmark records next to its figures: command, date, machine."""

from __future__ import annotations

import datetime
import importlib
import os
import pathlib
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


def run_info(script: str) -> dict:
    """The `command`, `date`, `machine` and `versions` entries of a report."""
    return {
        "command": " ".join(
            [os.path.relpath(os.path.abspath(script), REPO)] + sys.argv[1:]
        ),
        "date": datetime.date.today().isoformat(),
        "machine": machine(),
        "versions": versions(),
    }
