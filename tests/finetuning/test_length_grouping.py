"""Training batches grouped by length (`length_grouping`): batches of similar
length, every example once an epoch, reshuffled, and as many batches as
`batches_per_epoch` counts beforehand (the dataset's cardinality); the
lengths are the preprocessors' (`sequence_lengths`), as the model packs them."""

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetuning import length_grouping
from electra_tf.finetuning.tagging_data import TaggedSentences
from electra_tf.models.text_classifier_preprocessor import (
    ElectraTextClassifierPreprocessor,
)
from electra_tf.models.token_classifier_preprocessor import (
    ElectraTokenClassifierPreprocessor,
)

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "##x", "##y"]


def tokenizer():
    return keras_hub.models.ElectraTokenizer(vocabulary=VOCABULARY, lowercase=True)


def sentences(lengths) -> TaggedSentences:
    """Sentences of these word counts; sentence j's words are "j:0", "j:1"..."""
    return TaggedSentences(
        words=tuple(tuple(f"{j}:{i}" for i in range(n)) for j, n in enumerate(lengths)),
        tags=tuple(("X",) * n for n in lengths),
    )


def grouped(lengths, batch_size, seed=1):
    """Training batches of sentences with these `lengths`, as a task makes
    them: shuffled, sorted by length in runs."""
    return length_grouping.batches(
        sentences(lengths).elements({"X": 0}),
        batch_size,
        shuffle=True,
        seed=seed,
        lengths=np.asarray(lengths),
    )


def epoch(dataset) -> list[list[int]]:
    """One pass: each batch as its sentences' numbers."""
    return [
        [int(w[0].decode().split(":")[0]) for w in words.to_list()]
        for words, _ in dataset
    ]


def test_text_lengths_are_the_packed_pieces_of_both_segments_truncated():
    preprocessor = ElectraTextClassifierPreprocessor(tokenizer(), sequence_length=8)
    first = np.array(["a", "axy b", "a a a a a a a a", ""], dtype=object)
    second = np.array(["b", "b", "b b b", "a"], dtype=object)
    # [CLS] pieces [SEP]: "axy" is three pieces; the long one is cut to 8.
    assert preprocessor.sequence_lengths(first).tolist() == [3, 6, 8, 2]
    # [CLS] A [SEP] B [SEP], in batches smaller than the examples.
    lengths = preprocessor.sequence_lengths((first, second), batch_size=3)
    assert lengths.tolist() == [5, 8, 8, 4]


def test_tagging_lengths_are_a_sentences_pieces_or_its_longest_window():
    preprocessor = ElectraTokenClassifierPreprocessor(tokenizer(), sequence_length=6)
    words = tf.ragged.constant([["a"], ["axy", "b"], ["a"] * 9, []])
    # Nine one-piece words in windows of 4 pieces: 4 + 4 + 1.
    assert preprocessor.sequence_lengths(words, batch_size=2).tolist() == [3, 6, 6, 0]


@pytest.mark.parametrize(
    "examples, batch_size",
    [(600, 16), (3000, 8), (13, 32)],
    ids=["one-run", "several-runs", "fewer-than-a-batch"],
)
def test_an_epoch_is_every_example_once_in_full_batches_but_the_last(
    examples, batch_size
):
    lengths = np.random.default_rng(examples).integers(1, 65, examples)
    dataset = grouped(lengths, batch_size)
    counted = -(-examples // batch_size)
    assert int(dataset.cardinality()) == counted
    for _ in range(2):
        batches = epoch(dataset)
        assert len(batches) == counted
        assert sorted(sum(batches, [])) == list(range(examples))
        sizes = sorted(len(b) for b in batches)
        # Every batch full but one of the examples left over (two batch
        # sizes: one program each under XLA).
        assert sizes[1:] == [batch_size] * (counted - 1)
        assert sizes[0] == (examples % batch_size or batch_size)


def test_a_training_set_smaller_than_a_batch_is_all_trained():
    # Seven sentences of seven lengths, batches of 8: one batch, every one.
    lengths = [1, 2, 9, 10, 17, 25, 33]
    assert [sorted(b) for b in epoch(grouped(lengths, 8))] == [list(range(7))]


def test_sorted_batches_carry_little_padding_and_reshuffle():
    lengths = np.random.default_rng(0).integers(1, 65, 4000)
    dataset = grouped(lengths, 16)
    epochs = []
    for _ in range(2):
        batches = epoch(dataset)
        # Cut to its longest, a batch's padding is its longest less each
        # length: runs of 800 sorted leave under 2% of the positions, where
        # batches as they come leave about half.
        padded = sum(len(b) * lengths[b].max() for b in batches)
        assert 1 - lengths.sum() / padded < 0.02
        # Consecutive batches are not ordered by length.
        longest = [lengths[b].max() for b in batches]
        rises = sum(a < b for a, b in zip(longest, longest[1:]))
        assert 0.3 < rises / (len(longest) - 1) < 0.7
        epochs.append(batches)
    assert epochs[0] != epochs[1]
    unsorted = [list(range(i, i + 16)) for i in range(0, 4000, 16)]
    padded = sum(16 * lengths[b].max() for b in unsorted)
    assert 1 - lengths.sum() / padded > 0.4
