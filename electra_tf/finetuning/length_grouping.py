"""Training batches of sentences of similar length (`group_by_length`).

With `trim_padding` each batch costs what its longest sentence costs, so a
shuffled epoch still pays for the long tail in nearly every batch. Grouping
the shuffled examples by length first (fairseq's and Hugging Face's
`group_by_length`) makes most batches short: examples fall into groups of
similar word counts (`WORDS_PER_GROUP` wide), a group emits a batch whenever
it is full, and each epoch's shuffle draws new batches.

An example's group depends only on its word count, so the batches in an epoch
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

# Word counts that separate the groups. Words, not pieces (tokenizing happens
# later, in the model's preprocessor), and fine enough that a group's
# sentences round to one or two of `trim_padding`'s lengths.
WORDS_PER_GROUP = 8


def batches(
    elements,
    batch_size: int,
    shuffle: bool = False,
    seed: int | None = None,
    word_counts: np.ndarray | None = None,
    max_words: int = 128,
    pool_remainders: bool = False,
) -> tf.data.Dataset:
    """`elements` (a structure of in-memory tensors, one example a row) as
    batches for `fit`, with their number as the dataset's cardinality.

    Args:
        elements: the examples.
        batch_size: examples per batch.
        shuffle: shuffle all the examples with `seed`, anew every epoch.
        seed: the shuffle's seed.
        word_counts: the examples' word counts (int [examples]): given, the
            examples are grouped by length (`groups`); else batched as they
            come, the last batch smaller.
        max_words: the length beyond which sentences share one group (about
            the packed sequence length: longer ones are truncated anyway).
        pool_remainders: the groups' remainders pooled into full batches (for
            XLA; see the module docstring).
    """
    dataset = tf.data.Dataset.from_tensor_slices(elements)
    if word_counts is not None:
        group = groups(word_counts, max_words)
        dataset = tf.data.Dataset.zip(
            dataset, tf.data.Dataset.from_tensor_slices(group)
        )
    if shuffle:
        dataset = dataset.shuffle(
            dataset.cardinality(), seed=seed, reshuffle_each_iteration=True
        )
    if word_counts is None:
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


def groups(word_counts, max_words: int) -> np.ndarray:
    """Each example's length group (int64 [examples]): group i holds the
    word counts from i * `WORDS_PER_GROUP` up to (i + 1) * `WORDS_PER_GROUP`,
    exclusive; the last group, every count from the largest multiple of
    `WORDS_PER_GROUP` below `max_words` (but at least `WORDS_PER_GROUP`) on."""
    boundaries = list(range(WORDS_PER_GROUP, max(max_words, 1), WORDS_PER_GROUP))
    boundaries = boundaries or [WORDS_PER_GROUP]
    return np.searchsorted(boundaries, np.asarray(word_counts), side="right").astype(
        np.int64
    )


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


def words_in_texts(*segments) -> np.ndarray:
    """The whitespace-separated words of each example's text segments
    (int [examples]); `segments` are sequences of strings, one per example."""
    words = [tf.strings.split(tf.constant(s, tf.string)) for s in segments]
    return tf.add_n([w.row_lengths() for w in words]).numpy()


def _group_of(element, group):
    return group


def _without_group(element, group):
    return element
