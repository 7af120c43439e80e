"""Gumbel-max sampling and the labels of replaced tokens."""

import numpy as np
import pytest
import tensorflow as tf
from scipy.stats import chisquare

from electra_tf import random_streams
from electra_tf.pretraining.masking import MaskedBatch
from electra_tf.pretraining.sampling import SAMPLERS, replace_tokens, sample

LOGITS = np.array([2.0, 1.0, 0.0, -1.0, 0.5, -3.0], "float32")
# 300 entries: three blocks of the inverse-CDF search, the last one padded;
# mass spread over all of them, a few entries with weight exp(-100) (zero in
# float32).
WIDE_LOGITS = np.random.default_rng(0).normal(0.0, 1.5, 300).astype("float32")
WIDE_LOGITS[[5, 150, 299]] = -100.0


def _sample_counts(
    temperature, draws=30000, disallowed=None, sampler="gumbel_max", logits=LOGITS
):
    batch = np.broadcast_to(logits, (draws, 1, logits.size))
    sampled = sample(
        sampler,
        batch,
        key=random_streams.step_key(5, 11),
        example_index=tf.range(draws),
        temperature=temperature,
        disallowed_ids=disallowed,
    ).numpy()[:, 0]
    return np.bincount(sampled, minlength=logits.size)


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


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_samples_follow_softmax_over_temperature(sampler):
    for temperature in (1.0, 2.0, 0.5):
        counts = _sample_counts(temperature, sampler=sampler)
        pvalue = _pooled_chisquare(counts, _softmax(LOGITS / temperature))
        assert pvalue > 1e-3, (temperature, counts)


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_samples_follow_softmax_over_a_wide_vocabulary(sampler):
    counts = _sample_counts(1.0, draws=60000, sampler=sampler, logits=WIDE_LOGITS)
    assert counts[[5, 150, 299]].sum() == 0  # zero weight in float32
    probabilities = _softmax(WIDE_LOGITS)
    assert _pooled_chisquare(counts, probabilities) > 1e-3
    # The same test must fail against a distribution that is slightly off.
    assert _pooled_chisquare(counts, _softmax(WIDE_LOGITS * 1.1)) < 1e-3


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_sampler_detects_a_wrong_distribution(sampler):
    # The same test must fail against a distribution that is slightly off.
    counts = _sample_counts(1.0, sampler=sampler)
    assert _pooled_chisquare(counts, _softmax(LOGITS * 1.1)) < 1e-3


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_disallow_correct_never_samples_the_original(sampler):
    disallowed = np.zeros((30000, 1), "int32")  # id 0 has the largest logit
    counts = _sample_counts(1.0, disallowed=disallowed, sampler=sampler)
    assert counts[0] == 0


def test_inverse_cdf_draws_the_same_under_xla():
    logits = np.broadcast_to(WIDE_LOGITS, (64, 3, WIDE_LOGITS.size))

    def draw(x):
        key = random_streams.step_key(1, 2)
        return sample("inverse_cdf", x, key=key, example_index=tf.range(64))

    graph = tf.function(draw)(logits).numpy()
    xla = tf.function(draw, jit_compile=True)(logits).numpy()
    np.testing.assert_array_equal(graph, xla)


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
