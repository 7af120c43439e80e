"""Attention projections as one 2-D matmul (`FlatEinsumDense`): the encoder's
layers are swapped, and outputs and gradients match Keras' `EinsumDense` to
float32 rounding (the same products, summed in another order)."""

import keras
import numpy as np
import tensorflow as tf

from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.flat_einsum_dense import PROJECTIONS, FlatEinsumDense
from electra_tf.presets import get_preset
from tests.helpers import TINY_VOCABULARY_SIZE, random_batch, randomize_weights


def _encoder():
    config = get_preset("tiny").model.override(
        vocabulary_size=TINY_VOCABULARY_SIZE, max_sequence_length=32, dropout=0.0
    )
    encoder = ElectraEncoder.discriminator_from_config(config)
    randomize_weights(encoder, seed=3)
    return encoder


def _projections(encoder):
    for index in range(encoder.num_layers):
        attention = encoder.get_layer(f"transformer_layer_{index}")
        yield from (getattr(attention._self_attention_layer, n) for n in PROJECTIONS)


def _outputs_and_gradients(layer, x, weights):
    with tf.GradientTape() as tape:
        if not isinstance(x, dict):
            tape.watch(x)
        y = layer(x)
        if isinstance(y, dict):
            y = y["sequence_output"]
        loss = tf.reduce_sum(y * tf.cos(y))
    return [y, *(tf.convert_to_tensor(g) for g in tape.gradient(loss, weights))]


def _assert_close(actual, expected, ulps):
    for a, b in zip(actual, expected):
        assert a.shape == b.shape
        scale = float(tf.reduce_max(tf.abs(b)))
        np.testing.assert_allclose(a, b, rtol=0, atol=ulps * 1.2e-7 * scale)


def test_the_encoder_projects_with_flat_matmuls_and_keeps_its_weights():
    encoder = _encoder()
    projections = list(_projections(encoder))
    assert len(projections) == 4 * encoder.num_layers
    assert all(type(layer) is FlatEinsumDense for layer in projections)
    # Names and order of the weights are keras-hub's (presets convert).
    rebuilt = ElectraEncoder.from_config(encoder.get_config())
    assert [v.path for v in encoder.weights] == [v.path for v in rebuilt.weights]


def test_a_projection_equals_einsum_dense():
    for equation, shape, output, bias in (
        ("abc,cde->abde", (3, 32, 64), (None, 2, 32), "de"),
        ("abcd,cde->abe", (3, 32, 2, 32), (None, 64), "e"),
    ):
        layer = keras.layers.EinsumDense(equation, output, bias_axes=bias)
        x = tf.random.stateless_normal(shape, seed=(1, 2))
        layer(x)
        weights = [x, layer.kernel, layer.bias]
        einsum = _outputs_and_gradients(layer, x, weights)
        layer.__class__ = FlatEinsumDense
        flat = _outputs_and_gradients(layer, x, weights)
        # Within a few ulps of the largest value: the kernel gradient sums
        # batch x length products in one reduction instead of two.
        _assert_close(flat, einsum, ulps=8)


def test_the_encoder_equals_einsum_dense_with_unknown_lengths():
    encoder = _encoder()
    batch = random_batch(batch_size=3, length=32, seed=1)
    batch["padding_mask"][1, 20:] = 0
    batch = {key: tf.constant(value) for key, value in batch.items()}
    weights = encoder.trainable_variables
    # Graph mode with an unknown length, as fine-tuning's trimmed batches.
    signature = {k: tf.TensorSpec([None, None], v.dtype) for k, v in batch.items()}
    step = tf.function(
        lambda b: _outputs_and_gradients(encoder, b, weights),
        input_signature=[signature],
    )
    flat = step(batch)
    for layer in _projections(encoder):
        layer.__class__ = keras.layers.EinsumDense
    einsum = tf.function(lambda b: _outputs_and_gradients(encoder, b, weights))(batch)
    # Rounding differences carried through two blocks of large random
    # weights (outputs ~1, LayerNorm gains ~1): within the 1e-4 the
    # keras-hub and transformers parity tests allow.
    np.testing.assert_allclose(flat[0], einsum[0], rtol=0, atol=1e-4)
    # Gradients (up to ~500 here) within 1e-4 of each variable's largest;
    # the key bias's is zero but for rounding (a softmax ignores it).
    largest = max(float(tf.reduce_max(tf.abs(g))) for g in einsum[1:])
    for a, b in zip(flat[1:], einsum[1:]):
        scale = float(tf.reduce_max(tf.abs(b)))
        np.testing.assert_allclose(a, b, rtol=0, atol=max(1e-4 * scale, 1e-6 * largest))
