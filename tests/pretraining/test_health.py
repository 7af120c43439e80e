"""The training-health monitor on recorded metric histories of real runs."""

import json
import math
import pathlib

import keras
import numpy as np
import pytest

from electra_tf.pretraining.health import (
    TrainingHealth,
    TrainingHealthMonitor,
    base_rate_loss,
)

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures" / "health"


def replay(name, **kwargs):
    health = TrainingHealth(**kwargs)
    for evaluation in json.loads((FIXTURES / name).read_text())["evaluations"]:
        step = evaluation.pop("step")
        health.update(step, evaluation)
    return health


def test_health_base_rate_loss_is_the_binary_entropy():
    p = 0.14
    assert base_rate_loss(p) == pytest.approx(
        -p * math.log(p) - (1 - p) * math.log(1 - p)
    )
    # A constant prediction of p scores exactly this cross-entropy.
    labels = np.array([1] * 14 + [0] * 86)
    assert base_rate_loss(p) == pytest.approx(
        -np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p))
    )


@pytest.mark.parametrize("name", ["plateau_tiny.json", "plateau_small.json"])
def test_health_fires_on_a_recorded_plateau(name):
    health = replay(name)
    checks = [finding.check for finding in health.findings]
    assert checks == ["base_rate_plateau"]
    finding = health.findings[0]
    # Not at the first evaluation (the early rare-token spike, AUC 0.73-0.77),
    # but after three evaluations in a row at the base rate: steps 100-200.
    assert finding.step == 200
    assert "base rate" in finding.message and "generator" in finding.message


def test_health_fires_on_the_demos_noisy_plateau_and_reports_its_end():
    # README command 1's run: its held-out AUC wandered 0.49-0.557 on the
    # plateau (steps 100-900), across the 0.55 line, before it left at 1,000.
    health = replay("demo_learns.json")
    assert [(f.check, f.step) for f in health.findings] == [
        ("base_rate_plateau", 400),
        ("left_plateau", 1000),
    ]
    # Without the tolerance each wander above 0.55 restarts the count, and
    # the plateau goes unreported.
    strict = replay("demo_learns.json", auc_tolerance=0.0)
    assert [f.check for f in strict.findings] == []


def test_health_reports_a_plateau_once_and_its_end():
    health = TrainingHealth(plateau_evaluations=2)
    stuck = {"rtd_loss": 0.40, "rtd_auc": 0.52, "replaced_fraction": 0.14}
    for step in (100, 200, 300, 400):
        health.update(step, {**stuck, "mlm_accuracy": step / 2000})
    assert [f.check for f in health.findings] == ["base_rate_plateau"]
    health.update(500, {"rtd_loss": 0.33, "rtd_auc": 0.70, "replaced_fraction": 0.14})
    assert [f.check for f in health.findings] == ["base_rate_plateau", "left_plateau"]
    assert not health.findings[-1].is_problem


def test_health_is_silent_while_the_discriminator_learns():
    health = TrainingHealth()
    for i, step in enumerate(range(250, 3001, 250)):
        auc = 0.56 + 0.02 * i
        health.update(
            step,
            {
                "rtd_loss": base_rate_loss(0.13) * (0.94 - 0.01 * i),
                "rtd_auc": auc,
                "replaced_fraction": 0.13,
                "mlm_accuracy": 0.10 + 0.01 * i,
                "sampled_accuracy": 0.05 + 0.01 * i,
                "loss": 30.0 - i,
            },
        )
    assert health.findings == []


def test_health_flags_a_strong_generator_and_divergence():
    health = TrainingHealth()
    health.update(100, {"loss": 20.0, "sampled_accuracy": 0.3})
    found = health.update(200, {"loss": 19.0, "sampled_accuracy": 0.8})
    assert [f.check for f in found] == ["generator_too_strong"]
    found = health.update(300, {"loss": 35.0, "sampled_accuracy": 0.8})
    assert [f.check for f in found] == ["divergence"]
    assert "learning_rate" in found[0].message
    assert [f.check for f in health.update(400, {"loss": float("nan")})] == []


def test_health_monitor_logs_findings_and_the_base_rate(tmp_path, caplog):
    class Step:
        def __init__(self):
            self.value = 0

        def numpy(self):
            return self.value

    model = keras.Sequential()
    model.optimizer = type("Optimizer", (), {"iterations": Step()})()
    monitor = TrainingHealthMonitor(
        str(tmp_path), TrainingHealth(plateau_evaluations=2)
    )
    monitor.set_model(model)
    stuck = {
        "val_rtd_loss": 0.40,
        "val_rtd_auc": 0.51,
        "val_replaced_fraction": 0.14,
        "val_mlm_accuracy": 0.2,
        "loss": 25.0,
    }
    with caplog.at_level("WARNING"):
        for epoch in range(3):
            model.optimizer.iterations.value = 100 * (epoch + 1)
            monitor.on_epoch_end(epoch, stuck)
    assert "Training health (base_rate_plateau)" in caplog.text
    # Epochs without an evaluation are skipped.
    monitor.on_epoch_end(3, {"loss": 25.0})
    assert len(monitor.health.history) == 3
    assert list((tmp_path / "base_rate").glob("events*"))
