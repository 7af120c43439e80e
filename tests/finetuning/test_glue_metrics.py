"""GLUE metrics against sklearn and scipy on fixed predictions, fed in batches."""

import doctest

import numpy as np
import pytest
import scipy.stats
import sklearn.metrics
import tensorflow as tf

import electra_tf.finetuning.glue_metrics
from electra_tf.finetuning.glue_metrics import (
    BinaryF1,
    MatthewsCorrelation,
    PearsonCorrelation,
    SpearmanCorrelation,
    task_metrics,
    task_score,
    task_score_definition,
)
from electra_tf.finetuning.glue_tasks import GLUE_TASKS, get_task


def _classification(num_classes=2, n=1000, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, n)
    logits = rng.normal(size=(n, num_classes))
    logits[np.arange(n), labels] += 0.7  # better than chance, far from perfect
    return labels, logits


def _regression(n=1500, seed=0):
    """STS-B-like: scores in [0, 5] with one decimal (many ties), noisy guesses."""
    rng = np.random.default_rng(seed)
    targets = np.round(rng.uniform(0, 5, n), 1)
    predictions = np.round(targets + rng.normal(scale=1.2, size=n), 1)
    return targets / 5.0, predictions / 5.0


def _feed(metric, y_true, y_pred, batch_size=96):
    metric.reset_state()
    for start in range(0, len(y_true), batch_size):
        metric.update_state(
            y_true[start : start + batch_size], y_pred[start : start + batch_size]
        )
    return float(metric.result())


@pytest.mark.parametrize("num_classes", [2, 3])
def test_matthews_correlation_matches_sklearn(num_classes):
    labels, logits = _classification(num_classes)
    expected = sklearn.metrics.matthews_corrcoef(labels, logits.argmax(-1))
    metric = MatthewsCorrelation(num_classes=num_classes)
    assert _feed(metric, labels, logits) == pytest.approx(expected, abs=1e-6)


def test_f1_matches_sklearn():
    labels, logits = _classification()
    expected = sklearn.metrics.f1_score(labels, logits.argmax(-1))
    assert _feed(BinaryF1(), labels, logits) == pytest.approx(expected, abs=1e-6)


def test_accuracy_matches_sklearn():
    labels, logits = _classification(3)
    (accuracy,) = task_metrics(get_task("mnli"))
    expected = sklearn.metrics.accuracy_score(labels, logits.argmax(-1))
    assert _feed(accuracy, labels, logits) == pytest.approx(expected, abs=1e-6)


def test_degenerate_cases_are_zero_as_in_sklearn():
    labels = np.array([0, 0, 1, 1])
    all_zero = np.array([[1.0, 0.0]] * 4)
    assert sklearn.metrics.matthews_corrcoef(labels, all_zero.argmax(-1)) == 0.0
    assert _feed(MatthewsCorrelation(), labels, all_zero) == 0.0
    assert _feed(BinaryF1(), labels, all_zero) == 0.0
    assert _feed(PearsonCorrelation(), labels, np.ones(4)) == 0.0
    assert _feed(SpearmanCorrelation(), labels, np.ones(4)) == 0.0


def test_class_id_predictions_are_accepted():
    labels, logits = _classification()
    expected = sklearn.metrics.matthews_corrcoef(labels, logits.argmax(-1))
    assert _feed(MatthewsCorrelation(), labels, logits.argmax(-1)) == pytest.approx(
        expected, abs=1e-6
    )


def test_pearson_matches_scipy():
    targets, predictions = _regression()
    expected = scipy.stats.pearsonr(targets, predictions)[0]
    metric = PearsonCorrelation()
    # Predictions shaped like a regression head's output, [batch, 1].
    assert _feed(metric, targets, predictions[:, None]) == pytest.approx(
        expected, abs=1e-5
    )


def test_spearman_matches_scipy_with_ties():
    targets, predictions = _regression()
    assert len(np.unique(targets)) < 60  # heavily tied: average ranks matter
    expected = scipy.stats.spearmanr(targets, predictions)[0]
    metric = SpearmanCorrelation(capacity=2048)
    assert _feed(metric, targets, predictions[:, None]) == pytest.approx(
        expected, abs=1e-5
    )
    # reset_state forgets everything; a second pass gives the same value.
    assert _feed(metric, targets, predictions) == pytest.approx(expected, abs=1e-5)


def test_spearman_past_capacity_is_nan():
    targets, predictions = _regression(n=100)
    metric = SpearmanCorrelation(capacity=64)
    assert np.isnan(_feed(metric, targets, predictions, batch_size=32))


def test_task_metrics_and_score():
    assert [m.name for m in task_metrics(get_task("mrpc"))] == ["accuracy", "f1"]
    assert [m.name for m in task_metrics(get_task("stsb"))] == ["pearson", "spearman"]
    assert [m.name for m in task_metrics(get_task("cola"))] == ["mcc"]
    mrpc = get_task("mrpc")
    assert task_score(mrpc, {"accuracy": 0.8, "f1": 0.9, "loss": 3.0}) == pytest.approx(
        0.85
    )


def test_metrics_serialise():
    metric = SpearmanCorrelation(capacity=10)
    assert SpearmanCorrelation.from_config(metric.get_config()).capacity == 10
    assert (
        MatthewsCorrelation.from_config(
            MatthewsCorrelation(num_classes=3).get_config()
        ).num_classes
        == 3
    )
    assert BinaryF1.from_config(BinaryF1().get_config()).name == "f1"


def test_docstring_examples_run():
    result = doctest.testmod(
        electra_tf.finetuning.glue_metrics, optionflags=doctest.ELLIPSIS
    )
    assert result.attempted > 0 and result.failed == 0


def test_metrics_run_inside_an_xla_compiled_function():
    targets, predictions = _regression(n=64)
    labels, logits = _classification(n=64)
    metrics = [
        PearsonCorrelation(),
        SpearmanCorrelation(capacity=128),
        MatthewsCorrelation(),
        BinaryF1(),
    ]

    @tf.function(jit_compile=True)
    def step():
        metrics[0].update_state(targets, predictions)
        metrics[1].update_state(targets, predictions)
        metrics[2].update_state(labels, logits)
        metrics[3].update_state(labels, logits)
        return [metric.result() for metric in metrics]

    results = [float(result) for result in step()]
    expected = [
        scipy.stats.pearsonr(targets, predictions)[0],
        scipy.stats.spearmanr(targets, predictions)[0],
        sklearn.metrics.matthews_corrcoef(labels, logits.argmax(-1)),
        sklearn.metrics.f1_score(labels, logits.argmax(-1)),
    ]
    assert results == pytest.approx(expected, abs=1e-5)


def test_the_score_definition_names_the_metrics_the_score_averages():
    for task in GLUE_TASKS.values():
        definition = task_score_definition(task)
        results = {name: float(i + 1) for i, name in enumerate(task.metrics)}
        if len(task.metrics) == 1:
            assert definition == f"dev {task.metrics[0]}"
        else:
            assert definition == f"the mean of dev {', '.join(task.metrics)}"
            assert task_score(task, results) == sum(results.values()) / len(results)
    assert (
        task_score_definition(get_task("stsb")) == "the mean of dev pearson, spearman"
    )
