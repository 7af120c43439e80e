"""Packing rules: layout, no token lost, determinism, the original's proportions."""

import doctest

import numpy as np
import pytest

import electra_tf.data.example_builder
from electra_tf.data.example_builder import (
    ExampleBuilder,
    SegmentPair,
    pairs_to_features,
)

PAD, CLS, SEP = 0, 1, 2
L = 32


def _documents(seed, count=60, long_sentences=0.1):
    """Documents of sentences whose ids count up from 10: every token is unique."""
    rng = np.random.default_rng(seed)
    next_id = 10
    documents = []
    for _ in range(count):
        sentences = []
        for _ in range(int(rng.integers(1, 12))):
            # Mostly short sentences, sometimes one longer than an example.
            longest = 80 if rng.random() < long_sentences else 15
            length = int(rng.integers(1, longest))
            sentences.append(list(range(next_id, next_id + length)))
            next_id += length
        documents.append(sentences)
    return documents


def _build(documents, seed=0, length=L):
    builder = ExampleBuilder(length, seed=seed)
    return [builder.add_document(document) for document in documents]


def test_layout_and_no_token_lost():
    documents = _documents(0)
    for document, pairs in zip(documents, _build(documents)):
        features = pairs_to_features(pairs, L, CLS, SEP, PAD)
        ids, mask, segments = (
            features[k] for k in ("input_ids", "input_mask", "segment_ids")
        )
        assert ids.shape == mask.shape == segments.shape == (len(pairs), L)
        assert ids.dtype == mask.dtype == segments.dtype == np.int64
        rebuilt = []
        for row, (first, second) in enumerate(pairs):
            real = int(mask[row].sum())
            assert real == len(first) + len(second) + 2 + bool(second) <= L
            assert mask[row, :real].all() and not mask[row, real:].any()
            assert (ids[row, real:] == PAD).all() and not segments[row, real:].any()
            # [CLS] A [SEP] in segment 0, B [SEP] in segment 1.
            expected = [CLS, *first, SEP] + ([*second, SEP] if second else [])
            assert ids[row, :real].tolist() == expected
            assert segments[row, :real].tolist() == [0] * (len(first) + 2) + [1] * (
                len(second) + 1 if second else 0
            )
            assert first, "segment A is never empty"
            rebuilt += first + second
        # Every token of the document, in order, exactly once.
        assert rebuilt == [t for sentence in document for t in sentence]


def test_examples_are_full_unless_short_target_or_document_end():
    # One long document: no document-end effects. With overflow carried, an
    # example of the normal target is exactly full.
    (pairs,) = _build([_one_long_document(3)])
    lengths = np.array([len(a) + len(b) + 2 + bool(b) for a, b in pairs[:-1]])
    short = np.mean(lengths < L)
    assert 0.02 < short < 0.09  # SHORT_TARGET_PROB = 0.05


def _one_long_document(seed, sentences=6000):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 20, sentences)
    ends = np.cumsum(lengths) + 10
    return [list(range(end - n, end)) for n, end in zip(lengths, ends)]


def test_original_proportions():
    (pairs,) = _build([_one_long_document(4)])
    full = [(a, b) for a, b in pairs if len(a) + len(b) + 2 + bool(b) == L]
    single = np.mean([not b for a, b in full])
    assert 0.07 < single < 0.14  # SINGLE_SEGMENT_PROB = 0.1
    # Segment A targets about half: (L - 3) // 2 = 14, a sentence more half the time.
    first_lengths = [len(a) for a, b in full if b]
    assert 10 <= np.median(first_lengths) <= 20


def test_deterministic_for_a_seed():
    documents = _documents(1)
    a, b, c = _build(documents, 7), _build(documents, 7), _build(documents, 8)
    assert a == b
    assert a != c
    assert _build(documents, "7:0:train") == _build(documents, "7:0:train")


def test_long_sentence_is_carried_not_dropped():
    sentence = list(range(10, 110))  # 100 tokens, more than 3 examples of 32
    (pairs,) = _build([[sentence, [500, 501]]], length=L)
    assert [t for a, b in pairs for t in a + b] == [*sentence, 500, 501]
    assert all(len(a) + len(b) + 2 + bool(b) <= L for a, b in pairs)


def test_empty_documents_and_sentences():
    builder = ExampleBuilder(L)
    assert builder.add_document([]) == []
    assert builder.add_document([[], []]) == []
    assert builder.add_document([[], [5], []]) == [SegmentPair([5], [])]


def test_pairs_to_features_by_hand():
    features = pairs_to_features(
        [SegmentPair([7, 8], [9]), SegmentPair([6], [])], 8, CLS, SEP, PAD
    )
    assert features["input_ids"].tolist() == [
        [CLS, 7, 8, SEP, 9, SEP, PAD, PAD],
        [CLS, 6, SEP, PAD, PAD, PAD, PAD, PAD],
    ]
    assert features["segment_ids"].tolist() == [
        [0, 0, 0, 0, 1, 1, 0, 0],
        [0, 0, 0, 0, 0, 0, 0, 0],
    ]
    assert features["input_mask"].tolist() == [
        [1, 1, 1, 1, 1, 1, 0, 0],
        [1, 1, 1, 0, 0, 0, 0, 0],
    ]
    empty = pairs_to_features([], 8, CLS, SEP, PAD)
    assert empty["input_ids"].shape == (0, 8)


def test_bad_arguments():
    with pytest.raises(ValueError, match="at least 8"):
        ExampleBuilder(4)
    with pytest.raises(ValueError, match="longer than max_seq_length 8"):
        pairs_to_features([SegmentPair(list(range(7)), [])], 8, CLS, SEP, PAD)


@pytest.mark.parametrize("module", [electra_tf.data.example_builder])
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
