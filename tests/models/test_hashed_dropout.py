"""HashedDropout: rate and scaling, determinism, state, and its place in the encoder."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras_hub.layers import TransformerEncoder
from scipy.stats import binomtest, chi2

from electra_tf.models.hashed_dropout import HashedDropout
from electra_tf.models.transformer_layer import ElectraTransformerLayer

SHAPE = (64, 32, 48)  # 98,304 units


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_drops_at_the_rate_and_scales_the_kept_units(rate):
    layer = HashedDropout(rate, seed=3)
    outputs = layer(tf.ones(SHAPE), training=True).numpy()
    kept = outputs != 0
    test = binomtest(int(kept.sum()), kept.size, 1 - rate)
    assert test.pvalue > 1e-3, (kept.mean(), 1 - rate)
    np.testing.assert_allclose(outputs[kept], 1 / (1 - rate), rtol=1e-6)
    # The same check must reject a rate that is slightly off.
    assert binomtest(int(kept.sum()), kept.size, 1 - rate * 1.05).pvalue < 1e-3


def test_masks_are_uniform_over_positions_and_differ_between_calls():
    layer = HashedDropout(0.5, seed=4)
    first = layer(tf.ones(SHAPE), training=True).numpy() != 0
    second = layer(tf.ones(SHAPE), training=True).numpy() != 0
    # Each (position, unit) is kept Binomial(64, 0.5) times across the 64
    # examples: no unit is favoured (dispersion test, both tails).
    per_position = first.sum(axis=0).ravel()
    statistic = ((per_position - 32.0) ** 2 / 16.0).sum()
    tail = chi2.cdf(statistic, per_position.size)
    assert 1e-3 < tail < 1 - 1e-3, statistic
    assert abs(np.corrcoef(first.ravel(), second.ravel())[0, 1]) < 0.02
    # Examples draw different masks.
    assert (first[0] != first[1]).mean() == pytest.approx(0.5, abs=0.02)


def test_inference_and_rate_zero_are_the_identity():
    inputs = tf.random.normal(SHAPE)
    np.testing.assert_array_equal(HashedDropout(0.3)(inputs).numpy(), inputs.numpy())
    zero = HashedDropout(0.0)(inputs, training=True)
    np.testing.assert_array_equal(zero.numpy(), inputs.numpy())


def test_state_decides_the_mask_and_advances_per_call_in_every_mode():
    layer = HashedDropout(0.2, seed=5)
    inputs = tf.ones(SHAPE)
    start = layer.seed_generator.state.numpy()
    eager = layer(inputs, training=True).numpy()
    assert layer.seed_generator.state.numpy()[1] == start[1] + 1
    # Restoring the state (what a checkpoint does) redraws the same mask,
    # in graph mode and under XLA alike.
    for jit_compile in (False, True):
        layer.seed_generator.state.assign(start)
        step = tf.function(lambda x: layer(x, training=True), jit_compile=jit_compile)
        np.testing.assert_array_equal(step(inputs).numpy(), eager)


def test_gradient_is_the_mask():
    layer = HashedDropout(0.25, seed=6)
    inputs = tf.random.normal((4, 8, 16))
    start = layer.seed_generator.state.numpy()
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        total = tf.reduce_sum(layer(inputs, training=True))
    gradient = tape.gradient(total, inputs).numpy()
    layer.seed_generator.state.assign(start)
    mask = layer(tf.ones_like(inputs), training=True).numpy()
    np.testing.assert_array_equal(gradient, mask)


def test_transformer_layer_has_keras_hubs_weights_and_only_hashed_dropout():
    inputs = tf.ones((2, 8, 16))
    ours = ElectraTransformerLayer(num_heads=2, intermediate_dim=32, dropout=0.1)
    theirs = TransformerEncoder(num_heads=2, intermediate_dim=32, dropout=0.1)
    ours(inputs), theirs(inputs)
    assert [w.path.split("/", 1)[1] for w in ours.weights] == [
        w.path.split("/", 1)[1] for w in theirs.weights
    ]
    dropouts = [
        layer
        for layer in ours._flatten_layers(include_self=False, recursive=True)
        if isinstance(layer, keras.layers.Dropout)
    ]
    assert len(dropouts) == 3
    assert all(isinstance(layer, HashedDropout) for layer in dropouts)
    # One seed state per dropout, nothing left of the replaced layers.
    assert len(ours.non_trainable_variables) == 3
    # With the same weights and no dropout, both compute the same block.
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours(inputs), theirs(inputs), rtol=1e-5, atol=1e-6)
