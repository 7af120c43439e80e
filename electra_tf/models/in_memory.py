"""In-memory inputs of a keras-hub task as a shuffled `tf.data.Dataset`.

keras-hub's tasks batch in-memory inputs (lists of strings, arrays) into a
dataset themselves and hand Keras that dataset, so Keras then ignores
`fit(shuffle=True)`: a file sorted by label would train in label order. Our
task classes take `fit` from `ShuffledFit`, which calls `in_memory_dataset`
first: it shuffles before batching and reshuffles every epoch, as Keras does
for arrays.
"""

from __future__ import annotations

import inspect

import keras
import numpy as np
import tensorflow as tf


def is_in_memory(x) -> bool:
    """Whether `x` is data (lists, arrays, tensors), not a dataset or generator."""
    if x is None or isinstance(x, (tf.data.Dataset, keras.utils.PyDataset)):
        return False
    return not inspect.isgenerator(x)


def draw_shuffle_seed() -> int:
    """A seed for tf.data's shuffle, from NumPy's global generator.

    `keras.utils.set_random_seed(seed)` seeds that generator, so a seeded run
    shuffles in the same order every time, and each `fit` call draws anew.
    """
    return int(np.random.randint(0, 2**31 - 1))


def _to_tensor_like(value):
    # Strings become object arrays (tf.data takes them as tf.string); a list of
    # two string lists is a sentence pair, kept as a tuple.
    if isinstance(value, (tf.Tensor, tf.RaggedTensor, np.ndarray)):
        return value
    if isinstance(value, tuple):
        return tuple(_to_tensor_like(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_tensor_like(v) for k, v in value.items()}
    if hasattr(value, "__array__"):
        return np.asarray(value)
    if isinstance(value, list) and value and isinstance(value[0], (list, tuple)):
        return tf.ragged.constant(value)
    return np.asarray(value, dtype=object if _holds_strings(value) else None)


def _holds_strings(value) -> bool:
    return bool(value) and isinstance(value[0], (str, bytes))


def in_memory_dataset(
    x,
    y=None,
    sample_weight=None,
    batch_size: int | None = None,
    shuffle: bool = False,
    seed: int | None = None,
) -> tf.data.Dataset:
    """`(x, y, sample_weight)` sliced into batches, shuffled first if asked.

    Args:
        x: a batch of inputs: a list or array of strings, a tuple of two for
            sentence pairs, a dict of arrays, or a (ragged) tensor.
        y: labels with the same first dimension, or None.
        sample_weight: weights with the same first dimension, or None.
        batch_size: examples per batch (Keras' default: 32).
        shuffle: shuffle with a buffer the size of the data (an exact
            uniform permutation), and again at every epoch.
        seed: the shuffle's seed (`draw_shuffle_seed()` if None).

    Returns:
        A dataset of `(x, y, sample_weight)` batches as Keras packs them (`x`
        alone, or `(x,)`-free `(x, y)` when there are no weights).
    """
    inputs = keras.utils.pack_x_y_sample_weight(
        _to_tensor_like(x),
        None if y is None else _to_tensor_like(y),
        None if sample_weight is None else _to_tensor_like(sample_weight),
    )
    dataset = tf.data.Dataset.from_tensor_slices(inputs)
    if shuffle:
        count = int(dataset.cardinality())
        dataset = dataset.shuffle(
            max(count, 1),
            seed=draw_shuffle_seed() if seed is None else seed,
            reshuffle_each_iteration=True,
        )
    return dataset.batch(batch_size or 32)


class ShuffledFit:
    """A keras-hub task's `fit`, except that in-memory inputs are shuffled.

    With `shuffle=True` (Keras' default), in-memory `x` (as the task's
    `in_memory_inputs` gives it) is shuffled before batching and reshuffled
    every epoch, seeded from NumPy's global generator (`draw_shuffle_seed`).
    A `tf.data.Dataset` is used as given. Put it before the keras-hub class:
    `class ElectraTextClassifier(ShuffledFit, keras_hub.models.TextClassifier)`.
    """

    def in_memory_inputs(self, x, y):
        """In-memory `x` and `y` in the form the task batches; as given here."""
        return x, y

    def fit(
        self,
        x=None,
        y=None,
        batch_size=None,
        sample_weight=None,
        shuffle=True,
        **kwargs,
    ):
        if is_in_memory(x):
            x, y = self.in_memory_inputs(x, y)
            if shuffle and not kwargs.get("validation_split"):
                x = in_memory_dataset(x, y, sample_weight, batch_size, shuffle=True)
                # Keras warns that it ignores `shuffle` for a dataset: it is done.
                y = sample_weight = batch_size = None
                shuffle = False
        return super().fit(
            x=x,
            y=y,
            batch_size=batch_size,
            sample_weight=sample_weight,
            shuffle=shuffle,
            **kwargs,
        )
