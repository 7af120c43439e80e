"""bench/studies/objectives.py end to end at a tiny scale, and its resume.

The experiment script is long-running and mostly glue; these runs keep it
from rotting: data building, FLOP-matched step counts, segment-by-segment
pre-training with kept encoders, fine-tuning, the table, the plot, the
TensorBoard curves, and a rerun that redoes nothing.
"""

import json
import pathlib

import pytest
import tensorflow as tf

from bench.studies import objectives

REPO = pathlib.Path(__file__).parents[2]
ASSETS = REPO / "electra_tf" / "assets"


def _bench():
    return objectives


def _args(tmp_path, *extra):
    return [
        "--preset",
        "tiny",
        "--corpus",
        str(ASSETS / "corpus" / "brown.txt.gz"),
        "--max-seq-length",
        "64",
        "--build-processes",
        "1",
        "--learn-vocab-size",
        "0",
        "--task-dir",
        str(ASSETS / "tasks" / "rt_polarity"),
        "--batch-size",
        "8",
        "--electra-steps",
        "10",
        "--checkpoint-every",
        "5",
        "--eval-steps",
        "2",
        "--seeds",
        "1",
        "--finetune-examples",
        "32",
        "--finetune-hparams",
        '{"max_seq_length": 16, "epochs": 1}',
        "--out-dir",
        str(tmp_path / "runs"),
        "--output",
        str(tmp_path / "report"),
        *extra,
    ]


def _scalars(directory):
    tags = set()
    for path in directory.rglob("events.out.tfevents.*"):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            tags.update(value.tag for value in event.summary.value)
    return tags


class _Killed(Exception):
    """Stands for the process being killed mid-run."""


class _FakeTraining:
    """Stands in for pre-training and fine-tuning, counting what they are asked.

    The orchestration (FLOP-matched plans, segments, records, resume, report)
    is what this checks in seconds; the real models run in the slow tests.
    """

    def __init__(self, kill_at_finetune=None):
        self.segments = []
        self.finetunes = []
        self.kill_at_finetune = kill_at_finetune

    def run_pretraining(self, model, pretraining, optimizer, training, *_, **__):
        self.segments.append(
            (pathlib.Path(training.model_dir).name, training.train_steps, optimizer)
        )
        export = pathlib.Path(training.model_dir) / "export" / "discriminator"
        export.mkdir(parents=True, exist_ok=True)
        (export / "config.json").write_text(f'{{"step": {training.train_steps}}}')
        return {"step": training.train_steps, "mlm_accuracy": 0.25, "rtd_auc": 0.6}

    def finetune_seed(self, make_classifier, task, data, config, seed, **_):
        if len(self.finetunes) == self.kill_at_finetune:
            raise _Killed
        self.finetunes.append(seed)
        accuracy = 0.5 + 0.01 * len(self.finetunes)
        return None, {"epochs": [{"dev": {"dev": {"accuracy": accuracy}}}]}


def test_plans_records_reports_and_resumes_after_a_kill(tmp_path, monkeypatch, capsys):
    import electra_tf.finetuning.run
    import electra_tf.pretraining.run

    bench = _bench()
    args = _args(
        tmp_path,
        *("--objectives", "electra,mlm", "--fractions", "0.5,1", "--seeds", "1,2"),
        *("--tensorboard", ""),
    )
    # Killed during the 6th fine-tuning run: after the baseline (2 seeds),
    # ELECTRA's two kept encoders (4) are done, MLM's are not yet.
    fake = _FakeTraining(kill_at_finetune=6)
    monkeypatch.setattr(
        electra_tf.pretraining.run, "run_pretraining", fake.run_pretraining
    )
    monkeypatch.setattr(electra_tf.finetuning.run, "finetune_seed", fake.finetune_seed)
    with pytest.raises(_Killed):
        bench.main(args)
    results = json.loads((tmp_path / "runs" / "results.json").read_text())
    assert len(fake.finetunes) == 6 and len(fake.segments) == 4
    assert set(results["finetuning"]) == {"none@0", "electra@5", "electra@10"}

    # ELECTRA gets the budget's 10 steps; MLM, cheaper per sequence, more,
    # each segment trained to its kept step with the whole run's schedule.
    electra, mlm = (results["variants"][name] for name in ("electra", "mlm"))
    assert electra["total_steps"] == 10 and mlm["total_steps"] > 10
    assert [(name, step) for name, step, _ in fake.segments] == [
        ("electra", 5),
        ("electra", 10),
        ("mlm", mlm["total_steps"] // 2),
        ("mlm", mlm["total_steps"]),
    ]
    assert {opt.total_steps for _, _, opt in fake.segments[2:]} == {mlm["total_steps"]}
    assert fake.segments[0][2].warmup_steps == 1  # 10% of 10 steps
    for name, variant in results["variants"].items():
        spent = variant["total_steps"] * 8 * variant["flops_per_sequence"]
        assert (
            abs(spent - results["setup"]["budget_flops"])
            <= 2.5 * 8 * (variant["flops_per_sequence"])
        ), name

    # The same command again finishes the run and redoes nothing.
    fake.kill_at_finetune = None
    bench.main(args)
    assert len(fake.segments) == 4 and len(fake.finetunes) == 10
    results = json.loads((tmp_path / "runs" / "results.json").read_text())
    assert results["finetuning"]["electra@5"]["seeds"]["1"]["dev_accuracy"] == 0.53
    half, total = mlm["total_steps"] // 2, mlm["total_steps"]
    assert set(results["finetuning"]) == {
        "none@0",
        "electra@5",
        "electra@10",
        f"mlm@{half}",
        f"mlm@{total}",
    }

    summary = json.loads((tmp_path / "report.json").read_text())["summary"]
    assert [p["step"] for p in summary["mlm"]] == [half, total]
    # Seeds 1 and 2 of MLM's last encoder were the 9th and 10th runs.
    assert summary["mlm"][-1]["median"] == pytest.approx(0.595)
    assert summary["mlm"][-1]["held_out"]["mlm_accuracy"] == 0.25
    table = (tmp_path / "report.md").read_text()
    assert "| ELECTRA | 10 |" in table and "rtd_auc 0.600" in table
    assert "0.595 [0.590, 0.600]" in table
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()
    bench.main(args)
    assert "pre-training to step" not in capsys.readouterr().out
    assert len(fake.segments) == 4 and len(fake.finetunes) == 10


@pytest.mark.slow
def test_smoke_run_writes_everything_and_a_rerun_redoes_nothing(tmp_path, capsys):
    bench = _bench()
    # One kept encoder (the slow test keeps two per run): the cheapest run
    # that still passes through every stage.
    args = _args(tmp_path, "--objectives", "mlm", "--fractions", "1")
    assert bench.main(args) == 0
    results_path = tmp_path / "runs" / "results.json"
    results = json.loads(results_path.read_text())

    # FLOP-matched: the MLM baseline is cheaper per sequence, so it gets more
    # steps than the 10 ELECTRA steps of the budget, rounded to checkpoints.
    mlm = results["variants"]["mlm"]
    budget = results["setup"]["budget_flops"]
    assert mlm["total_steps"] > 10 and mlm["total_steps"] % 5 == 0
    spent = mlm["total_steps"] * 8 * mlm["flops_per_sequence"]
    assert abs(spent - budget) <= 2.5 * 8 * mlm["flops_per_sequence"]
    steps = sorted(int(s) for s in mlm["checkpoints"])
    assert steps == [mlm["total_steps"]]
    for point in mlm["checkpoints"].values():
        assert (pathlib.Path(point["encoder"]) / "config.json").exists()
        assert point["held_out"]["step"] == point["step"]
        assert 0.0 <= point["held_out"]["mlm_accuracy"] <= 1.0
    runs = results["finetuning"]
    assert set(runs) == {"none@0", *(f"mlm@{s}" for s in steps)}
    for run in runs.values():
        assert 0.0 <= run["seeds"]["1"]["dev_accuracy"] <= 1.0

    table = (tmp_path / "report.md").read_text()
    assert "| no pre-training |" in table and "| BERT (MLM) |" in table
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((tmp_path / "report.json").read_text())["summary"]
    assert [p["step"] for p in summary["mlm"]] == steps
    curves = tmp_path / "report_tensorboard" / "mlm"
    assert {"epoch_loss", "epoch_mlm_accuracy"} <= _scalars(curves / "train")
    assert "epoch_mlm_accuracy" in _scalars(curves / "validation")
    assert sum(p.stat().st_size for p in curves.rglob("*") if p.is_file()) < 50_000

    # The same command again: everything is recorded, nothing is redone.
    before = results_path.read_bytes()
    checkpoints = str(tmp_path / "runs" / "mlm" / "checkpoints")
    checkpoint = tf.train.latest_checkpoint(checkpoints)
    capsys.readouterr()
    assert bench.main(args) == 0
    output = capsys.readouterr().out
    assert "pre-training to step" not in output and "seed 1:" not in output
    assert results_path.read_bytes() == before
    assert tf.train.latest_checkpoint(checkpoints) == checkpoint

    # --estimate times steps and prints the run's cost without running it.
    assert bench.main([*args, "--estimate", "--estimate-steps", "2"]) == 0
    output = capsys.readouterr().out
    assert "estimated total:" in output and "fine-tuning:" in output
    assert results_path.read_bytes() == before

    # Another setup in the same directory is refused, naming what differs.
    with pytest.raises(SystemExit, match="batch_size"):
        bench.main(_args(tmp_path, "--objectives", "mlm", "--batch-size", "4"))


@pytest.mark.slow
def test_every_objective_and_the_generator_sweep_run(tmp_path):
    bench = _bench()
    args = _args(
        tmp_path,
        *("--fractions", "0.5,1", "--generator-sizes", "0.25,1", "--uniform-generator"),
    )
    assert bench.main(args) == 0
    results = json.loads((tmp_path / "runs" / "results.json").read_text())
    expected = {
        "electra",
        "mlm",
        "electra_15",
        "replace_mlm",
        "all_tokens_mlm",
        "electra_generator_0.25",
        "electra_generator_1",
        "electra_uniform_generator",
    }
    assert set(results["variants"]) == expected
    budget = results["setup"]["budget_flops"]
    for name, variant in results["variants"].items():
        spent = variant["total_steps"] * 8 * variant["flops_per_sequence"]
        assert abs(spent - budget) <= 2.5 * 8 * variant["flops_per_sequence"], name
        kept = sorted(int(step) for step in variant["checkpoints"])
        assert kept[-1] == variant["total_steps"], name
        # Half the budget is its own checkpoint unless the run is one long.
        assert len(kept) == 2 or variant["total_steps"] == 5, name
        for step in kept:
            assert f"{name}@{step}" in results["finetuning"], name
    # The costliest step (All-Tokens MLM) gets the fewest steps, a uniform
    # generator (no generator to run) the most among the ELECTRA variants.
    steps = {name: v["total_steps"] for name, v in results["variants"].items()}
    assert steps["all_tokens_mlm"] <= steps["electra"] <= steps["mlm"]
    assert steps["electra_uniform_generator"] >= steps["electra"]
    table = (tmp_path / "report.md").read_text()
    for name in expected:
        assert f"| {bench.label(name)} |" in table
