"""Fine-tuning's behaviour is unchanged: the bundled demos and fixtures, run
through the command line with fixed seeds (`demo_runs.py`), give the metrics
and predictions recorded in `demo_runs.json`.

Slow (seven tiny runs, each exported): run with `-m slow`. The record is of
one machine and TensorFlow build (`demo_runs.json`'s `machine`); on another,
record it afresh before a change (`python -m tests.finetuning.demo_runs
--write tests/finetuning/demo_runs.json`) and compare after it.
"""

import json

import pytest

from tests.finetuning import demo_runs


def test_differences_finds_what_changed_beyond_the_tolerance():
    recorded = {"seeds": {"1": {"score": 0.5, "epochs": [{"loss": 1.0}]}}, "files": {}}
    same = {"seeds": {"1": {"score": 0.5 + 1e-9, "epochs": [{"loss": 1.0}]}}}
    assert demo_runs.differences(recorded, {**same, "files": {}}) == []
    moved = {"seeds": {"1": {"score": 0.5001, "epochs": [{"loss": 1.0}]}}}
    assert demo_runs.differences(recorded, {**moved, "files": {}}) == [
        "/seeds/1/score: 0.5 != 0.5001"
    ]
    assert demo_runs.differences(recorded, same) == [
        ": keys ['files', 'seeds'] != ['seeds']"
    ]
    assert demo_runs.differences({"f": "a\tb"}, {"f": "a\tc"}) == [
        "/f: 'a\\tb' != 'a\\tc'"
    ]


@pytest.mark.slow
def test_demo_runs_give_the_recorded_metrics(tmp_path):
    recorded = json.loads(demo_runs.RECORD.read_text())["runs"]
    results = demo_runs.run_all(tmp_path)
    assert set(results) == set(recorded)
    found = []
    for name, outcome in results.items():
        found += demo_runs.differences(recorded[name], outcome, name)
    assert not found, "\n".join(found)
