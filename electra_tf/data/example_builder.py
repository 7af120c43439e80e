"""Packing tokenised sentences into fixed-length pre-training examples."""

from __future__ import annotations

import random
from typing import NamedTuple

import numpy as np

# The original builder's proportions.
SINGLE_SEGMENT_PROB = 0.1
SHORT_TARGET_PROB = 0.05
FIRST_SEGMENT_OVERFLOW_PROB = 0.5
MIN_SHORT_TARGET = 5


class Example(NamedTuple):
    """One example; all arrays int64 [max_seq_length] (the TFRecord features)."""

    input_ids: np.ndarray
    input_mask: np.ndarray
    segment_ids: np.ndarray


class ExampleBuilder:
    """Accumulates sentences of one document at a time into examples.

    The rules are the original ELECTRA builder's:

    * sentences are accumulated until they reach the target length, then
      split into `[CLS] A [SEP] B [SEP]` (segment 0 for `[CLS] A [SEP]`, 1 for
      `B [SEP]`);
    * 10% of examples are single-segment; otherwise A aims at half the length
      and a sentence that would overflow A goes to it anyway half the time
      (while B is still empty);
    * after each example, 5% of the time the next target is a random shorter
      length in [5, max_seq_length];
    * a document boundary closes the current example; examples never span
      documents.

    Two changes. The original can put a sentence into A after B has started
    (reordering the text); here, once B starts, the rest goes to B. And the
    original DROPS the tokens that do not fit an example; here they are
    carried into the next example of the same document, so every token of
    the corpus appears in exactly one example, in order.

    Args:
        max_seq_length: length of every example, specials and padding included.
        cls_id, sep_id, pad_id: special token ids.
        seed: seed of this builder's own random generator.
    """

    def __init__(self, max_seq_length, cls_id, sep_id, pad_id, seed=0):
        if max_seq_length < 8:
            raise ValueError(f"max_seq_length must be at least 8, got {max_seq_length}")
        self.max_seq_length = max_seq_length
        self.cls_id, self.sep_id, self.pad_id = cls_id, sep_id, pad_id
        self._rng = random.Random(seed)
        self._sentences: list[list[int]] = []
        self._length = 0
        self._target = max_seq_length

    def add_document(self, sentences) -> list[Example]:
        """Adds one document (a list of token-id lists); returns finished examples."""
        examples = []
        for sentence in sentences:
            if not len(sentence):
                continue
            self._sentences.append(list(sentence))
            self._length += len(sentence)
            while self._length >= self._target:
                examples.append(self._make_example())
        # The document ends: flush, carrying nothing into the next document.
        while self._length:
            examples.append(self._make_example())
        return examples

    def _make_example(self) -> Example:
        rng = self._rng
        if rng.random() < SINGLE_SEGMENT_PROB:
            first_target = self.max_seq_length  # everything goes into A
        else:
            first_target = (self._target - 3) // 2
        first: list[int] = []
        second: list[int] = []
        for sentence in self._sentences:
            if (
                not first
                or len(first) + len(sentence) < first_target
                or (
                    not second
                    and len(first) < first_target
                    and rng.random() < FIRST_SEGMENT_OVERFLOW_PROB
                )
            ):
                if second:
                    # Keep order: once B has started, everything goes to B.
                    second += sentence
                else:
                    first += sentence
            else:
                second += sentence
        # Room for [CLS] A [SEP] (and B [SEP] if B is non-empty).
        first_room = self.max_seq_length - 2
        overflow = first[first_room:]
        first = first[:first_room]
        second_room = max(0, self.max_seq_length - len(first) - 3)
        if overflow:
            overflow += second
            second = []
        else:
            overflow = second[second_room:]
            second = second[:second_room]
        self._sentences = [overflow] if overflow else []
        self._length = len(overflow)
        if rng.random() < SHORT_TARGET_PROB:
            self._target = rng.randint(MIN_SHORT_TARGET, self.max_seq_length)
        else:
            self._target = self.max_seq_length
        return self._pack(first, second)

    def _pack(self, first, second) -> Example:
        ids = [self.cls_id, *first, self.sep_id]
        segments = [0] * len(ids)
        if second:
            ids += [*second, self.sep_id]
            segments += [1] * (len(second) + 1)
        real = len(ids)
        padding = self.max_seq_length - real
        input_ids = np.array(ids + [self.pad_id] * padding, np.int64)
        input_mask = np.array([1] * real + [0] * padding, np.int64)
        segment_ids = np.array(segments + [0] * padding, np.int64)
        return Example(input_ids, input_mask, segment_ids)
