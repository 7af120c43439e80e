"""How every benchmark and study writes its result JSON (`write_result`)."""

from __future__ import annotations

import json
import os
import pathlib


def write_result(path, report: dict) -> None:
    """`report` as indented JSON at `path`, written whole, then renamed: a run
    killed while writing leaves the earlier file, never half of one."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(report, indent=2) + "\n")
    os.replace(temporary, path)
