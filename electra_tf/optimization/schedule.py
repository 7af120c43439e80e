"""The original ELECTRA learning-rate schedule."""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="electra_tf")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """`peak * min(1, t / warmup) * (1 - min(t, total) / total) ** power`.

    Warm-up and decay MULTIPLY, as in the original (so the highest rate reached
    is below `peak`), unlike Keras' own schedules, which switch from one to the
    other. `t = step + step_offset`: continuing pre-training from a checkpoint
    trained for `step_offset` steps picks the schedule up where it was.

    Example:
    >>> schedule = WarmupPolynomialDecay(1e-3, warmup_steps=10, total_steps=100)
    >>> [round(float(schedule(t)), 6) for t in (0, 5, 10, 55, 100)]
    [0.0, 0.000475, 0.0009, 0.00045, 0.0]
    """

    def __init__(self, peak, warmup_steps, total_steps, power=1.0, step_offset=0):
        self.peak = peak
        self.warmup_steps = warmup_steps
        self.total_steps = total_steps
        self.power = power
        self.step_offset = step_offset

    def __call__(self, step):
        t = tf.cast(step, tf.float32) + float(self.step_offset)
        total = float(self.total_steps)
        decay = (1.0 - tf.minimum(t, total) / total) ** self.power
        if self.warmup_steps > 0:
            decay *= tf.minimum(1.0, t / float(self.warmup_steps))
        return self.peak * decay

    def get_config(self):
        return {
            "peak": self.peak,
            "warmup_steps": self.warmup_steps,
            "total_steps": self.total_steps,
            "power": self.power,
            "step_offset": self.step_offset,
        }
