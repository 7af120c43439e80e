"""The tagging demo: its bundled excerpt (electra_tf/assets/tasks/brown_pos) and
`finetune/demo.py`, a pre-trained encoder against no pre-training."""

import collections
import dataclasses
import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from electra_tf.cli import finetune_demo
from electra_tf.finetuning import pretraining_gain
from electra_tf.finetuning.settings import DEMO_TAGGING, FinetuningFlags
from electra_tf.finetuning.starting_point import StartingPoint
from electra_tf.finetuning.tagging import (
    TaggingConfig,
    TaggingTask,
    load_tagging_data,
)
from electra_tf.finetuning.tagging_data import read_conll
from tests.helpers import SUBPROCESS_TIMEOUT, conll_preset

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "tasks" / "brown_pos"


def _words(sentences):
    return sum(len(words) for words in sentences.words)


def test_the_excerpt_has_the_promised_sizes_and_tags():
    train, dev, test = (
        read_conll(pathlib.Path(DEMO_TAGGING) / f"{split}.conll")
        for split in ("train", "dev", "test")
    )
    assert len(train) == 2000
    assert _words(dev) >= 5000 and _words(test) >= 5000
    tags = {tag for sentence in train.tags for tag in sentence}
    # The 12 universal tags, every one seen in training.
    assert tags == set("NOUN VERB ADJ ADV PRON DET ADP NUM CONJ PRT . X".split())
    for split in (dev, test):
        assert {tag for sentence in split.tags for tag in sentence} <= tags


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/data/tasks/brown_pos")
def test_the_script_rebuilds_the_excerpt_byte_for_byte(tmp_path):
    subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "make_demo_tagging.py"),
            "--shared",
            str(SHARED),
            "--output",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    for split in ("train", "dev", "test"):
        bundled = pathlib.Path(DEMO_TAGGING) / f"{split}.conll"
        assert (tmp_path / f"{split}.conll").read_bytes() == bundled.read_bytes()


# === The demo: both arms, end to end ===

FIXTURE = REPO / "tests" / "fixtures" / "brown_pos"  # 15 / 8 / 5 sentences


@pytest.fixture(scope="module")
def preset(tmp_path_factory):
    """A tiny encoder as a keras-hub preset, its vocabulary the fixture's
    words, every weight 0.5 (so a loaded weight is told from a drawn one)."""
    path = tmp_path_factory.mktemp("pretrained") / "discriminator"
    return conll_preset(path, FIXTURE / "train.conll", 32, weight=0.5)


def test_the_arms_are_the_preset_and_the_same_architecture_freshly_drawn(
    preset, monkeypatch
):
    """Each arm's tagger, as built for its first seed: the pre-trained arm
    holds the preset's weights, the other fresh ones of the same shapes; test
    is scored only after the run has chosen its epoch."""
    events, shapes = [], {}

    class Tagger:
        def predict_tags(self, words, batch_size):
            events.append("test scored")
            return [["NOUN"] * len(w) for w in words]

    def finetune_seed(task, seed, verbose):
        assert task.data.test is None  # the test split reaches no training run
        encoder = task.build_model().backbone
        events.append(("trained", seed))
        loaded = all(np.all(w.numpy() == 0.5) for w in encoder.token_embedding.weights)
        shapes.setdefault(loaded, [w.shape for w in encoder.weights])
        return Tagger(), {
            "score": 0.5,
            "best_epoch": 1,
            "epochs": [{"score": 0.5}],
            "dev": {"dev": {}},
        }

    monkeypatch.setattr(pretraining_gain, "finetune_seed", finetune_seed)
    flags = FinetuningFlags(pretrained=str(preset), preset=str(preset))
    task = TaggingTask(
        load_tagging_data(FIXTURE / "train.conll", FIXTURE / "dev.conll"),
        TaggingConfig(max_seq_length=32),
        StartingPoint.from_flags(flags),
    )
    test = read_conll(FIXTURE / "test.conll")
    baseline = StartingPoint.from_flags(dataclasses.replace(flags, pretrained="none"))
    result = pretraining_gain.compare_with_no_pretraining(
        task, baseline, lambda model: task.score(model, test), [1, 2]
    )
    assert events == [("trained", 1), "test scored", ("trained", 2), "test scored"] * 2
    # One arm loaded the preset's weights, the other did not; same shapes.
    assert set(shapes) == {True, False} and shapes[True] == shapes[False]
    noun = sum(t == "NOUN" for s in test.tags for t in s)
    words = sum(len(s) for s in test.words)
    for arm in ("pretrained", "none"):
        assert result["arms"][arm]["test"]["mean"] == pytest.approx(noun / words)
    assert result["gain"] == {"dev": 0.0, "test": 0.0}
    assert result["ahead_by_more_than_spread"] == {"dev": False, "test": False}
    with pytest.raises(ValueError, match="baseline"):
        pretraining_gain.compare_with_no_pretraining(
            task, task.starting_point, None, [1]
        )


def test_spread():
    summary = pretraining_gain.spread([0.80, 0.84, 0.82])
    assert summary["mean"] == pytest.approx(0.82)
    assert summary["std"] == pytest.approx(0.02)
    assert (summary["min"], summary["max"]) == (0.80, 0.84)
    assert summary["range"] == pytest.approx(0.04)


def _run_demo(preset, output_dir, seeds, capsys):
    """`finetune/demo.py` on the fixture: its result file and printed table."""
    status = finetune_demo.main(
        [
            "--pretrained",
            str(preset),
            "--data-dir",
            str(FIXTURE),
            "--output-dir",
            str(output_dir),
            "--seeds",
            seeds,
            "--epochs",
            "1",
            "--batch-size",
            "8",
            "--max-seq-length",
            "32",
        ]
    )
    assert status == 0
    result = json.loads((output_dir / pretraining_gain.RESULT_FILE).read_text())
    assert result["train_sentences"] == 15 and result["config"]["epochs"] == 1
    # The demo's recipe where no flag is given, the flags where they are.
    assert (
        result["config"]["learning_rate"]
        == pretraining_gain.DEMO_RECIPE["learning_rate"]
    )
    assert result["config"]["max_seq_length"] == 32
    assert result["machine"] and result["date"] and result["cpu_seconds"] >= 0
    printed = capsys.readouterr().out
    for arm in pretraining_gain.ARMS:
        runs = result["arms"][arm]
        assert list(runs["seeds"]) == seeds.split(",")
        for split in ("dev", "test"):
            scores = [run[split] for run in runs["seeds"].values()]
            assert all(0.0 <= score <= 1.0 for score in scores)
            assert runs[split]["mean"] == pytest.approx(np.mean(scores))
            # Every seed's score is printed beside its arm and split.
            row = next(
                line
                for line in printed.splitlines()
                if line.split()[:2] == [arm, split]
            )
            for seed, score in zip(runs["seeds"], scores):
                assert f"{seed}: {score:.4f}" in row
    for split in ("dev", "test"):
        assert result["gain"][split] == pytest.approx(
            result["arms"]["pretrained"][split]["mean"]
            - result["arms"]["none"][split]["mean"]
        )
        assert (
            f"{split}: pre-trained minus none {result['gain'][split]:+.4f}" in printed
        )
    # It ends with the reading a user acts on, its own gain first.
    reading = pretraining_gain.measured_reading(result["gain"]["test"])
    assert printed.rstrip().endswith(reading)
    assert f"bought: {'a' if result['gain']['test'] > 0 else 'no'} gain" in reading
    return result


def test_the_demo_reading_quotes_the_measured_figures_exactly():
    """Every figure the demo's closing reading prints is the one in
    bench/results/paper_experiments.json, rounded as printed, with its count
    of pre-training runs and fine-tuning runs; and the reading prints them."""
    report = json.loads((REPO / "bench/results/paper_experiments.json").read_text())
    summary = report["summary"]["pos"]
    assert report["setup"]["preset"] == "cpu"
    assert report["setup"]["pos_train_sentences"] == 8000
    assert f"{report['setup']['budget_flops']:.3g}" == (
        f"{pretraining_gain.CPU_PRESET_FLOPS:.3g}"
    )
    reading = pretraining_gain.measured_reading(-0.01)
    for key, (
        _,
        name,
        accuracy,
        runs,
        seeds,
    ) in pretraining_gain.CPU_PRESET_POS_TEST.items():
        measured = summary[key]
        assert round(measured["test_mean"], 3) == accuracy, key
        assert measured["pretraining_runs"] == runs, key
        assert measured["finetuning_runs"] == runs * seeds, key
        assert f"{accuracy:.3f}  {name} ({runs} x {seeds})" in reading
    # Ahead and behind are read from the figures, not written.
    assert "MLM and GDES ahead of no pre-training" in reading
    assert "Electric and tied ELECTRA below it" in reading
    assert "bought: no gain on test (-0.0100)" in reading
    assert "bought: a gain" in pretraining_gain.measured_reading(0.02)


def test_the_demo_command_writes_and_prints_both_arms(
    preset, tmp_path, capsys, monkeypatch
):
    """The command's wiring, with each seed's training stubbed: a fake
    tagger that tags with the seed's n-th most frequent training tag."""
    train_tags = collections.Counter(
        t for s in read_conll(FIXTURE / "train.conll").tags for t in s
    )
    ranked = [tag for tag, _ in train_tags.most_common()]

    class Tagger:
        def __init__(self, tag):
            self.tag = tag

        def predict_tags(self, words, batch_size):
            return [[self.tag] * len(w) for w in words]

    def finetune_seed(task, seed, verbose):
        return Tagger(ranked[seed - 1]), {
            "score": 0.25 * seed,
            "best_epoch": 1,
            "epochs": [{"score": 0.25 * seed}],
            "dev": {"dev": {"accuracy": 0.25 * seed}},
        }

    monkeypatch.setattr(pretraining_gain, "finetune_seed", finetune_seed)
    result = _run_demo(preset, tmp_path / "demo", "1,2", capsys)
    for arm in pretraining_gain.ARMS:
        assert result["arms"][arm]["dev"]["mean"] == pytest.approx(0.375)
        assert result["arms"][arm]["dev"]["range"] == pytest.approx(0.25)


@pytest.mark.slow
def test_the_demo_command_fine_tunes_both_arms(preset, tmp_path, capsys):
    """End to end: two tiny taggers really fine-tuned, one seed each."""
    _run_demo(preset, tmp_path / "demo", "1", capsys)
