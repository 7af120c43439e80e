"""Run by tests/test_distribution.py as `python -m tests.mirrored_step_check`, in a
fresh process (logical devices must be configured before TensorFlow initialises):
training steps on 2 logical CPUs under MirroredStrategy vs steps on one device,
same global batch, without and with dropout. Prints the largest weight
differences as JSON."""

import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(
    cpu, [tf.config.LogicalDeviceConfiguration()] * 2
)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from electra_tf.optimization.optimizer import ElectraAdam, ElectraLossScaleOptimizer  # noqa: E402
from electra_tf.presets import get_preset  # noqa: E402
from tests.helpers import make_pretrainer, random_batch  # noqa: E402


def build(strategy, weights=None, optimizer=None, dropout=0.0, seed_states=None):
    preset = get_preset("tiny")
    with strategy.scope():
        model = make_pretrainer(
            # One block per tower: what is compared (the replicas' gradient
            # sum, clipping, dropout keys, loss scaling) is the same at any
            # depth, and each of the nine replica traces costs per layer.
            preset.model.override(vocabulary_size=200, dropout=dropout, num_layers=1),
            preset.pretraining.override(max_seq_length=32),
        )
        # A large rate and a clip norm the gradient exceeds, so both the
        # gradient sum and the clipping order show in the weights.
        model.compile(
            optimizer=optimizer or ElectraAdam(learning_rate=1e-2, global_clipnorm=0.5),
            jit_compile=False,
        )
        if weights is not None:
            model.set_weights(weights)
        # The dropout layers' seed states (not among the weights).
        for variable, value in zip(model.non_trainable_variables, seed_states or ()):
            variable.assign(value)
    return model


def _seed_states(model):
    return [v.numpy() for v in model.non_trainable_variables]


def _max_difference(first, second):
    return max(
        float(np.abs(a - b).max())
        for a, b in zip(first.get_weights(), second.get_weights())
    )


def main():
    # Uneven real lengths across the two halves: a per-replica mean would differ.
    batch = random_batch(batch_size=8, length=32, seed=11)
    batch["padding_mask"][:4, 20:] = 0
    batch["token_ids"][:4, 20:] = 0
    dataset = tf.data.Dataset.from_tensor_slices(batch).batch(8).repeat()
    single = build(tf.distribute.get_strategy())
    start = single.get_weights()
    mirrored = build(tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), start)
    single.fit(dataset, steps_per_epoch=2, epochs=1, verbose=0)
    mirrored.fit(dataset, steps_per_epoch=2, epochs=1, verbose=0)
    diff = _max_difference(single, mirrored)
    moved = max(float(np.abs(a - b).max()) for a, b in zip(single.get_weights(), start))
    figures = {"max_difference": diff, "max_update": moved}
    figures.update(dropout_steps(dataset))
    figures.update(float16_step(dataset))
    print(json.dumps(figures))


def dropout_steps(dataset):
    """The same comparison with dropout 0.1: the masks are keyed by the global
    example index, so both replica counts drop the same units. The difference
    to a single-device run whose dropout states start elsewhere shows that
    dropout acts at all."""
    single = build(tf.distribute.get_strategy(), dropout=0.1)
    start, states = single.get_weights(), _seed_states(single)
    mirrored = build(
        tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]),
        start,
        dropout=0.1,
        seed_states=states,
    )
    shifted = build(
        tf.distribute.get_strategy(),
        start,
        dropout=0.1,
        seed_states=[state + [0, 1] for state in states],
    )
    for model in (single, mirrored, shifted):
        model.fit(dataset, steps_per_epoch=2, epochs=1, verbose=0)
    return {
        "dropout_max_difference": _max_difference(single, mirrored),
        "dropout_other_masks_difference": _max_difference(single, shifted),
        "dropout_states_equal": all(
            np.array_equal(a, b)
            for a, b in zip(_seed_states(single), _seed_states(mirrored))
        ),
    }


def float16_step(dataset):
    """Two mixed_float16 steps on the 2 replicas, with our loss-scale optimizer."""
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
        with strategy.scope():
            optimizer = ElectraLossScaleOptimizer(
                ElectraAdam(learning_rate=1e-2, global_clipnorm=0.5)
            )
        model = build(strategy, optimizer=optimizer)
        start = model.get_weights()
        # Steps whose float16 gradients overflow are skipped while the loss
        # scale halves from 2**15; later steps update the weights.
        history = model.fit(dataset, steps_per_epoch=8, epochs=1, verbose=0)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    replica_difference = max(
        float(np.abs(w.value.values[0].numpy() - w.value.values[1].numpy()).max())
        for w in model.trainable_weights
    )
    return {
        "float16_finite": bool(np.isfinite(history.history["loss"][0])),
        "float16_update": max(
            float(np.abs(a - b).max()) for a, b in zip(model.get_weights(), start)
        ),
        "float16_replica_difference": replica_difference,
        "float16_scale": float(model.optimizer.dynamic_scale.numpy()),
    }


if __name__ == "__main__":
    main()
