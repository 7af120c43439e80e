"""ElectraAdam against a direct numpy computation; the schedule's formula."""

import keras
import numpy as np
import pytest

from electra_tf.optimization.optimizer import ElectraAdam
from electra_tf.optimization.schedule import WarmupPolynomialDecay


def _numpy_adam(params, grads_per_step, lr, wd, decays, b1=0.9, b2=0.999, eps=1e-6):
    """The original AdamWeightDecay update, with no bias correction."""
    params = [p.astype("float64").copy() for p in params]
    m = [np.zeros_like(p) for p in params]
    v = [np.zeros_like(p) for p in params]
    for grads, step_lr in zip(grads_per_step, lr):
        for i, g in enumerate(grads):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            update = m[i] / (np.sqrt(v[i]) + eps)
            if decays[i]:
                update = update + wd * params[i]
            params[i] = params[i] - step_lr * update
    return params


def _model():
    inputs = keras.Input((3,))
    x = keras.layers.Dense(4, name="dense")(inputs)
    x = keras.layers.LayerNormalization(name="layer_norm")(x)
    return keras.Model(inputs, x)


def test_matches_numpy_without_bias_correction():
    model = _model()
    variables = model.trainable_variables
    rng = np.random.default_rng(0)
    grads = [[rng.normal(size=v.shape) for v in variables] for _ in range(3)]
    start = [v.numpy() for v in variables]
    optimizer = ElectraAdam(learning_rate=0.1, weight_decay=0.01)
    for step_grads in grads:
        optimizer.apply([g.astype("float32") for g in step_grads], variables)
    # Kernel decays; bias, LayerNorm gamma and beta do not.
    decays = [optimizer.decays(v.path) for v in variables]
    assert decays == [True, False, False, False], [v.path for v in variables]
    expected = _numpy_adam(start, grads, [0.1] * 3, 0.01, decays)
    for variable, want in zip(variables, expected):
        np.testing.assert_allclose(variable.numpy(), want, rtol=1e-5, atol=1e-6)
    # Bias correction would move the first step by lr * sign(g) ~ 0.1 per entry;
    # without it the first step is smaller, which the numpy reference encodes.
    with_correction = keras.optimizers.AdamW(learning_rate=0.1, weight_decay=0.01)
    other = _model()
    other.set_weights(start)
    for step_grads in grads:
        with_correction.apply(
            [g.astype("float32") for g in step_grads], other.trainable_variables
        )
    assert not np.allclose(other.trainable_variables[0].numpy(), expected[0], atol=1e-3)


def test_learning_rate_multipliers_scale_the_step():
    model = _model()
    variables = model.trainable_variables
    start = [v.numpy() for v in variables]
    grads = [np.ones(v.shape, "float32") for v in variables]
    plain = ElectraAdam(learning_rate=0.01, weight_decay=0.0)
    plain.apply(grads, variables)
    plain_delta = [v.numpy() - s for v, s in zip(variables, start)]
    model.set_weights(start)
    scaled = ElectraAdam(
        learning_rate=0.01,
        weight_decay=0.0,
        learning_rate_multipliers=[("dense/kernel", 0.25)],
    )
    scaled.apply(grads, variables)
    deltas = [v.numpy() - s for v, s in zip(variables, start)]
    np.testing.assert_allclose(deltas[0], 0.25 * plain_delta[0], rtol=1e-5)
    np.testing.assert_allclose(deltas[1], plain_delta[1], rtol=1e-5)


def test_gradient_accumulation_schedule_counts_updates():
    schedule = WarmupPolynomialDecay(1.0, warmup_steps=0, total_steps=10)
    optimizer = ElectraAdam(learning_rate=schedule, gradient_accumulation_steps=4)
    model = _model()
    optimizer.build(model.trainable_variables)
    optimizer._iterations.assign(8)  # 8 micro-batches = 2 updates
    np.testing.assert_allclose(float(optimizer.learning_rate), 0.8, rtol=1e-6)


@pytest.mark.parametrize(
    "step, expected",
    [(0, 0.0), (50, 0.5 * 0.95), (100, 0.9), (550, 0.45), (1000, 0.0), (2000, 0.0)],
)
def test_schedule_warmup_times_decay(step, expected):
    schedule = WarmupPolynomialDecay(1.0, warmup_steps=100, total_steps=1000)
    np.testing.assert_allclose(float(schedule(step)), expected, rtol=1e-6, atol=1e-9)


def test_schedule_step_offset_continues_the_schedule():
    base = WarmupPolynomialDecay(1.0, warmup_steps=100, total_steps=1000)
    continued = WarmupPolynomialDecay(
        1.0, warmup_steps=100, total_steps=1000, step_offset=300
    )
    np.testing.assert_allclose(float(continued(50)), float(base(350)), rtol=1e-6)
    restored = WarmupPolynomialDecay.from_config(continued.get_config())
    np.testing.assert_allclose(float(restored(50)), float(base(350)), rtol=1e-6)
