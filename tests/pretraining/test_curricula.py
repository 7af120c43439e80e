"""The curricula of the pre-training step: replacements moving from uniform to
the generator's (`uniform_share_steps`) and the discriminator's loss weight
ramped in (`disc_weight_ramp_steps`); both read the optimizer's update count."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf import random_streams
from electra_tf.config import ConfigError, PretrainingConfig
from electra_tf.optimization.optimizer import ElectraAdam
from electra_tf.pretraining.sampling import SAMPLERS, sample
from tests.helpers import make_pretrainer, random_batch


def _pretrainer(tiny_configs, **changes):
    model_config, pretraining_config = tiny_configs
    tf.keras.utils.set_random_seed(0)
    pretrainer = make_pretrainer(
        model_config.override(dropout=0.0), pretraining_config.override(**changes)
    )
    pretrainer.compile(optimizer=ElectraAdam(1e-3))
    return pretrainer


@pytest.fixture(scope="module")
def batch():
    return random_batch(batch_size=4, length=32, seed=5)


@pytest.fixture(scope="module")
def paper(tiny_configs, batch):
    pretrainer = _pretrainer(tiny_configs)
    pretrainer(batch)
    return pretrainer


def _like(paper, tiny_configs, batch, **changes):
    """A pretrainer with `changes` and `paper`'s weights."""
    pretrainer = _pretrainer(tiny_configs, **changes)
    pretrainer(batch)
    pretrainer.set_weights(paper.get_weights())
    return pretrainer


def test_uniform_share_moves_from_uniform_to_the_generators_samples(
    tiny_configs, batch, paper
):
    curriculum = _like(paper, tiny_configs, batch, uniform_share_steps=100)
    uniform = _pretrainer(tiny_configs, uniform_generator=True)
    # At update 0 the share is 1: exactly the uniform generator's draws (the
    # same random numbers, equal weights).
    first = curriculum(batch, training=False)["sampled_ids"]
    np.testing.assert_array_equal(first, uniform(batch, training=False)["sampled_ids"])
    # From update 100 on: exactly the generator's (the paper's) draws.
    expected = paper(batch, training=False)["sampled_ids"]
    assert not np.array_equal(first, expected)
    for updates in (100, 250):
        curriculum.optimizer.iterations.assign(updates)
        after = curriculum(batch, training=False)["sampled_ids"]
        np.testing.assert_array_equal(after, expected)
    # A model without an optimizer (only evaluated or exported) is at the end.
    model_config, pretraining_config = tiny_configs
    bare = make_pretrainer(
        model_config.override(dropout=0.0),
        pretraining_config.override(uniform_share_steps=100),
    )
    bare(batch)
    bare.set_weights(paper.get_weights())
    np.testing.assert_array_equal(bare(batch)["sampled_ids"], expected)


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_a_uniform_share_draws_from_the_mixture(sampler):
    logits = np.array([6.0, 0.0, 0.0, 0.0], "float32")  # the generator: id 0
    draws = 40000
    share = 0.4
    sampled = sample(
        sampler,
        np.broadcast_to(logits, (draws, 1, 4)),
        key=random_streams.step_key(3, 7),
        example_index=tf.range(draws),
        uniform_share=tf.constant(share),
    ).numpy()[:, 0]
    generator = np.exp(logits) / np.exp(logits).sum()
    expected = share / 4 + (1 - share) * generator
    observed = np.bincount(sampled, minlength=4) / draws
    # Binomial standard errors are under 0.0025 at 40,000 draws.
    np.testing.assert_allclose(observed, expected, atol=0.01)
    assert abs(observed[1] - generator[1]) > 0.05  # not the generator alone


def test_disc_weight_ramps_from_zero_to_its_value(tiny_configs, batch, paper):
    ramped = _like(paper, tiny_configs, batch, disc_weight_ramp_steps=10)
    for updates, weight in ((0, 0.0), (5, 25.0), (10, 50.0), (40, 50.0)):
        ramped.optimizer.iterations.assign(updates)
        out = ramped(batch, training=False)
        expected = float(out["mlm_loss"]) + weight * float(out["rtd_loss"])
        assert float(out["global_loss"]) == pytest.approx(expected, rel=1e-5)
    # At its end the step is the paper's.
    paper_loss = float(paper(batch, training=False)["global_loss"])
    assert float(out["global_loss"]) == pytest.approx(paper_loss, rel=1e-6)


def test_a_ramped_step_trains_the_discriminator_less_at_first(tiny_configs, batch):
    """The weight reaches the gradients, not only the reported loss."""
    gradients = {}
    for steps in (0, 1000):
        pretrainer = _pretrainer(tiny_configs, disc_weight_ramp_steps=steps)
        head = pretrainer.discriminator
        pretrainer(batch)
        with tf.GradientTape() as tape:
            loss = pretrainer(batch, training=True, step=1)["loss"]
        gradients[steps] = tape.gradient(loss, head.trainable_variables[-1])
    # The discriminator's last weight, which only the RTD loss reaches: a
    # gradient without a ramp, none at all at update 0 of one.
    assert np.any(gradients[0].numpy())
    assert not np.any(gradients[1000].numpy())


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"uniform_share_steps": -1}, "uniform_share_steps must be >= 0"),
        ({"disc_weight_ramp_steps": -5}, "disc_weight_ramp_steps must be >= 0"),
        ({"uniform_share_steps": 10, "objective": "mlm"}, "objective that samples"),
        (
            {"uniform_share_steps": 10, "uniform_generator": True},
            "uniform_generator False",
        ),
        ({"disc_weight_ramp_steps": 10, "objective": "mlm"}, "'mlm' has none"),
    ],
)
def test_curricula_that_cannot_apply_are_refused(changes, words):
    with pytest.raises(ConfigError, match=words):
        PretrainingConfig(**changes)
