"""`restore_weights` (what `--init-checkpoint` uses) on checkpoints that do not fit."""

import gc
import logging
import re

import pytest
import tensorflow as tf

from electra_tf.config import ConfigError
from electra_tf.pretraining.checkpoint import checkpoint_step, restore_weights
from tests.helpers import make_pretrainer


def _checkpoint(tmp_path, model_config, pretraining_config):
    pretrainer = make_pretrainer(model_config, pretraining_config)
    return tf.train.Checkpoint(model=pretrainer).write(str(tmp_path / "ckpt"))


def test_matching_checkpoint_loads_every_weight(tmp_path, tiny_configs):
    model_config, pretraining_config = tiny_configs
    source = make_pretrainer(model_config, pretraining_config)
    path = tf.train.Checkpoint(model=source).write(str(tmp_path / "ckpt"))
    target = make_pretrainer(model_config, pretraining_config)
    restore_weights(target, path)
    for expected, actual in zip(source.weights, target.weights, strict=True):
        assert expected.path == actual.path
        assert (expected.numpy() == actual.numpy()).all(), expected.path


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"num_layers": 1}, "does not hold this model's weights"),
        ({"hidden_dim": 32, "num_heads": 2}, "does not hold this model's weights"),
    ],
)
def test_mismatched_checkpoint_is_refused(tmp_path, tiny_configs, changes, message):
    model_config, pretraining_config = tiny_configs
    path = _checkpoint(tmp_path, model_config.override(**changes), pretraining_config)
    target = make_pretrainer(model_config, pretraining_config)
    with pytest.raises(ConfigError, match=message) as error:
        restore_weights(target, path)
    assert str(tmp_path / "ckpt") in str(error.value)


def test_missing_checkpoint_is_named(tmp_path):
    with pytest.raises(ConfigError, match="cannot read checkpoint .*nowhere"):
        checkpoint_step(str(tmp_path / "nowhere" / "ckpt-5"))


def test_a_checkpoint_of_other_shapes_is_refused_without_tensorflows_warnings(
    tmp_path, tiny_configs
):
    # The restore used to stop at the first tensor of another shape and leave
    # pending restorations on the model, which logged one warning per
    # checkpoint value when collected (368 lines before the error for the
    # command line); the shapes are now compared before anything is restored.
    model_config, pretraining_config = tiny_configs
    other = model_config.override(hidden_dim=32, num_heads=2)
    path = _checkpoint(tmp_path, other, pretraining_config)
    target = make_pretrainer(model_config, pretraining_config)
    records = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    logger = logging.getLogger("tensorflow")
    logger.addHandler(handler)
    try:
        with pytest.raises(ConfigError) as error:
            restore_weights(target, path)
        del target
        gc.collect()
    finally:
        logger.removeHandler(handler)
    assert [r.getMessage()[:80] for r in records] == []
    message = str(error.value)
    assert "\n" not in message
    assert re.search(
        r"does not hold this model's weights: \S+: shape \[\d+(, \d+)*\] in the "
        r"checkpoint, \[\d+(, \d+)*\] in the model",
        message,
    ), message
