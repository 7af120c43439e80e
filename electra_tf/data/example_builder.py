"""Packing tokenised documents into fixed-length pre-training examples.

The packing rules of the original ELECTRA `build_pretraining_dataset.py`, with one
deliberate change: tokens that do not fit an example are carried into the next one
instead of being dropped (see `ExampleBuilder`).

>>> builder = ExampleBuilder(max_seq_length=8, seed=0)
>>> pairs = builder.add_document([[11, 12], [13, 14, 15], [16, 17, 18, 19]])
>>> pairs  # a document's sentences (token ids) -> segments A and B of examples
[SegmentPair(first=[11, 12], second=[13, 14, 15]), SegmentPair(first=[16, 17, 18, 19], second=[])]
>>> features = pairs_to_features(pairs, 8, cls_id=1, sep_id=2, pad_id=0)
>>> features["input_ids"]
array([[ 1, 11, 12,  2, 13, 14, 15,  2],
       [ 1, 16, 17, 18, 19,  2,  0,  0]])
>>> features["segment_ids"]
array([[0, 0, 0, 0, 1, 1, 1, 1],
       [0, 0, 0, 0, 0, 0, 0, 0]])
"""  # noqa: E501

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

# The original builder's proportions.
# Share of examples with a single segment (as in single-sentence tasks).
SINGLE_SEGMENT_PROB = 0.1
# Share of examples whose target length is drawn from [MIN_SHORT_TARGET, max]
# instead of max_seq_length (shorter examples, as fine-tuning inputs often are).
SHORT_TARGET_PROB = 0.05
MIN_SHORT_TARGET = 5
# Chance that a sentence which would take segment A past its target still goes to A.
FIRST_SEGMENT_OVERFLOW_PROB = 0.5
# [CLS] A [SEP] B [SEP]: the special tokens of a two-segment example.
NUM_SPECIAL_TOKENS = 3


class SegmentPair(NamedTuple):
    """The text of one example: token ids of segment A and of segment B.

    `second` is empty for a single-segment example. The special tokens are not
    included: `pairs_to_features` lays out `[CLS] A [SEP] B [SEP]`.
    """

    first: list[int]
    second: list[int]


class ExampleBuilder:
    """Accumulates the sentences of a document into examples, as the original does.

    * Sentences are accumulated until they reach the target length (normally
      `max_seq_length`), then split into segments A and B.
    * 10% of examples are single-segment; otherwise A targets about half of the
      target length, `(target - 3) // 2`: a sentence goes to A while A is empty
      or stays under its target; the first sentence that would take A past its
      target still goes to A half of the time; the rest goes to B.
    * After each example, 5% of the time the next target length is drawn
      uniformly from [5, max_seq_length] instead of max_seq_length.
    * A document's end closes its last example: examples never span documents.

    Two deliberate changes from the original:

    * The original DROPS the tokens that do not fit (A beyond
      `max_seq_length - 2`, B beyond what A leaves). Here they are carried,
      sentence boundaries kept, into the next example of the same document: every
      token of the corpus is in exactly one example, in order, and no text is
      lost to long sentences.
    * The original may put a short sentence into A after an earlier one went to
      B, reordering the text; here, once B has started, the rest goes to B.

    Deterministic: the builder draws from its own `random.Random(seed)`, so the
    same documents added in the same order give the same examples.

    Args:
        max_seq_length: length of every example, special tokens and padding
            included; at least 8.
        seed: seed of the builder's random generator (an int or a str).
    """

    def __init__(self, max_seq_length: int, seed: int | str = 0):
        if max_seq_length < 8:
            raise ValueError(f"max_seq_length must be at least 8, got {max_seq_length}")
        self.max_seq_length = max_seq_length
        self.seed = seed
        self._rng = random.Random(seed)
        self._target = max_seq_length

    def add_document(self, sentences: Iterable[Sequence[int]]) -> list[SegmentPair]:
        """Packs one document, given as its sentences' token ids, into examples.

        Args:
            sentences: token-id sequences (lists or int arrays), in order; empty
                ones are ignored.

        Returns:
            The document's examples as `SegmentPair`s, in order; none if the
            document has no tokens.
        """
        pairs: list[SegmentPair] = []
        pending: list[list[int]] = []
        length = 0
        for sentence in sentences:
            if len(sentence) == 0:
                continue
            pending.append(list(sentence))
            length += len(sentence)
            # A loop, not an `if`: the carried rest of a very long sentence may
            # fill several examples on its own.
            while length >= self._target:
                pair, pending = self._make_pair(pending)
                pairs.append(pair)
                length = sum(map(len, pending))
        while pending:
            pair, pending = self._make_pair(pending)
            pairs.append(pair)
        return pairs

    def _make_pair(self, sentences: list[list[int]]):
        """One example from the front of `sentences`; returns it and the rest."""
        rng = self._rng
        if rng.random() < SINGLE_SEGMENT_PROB:
            first_target = math.inf  # all goes to A; what does not fit waits
        else:
            first_target = (self._target - NUM_SPECIAL_TOKENS) // 2
        first, second = [], []
        first_length = 0
        for sentence in sentences:
            if not second and (
                not first
                or first_length + len(sentence) < first_target
                or (
                    first_length < first_target
                    and rng.random() < FIRST_SEGMENT_OVERFLOW_PROB
                )
            ):
                first.append(sentence)
                first_length += len(sentence)
            else:
                second.append(sentence)
        # Room for [CLS] A [SEP], then for B [SEP] in what A leaves.
        first_ids, carry = _take(first, self.max_seq_length - 2)
        if carry:
            second_ids, carry = [], carry + second
        else:
            room = self.max_seq_length - len(first_ids) - NUM_SPECIAL_TOKENS
            second_ids, carry = _take(second, max(0, room))
        if rng.random() < SHORT_TARGET_PROB:
            self._target = rng.randint(MIN_SHORT_TARGET, self.max_seq_length)
        else:
            self._target = self.max_seq_length
        return SegmentPair(first_ids, second_ids), carry


def _take(sentences: list[list[int]], budget: int):
    """The first `budget` tokens of `sentences`, and the sentences left over.

    A sentence cut by the budget is split: its tail heads the leftover list.
    """
    taken: list[int] = []
    for i, sentence in enumerate(sentences):
        room = budget - len(taken)
        if len(sentence) > room:
            taken += sentence[:room]
            return taken, [sentence[room:], *sentences[i + 1 :]]
        taken += sentence
    return taken, []


def pairs_to_features(
    pairs: Sequence[SegmentPair],
    max_seq_length: int,
    cls_id: int,
    sep_id: int,
    pad_id: int,
) -> dict[str, np.ndarray]:
    """Lays out examples as the original's TFRecord features.

    `[CLS] A [SEP] B [SEP] [PAD]...` (`[CLS] A [SEP] [PAD]...` without B);
    `segment_ids` is 0 on `[CLS] A [SEP]`, 1 on `B [SEP]` and 0 on padding;
    `input_mask` is 1 on real tokens, 0 on padding.

    Args:
        pairs: N examples, each fitting in `max_seq_length` (as
            `ExampleBuilder`'s do).
        max_seq_length: L.

    Returns:
        `{"input_ids", "input_mask", "segment_ids"}`, each int64 [N, L].
    """
    count = len(pairs)
    flat: list[int] = []
    first_ends = np.empty(count, np.int64)  # index just after A's [SEP]
    lengths = np.empty(count, np.int64)
    for i, (first, second) in enumerate(pairs):
        flat.append(cls_id)
        flat += first
        flat.append(sep_id)
        first_ends[i] = len(first) + 2
        if second:
            flat += second
            flat.append(sep_id)
            lengths[i] = first_ends[i] + len(second) + 1
        else:
            lengths[i] = first_ends[i]
    if count and lengths.max() > max_seq_length:
        raise ValueError(f"an example is longer than max_seq_length {max_seq_length}")
    positions = np.arange(max_seq_length)
    real = positions < lengths[:, None]  # [N, L]
    input_ids = np.full((count, max_seq_length), pad_id, np.int64)
    # Boolean-mask assignment fills row by row: the order `flat` was built in.
    input_ids[real] = flat
    segment_ids = (real & (positions >= first_ends[:, None])).astype(np.int64)
    return {
        "input_ids": input_ids,
        "input_mask": real.astype(np.int64),
        "segment_ids": segment_ids,
    }
