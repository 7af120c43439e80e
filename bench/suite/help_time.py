"""How long each command line takes to answer `--help` (issue 58): the wall
time of `python <script> --help` in fresh processes, in a checkout given by
`--checkout` (this one by default; another one's code is run with its own
directory first on `sys.path`, whatever is installed).

    python -m bench.suite.help_time --rounds 5 --output bench/results/help_time.json
    python -m bench.suite.help_time --checkout ../before --label before ...

Appends (or replaces) the checkout's entry under `runs` in `--output`, so one
file holds the before and after runs.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

from bench.result_file import write_result
from bench.run_info import REPO, machine, run_info

SCRIPTS = (
    "pretrain/run.py",
    "finetune/run.py",
    "finetune/demo.py",
    "pretrain/build_data.py",
    "pretrain/convert.py",
    "pretrain/score.py",
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", default=str(REPO), help="Default: this one.")
    parser.add_argument("--label", default="after", help="The entry's name.")
    parser.add_argument("--rounds", type=int, default=5, help="Runs per script.")
    parser.add_argument(
        "--scripts", default=",".join(SCRIPTS), help="Comma-separated (default: all)."
    )
    parser.add_argument("--output", help="JSON file to add this checkout's run to.")
    return parser.parse_args(argv)


def _commit(checkout: pathlib.Path) -> str:
    result = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
    )
    return result.stdout.strip() or "unknown"


def _load_average() -> float:
    return os.getloadavg()[0]


def time_help(checkout: pathlib.Path, script: str, rounds: int) -> dict:
    """Wall seconds of `rounds` runs of `python <script> --help` in `checkout`."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    seconds = []
    for _ in range(rounds):
        start = time.perf_counter()
        result = subprocess.run(
            [sys.executable, script, "--help"],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
        )
        seconds.append(time.perf_counter() - start)
        if result.returncode != 0:
            raise SystemExit(f"{script} --help failed:\n{result.stderr[-2000:]}")
    return {
        "median_s": round(statistics.median(seconds), 3),
        "seconds": [round(s, 3) for s in seconds],
        "stderr_lines": len(result.stderr.splitlines()),
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    checkout = pathlib.Path(args.checkout).resolve()
    load_before = _load_average()
    scripts = {
        script: time_help(checkout, script, args.rounds)
        for script in args.scripts.split(",")
    }
    entry = {
        "checkout_commit": _commit(checkout),
        "machine": machine(),
        "cpu_count": os.cpu_count(),
        "load_average_1min": [round(load_before, 2), round(_load_average(), 2)],
        "nice": os.nice(0),
        "rounds": args.rounds,
        "scripts": scripts,
    }
    report = {}
    if args.output and os.path.exists(args.output):
        report = json.loads(pathlib.Path(args.output).read_text())
    report.update({k: v for k, v in run_info(__file__).items() if k != "versions"})
    report.setdefault("runs", {})[args.label] = entry
    if args.output:
        write_result(args.output, report)
    print(json.dumps(entry, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
