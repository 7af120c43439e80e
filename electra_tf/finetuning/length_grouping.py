"""Training batches of sentences of similar length (`group_by_length`).

With `trim_padding` each batch costs what its longest sentence costs, so a
shuffled epoch still pays for the long tail in nearly every batch. Grouping
the shuffled examples by length first (fairseq's and Hugging Face's
`group_by_length`) makes most batches short: examples fall into groups of
similar length, a group emits a batch whenever it is full, and each epoch's
shuffle draws new batches.

The length is the example's as the model sees it: its real positions once
tokenized and packed (the preprocessors' `sequence_lengths`, as Hugging
Face's `LengthGroupedSampler` measures `input_ids`). A group is the lengths
that `trim_padding` cuts to one length in graph mode (`GRAPH_MULTIPLE` wide),
so a batch of one group carries at most `GRAPH_MULTIPLE` - 1 padded positions
a row. (Grouping by words, as until 2026-11-26, left 32-41% of the
positions padding on Brown POS and rt_polarity: pieces per word vary.)

An example's group depends only on its length, so the batches in an epoch
are counted before training (`batches_per_epoch`) and asserted as the
dataset's cardinality: Keras and the learning-rate schedule know the steps.

No example is dropped; a group's last batch is usually partial:

* In graph mode each group's remainder is a batch of its own (Keras traces
  one graph per batch size, so odd sizes cost nothing): an epoch is
  sum_g ceil(n_g / batch_size) batches.
* Under XLA (`pool_remainders`), which compiles one program per input shape
  (one compilation of `small` takes 100-200 s on a CPU), the remainders,
  emitted after every full batch, are pooled into full batches of mixed
  lengths and one last batch of n mod batch_size, the same every epoch: two
  batch sizes, as with plain batching. An epoch is sum_g floor(n_g /
  batch_size) + ceil(sum_g (n_g mod batch_size) / batch_size) batches.
  Dropping the remainders instead would drop up to `batch_size` - 1 examples
  per group every epoch: on a small training set most of it.
"""

from __future__ import annotations

import math

import numpy as np
import tensorflow as tf

from electra_tf.models.dynamic_padding import GRAPH_MULTIPLE


def batches(
    elements,
    batch_size: int,
    shuffle: bool = False,
    seed: int | None = None,
    lengths: np.ndarray | None = None,
    pool_remainders: bool = False,
) -> tf.data.Dataset:
    """`elements` (a structure of in-memory tensors, one example a row) as
    batches for `fit`, with their number as the dataset's cardinality.

    Args:
        elements: the examples.
        batch_size: examples per batch.
        shuffle: shuffle all the examples with `seed`, anew every epoch.
        seed: the shuffle's seed.
        lengths: the examples' packed lengths (int [examples]): given, the
            examples are grouped by length (`groups`); else batched as they
            come, the last batch smaller.
        pool_remainders: the groups' remainders pooled into full batches (for
            XLA; see the module docstring).
    """
    dataset = tf.data.Dataset.from_tensor_slices(elements)
    if lengths is not None:
        group = groups(lengths)
        dataset = tf.data.Dataset.zip(
            dataset, tf.data.Dataset.from_tensor_slices(group)
        )
    if shuffle:
        dataset = dataset.shuffle(
            dataset.cardinality(), seed=seed, reshuffle_each_iteration=True
        )
    if lengths is None:
        return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)
    dataset = dataset.group_by_window(
        key_func=_group_of,
        reduce_func=lambda _, window: window.batch(batch_size),
        window_size=batch_size,
    ).map(_without_group)
    if pool_remainders:
        # Every full batch comes before the first remainder (a group's window
        # is emitted when full; the partial ones when the input ends), so
        # rebatching leaves the full batches whole and pools the remainders.
        dataset = dataset.unbatch().batch(batch_size)
    count = batches_per_epoch(group, batch_size, pool_remainders)
    dataset = dataset.apply(tf.data.experimental.assert_cardinality(count))
    return dataset.prefetch(tf.data.AUTOTUNE)


def groups(lengths) -> np.ndarray:
    """Each example's length group (int64 [examples]): group i holds the
    lengths i * `GRAPH_MULTIPLE` + 1 to (i + 1) * `GRAPH_MULTIPLE`, the
    lengths graph mode's `trim_padding` cuts to (i + 1) * `GRAPH_MULTIPLE`
    (an empty example joins group 0)."""
    lengths = np.maximum(np.asarray(lengths, np.int64), 1)
    return (lengths - 1) // GRAPH_MULTIPLE


def batches_per_epoch(
    group: np.ndarray, batch_size: int, pool_remainders: bool = False
) -> int:
    """The batches in an epoch of examples grouped by length, `group` being
    each example's group (`groups`)."""
    sizes = np.bincount(group)
    full, remainders = sizes // batch_size, sizes % batch_size
    if pool_remainders:
        return int(full.sum()) + math.ceil(int(remainders.sum()) / batch_size)
    return int(full.sum()) + int(np.count_nonzero(remainders))


def _group_of(element, group):
    return group


def _without_group(element, group):
    return element
