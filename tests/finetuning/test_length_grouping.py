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
from electra_tf.models.dynamic_padding import trimmed_length
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


def grouped(lengths, batch_size, pool_remainders=False, seed=1):
    """Training batches of sentences with these `lengths`, as a task makes
    them: shuffled, grouped by length."""
    return length_grouping.batches(
        sentences(lengths).elements({"X": 0}),
        batch_size,
        shuffle=True,
        seed=seed,
        lengths=np.asarray(lengths),
        pool_remainders=pool_remainders,
    )


def epoch(dataset) -> list[list[int]]:
    """One pass: each batch as its sentences' numbers."""
    return [
        [int(w[0].decode().split(":")[0]) for w in words.to_list()]
        for words, _ in dataset
    ]


def test_a_group_is_the_lengths_graph_mode_trims_to_one_length():
    lengths = np.arange(0, 129)
    groups = length_grouping.groups(lengths)
    assert groups[[0, 1, 8, 9, 16, 17, 128]].tolist() == [0, 0, 0, 1, 1, 2, 15]
    # Every length of a group is cut to the same length (its padding mask
    # has that many real positions at the front).
    masks = tf.sequence_mask(lengths, 128)
    trimmed = [int(trimmed_length(masks[i : i + 1])) for i in range(1, 129)]
    for group in set(groups.tolist()):
        assert len({t for t, g in zip(trimmed, groups[1:]) if g == group}) == 1
    groups = np.array([0, 0, 0, 1, 2, 2, 3])  # sizes 3, 1, 2, 1
    assert length_grouping.batches_per_epoch(groups, 2) == 2 + 1 + 1 + 1
    assert length_grouping.batches_per_epoch(groups, 2, pool_remainders=True) == 4


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


@pytest.mark.parametrize("pool_remainders", [False, True])
@pytest.mark.parametrize(
    "examples, batch_size, longest",
    [(600, 16, 64), (50, 8, 128), (13, 32, 64)],
    ids=["many", "few", "fewer-than-a-batch"],
)
def test_an_epoch_is_every_example_once_in_the_counted_batches(
    examples, batch_size, longest, pool_remainders
):
    lengths = np.random.default_rng(examples).integers(1, longest + 1, examples)
    dataset = grouped(lengths, batch_size, pool_remainders)
    groups = length_grouping.groups(lengths)
    counted = length_grouping.batches_per_epoch(groups, batch_size, pool_remainders)
    assert int(dataset.cardinality()) == counted
    for _ in range(2):
        batches = epoch(dataset)
        assert len(batches) == counted
        assert sorted(sum(batches, [])) == list(range(examples))
        sizes = [len(b) for b in batches]
        if pool_remainders:
            # Full batches, then one of the examples left over: the same
            # two batch sizes every epoch (one program each under XLA).
            assert sizes[:-1] == [batch_size] * (counted - 1)
            assert sizes[-1] == (examples % batch_size or batch_size)
        else:
            # Each batch from one group, each group's last batch partial.
            for batch in batches:
                assert len(set(groups[batch])) == 1
            partial = [set(groups[b]) for b in batches if len(b) < batch_size]
            assert len(partial) == len({g for (g,) in partial})


def test_a_training_set_smaller_than_a_batch_in_every_group_is_all_trained():
    # Seven sentences in five groups, batches of 8: dropping each group's
    # partial batch used to leave no batch at all.
    lengths = [1, 2, 9, 10, 17, 25, 33]
    graph = epoch(grouped(lengths, 8))
    assert sorted(map(sorted, graph)) == [[0, 1], [2, 3], [4], [5], [6]]
    pooled = epoch(grouped(lengths, 8, pool_remainders=True))
    assert [sorted(b) for b in pooled] == [list(range(7))]


def test_grouped_epochs_have_batches_of_similar_length_and_reshuffle():
    lengths = np.random.default_rng(0).integers(1, 65, 600)
    dataset = grouped(lengths, 16)
    epochs = []
    for _ in range(2):
        batches = epoch(dataset)
        spreads = [np.ptp(lengths[b]) for b in batches]
        # Groups of 8 lengths: a batch's lengths differ by less than 8.
        assert max(spreads) < 8
        # At most one partial batch per group (8 groups here).
        assert sum(len(b) < 16 for b in batches) <= 8
        epochs.append(batches)
    assert epochs[0] != epochs[1]
