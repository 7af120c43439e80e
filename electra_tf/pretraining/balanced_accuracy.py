"""Balanced accuracy of replaced-token detection: the mean of the accuracy on
replaced and on original positions.

Keras has no balanced accuracy. A discriminator on the base-rate plateau
calls every token original: its accuracy is then 1 - the replaced fraction
(~0.85-0.93, which reads as good) and its AUC drifts around 0.5, while its
balanced accuracy is exactly 0.5 and rises only once it calls some replaced
tokens replaced.
"""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="electra_tf")
class BalancedAccuracy(keras.metrics.Metric):
    """`(recall on replaced + recall on original) / 2` at a 0.5 threshold.

    `update_state(labels, probabilities, sample_weight)` takes 1 for replaced
    and 0 for original; the weights (the real tokens the loss covers) weigh
    each position in both counts. A class with no weight yet counts 0.
    """

    def __init__(self, threshold: float = 0.5, name="balanced_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.threshold = threshold
        # Weighted counts: [replaced, original] positions and those called right.
        self.seen = self.add_variable(shape=(2,), initializer="zeros", name="seen")
        self.right = self.add_variable(shape=(2,), initializer="zeros", name="right")

    def update_state(self, y_true, y_pred, sample_weight=None):
        replaced = tf.reshape(tf.cast(y_true, tf.float32) > 0.5, [-1])
        called = tf.reshape(tf.cast(y_pred, tf.float32) > self.threshold, [-1])
        weight = tf.ones_like(replaced, tf.float32)
        if sample_weight is not None:
            weight = tf.reshape(tf.cast(sample_weight, tf.float32), [-1])
        classes = tf.stack([replaced, tf.logical_not(replaced)])  # [2, N]
        seen = tf.reduce_sum(tf.cast(classes, tf.float32) * weight, axis=1)
        right = tf.cast(classes & tf.equal(called, replaced)[None], tf.float32)
        self.seen.assign_add(seen)
        self.right.assign_add(tf.reduce_sum(right * weight, axis=1))

    def result(self):
        return tf.reduce_mean(tf.math.divide_no_nan(self.right, self.seen))

    def reset_state(self):
        self.seen.assign(tf.zeros_like(self.seen))
        self.right.assign(tf.zeros_like(self.right))

    def get_config(self):
        return {**super().get_config(), "threshold": self.threshold}
