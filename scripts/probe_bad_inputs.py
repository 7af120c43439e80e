"""Bad inputs, tried as a new user would: how does each command answer them?

Runs each case of `scripts/bad_input_cases.py` from fresh inputs, in its own
temporary directory, through the console scripts (`electra-build-data`,
`electra-pretrain`, `electra-convert`, `electra-score`, `electra-finetune`,
`electra-finetune-demo`) or, for the exported SavedModels, a fresh Python
process that loads one and calls a signature; and classifies the result:

* refused: exit status 2 and one `error:` line, last, naming the culprit (the
  case's pattern);
* warned: where a warning is the right answer, exit 0 and the warning (a
  warning case may also be refused, naming the culprit);
* answered: where an answer is right (an empty batch), exit 0 and the answer;
* silent: exit 0 without the error or warning (or a case's check of what must
  not change failed: data lost);
* traceback: a Python traceback;
* unclear: any other exit (a message not naming the culprit, several lines,
  a timeout);
* crash: killed by a signal, or an exit status of 128 or more.

Shared inputs that take long to make (a tiny pre-training run and its
exports, for the resume, scoring, conversion and serving cases) are made once
per probe run; every case copies what it changes. As root, where `chmod` does
not deny reads or writes, the cases about unreadable files and read-only
directories run without root's capabilities to override file modes, so that
they deny as they would a user.

    python -m scripts.probe_bad_inputs                    # every case, ~10 min
    python -m scripts.probe_bad_inputs --only pretrain-steps-0,build-empty
    python -m scripts.probe_bad_inputs --list

Refused, warned and answered are the right answers; the counts keep them
apart, so that a warning is never counted as a refusal.

Prints the counts per command and writes every case's result (its name, what
it tries, the command and its argv, what was expected, the class, the line
that answered, the exit status, the last line) with the machine, commit and
date to --output (default bench/results/bad_inputs_probe.json, the record
RELIABILITY.md's counts come from). Run from the repository root, so the
repository's code runs (`PYTHONPATH` is set to it for every case).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from scripts import bad_input_cases

REPO = pathlib.Path(__file__).resolve().parents[1]

CLASSES = ("refused", "warned", "answered", "silent", "traceback", "unclear", "crash")
RIGHT = ("refused", "warned", "answered")
DEFAULT_OUTPUT = REPO / "bench" / "results" / "bad_inputs_probe.json"
# Runs argv[1:] without root's power to read and write any file
# (CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, dropped from the bounding set, so
# that the exec'd command does not have them): file modes then bind root too.
WITHOUT_FILE_OVERRIDE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
    if libc.prctl(24, capability, 0, 0, 0):  # PR_CAPBSET_DROP
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")
os.execv(sys.argv[1], sys.argv[1:])
"""
# A guard against hangs, not a measure: a case that takes longer is "unclear".
CASE_TIMEOUT = 900
# An error line: ours (`error: ...`) or argparse's (`run.py: error: ...`).
ERROR_LINE = re.compile(r"^(\S+: )?error: ")

# Loads a SavedModel and calls one signature with the inputs given as JSON
# ({name: [dtype, value]}); a refused request (TensorFlow's
# InvalidArgumentError, or the TypeError or ValueError of a call that does not
# fit the signature) is one `error:` line and exit 2; an answer prints each
# output's shape.
SERVE = """
import json, sys
import tensorflow as tf
import tensorflow_text  # noqa: F401  (the text signatures' ops)
path, name, inputs = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
function = tf.saved_model.load(path).signatures[name]
tensors = {k: tf.constant(v, dtype=getattr(tf, d)) for k, (d, v) in inputs.items()}
try:
    outputs = function(**tensors)
except (tf.errors.InvalidArgumentError, TypeError, ValueError) as error:
    text = getattr(error, "message", None) or str(error)
    print("error: " + " ".join(text.split())[:2000], file=sys.stderr)
    sys.exit(2)
print(json.dumps({k: list(v.shape) for k, v in outputs.items()}))
"""


@dataclasses.dataclass
class Case:
    """One bad input.

    Attributes:
        name: unique, e.g. `pretrain-steps-0`.
        command: a console script, or `serving` (a SavedModel's signature).
        args: its arguments; `{tmp}` is the case's directory, `{run}` the
            shared tiny run (copied to `{tmp}/run` when `copy_run`), and the
            other fields of `Fixtures.paths`.
        expect: "error" (exit 2, one line matching `pattern`), "warning"
            (exit 0 and `pattern` in the output, or a refusal matching it) or
            "answer" (exit 0; `pattern` in stdout).
        pattern: a regular expression the error line (or warning) must match:
            the culprit's name.
        setup: writes the case's inputs: `setup(tmp: pathlib.Path)`.
        check: after the run, what must not have changed: returns a problem
            (a string) or None.
        copy_run: copy the shared run into `{tmp}/run` first.
        unprivileged: a case of file modes (`chmod`): run so that they bind
            root too (`bound_by_file_modes`).
        what: the class of bad input, as the issue lists it.
    """

    name: str
    command: str
    args: list[str]
    expect: str
    pattern: str
    what: str
    setup: object = None
    check: object = None
    copy_run: bool = False
    unprivileged: bool = False

    @property
    def needs_run(self) -> bool:
        return self.copy_run or any("{run" in a or "{export" in a for a in self.args)


class Fixtures:
    """The inputs made once per probe run, under `root`."""

    def __init__(self, root: pathlib.Path):
        self.root = root
        self.run = root / "run"

    @property
    def paths(self) -> dict[str, str]:
        return {
            "run": str(self.run),
            "export": str(self.run / "export"),
            "vocab": str(REPO / "electra_tf" / "assets" / "vocab.txt"),
            "demo_vocab": str(REPO / "electra_tf" / "assets" / "demo_vocab.txt"),
            "python": sys.executable,
        }

    def make_run(self) -> None:
        """A tiny pre-training run of the demo preset, exported."""
        if (self.run / "export" / "saved_model").exists():
            return
        result = subprocess.run(
            [*script("electra-pretrain"), "--model-dir", str(self.run)]
            + bad_input_cases.TINY_RUN,
            capture_output=True,
            text=True,
            env=environment(self.root),
            timeout=CASE_TIMEOUT,
        )
        if result.returncode != 0:
            raise SystemExit(f"the tiny run failed:\n{result.stderr[-3000:]}")


def script(command: str) -> list[str]:
    """The argv prefix that runs a console script (of this interpreter's
    environment, or its module when the script is not installed)."""
    if command == "serving":
        return [sys.executable, "-c", SERVE]
    installed = pathlib.Path(sys.executable).parent / command
    if installed.exists():
        return [sys.executable, str(installed)]
    module = command.removeprefix("electra-").replace("-", "_")
    return [
        sys.executable,
        "-c",
        f"import sys; from electra_tf.cli.{module} import main; sys.exit(main())",
    ]


def bound_by_file_modes(argv: list[str]) -> list[str]:
    """`argv`, run so that file modes deny it (`chmod 000`, a read-only
    directory): as is for a user, without root's file capabilities for root."""
    if os.geteuid() != 0:
        return argv
    return [sys.executable, "-c", WITHOUT_FILE_OVERRIDE, *argv]


def environment(home: pathlib.Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    env["HOME"] = str(home)  # Keras' config, as a new user's
    env["KERAS_HOME"] = str(home / ".keras")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")  # what a user sees
    return env


def classify(case: Case, returncode: int, stdout: str, stderr: str, problem=None):
    """`(class, note)` of one result (see the module docstring)."""
    if returncode < 0 or returncode >= 128:
        return "crash", f"exit status {returncode}"
    if "Traceback (most recent call last)" in stderr:
        return "traceback", None
    if problem:
        return "silent", problem
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if ERROR_LINE.match(line)]
    pattern = re.compile(case.pattern)
    if returncode == 0:
        if case.expect == "warning" and pattern.search(stderr + stdout):
            return "warned", None
        if case.expect == "answer" and pattern.search(stdout):
            return "answered", None
        return "silent", None
    if returncode == 2 and len(errors) == 1 and lines[-1] == errors[0]:
        if case.expect in ("error", "warning") and pattern.search(errors[0]):
            return "refused", None
        return "unclear", "the error line does not match " + case.pattern
    return "unclear", f"exit status {returncode}, {len(errors)} error lines"


def answer_line(case: Case, kind: str, stdout: str, stderr: str) -> str:
    """The line the user reads as the answer: the error line of a refusal,
    the warning of a warning, the first line of an answer; else the last
    line of stderr."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if kind == "refused":
        return next(line for line in lines if ERROR_LINE.match(line))
    if kind == "warned":
        pattern = re.compile(case.pattern)
        found = [
            line for line in (stderr + stdout).splitlines() if pattern.search(line)
        ]
        return found[0] if found else ""
    if kind == "answered":
        return next((line for line in stdout.splitlines() if line.strip()), "")
    return lines[-1] if lines else ""


def fill(argument: str, paths: dict[str, str]) -> str:
    """`argument` with each `{name}` of `paths` replaced (JSON's own braces,
    as in `--hparams`, are left alone)."""
    return PLACEHOLDER.sub(lambda m: paths.get(m[1], m[0]), argument)


PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def run_case(case: Case, fixtures: Fixtures, work: pathlib.Path) -> dict:
    """Runs `case` in a fresh directory under `work`; its result as a dict."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=case.name + "-", dir=work))
    paths = {**fixtures.paths, "tmp": str(tmp)}
    if case.copy_run:
        shutil.copytree(fixtures.run, tmp / "run")
        paths["run"] = str(tmp / "run")
        paths["export"] = str(tmp / "run" / "export")
    if case.setup is not None:
        case.setup(tmp)
    argv = [*script(case.command), *(fill(a, paths) for a in case.args)]
    shown = [a if len(a) < 300 else a[:80] + "..." for a in argv]
    if case.command == "serving":
        shown = ["<serving>", *shown[3:]]
    if case.unprivileged:
        argv = bound_by_file_modes(argv)
    start = time.monotonic()
    try:
        result = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            errors="replace",
            cwd=tmp,
            env=environment(tmp),
            timeout=CASE_TIMEOUT,
        )
        returncode, stdout, stderr = result.returncode, result.stdout, result.stderr
    except subprocess.TimeoutExpired as error:
        returncode, stdout = -999, ""
        stderr = (error.stderr or b"").decode("utf-8", "replace")
    seconds = time.monotonic() - start
    problem = case.check(tmp) if case.check is not None else None
    if returncode == -999:
        kind, note = "unclear", f"timeout after {CASE_TIMEOUT} s"
    else:
        kind, note = classify(case, returncode, stdout, stderr, problem)
    lines = [line for line in stderr.splitlines() if line.strip()]
    return {
        "name": case.name,
        "command": case.command,
        "what": case.what,
        "argv": shown,
        "expect": case.expect,
        "class": kind,
        "note": note,
        "answer": answer_line(case, kind, stdout, stderr)[:500],
        "exit": returncode,
        "last_line": lines[-1][:500] if lines else "",
        "stderr_lines": len(lines),
        "seconds": round(seconds, 1),
        "file_modes_bind_root": case.unprivileged and os.geteuid() == 0,
    }


def counts(results: list[dict]) -> dict[str, dict[str, int]]:
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for result in results:
        table[result["command"]][result["class"]] += 1
        table["all"][result["class"]] += 1
    return {
        command: {kind: table[command][kind] for kind in CLASSES}
        for command in sorted(table, key=lambda c: (c == "all", c))
    }


def commit() -> str:
    """The repository's commit, `+` if its tracked files differ from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=REPO,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown"
    return (head or "unknown") + ("+" if dirty else "")


def cpu_model() -> str:
    """The CPU's model name (Linux), or the platform's processor string."""
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", help="Comma-separated case names (default: all).")
    parser.add_argument("--list", action="store_true", help="List the cases.")
    parser.add_argument(
        "--output", default=str(DEFAULT_OUTPUT), help="JSON results (%(default)s)."
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="Cases run at once (default 2)."
    )
    parser.add_argument("--keep", action="store_true", help="Keep the work directory.")
    args = parser.parse_args(argv)
    cases = bad_input_cases.cases(Case)
    names = [case.name for case in cases]
    duplicated = {n for n in names if names.count(n) > 1}
    if duplicated:
        raise SystemExit(f"duplicate case names: {sorted(duplicated)}")
    if args.list:
        for case in cases:
            print(f"{case.name:45} {case.command:22} {case.what}")
        return 0
    if args.only:
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - set(names))
        if unknown:
            raise SystemExit(f"unknown cases: {unknown}")
        cases = [case for case in cases if case.name in wanted]
    if args.jobs < 1:
        raise SystemExit(f"--jobs must be at least 1, got {args.jobs}")

    output = pathlib.Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    given = sys.argv[1:] if argv is None else list(argv)
    revision = commit()
    machine = f"{cpu_model()}, {os.cpu_count()} CPUs, {platform.machine()}"
    load_at_start = os.getloadavg()[0]
    started = time.monotonic()
    results: list[dict] = []
    lock = threading.Lock()

    def write(finished: bool) -> dict:
        """The results so far, written to `output` (after every case, so an
        interrupted probe leaves what it measured)."""
        record = {
            "command": " ".join(["python", "-m", "scripts.probe_bad_inputs", *given]),
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": machine,
            "load_average_1min": {"start": load_at_start, "now": os.getloadavg()[0]},
            "commit": revision,
            "as_root": os.geteuid() == 0,
            "finished": finished,
            "cases_planned": len(cases),
            "cases_run": len(results),
            "seconds": round(time.monotonic() - started),
            "counts": counts(results),
            "cases": sorted(results, key=lambda r: order[r["name"]]),
        }
        output.write_text(json.dumps(record, indent=1) + "\n")
        return record

    order = {case.name: i for i, case in enumerate(cases)}
    work = pathlib.Path(tempfile.mkdtemp(prefix="bad-inputs-"))
    fixtures = Fixtures(work / "fixtures")
    fixtures.root.mkdir()
    try:
        if any(case.needs_run for case in cases):
            print("making the tiny run (shared inputs) ...", flush=True)
            fixtures.make_run()

        def one(case):
            try:
                result = run_case(case, fixtures, work)
            except Exception as error:  # the probe's own failure, not the case's
                result = {
                    "name": case.name,
                    "command": case.command,
                    "what": case.what,
                    "expect": case.expect,
                    "class": "unclear",
                    "note": f"the probe failed: {error!r}",
                    "answer": "",
                    "last_line": "",
                    "seconds": 0.0,
                }
            with lock:
                results.append(result)
                write(finished=False)
            print(
                f"{result['class']:9} {case.name:45} {result['seconds']:6.1f} s  "
                f"{result['answer'][:150]}",
                flush=True,
            )

        with ThreadPoolExecutor(args.jobs) as pool:
            list(pool.map(one, cases))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"kept {work}")
    record = write(finished=True)
    print(f"\n{'command':24}" + "".join(f"{kind:>10}" for kind in CLASSES))
    for command, row in record["counts"].items():
        print(f"{command:24}" + "".join(f"{row[kind]:>10}" for kind in CLASSES))
    print(f"\n{len(results)} cases in {record['seconds']} s; results in {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
