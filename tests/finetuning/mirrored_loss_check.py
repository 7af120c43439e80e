"""Run by tests/finetuning/test_loss_reduction.py as `python -m
tests.finetuning.mirrored_loss_check`, in a fresh process (logical devices
must be configured before TensorFlow initialises): one step of a classifier
and of a tagger compiled with `loss_reduction="sum"`, on 2 logical CPUs under
MirroredStrategy and on one device, the same global batch. Plain SGD, no
clipping, so the update is the gradient itself: a sum per replica scaled by
the number of replicas (as Keras scales a mean) would move half as far.
Prints the largest update and the largest difference as JSON."""

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

from electra_tf.models.encoder import ElectraEncoder  # noqa: E402
from electra_tf.models.text_classifier import ElectraTextClassifier  # noqa: E402
from electra_tf.models.token_classifier import ElectraTokenClassifier  # noqa: E402
from tests.helpers import TINY_ENCODER, random_batch  # noqa: E402

BATCH, LENGTH, CLASSES = 8, 8, 3


def build(model_class, strategy, weights=None):
    with strategy.scope():
        encoder = ElectraEncoder(**{**TINY_ENCODER, "vocabulary_size": 200})
        model = model_class(encoder, num_classes=CLASSES, dropout=0.0)
        model.compile(
            optimizer=keras.optimizers.SGD(learning_rate=0.1),
            loss_reduction="sum",
            jit_compile=False,
        )
        if weights is not None:
            model.set_weights(weights)
    return model


def step(model_class, x, y, sample_weight=None):
    inputs = (x, y) if sample_weight is None else (x, y, sample_weight)
    dataset = tf.data.Dataset.from_tensor_slices(inputs).batch(BATCH)
    single = build(model_class, tf.distribute.get_strategy())
    start = single.get_weights()
    mirrored = build(
        model_class, tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]), start
    )
    for model in (single, mirrored):
        model.fit(dataset, epochs=1, verbose=0)
    pairs = list(zip(single.get_weights(), mirrored.get_weights(), start))
    return {
        "update": max(float(np.abs(a - s).max()) for a, _, s in pairs),
        "difference": max(float(np.abs(a - b).max()) for a, b, _ in pairs),
    }


def main():
    rng = np.random.default_rng(3)
    x = random_batch(batch_size=BATCH, length=LENGTH, seed=3)
    labels = rng.integers(0, CLASSES, BATCH)
    # The first replica's half labels far more tokens than the second's.
    weights = x["padding_mask"].astype("float32")
    weights[BATCH // 2 :, 2:] = 0.0
    tags = rng.integers(0, CLASSES, (BATCH, LENGTH))
    figures = {
        "classification": step(ElectraTextClassifier, x, labels),
        "tagging": step(ElectraTokenClassifier, x, tags, weights),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
