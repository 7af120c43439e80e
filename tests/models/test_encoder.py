"""ElectraEncoder: outputs, padding, causal towers, shared embeddings, serialisation
and re-initialised blocks, on one tiny encoder."""

import keras
import numpy as np
import pytest

from electra_tf.models.encoder import ElectraEncoder, standalone_encoder
from tests.helpers import TINY_ENCODER, encoder_inputs, randomize_weights

ARCHITECTURE = {**TINY_ENCODER, "num_layers": 2}


@pytest.fixture(scope="module")
def encoder():
    keras.utils.set_random_seed(0)
    encoder = ElectraEncoder(**ARCHITECTURE)
    randomize_weights(encoder)
    return encoder


TOKENS = [[2, 7, 9, 11, 3, 0, 0, 0], [2, 5, 6, 3, 12, 13, 3, 0]]


def test_outputs_have_their_shapes_and_pooled_is_the_first_state(encoder):
    outputs = encoder(encoder_inputs(TOKENS))
    assert tuple(outputs["sequence_output"].shape) == (2, 8, 16)
    np.testing.assert_array_equal(
        outputs["pooled_output"], outputs["sequence_output"][:, 0]
    )


def test_padded_positions_do_not_change_the_real_ones(encoder):
    first = encoder(encoder_inputs(TOKENS, real=5))["sequence_output"]
    other_padding = np.array(TOKENS)
    other_padding[:, 5:] = 40
    second = encoder(encoder_inputs(other_padding, real=5))["sequence_output"]
    np.testing.assert_allclose(first[:, :5], second[:, :5], atol=1e-5)
    assert not np.allclose(first[:, 5:], second[:, 5:])


def test_a_left_to_right_tower_does_not_see_later_tokens():
    keras.utils.set_random_seed(1)
    causal = ElectraEncoder(**ARCHITECTURE, attention="left_to_right")
    randomize_weights(causal)
    changed = np.array(TOKENS)
    changed[:, 4:] = 30
    first = causal(encoder_inputs(TOKENS))["sequence_output"]
    second = causal(encoder_inputs(changed))["sequence_output"]
    np.testing.assert_allclose(first[:, :4], second[:, :4], atol=1e-5)
    assert not np.allclose(first[:, 4:], second[:, 4:])
    with pytest.raises(ValueError, match="attention must be one of"):
        ElectraEncoder(**ARCHITECTURE, attention="sideways")


def test_a_generator_encoder_reuses_the_embeddings_and_copies_standalone(encoder):
    generator = ElectraEncoder(
        **{**ARCHITECTURE, "hidden_dim": 8, "intermediate_dim": 16},
        embedding_source=encoder,
    )
    assert generator.token_embedding is encoder.token_embedding
    assert generator.embeddings_layer_norm is encoder.embeddings_layer_norm
    assert generator.embeddings_projection is None  # its width is the embeddings'
    with pytest.raises(NotImplementedError, match="not serialisable on its own"):
        generator.get_config()
    copy = standalone_encoder(generator, name="generator_copy")
    assert copy.token_embedding is not encoder.token_embedding
    np.testing.assert_allclose(
        copy(encoder_inputs(TOKENS))["sequence_output"],
        generator(encoder_inputs(TOKENS))["sequence_output"],
        atol=1e-6,
    )


def test_the_keras_file_round_trips(encoder, tmp_path):
    assert encoder.get_config()["num_layers"] == ARCHITECTURE["num_layers"]
    encoder.save(tmp_path / "encoder.keras")
    reloaded = keras.models.load_model(tmp_path / "encoder.keras")
    assert isinstance(reloaded, ElectraEncoder)
    assert reloaded.architecture() == encoder.architecture()
    np.testing.assert_allclose(
        reloaded(encoder_inputs(TOKENS))["sequence_output"],
        encoder(encoder_inputs(TOKENS))["sequence_output"],
        atol=1e-6,
    )


def test_reinitialize_top_layers_redraws_only_those_blocks(encoder):
    copy = standalone_encoder(encoder)
    before = copy.get_weights()
    copy.reinitialize_top_layers(0, 0.02)
    for got, want in zip(copy.get_weights(), before):
        np.testing.assert_array_equal(got, want)
    copy.reinitialize_top_layers(1, 0.02)
    bottom, top = copy.transformer_layers
    for got, want in zip(
        bottom.get_weights(), encoder.transformer_layers[0].get_weights()
    ):
        np.testing.assert_array_equal(got, want)
    kernels = [w for w in top.weights if w.path.endswith("kernel")]
    assert kernels and all(0.005 < np.std(w.numpy()) < 0.03 for w in kernels)
    with pytest.raises(ValueError, match="can re-initialise 0 to 2 layers"):
        copy.reinitialize_top_layers(3, 0.02)
