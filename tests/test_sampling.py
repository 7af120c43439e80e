"""Gumbel-max sampling and the labels of replaced tokens."""

import numpy as np
import tensorflow as tf
from scipy.stats import chisquare

from electra_tf import random_streams
from electra_tf.masking import MaskedBatch
from electra_tf.sampling import gumbel_max_sample, replace_tokens

LOGITS = np.array([2.0, 1.0, 0.0, -1.0, 0.5, -3.0], "float32")


def _sample_counts(temperature, draws=30000, disallowed=None):
    logits = np.broadcast_to(LOGITS, (draws, 1, LOGITS.size))
    sampled = gumbel_max_sample(
        logits,
        key=random_streams.step_key(5, 11),
        example_index=tf.range(draws),
        temperature=temperature,
        disallowed_ids=disallowed,
    ).numpy()[:, 0]
    return np.bincount(sampled, minlength=LOGITS.size)


def _softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def _pooled_chisquare(counts, probabilities):
    """Chi-square p-value, pooling cells expected to hold fewer than 5 draws."""
    probabilities = np.asarray(probabilities, np.float64)
    expected = probabilities / probabilities.sum() * counts.sum()
    rare = expected < 5
    observed = np.append(counts[~rare], counts[rare].sum())
    expected = np.append(expected[~rare], expected[rare].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    return chisquare(observed, expected).pvalue


def test_samples_follow_softmax_over_temperature():
    for temperature in (1.0, 2.0, 0.5):
        counts = _sample_counts(temperature)
        pvalue = _pooled_chisquare(counts, _softmax(LOGITS / temperature))
        assert pvalue > 1e-3, (temperature, counts)


def test_sampler_detects_a_wrong_distribution():
    # The same test must fail against a distribution that is slightly off.
    counts = _sample_counts(1.0)
    assert _pooled_chisquare(counts, _softmax(LOGITS * 1.1)) < 1e-3


def test_disallow_correct_never_samples_the_original():
    disallowed = np.zeros((30000, 1), "int32")  # id 0 has the largest logit
    counts = _sample_counts(1.0, disallowed=disallowed)
    assert counts[0] == 0


def test_uniform_draws_are_uniform_and_independent_of_replica_split():
    key = random_streams.step_key(0, 3)
    whole = random_streams.uniform(key, tf.range(8), 1, (1000,)).numpy()
    first = random_streams.uniform(key, tf.range(4), 1, (1000,)).numpy()
    second = random_streams.uniform(key, tf.range(4, 8), 1, (1000,)).numpy()
    np.testing.assert_array_equal(whole, np.concatenate([first, second]))
    assert 0.0 <= whole.min() and whole.max() < 1.0
    hist = np.histogram(whole, bins=20, range=(0, 1))[0]
    assert chisquare(hist).pvalue > 1e-3
    # Different steps and streams give different numbers.
    other_step = random_streams.uniform(
        random_streams.step_key(0, 4), tf.range(8), 1, (1000,)
    )
    other_stream = random_streams.uniform(key, tf.range(8), 2, (1000,))
    assert np.abs(np.corrcoef(whole.ravel(), other_step.numpy().ravel())[0, 1]) < 0.02
    assert np.abs(np.corrcoef(whole.ravel(), other_stream.numpy().ravel())[0, 1]) < 0.02


def test_correctly_sampled_token_is_labelled_original():
    ids = np.array([[2, 10, 11, 12, 13, 3]], "int32")
    positions = np.array([[1, 3, 4]], "int32")
    weights = np.array([[1.0, 1.0, 0.0]], "float32")
    chosen = np.zeros_like(ids, bool)
    chosen[0, [1, 3]] = True
    masked = MaskedBatch(ids, positions, weights, ids[:, [1, 3, 4]], chosen)
    # Slot 0 samples the original (10), slot 1 a new token, slot 2 is unused.
    sampled = np.array([[10, 99, 98]], "int32")
    corrupted, is_replaced = replace_tokens(ids, masked, sampled)
    np.testing.assert_array_equal(corrupted.numpy(), [[2, 10, 11, 99, 13, 3]])
    np.testing.assert_array_equal(
        is_replaced.numpy(), [[False, False, False, True, False, False]]
    )
