"""bench/result_file.py: every benchmark's and study's result JSON."""

import json

import pytest

from bench import result_file
from bench.result_file import write_result


def test_a_result_is_written_whole_into_new_directories(tmp_path):
    path = tmp_path / "results" / "run.json"
    write_result(path, {"accuracy": 0.5, "text": "naïve"})
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "accuracy": 0.5,
        "text": "naïve",
    }
    assert [p.name for p in path.parent.iterdir()] == ["run.json"]


def test_a_write_that_fails_leaves_the_earlier_file(tmp_path, monkeypatch):
    path = tmp_path / "run.json"
    write_result(path, {"step": 1})

    def killed(source, destination):
        raise KeyboardInterrupt

    monkeypatch.setattr(result_file.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        write_result(path, {"step": 2})
    assert json.loads(path.read_text()) == {"step": 1}
