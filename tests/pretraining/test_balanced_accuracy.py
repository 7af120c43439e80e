"""Balanced accuracy of replaced-token detection, against scikit-learn's."""

import numpy as np
import pytest
from sklearn.metrics import balanced_accuracy_score

from electra_tf.pretraining.balanced_accuracy import BalancedAccuracy


def test_balanced_accuracy_equals_scikit_learns_with_weights_over_batches():
    rng = np.random.default_rng(0)
    labels = (rng.random((3, 4, 16)) < 0.15).astype("float32")
    # Informative but imperfect: replaced tokens score higher on average.
    probabilities = np.clip(0.3 * labels + rng.random(labels.shape) * 0.7, 0, 1)
    weights = (rng.random(labels.shape) < 0.8).astype("float32")  # padding
    metric = BalancedAccuracy()
    for batch in range(3):  # accumulated over batches, as in an evaluation
        metric.update_state(labels[batch], probabilities[batch], weights[batch])
    expected = balanced_accuracy_score(
        labels.ravel(), probabilities.ravel() > 0.5, sample_weight=weights.ravel()
    )
    assert float(metric.result()) == pytest.approx(expected, abs=1e-6)
    assert 0.5 < expected < 0.9  # neither chance nor perfect: the check can fail
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_a_discriminator_that_calls_everything_original_scores_one_half():
    labels = np.array([1, 0, 0, 0, 0, 0, 0, 0, 0, 1], "float32")
    # The base-rate plateau: the replaced fraction predicted everywhere.
    probabilities = np.full(labels.shape, 0.2, "float32")
    metric = BalancedAccuracy()
    metric.update_state(labels, probabilities)
    assert float(metric.result()) == pytest.approx(0.5)
    # Plain accuracy would read 0.8 there.
    assert np.mean((probabilities > 0.5) == labels) == pytest.approx(0.8)
