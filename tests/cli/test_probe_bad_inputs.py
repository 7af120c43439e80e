"""`scripts/probe_bad_inputs.py`, the bad-input probe, on a few cases (the
whole probe takes minutes and is not part of the suite): its machinery runs
and classifies."""

import json
import pathlib
import subprocess
import sys

from scripts import probe_bad_inputs
from tests.helpers import SUBPROCESS_TIMEOUT

REPO = pathlib.Path(__file__).parents[2]


def test_the_probe_runs_cases_and_writes_their_classes(tmp_path):
    output = tmp_path / "probe.json"
    names = ["pretrain-steps-0", "build-missing-input", "build-unreadable-input"]
    result = subprocess.run(
        [sys.executable, "-m", "scripts.probe_bad_inputs", "--only", ",".join(names)]
        + ["--output", str(output), "--jobs", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    record = json.loads(output.read_text())
    classes = {case["name"]: case["class"] for case in record["cases"]}
    assert classes == dict.fromkeys(names, "refused"), record["cases"]
    (unreadable,) = [c for c in record["cases"] if c["name"] == names[2]]
    assert unreadable["answer"].startswith("error: ")
    assert "corpus.txt" in unreadable["answer"]
    assert "Permission denied" in unreadable["answer"]
    assert unreadable["expect"] == "error"
    assert record["finished"] and record["cases_planned"] == record["cases_run"] == 3
    assert record["counts"]["all"]["refused"] == 3
    assert record["counts"]["electra-build-data"]["refused"] == 2
    assert record["commit"] != "unknown" and "CPUs" in record["machine"]
    assert "electra-build-data" in result.stdout


def _case(expect="error", pattern="x.txt"):
    return probe_bad_inputs.Case("c", "electra-pretrain", [], expect, pattern, "w")


def test_results_are_classified():
    classify = probe_bad_inputs.classify
    error = "INFO a\nerror: x.txt is not UTF-8\n"
    assert classify(_case(), 2, "", error) == ("refused", None)
    assert classify(_case(), 0, "", "INFO done\n") == ("silent", None)
    assert classify(_case(), -6, "", "") == ("crash", "exit status -6")
    assert classify(_case(), 134, "", "") == ("crash", "exit status 134")
    assert classify(_case(), 1, "", "Traceback (most recent call last):\n")[0] == (
        "traceback"
    )
    # Not naming the culprit, or more than one error line.
    assert classify(_case(), 2, "", "error: bad input\n")[0] == "unclear"
    assert classify(_case(), 2, "", "error: x.txt\nerror: x.txt\n")[0] == "unclear"
    # A warning case: the warning, or a refusal naming it; each counted as
    # what it is.
    warning = _case("warning", "no document was held out")
    assert classify(warning, 0, "", "WARNING no document was held out\n")[0] == (
        "warned"
    )
    assert classify(warning, 2, "", "error: no document was held out\n")[0] == (
        "refused"
    )
    assert classify(warning, 0, "", "INFO fine\n")[0] == "silent"
    # An answer case (an empty batch): the answer on stdout.
    answer = _case("answer", r"\[0")
    assert classify(answer, 0, '{"probabilities": [0]}\n', "")[0] == "answered"
    assert classify(answer, 0, "{}\n", "")[0] == "silent"
    # What must not change, changed: data lost, however clear the message.
    assert classify(_case(), 2, "", error, "x.txt was overwritten") == (
        "silent",
        "x.txt was overwritten",
    )


def test_the_answer_line_is_the_line_the_user_reads():
    line = probe_bad_inputs.answer_line
    stderr = "INFO a\nerror: x.txt is not UTF-8\n"
    assert line(_case(), "refused", "", stderr) == "error: x.txt is not UTF-8"
    warning = _case("warning", "held out")
    stderr = "INFO a\nWARNING no document was held out\nINFO done\n"
    assert line(warning, "warned", "", stderr) == "WARNING no document was held out"
    assert line(_case("answer", "0"), "answered", "\n[0, 2]\n", "INFO\n") == "[0, 2]"
    assert line(_case(), "unclear", "", "error: a\nerror: b\n") == "error: b"
