"""ElectraGenerator: masked-LM logits at the masked positions only, with the
output layer tied to the token embedding; a standalone copy saves and reloads."""

import keras
import numpy as np
import pytest

from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.generator import ElectraGenerator, standalone_generator
from tests.helpers import TINY_ENCODER, encoder_inputs, randomize_weights

VOCABULARY_SIZE = TINY_ENCODER["vocabulary_size"]
TOKENS = np.array([[2, 7, 9, 4, 3, 0], [2, 4, 6, 3, 12, 3]], "int32")


@pytest.fixture(scope="module")
def models():
    keras.utils.set_random_seed(0)
    discriminator_encoder = ElectraEncoder(**TINY_ENCODER)
    encoder = ElectraEncoder(
        **{**TINY_ENCODER, "num_heads": 1, "hidden_dim": 8, "intermediate_dim": 16},
        embedding_source=discriminator_encoder,
        name="generator_encoder",
    )
    generator = ElectraGenerator(encoder, name="generator")
    randomize_weights(generator)
    return discriminator_encoder, generator


def _inputs(mask_positions):
    positions = {"mask_positions": np.asarray(mask_positions, "int32")}
    return {**encoder_inputs(TOKENS), **positions}


def test_logits_are_per_masked_position_over_the_vocabulary(models):
    _, generator = models
    logits = generator(_inputs([[3, 1], [1, 4]]))
    assert tuple(logits.shape) == (2, 2, VOCABULARY_SIZE)
    assert logits.dtype == "float32"
    # Gathering before the head: the logits at position p are those of p
    # gathered among every position.
    every = generator(_inputs([list(range(6))] * 2))
    np.testing.assert_allclose(logits[0], every[0].numpy()[[3, 1]], atol=1e-5)
    np.testing.assert_allclose(logits[1], every[1].numpy()[[1, 4]], atol=1e-5)


def test_the_output_layer_is_the_shared_token_embedding(models):
    discriminator_encoder, generator = models
    assert generator.mlm_head.token_embedding is discriminator_encoder.token_embedding
    own = {id(w) for w in generator.encoder.weights}
    assert id(discriminator_encoder.token_embedding.embeddings) in own


def test_a_standalone_copy_gives_the_same_logits_and_reloads(models, tmp_path):
    _, generator = models
    copy = standalone_generator(generator)
    inputs = _inputs([[3, 1], [1, 4]])
    np.testing.assert_allclose(copy(inputs), generator(inputs), atol=1e-6)
    copy.save(tmp_path / "generator.keras")
    reloaded = keras.models.load_model(tmp_path / "generator.keras")
    assert isinstance(reloaded, ElectraGenerator)
    np.testing.assert_allclose(reloaded(inputs), generator(inputs), atol=1e-6)
