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
RESULTS = pathlib.Path(__file__).parents[2] / "bench" / "results"


def evaluations(name):
    """A recorded run's held-out evaluations: a fixture, or `file.json:variant`
    of a bench/results study, or the `held_out` of a bench/results run."""
    if ":" in name:
        file, variant = name.split(":")
        study = json.loads((RESULTS / file).read_text())
        return study["variants"][variant]["evaluations"]
    if (FIXTURES / name).exists():
        return json.loads((FIXTURES / name).read_text())["evaluations"]
    return json.loads((RESULTS / name).read_text())["held_out"]


def replay(name, **kwargs):
    health = TrainingHealth(**kwargs)
    for evaluation in evaluations(name):
        evaluation = dict(evaluation)
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
    # plateau (steps 100-900) before it left at 1,000 (0.616).
    health = replay("demo_learns.json")
    assert [(f.check, f.step) for f in health.findings] == [
        ("base_rate_plateau", 300),
        ("left_plateau", 1000),
    ]
    assert "(steps 100-300)" in health.findings[0].message


def test_health_fires_on_a_plateau_at_auc_0_55_to_0_56_and_reports_its_end():
    # BENCHMARKS.md section 18's 16-unit generator with a 2,000-step warm-up:
    # held-out rtd_loss 1.9-2.2% under the base rate at steps 500-2,000, AUC
    # 0.558, 0.558, 0.548, 0.564; it leaves at 2,500 (AUC 0.600).
    health = replay("generator16_warmup2000.json")
    assert [(f.check, f.step) for f in health.findings] == [
        ("base_rate_plateau", 1500),
        ("left_plateau", 2500),
    ]
    assert "(steps 500-1500)" in health.findings[0].message
    # The bounds that missed it: only 0.548 was under 0.55 to start a
    # plateau, and 0.564 over the 0.56 that continued one.
    missed = replay("generator16_warmup2000.json", plateau_auc=0.55, auc_tolerance=0.01)
    assert missed.findings == []
    # Without the tolerance, 0.564 at step 2,000 ends the plateau too soon.
    strict = replay("generator16_warmup2000.json", auc_tolerance=0.0)
    assert [(f.check, f.step) for f in strict.findings][1] == ("left_plateau", 2000)


@pytest.mark.parametrize(
    "name, expected",
    [
        ("plateau_tiny.json", [("base_rate_plateau", 200)]),
        ("plateau_small.json", [("base_rate_plateau", 200)]),
        ("demo_learns.json", [("base_rate_plateau", 300), ("left_plateau", 1000)]),
        (
            "pretraining_dynamics_generator.json:generator 1/8",
            [("base_rate_plateau", 750), ("left_plateau", 2000)],
        ),
        (
            "pretraining_dynamics_generator.json:generator 1/4",
            [("base_rate_plateau", 750)],
        ),
        (
            "pretraining_dynamics_generator.json:generator 1/2 (tiny)",
            [("base_rate_plateau", 750)],
        ),
        (
            "pretraining_dynamics_generator.json:generator 1",
            [("base_rate_plateau", 750)],
        ),
        ("pretraining_dynamics_warmup.json:warm-up 100", [("base_rate_plateau", 750)]),
        ("pretraining_dynamics_warmup.json:warm-up 500", [("base_rate_plateau", 1000)]),
        (
            "pretraining_dynamics_warmup.json:warm-up 1500",
            [("base_rate_plateau", 1250)],
        ),
        ("wide_encoder.json", [("base_rate_plateau", 1500), ("left_plateau", 3000)]),
        ("cpu_preset.json", [("base_rate_plateau", 1500), ("left_plateau", 3000)]),
        (
            "generator16_warmup2000.json",
            [("base_rate_plateau", 1500), ("left_plateau", 2500)],
        ),
    ],
)
def test_health_on_every_recorded_run(name, expected):
    # Every held-out history this project recorded with its replaced fraction
    # and three or more evaluations on the plateau (BENCHMARKS.md sections 1,
    # 10, 11, 13, 17, 18): the plateau is reported, and its end where the run
    # left it. (Section 14's runs evaluated every 500-1,000 steps and left
    # after one or two evaluations on it: too few to report.)
    health = replay(name)
    assert [(f.check, f.step) for f in health.findings] == expected


def test_health_reports_a_plateau_once_and_its_end():
    health = TrainingHealth(plateau_evaluations=2)
    stuck = {"rtd_loss": 0.40, "rtd_auc": 0.52, "replaced_fraction": 0.14}
    for step in (100, 200, 300, 400):
        health.update(step, {**stuck, "mlm_accuracy": step / 2000})
    assert [f.check for f in health.findings] == ["base_rate_plateau"]
    health.update(500, {"rtd_loss": 0.33, "rtd_auc": 0.70, "replaced_fraction": 0.14})
    assert [f.check for f in health.findings] == ["base_rate_plateau", "left_plateau"]
    assert not health.findings[-1].is_problem


def test_health_reads_balanced_accuracy_beside_loss_and_auc():
    stuck = {"rtd_loss": 0.40, "rtd_auc": 0.52, "replaced_fraction": 0.14}
    health = TrainingHealth(plateau_evaluations=2)
    for step in (100, 200, 300):
        health.update(step, {**stuck, "rtd_balanced_accuracy": 0.5})
    assert [f.check for f in health.findings] == ["base_rate_plateau"]
    assert "balanced accuracy 0.500" in health.findings[0].message
    # The same loss and AUC, but replaced tokens are called replaced: the
    # discriminator uses something a constant cannot, so no plateau.
    health = TrainingHealth(plateau_evaluations=2)
    for step in (100, 200, 300):
        health.update(step, {**stuck, "rtd_balanced_accuracy": 0.58})
    assert health.findings == []


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


def test_health_words_an_electric_plateau_for_its_noise_and_cloze_model():
    # An Electric demo run's first 300 steps: on the plateau, read with
    # Electric's words (every sampled position is noise; the cloze model).
    health = replay("electric_demo.json", objective="electric")
    assert [(f.check, f.step) for f in health.findings] == [("base_rate_plateau", 300)]
    message = health.findings[0].message
    assert "fraction of sampled (noise) positions 0.141" in message
    assert "the cloze model's accuracy at the masked positions went 0.068" in message
    assert "cancel the noise correction" in message
    assert "replaced fraction" not in message and "generator's" not in message
    # ELECTRA's words for the same evaluations.
    electra = replay("electric_demo.json").findings[0].message
    assert "replaced fraction 0.141" in electra and "cloze" not in electra


def test_health_does_not_call_electrics_cloze_model_too_strong():
    # Electric labels a sample equal to the original as noise: nothing is lost.
    strong = {"loss": 20.0, "sampled_accuracy": 0.9}
    assert TrainingHealth(objective="electric").update(100, strong) == []
    found = TrainingHealth().update(100, strong)
    assert [f.check for f in found] == ["generator_too_strong"]


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
