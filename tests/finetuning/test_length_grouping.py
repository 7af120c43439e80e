"""Training batches grouped by length (`length_grouping`): batches of similar
length, every example once an epoch, reshuffled, and as many batches as
`batches_per_epoch` counts beforehand (the dataset's cardinality)."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetuning import length_grouping
from electra_tf.finetuning.glue_readers import GlueExamples
from electra_tf.finetuning.glue_tasks import get_task
from electra_tf.finetuning.tagging_data import TaggedSentences


def sentences(lengths) -> TaggedSentences:
    """Sentences of these word counts; sentence j's words are "j:0", "j:1"..."""
    return TaggedSentences(
        words=tuple(tuple(f"{j}:{i}" for i in range(n)) for j, n in enumerate(lengths)),
        tags=tuple(("X",) * n for n in lengths),
    )


def grouped(examples, batch_size, max_words, pool_remainders=False, seed=1):
    """Training batches of `examples` (`TaggedSentences` or `GlueExamples`)
    as a task makes them: shuffled, grouped by their word counts."""
    elements = examples.elements
    if isinstance(examples, TaggedSentences):
        elements = examples.elements({"X": 0})
    return length_grouping.batches(
        elements,
        batch_size,
        shuffle=True,
        seed=seed,
        word_counts=examples.word_counts(),
        max_words=max_words,
        pool_remainders=pool_remainders,
    )


def epoch(dataset) -> list[list[int]]:
    """One pass: each batch as its sentences' numbers."""
    return [
        [int(w[0].decode().split(":")[0]) for w in words.to_list()]
        for words, _ in dataset
    ]


def test_groups_are_word_counts_in_steps_of_eight_up_to_max_words():
    counts = [0, 7, 8, 15, 16, 31, 32, 500]
    assert length_grouping.groups(counts, 32).tolist() == [0, 0, 1, 1, 2, 3, 3, 3]
    # Fewer words than one step: two groups still.
    assert length_grouping.groups([3, 8, 9], 4).tolist() == [0, 1, 1]
    groups = np.array([0, 0, 0, 1, 2, 2, 3])  # sizes 3, 1, 2, 1
    assert length_grouping.batches_per_epoch(groups, 2) == 2 + 1 + 1 + 1
    assert length_grouping.batches_per_epoch(groups, 2, pool_remainders=True) == 4


def test_words_of_texts_are_whitespace_separated_in_every_segment():
    first = ("a  b\tc", " lead", "", "x\u00a0y", "m\nn")
    second = ("one", "two words", "", "", "three more words")
    assert length_grouping.words_in_texts(first).tolist() == [3, 1, 0, 1, 2]
    assert length_grouping.words_in_texts(first, second).tolist() == [4, 3, 0, 1, 5]


@pytest.mark.parametrize("pool_remainders", [False, True])
@pytest.mark.parametrize(
    "examples, batch_size, max_words",
    [(600, 16, 64), (50, 8, 128), (13, 32, 64)],
    ids=["many", "few", "fewer-than-a-batch"],
)
def test_an_epoch_is_every_example_once_in_the_counted_batches(
    examples, batch_size, max_words, pool_remainders
):
    lengths = np.random.default_rng(examples).integers(1, 70, examples)
    dataset = grouped(sentences(lengths), batch_size, max_words, pool_remainders)
    groups = length_grouping.groups(lengths, max_words)
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
    # Seven sentences in four groups, batches of 8: dropping each group's
    # partial batch used to leave no batch at all.
    lengths = [1, 2, 9, 10, 17, 25, 33]
    graph = epoch(grouped(sentences(lengths), 8, max_words=32))
    assert sorted(map(sorted, graph)) == [[0, 1], [2, 3], [4], [5, 6]]
    pooled = epoch(grouped(sentences(lengths), 8, max_words=32, pool_remainders=True))
    assert [sorted(b) for b in pooled] == [list(range(7))]


def test_grouped_epochs_have_batches_of_similar_length_and_reshuffle():
    lengths = np.random.default_rng(0).integers(1, 60, 600)
    dataset = grouped(sentences(lengths), 16, max_words=64)
    epochs = []
    for _ in range(2):
        batches = epoch(dataset)
        spreads = [np.ptp(lengths[b]) for b in batches]
        # Groups of 8 words: a batch's lengths differ by less than 8 (the
        # last group, beyond 56 words, holds the rest).
        assert max(spreads) < 8
        # At most one partial batch per group (8 groups here).
        assert sum(len(b) < 16 for b in batches) <= 8
        epochs.append(batches)
    assert epochs[0] != epochs[1]


def test_grouped_text_batches_count_words_of_both_segments():
    texts_a = tuple(" ".join(["a"] * n) for n in range(1, 41))
    texts_b = tuple(" ".join(["b"] * (40 - n)) for n in range(1, 41))
    examples = GlueExamples(
        task=get_task("mrpc"),
        split="train",
        texts=(texts_a, texts_b),
        labels=np.zeros(40, np.int32),
    )
    # Every pair has 40 words in all: one group, two full batches of 20.
    dataset = grouped(examples, 20, max_words=128, seed=0)
    batches = [x for x, _ in dataset]
    assert [int(tf.shape(b[0])[0]) for b in batches] == [20, 20]
