"""ElectraDiscriminator: one replaced-token logit per token, through the
original's head, float32 under mixed precision; its Keras file round-trips."""

import keras
import numpy as np
import pytest

from electra_tf.models.discriminator import ElectraDiscriminator
from electra_tf.models.encoder import ElectraEncoder
from tests.helpers import TINY_ENCODER, encoder_inputs, randomize_weights

INPUTS = encoder_inputs([[2, 7, 9, 4, 3, 0], [2, 4, 6, 3, 12, 3]])


def _discriminator(dtype=None):
    encoder = ElectraEncoder(**TINY_ENCODER, dtype=dtype)
    return ElectraDiscriminator(encoder, name="discriminator")


@pytest.fixture(scope="module")
def discriminator():
    keras.utils.set_random_seed(0)
    model = _discriminator()
    randomize_weights(model)
    return model


def test_one_logit_per_token_from_the_originals_head(discriminator):
    logits = discriminator(INPUTS)
    assert tuple(logits.shape) == (2, 6) and logits.dtype == "float32"
    hidden = discriminator.encoder(INPUTS)["sequence_output"]
    dense = discriminator.rtd_dense
    assert dense.units == 16 and dense.activation is keras.activations.gelu
    expected = discriminator.rtd_output(dense(hidden))[..., 0]
    np.testing.assert_allclose(logits, expected, atol=1e-6)


def test_logits_are_float32_under_mixed_precision():
    logits = _discriminator(dtype="mixed_bfloat16")(INPUTS)
    assert logits.dtype == "float32"


def test_the_keras_file_round_trips(discriminator, tmp_path):
    discriminator.save(tmp_path / "discriminator.keras")
    reloaded = keras.models.load_model(tmp_path / "discriminator.keras")
    assert isinstance(reloaded, ElectraDiscriminator)
    assert reloaded.encoder.architecture() == discriminator.encoder.architecture()
    np.testing.assert_allclose(reloaded(INPUTS), discriminator(INPUTS), atol=1e-6)
