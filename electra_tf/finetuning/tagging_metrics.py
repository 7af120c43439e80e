"""Tagging metrics: token accuracy, and span precision/recall/F1 for BIO tags.

Spans follow the convention of conlleval and `seqeval` (its default mode):
a span starts at `B-X` or `S-X`, or at an `I-X`/`E-X` that does not continue
a span of type X (so `O I-PER` is a PER span, as conlleval reads IOB1); it
ends before `O`, `B-`, `S-`, a change of type, or after `E-`/`S-`. A
predicted span counts as correct only with the same type, start and end as
a gold one; precision, recall and F1 are micro-averaged over all spans.
`tests/finetuning/test_tagging.py` checks this against `seqeval` itself.

Example:
>>> gold = [["B-PER", "I-PER", "O", "B-LOC"]]
>>> predicted = [["B-PER", "I-PER", "O", "O"]]
>>> spans(gold[0])
[('PER', 0, 1), ('LOC', 3, 3)]
>>> span_scores(gold, predicted)
{'precision': 1.0, 'recall': 0.5, 'f1': 0.6666666666666666}
>>> token_accuracy(gold, predicted)
0.75
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_SPAN_TAG = re.compile(r"^[BIES]-.+$")


def is_span_tag_set(tags: Sequence[str]) -> bool:
    """Whether `tags` are BIO/IOB/IOBES tags (`O`, `B-X`, `I-X`, ...)."""
    named = [tag for tag in tags if tag != "O"]
    return bool(named) and all(_SPAN_TAG.match(tag) for tag in named)


def _split(tag: str) -> tuple[str, str]:
    """`B-PER` -> ("B", "PER"); `O` -> ("O", "_")."""
    return tag[0], tag[1:].split("-", maxsplit=1)[-1] or "_"


def _ends(prev_tag, tag, prev_type, type_) -> bool:
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != type_


def _starts(prev_tag, tag, prev_type, type_) -> bool:
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag not in ("O", ".") and prev_type != type_


def spans(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """`(type, first word, last word)` of each span of one sentence."""
    found = []
    prev_tag, prev_type, begin = "O", "", 0
    for i, chunk in enumerate([*tags, "O"]):
        tag, type_ = _split(chunk)
        if _ends(prev_tag, tag, prev_type, type_):
            found.append((prev_type, begin, i - 1))
        if _starts(prev_tag, tag, prev_type, type_):
            begin = i
        prev_tag, prev_type = tag, type_
    return found


def span_scores(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]
) -> dict[str, float]:
    """Micro precision, recall and F1 of spans over sentences (0 if undefined)."""
    _check_lengths(gold, predicted)
    correct = num_gold = num_predicted = 0
    for gold_tags, predicted_tags in zip(gold, predicted):
        gold_spans = set(spans(gold_tags))
        predicted_spans = set(spans(predicted_tags))
        correct += len(gold_spans & predicted_spans)
        num_gold += len(gold_spans)
        num_predicted += len(predicted_spans)
    precision = correct / num_predicted if num_predicted else 0.0
    recall = correct / num_gold if num_gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def token_accuracy(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]
) -> float:
    """Fraction of words whose predicted tag is the gold one."""
    _check_lengths(gold, predicted)
    total = sum(len(tags) for tags in gold)
    right = sum(
        g == p
        for gold_tags, predicted_tags in zip(gold, predicted)
        for g, p in zip(gold_tags, predicted_tags)
    )
    return right / total if total else 0.0


def tagging_scores(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], span_tags: bool
) -> dict[str, float]:
    """`accuracy`, and with `span_tags` also span `precision`, `recall`, `f1`."""
    scores = {"accuracy": token_accuracy(gold, predicted)}
    if span_tags:
        scores.update(span_scores(gold, predicted))
    return scores


def _check_lengths(gold, predicted):
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences, {len(predicted)} predicted")
    for i, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags, {len(p)} predicted")
