"""ElectraTransformerLayer: the feed-forward activation in float32 under a
mixed policy, Keras' own under float32, and through a Keras file."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.transformer_layer import ElectraTransformerLayer

HIDDEN = 16


def _layer(dtype):
    keras.utils.set_random_seed(0)
    layer = ElectraTransformerLayer(
        intermediate_dim=32, num_heads=2, activation="gelu", dtype=dtype
    )
    layer.build((None, None, HIDDEN))
    return layer


@pytest.fixture(scope="module")
def bf16_layer():
    return _layer("mixed_bfloat16")


# Pre-activations spread like a trained block's (a few units either side).
PRE_ACTIVATION = tf.constant(
    np.random.default_rng(0).normal(scale=3.0, size=(4, 7, 32)), tf.bfloat16
)


def test_a_bfloat16_block_computes_gelu_in_float32_and_returns_bfloat16(bf16_layer):
    activation = bf16_layer._feedforward_intermediate_dense.activation
    out = activation(PRE_ACTIVATION)
    assert out.dtype == tf.bfloat16
    expected = tf.cast(
        tf.nn.gelu(tf.cast(PRE_ACTIVATION, tf.float32), approximate=False),
        tf.bfloat16,
    )
    np.testing.assert_array_equal(out.numpy(), expected.numpy())
    # What it replaces, GELU in bfloat16 throughout, rounds at every step:
    # the float32 one is not the same function (else the swap would be moot).
    in_bf16 = keras.activations.gelu(PRE_ACTIVATION)
    assert not np.array_equal(in_bf16.numpy(), expected.numpy())


def test_a_float32_block_keeps_keras_gelu():
    layer = _layer("float32")
    assert layer._feedforward_intermediate_dense.activation is keras.activations.gelu


def test_a_bfloat16_block_trains_and_round_trips_through_a_keras_file(
    bf16_layer, tmp_path
):
    inputs = keras.Input((None, HIDDEN))
    model = keras.Model(inputs, bf16_layer(inputs))
    x = np.random.default_rng(1).normal(size=(2, 5, HIDDEN)).astype("float32")
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.cast(model(x), tf.float32) ** 2)
    gradients = tape.gradient(loss, model.trainable_variables)
    intermediate = bf16_layer._feedforward_intermediate_dense.kernel
    index = [v.path for v in model.trainable_variables].index(intermediate.path)
    assert np.all(np.isfinite(gradients[index].numpy()))
    assert np.any(gradients[index].numpy() != 0)
    model.save(tmp_path / "block.keras")
    reloaded = keras.models.load_model(tmp_path / "block.keras")
    np.testing.assert_array_equal(reloaded(x).numpy(), model(x).numpy())
    block = reloaded.layers[-1]
    assert block._feedforward_intermediate_dense.activation is not (
        keras.activations.gelu
    )
    assert block.get_config()["activation"] == bf16_layer.get_config()["activation"]
