"""Training batches of sentences of similar length (`group_by_length`).

With `trim_padding` each batch costs what its longest sentence costs, so a
shuffled epoch still pays for the long tail in nearly every batch. As Hugging
Face's `LengthGroupedSampler` does, each epoch shuffles the examples, cuts
them into runs of `RUN_BATCHES` batches, sorts each run by length and batches
it; the batches are then shuffled within a window of a run's size, so
consecutive steps are not ordered by length. The length is the example's as
the model packs it (the preprocessors' `sequence_lengths`), so neighbours in a
sorted run differ by a position or none (BENCHMARKS.md section 12).

Every batch is full but an epoch's last: no example is dropped, and there are
two batch sizes, as with plain batching (XLA compiles one program per shape).
An epoch is `ceil(n / batch_size)` batches, asserted as the dataset's
cardinality, so Keras and the learning-rate schedule know the steps.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

# Batches per sorted run: Hugging Face's megabatch (50). Longer runs sort
# closer, shorter ones keep an epoch's batches more mixed.
RUN_BATCHES = 50


def batches(
    elements,
    batch_size: int,
    shuffle: bool = False,
    seed: int | None = None,
    lengths: np.ndarray | None = None,
) -> tf.data.Dataset:
    """`elements` (a structure of in-memory tensors, one example a row) as
    batches for `fit`, with their number as the dataset's cardinality.

    Args:
        elements: the examples.
        batch_size: examples per batch.
        shuffle: shuffle all the examples with `seed`, anew every epoch.
        seed: the shuffle's seed.
        lengths: the examples' packed lengths (int [examples]): given, each
            run of `RUN_BATCHES` batches is sorted by length before it is
            batched (see the module docstring); else the examples are
            batched as they come. The last batch is smaller either way.
    """
    dataset = tf.data.Dataset.from_tensor_slices(elements)
    if lengths is not None:
        lengths = np.asarray(lengths, np.int64)
        dataset = tf.data.Dataset.zip(
            dataset, tf.data.Dataset.from_tensor_slices(lengths)
        )
    if shuffle:
        dataset = dataset.shuffle(
            dataset.cardinality(), seed=seed, reshuffle_each_iteration=True
        )
    if lengths is not None:
        dataset = (
            dataset.batch(RUN_BATCHES * batch_size)
            .map(_sorted_by_length)
            .unbatch()
            .batch(batch_size)
        )
        if shuffle:
            dataset = dataset.shuffle(RUN_BATCHES, seed=seed)
        count = math.ceil(len(lengths) / batch_size)
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(count))
    else:
        dataset = dataset.batch(batch_size)
    return dataset.prefetch(tf.data.AUTOTUNE)


def _sorted_by_length(run, lengths):
    order = tf.argsort(lengths, stable=True)
    return tf.nest.map_structure(lambda values: tf.gather(values, order), run)
