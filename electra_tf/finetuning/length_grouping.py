"""Training batches of sentences of similar length (`group_by_length`).

With `trim_padding` each batch costs what its longest sentence costs, so a
shuffled epoch still pays for the long tail in nearly every batch. Grouping
the shuffled examples by length first (fairseq's and Hugging Face's
`group_by_length`) makes most batches short: `tf.data`'s
`bucket_by_sequence_length` collects examples into groups of similar word
counts and emits a batch whenever a group is full, so batches still arrive in
a random order of groups, and each epoch's shuffle draws new batches.

Each group's last partial batch is dropped, every epoch: fewer than
`groups * batch_size` examples, different ones each epoch as the data is
reshuffled. Every batch then has the same size, and under XLA, which
compiles one program per input shape, the step compiles once per length
rather than again for every odd-sized remainder.
"""

from __future__ import annotations

import tensorflow as tf

# Word counts that separate the groups. Words, not pieces (tokenizing happens
# later, in the model's preprocessor), and fine enough that a group's
# sentences round to one or two of `trim_padding`'s lengths.
WORDS_PER_GROUP = 8


def batches(
    elements,
    word_count,
    batch_size: int,
    shuffle: bool = False,
    seed: int | None = None,
    grouped: bool = False,
    max_words: int = 128,
) -> tf.data.Dataset:
    """`elements` (a structure of in-memory tensors, one example a row) as
    batches for `fit`: shuffled whole with `seed` every epoch if `shuffle`,
    then grouped by `word_count(*element)` (`group_by_length`) if `grouped`,
    else in order, with a smaller last batch."""
    dataset = tf.data.Dataset.from_tensor_slices(elements)
    if shuffle:
        dataset = dataset.shuffle(
            dataset.cardinality(), seed=seed, reshuffle_each_iteration=True
        )
    if grouped:
        dataset = group_by_length(dataset, word_count, batch_size, max_words)
    else:
        dataset = dataset.batch(batch_size)
    return dataset.prefetch(tf.data.AUTOTUNE)


def group_by_length(
    dataset: tf.data.Dataset, word_count, batch_size: int, max_words: int
) -> tf.data.Dataset:
    """Batches of `batch_size` examples of similar `word_count(*element)`.

    Args:
        dataset: unbatched (and already shuffled) examples.
        word_count: the number of words of an element (an int32 scalar).
        batch_size: examples per batch.
        max_words: the length beyond which sentences share one group (about
            the packed sequence length: longer ones are truncated anyway).
    """
    boundaries = list(range(WORDS_PER_GROUP, max(max_words, 1), WORDS_PER_GROUP))
    return dataset.bucket_by_sequence_length(
        element_length_func=word_count,
        bucket_boundaries=boundaries or [WORDS_PER_GROUP],
        bucket_batch_sizes=[batch_size] * (max(len(boundaries), 1) + 1),
        no_padding=True,
        drop_remainder=True,
    )


def words_in_text(*segments: tf.Tensor) -> tf.Tensor:
    """The whitespace-separated words of one example's text segments."""
    return tf.add_n([tf.size(tf.strings.split(s), out_type=tf.int32) for s in segments])
