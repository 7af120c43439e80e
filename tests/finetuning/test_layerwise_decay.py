"""Layer-wise LR decay: every variable's multiplier, and ElectraAdam applying it."""

import doctest
import re

import numpy as np
import pytest
import tensorflow as tf

import electra_tf.finetuning.layerwise_decay
from electra_tf.finetuning.layerwise_decay import layerwise_learning_rate_multipliers
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.optimization.optimizer import ElectraAdam
from electra_tf.presets import get_preset
from tests.helpers import TINY_VOCABULARY_SIZE

DECAY = 0.8


@pytest.fixture(scope="module")
def classifier():
    config = get_preset("tiny").model.override(
        vocabulary_size=TINY_VOCABULARY_SIZE, num_layers=3
    )
    encoder = ElectraEncoder.discriminator_from_config(config)
    return ElectraTextClassifier(backbone=encoder, num_classes=3, compile=False)


def _expected_depth(path, num_layers, corrected):
    """The original's depths (google-research/electra `_get_layer_lrs`),
    written independently of the module's regexes."""
    layer = path.split("/")[0]
    if layer in (
        "token_embedding",
        "position_embedding",
        "segment_embedding",
        "embeddings_layer_norm",
        "embeddings_projection",
    ):
        return 0
    match = re.fullmatch(r"transformer_layer_(\d+)", layer)
    if match:
        return int(match.group(1)) + 1
    assert layer == "output_dense", path  # the only other layer: the head
    return num_layers + (1 if corrected else 2)


@pytest.mark.parametrize("corrected", [False, True])
def test_multiplier_of_every_variable(classifier, corrected):
    num_layers = classifier.backbone.num_layers
    optimizer = ElectraAdam(
        learning_rate_multipliers=layerwise_learning_rate_multipliers(
            num_layers, DECAY, corrected=corrected
        )
    )
    top = num_layers + (1 if corrected else 2)
    seen_depths = set()
    for variable in classifier.trainable_variables:
        depth = _expected_depth(variable.path, num_layers, corrected)
        seen_depths.add(depth)
        assert optimizer.learning_rate_multiplier(variable.path) == pytest.approx(
            DECAY ** (top - depth)
        ), variable.path
    assert seen_depths == set(range(num_layers + 1)) | {top}


def test_original_and_corrected_forms():
    # L = 3. Original: head 1, top layer decay^2, embeddings decay^5.
    original = [m for _, m in layerwise_learning_rate_multipliers(3, 0.5)]
    assert original == [0.5**5, 0.5**4, 0.5**3, 0.5**2]
    # Corrected: head 1, top layer decay^1, embeddings decay^4.
    corrected = [m for _, m in layerwise_learning_rate_multipliers(3, 0.5, True)]
    assert corrected == [0.5**4, 0.5**3, 0.5**2, 0.5**1]
    # transformer_layer_1 must not claim transformer_layer_10's variables.
    pattern = layerwise_learning_rate_multipliers(11, 0.5)[2][0]
    assert re.search(pattern, "transformer_layer_1/query/kernel")
    assert not re.search(pattern, "transformer_layer_10/query/kernel")
    with pytest.raises(ValueError, match="decay must be in"):
        layerwise_learning_rate_multipliers(3, 0.0)


def _one_step(classifier, optimizer, gradients):
    """Applies one update from the current weights; returns every variable's move."""
    before = [v.numpy() for v in classifier.trainable_variables]
    optimizer.apply_gradients(zip(gradients, classifier.trainable_variables))
    moves = [v.numpy() - b for v, b in zip(classifier.trainable_variables, before)]
    for variable, value in zip(classifier.trainable_variables, before):
        variable.assign(value)
    return moves


def test_electra_adam_scales_each_step_by_its_multiplier(classifier):
    rng = np.random.default_rng(0)
    gradients = [
        tf.constant(rng.normal(size=v.shape), tf.float32)
        for v in classifier.trainable_variables
    ]
    multipliers = layerwise_learning_rate_multipliers(
        classifier.backbone.num_layers, DECAY
    )
    plain = ElectraAdam(learning_rate=1e-2, global_clipnorm=None)
    decayed = ElectraAdam(
        learning_rate=1e-2, learning_rate_multipliers=multipliers, global_clipnorm=None
    )
    plain_moves = _one_step(classifier, plain, gradients)
    decayed_moves = _one_step(classifier, decayed, gradients)
    for variable, plain_move, decayed_move in zip(
        classifier.trainable_variables, plain_moves, decayed_moves
    ):
        multiplier = decayed.learning_rate_multiplier(variable.path)
        assert np.abs(plain_move).max() > 0, variable.path
        # Weight decay is scaled by the learning rate too, so the whole
        # update scales.
        np.testing.assert_allclose(
            decayed_move, multiplier * plain_move, rtol=1e-4, atol=1e-9
        )


def test_docstring_examples_run():
    result = doctest.testmod(
        electra_tf.finetuning.layerwise_decay, optionflags=doctest.ELLIPSIS
    )
    assert result.attempted > 0 and result.failed == 0
