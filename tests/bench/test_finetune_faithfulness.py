"""`bench.suite.finetune_faithfulness` end to end on a tiny encoder and a few
sentences: every task's arms run, their settings are the arms', each run's
gradient norms are recorded, the paired differences are computed, and a
rerun keeps the finished runs."""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import SUBPROCESS_TIMEOUT, conll_preset

REPO = pathlib.Path(__file__).resolve().parents[2]
BROWN = REPO / "tests" / "fixtures" / "brown_pos"  # 15 / 8 / 5 sentences
RT_POLARITY = REPO / "electra_tf" / "assets" / "tasks" / "rt_polarity"


def _labelled_rt_polarity(directory):
    """Train, dev and labelled test files cut from the bundled training
    file (its test file has no labels)."""
    header, *rows = (RT_POLARITY / "train.tsv").read_text().splitlines()
    directory.mkdir()
    for split, (start, end) in {
        "train": (0, 48),
        "dev": (48, 64),
        "test": (64, 80),
    }.items():
        (directory / f"{split}.tsv").write_text(
            "\n".join([header, *rows[start:end]]) + "\n"
        )
    return directory


def _run(argv):
    result = subprocess.run(
        [sys.executable, "-m", "bench.suite.finetune_faithfulness", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,  # where `bench` is a package; the result's commit is this one
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


@pytest.mark.slow
def test_the_arms_run_paired_and_record_their_gradient_norms(tmp_path):
    output = tmp_path / "report.json"
    preset = conll_preset(tmp_path / "discriminator", BROWN / "train.conll", 64)
    argv = [
        "--pretrained", str(preset),
        "--tasks", "brown_pos,rt_polarity",
        "--arms", "mean,original",
        "--seeds", "1",
        "--epochs", "1",
        "--brown-pos-dir", str(BROWN),
        "--rt-polarity-dir", str(_labelled_rt_polarity(tmp_path / "rt")),
        "--work-dir", str(tmp_path / "work"),
        "--output", str(output),
    ]  # fmt: skip
    printed = _run(argv)
    report = json.loads(output.read_text())
    for key in ("command", "commit", "date", "machine", "cpu_flags", "versions"):
        assert key in report
    brown, rt = report["tasks"]["brown_pos"], report["tasks"]["rt_polarity"]
    # A classifier has only the loss's arms.
    assert set(brown["runs"]) == {"mean", "original"} and set(rt["runs"]) == {"mean"}
    mean, original = brown["runs"]["mean"]["1"], brown["runs"]["original"]["1"]
    assert (mean["config"]["loss_reduction"], original["config"]["loss_reduction"]) == (
        "mean",
        "sum",
    )
    assert original["config"]["head_dropout"] == 0.0
    assert original["config"]["segment_id"] == 1
    for run in (mean, original, rt["runs"]["mean"]["1"]):
        assert 0 < run["steps"] and 0 <= run["steps_below_clip_norm"] <= run["steps"]
        assert run["gradient_norm"]["min"] > 0  # every step's norm was recorded
        assert 0 <= run["dev"] <= 1 and 0 <= run["test"] <= 1
    # The sum's gradient is the mean's times the labelled words of a batch.
    assert original["gradient_norm"]["median"] > 10 * mean["gradient_norm"]["median"]
    paired = brown["summary"]["original"]["minus_mean"]
    for split in ("dev", "test"):
        assert np.isclose(paired[split]["mean"], original[split] - mean[split])
    assert "original        dev" in printed and "minus mean: dev" in printed
    # A rerun with the same settings keeps the finished runs (their timings too).
    _run(argv)
    assert json.loads(output.read_text())["tasks"] == report["tasks"]
