"""GLUE's metrics as stateful Keras metrics (usable in `compile`, `fit`, TensorBoard).

| name | metric | tasks | state |
|---|---|---|---|
| `accuracy` | Keras' `SparseCategoricalAccuracy` | all classification tasks | counts |
| `f1` | `BinaryF1`, positive class 1 | MRPC, QQP | confusion matrix |
| `mcc` | `MatthewsCorrelation` | CoLA | confusion matrix |
| `pearson` | `PearsonCorrelation` | STS-B | six running sums |
| `spearman` | `SpearmanCorrelation` | STS-B | buffer of all pairs |

Classification metrics take integer labels [batch] and logits or probabilities
[batch, num_classes] (the predicted class is the argmax). Correlations take
targets [batch] and predictions [batch] or [batch, 1]; they are invariant to
scaling, so STS-B's targets divided by 5 give the same values as raw scores.
Sums aggregate across `tf.distribute` replicas; Spearman's buffer cannot.

Example:
>>> import numpy as np
>>> metric = MatthewsCorrelation()
>>> metric.update_state(np.array([1, 1, 0, 0]), np.array([[0.1, 0.9], [0.8, 0.2],
...                                                       [0.7, 0.3], [0.6, 0.4]]))
>>> round(float(metric.result()), 4)
0.5774
"""

from __future__ import annotations

import keras
import tensorflow as tf

from electra_tf.finetuning.glue_tasks import GlueTask


def _class_ids(y_pred) -> tf.Tensor:
    """Argmax of [batch, num_classes] scores; [batch] inputs are class ids."""
    y_pred = tf.convert_to_tensor(y_pred)
    if y_pred.shape.rank == 2 and y_pred.shape[-1] != 1:
        return tf.argmax(y_pred, axis=-1, output_type=tf.int32)
    return tf.cast(tf.reshape(y_pred, [-1]), tf.int32)


def _flat_float(values) -> tf.Tensor:
    return tf.reshape(tf.cast(values, tf.float32), [-1])


class _ConfusionMatrixMetric(keras.metrics.Metric):
    """Accumulates a [num_classes, num_classes] confusion matrix (rows: truth)."""

    def __init__(self, num_classes=2, name=None, dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.num_classes = num_classes
        self.confusion = self.add_variable(
            shape=(num_classes, num_classes),
            initializer="zeros",
            dtype="float32",
            name="confusion",
        )

    def update_state(self, y_true, y_pred, sample_weight=None):
        true = tf.one_hot(tf.reshape(tf.cast(y_true, tf.int32), [-1]), self.num_classes)
        predicted = tf.one_hot(_class_ids(y_pred), self.num_classes)
        if sample_weight is not None:
            true *= tf.reshape(tf.cast(sample_weight, tf.float32), [-1, 1])
        # [C, batch] @ [batch, C]: weighted counts of (true, predicted) pairs.
        self.confusion.assign_add(tf.matmul(true, predicted, transpose_a=True))

    def get_config(self):
        return {**super().get_config(), "num_classes": self.num_classes}


@keras.saving.register_keras_serializable(package="electra_tf")
class MatthewsCorrelation(_ConfusionMatrixMetric):
    """Matthews correlation coefficient (CoLA's metric), multi-class form.

    With the confusion matrix normalised to frequencies, `c` its trace and
    `t`, `p` the true and predicted class frequencies:
    `(c - t.p) / sqrt((1 - t.t) (1 - p.p))` (sklearn's
    `matthews_corrcoef`); 0 when a denominator factor is 0, as in sklearn.
    """

    def __init__(self, num_classes=2, name="mcc", dtype=None):
        super().__init__(num_classes=num_classes, name=name, dtype=dtype)

    def result(self):
        total = tf.reduce_sum(self.confusion)
        frequencies = tf.math.divide_no_nan(self.confusion, total)
        correct = tf.linalg.trace(frequencies)
        true = tf.reduce_sum(frequencies, axis=1)
        predicted = tf.reduce_sum(frequencies, axis=0)
        covariance = correct - tf.tensordot(true, predicted, 1)
        spread = (1.0 - tf.tensordot(true, true, 1)) * (
            1.0 - tf.tensordot(predicted, predicted, 1)
        )
        return tf.math.divide_no_nan(covariance, tf.sqrt(spread))


@keras.saving.register_keras_serializable(package="electra_tf")
class BinaryF1(_ConfusionMatrixMetric):
    """F1 of the positive class 1: `2 tp / (2 tp + fp + fn)`, 0 if undefined.

    The F1 GLUE reports for MRPC and QQP (sklearn's `f1_score` with its
    default `pos_label=1`).
    """

    def __init__(self, name="f1", dtype=None):
        super().__init__(num_classes=2, name=name, dtype=dtype)

    def result(self):
        true_positive = self.confusion[1, 1]
        false_positive = self.confusion[0, 1]
        false_negative = self.confusion[1, 0]
        return tf.math.divide_no_nan(
            2.0 * true_positive, 2.0 * true_positive + false_positive + false_negative
        )

    def get_config(self):
        config = super().get_config()
        del config["num_classes"]
        return config


@keras.saving.register_keras_serializable(package="electra_tf")
class PearsonCorrelation(keras.metrics.Metric):
    """Pearson's r between targets and predictions, from running sums.

    Keeps n, sum x, sum y, sum x^2, sum y^2, sum xy (sums aggregate across
    replicas) and returns `cov / sqrt(var_x var_y)`; 0 when either side is
    constant (scipy returns NaN there; 0 keeps "best epoch" comparisons
    meaningful). In float32 the result agrees with scipy to about 1e-5 on
    GLUE-sized data.
    """

    def __init__(self, name="pearson", dtype=None):
        super().__init__(name=name, dtype=dtype)
        # n, sum x, sum y, sum x^2, sum y^2, sum xy.
        self.sums = self.add_variable(
            shape=(6,), initializer="zeros", dtype="float32", name="sums"
        )

    def update_state(self, y_true, y_pred, sample_weight=None):
        if sample_weight is not None:
            raise NotImplementedError("PearsonCorrelation takes no sample weights")
        x, y = _flat_float(y_true), _flat_float(y_pred)
        terms = tf.stack([tf.ones_like(x), x, y, x * x, y * y, x * y])
        self.sums.assign_add(tf.reduce_sum(terms, axis=1))

    def result(self):
        n, sum_x, sum_y, sum_xx, sum_yy, sum_xy = tf.unstack(self.sums)
        covariance = sum_xy - tf.math.divide_no_nan(sum_x * sum_y, n)
        var_x = sum_xx - tf.math.divide_no_nan(sum_x * sum_x, n)
        var_y = sum_yy - tf.math.divide_no_nan(sum_y * sum_y, n)
        # Rounding can leave a constant side's variance slightly negative.
        spread = tf.maximum(var_x, 0.0) * tf.maximum(var_y, 0.0)
        return tf.math.divide_no_nan(covariance, tf.sqrt(spread))


def _average_ranks(values: tf.Tensor) -> tf.Tensor:
    """1-based ranks of `values` [n], ties sharing their mean rank (scipy's
    `rankdata(method="average")`): `(#smaller + #smaller-or-equal + 1) / 2`."""
    ordered = tf.sort(values)
    smaller = tf.searchsorted(ordered, values, side="left")
    smaller_or_equal = tf.searchsorted(ordered, values, side="right")
    return tf.cast(smaller + smaller_or_equal + 1, tf.float32) / 2.0


def _weighted_pearson(x, y, weights):
    """Pearson's r of the entries with weight 1 (two-pass, precise)."""
    n = tf.reduce_sum(weights)
    x_centered = (x - tf.reduce_sum(x * weights) / n) * weights
    y_centered = (y - tf.reduce_sum(y * weights) / n) * weights
    covariance = tf.reduce_sum(x_centered * y_centered)
    spread = tf.reduce_sum(x_centered**2) * tf.reduce_sum(y_centered**2)
    return tf.math.divide_no_nan(covariance, tf.sqrt(spread))


@keras.saving.register_keras_serializable(package="electra_tf")
class SpearmanCorrelation(keras.metrics.Metric):
    """Spearman's rank correlation, from a buffer of every (target, prediction).

    Ranks are global, so no running statistic gives Spearman exactly. The
    metric appends each batch to a float32 buffer of `capacity` pairs
    (variables of static shape, so it also runs inside a compiled train
    step) and at `result()` ranks the filled part (average ranks for ties,
    as scipy does) and returns the Pearson correlation of the ranks; 0 when
    either side is constant. Past `capacity` examples the result is NaN (STS-B
    has 5.7k training pairs, 11.5k with swapped pairs, and 1.5k dev pairs).
    Not usable with more than one `tf.distribute` replica.
    """

    def __init__(self, capacity=16384, name="spearman", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.capacity = capacity
        # (target, prediction) rows; one extra row at index `capacity`
        # absorbs writes past the end.
        self.pairs = self.add_variable(
            shape=(capacity + 1, 2), initializer="zeros", dtype="float32", name="pairs"
        )
        self.count = self.add_variable(
            shape=(), initializer="zeros", dtype="int32", name="count"
        )

    def update_state(self, y_true, y_pred, sample_weight=None):
        if sample_weight is not None:
            raise NotImplementedError("SpearmanCorrelation takes no sample weights")
        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            raise NotImplementedError(
                "SpearmanCorrelation keeps per-example buffers and cannot be "
                "aggregated across replicas; evaluate on one device"
            )
        x, y = _flat_float(y_true), _flat_float(y_pred)
        positions = self.count + tf.range(tf.size(x))
        positions = tf.minimum(positions, self.capacity)[:, None]
        self.pairs.assign(
            tf.tensor_scatter_nd_update(self.pairs, positions, tf.stack([x, y], 1))
        )
        self.count.assign_add(tf.size(x))

    def result(self):
        filled = tf.range(self.capacity + 1) < tf.minimum(self.count, self.capacity)
        weights = tf.cast(filled, tf.float32)
        # Unfilled slots sort after every real value, so they do not shift
        # the ranks of the filled ones; their weight 0 drops them after.
        infinity = tf.constant(float("inf"))
        targets, predictions = tf.unstack(self.pairs, axis=1)
        x_ranks = _average_ranks(tf.where(filled, targets, infinity))
        y_ranks = _average_ranks(tf.where(filled, predictions, infinity))
        x_ranks, y_ranks = x_ranks * weights, y_ranks * weights
        correlation = _weighted_pearson(x_ranks, y_ranks, weights)
        overflow = self.count > self.capacity
        return tf.where(overflow, tf.constant(float("nan")), correlation)

    def get_config(self):
        return {**super().get_config(), "capacity": self.capacity}


def task_metrics(task: GlueTask) -> list[keras.metrics.Metric]:
    """Fresh Keras metrics for `task` (for `compile(metrics=...)`)."""
    metrics = {
        "accuracy": lambda: keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
        "f1": BinaryF1,
        "mcc": lambda: MatthewsCorrelation(num_classes=task.num_classes),
        "pearson": PearsonCorrelation,
        "spearman": SpearmanCorrelation,
    }
    return [metrics[name]() for name in task.metrics]


def task_score(task: GlueTask, results: dict[str, float]) -> float:
    """The task's GLUE score: the mean of its metrics (e.g. MRPC: acc and F1)."""
    return sum(float(results[name]) for name in task.metrics) / len(task.metrics)


def task_score_definition(task: GlueTask) -> str:
    """What `task_score` is, in words, for the log and `metrics.json`.

    >>> from electra_tf.finetuning.glue_tasks import get_task
    >>> task_score_definition(get_task("mrpc")), task_score_definition(get_task("sst2"))
    ('the mean of dev accuracy, f1', 'dev accuracy')
    """
    if len(task.metrics) == 1:
        return f"dev {task.metrics[0]}"
    return f"the mean of dev {', '.join(task.metrics)}"
