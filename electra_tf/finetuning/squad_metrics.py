"""SQuAD's official metrics: exact match and F1, and SQuAD 2.0's no-answer analysis.

Written to give the numbers of the official evaluation scripts
(`evaluate-v1.1.py` and `evaluate-v2.0.py`, which google-research/electra
ships as `squad_official_eval_v1.py` and `squad_official_eval.py`):

* answers are normalised by lower-casing, deleting ASCII punctuation
  (`string.punctuation`), replacing the articles "a", "an", "the" by a space
  and collapsing whitespace;
* exact match is equality of normalised strings, F1 the harmonic mean of
  token precision and recall on the normalised strings split at whitespace
  (a multiset overlap); a question scores the maximum over its gold answers;
* v1.1: a question without a prediction scores 0 and counts in the total;
  F1 of two empty token lists is 0;
* v2.0: gold answers that normalise to "" are dropped, a question with none
  left has the single gold answer "", and F1 is 1 only when both prediction
  and gold are empty; a question without a prediction is left out of the
  total; a question is predicted unanswerable ("") when its no-answer score
  exceeds `na_threshold`; results are broken down into HasAns/NoAns, and
  `best_exact`/`best_f1` are the scores at the best threshold over the
  no-answer scores, with the threshold (`best_*_thresh`).

Scores are percentages, with the official key names.
"""

from __future__ import annotations

import collections
import re
import string
from collections.abc import Iterable, Mapping, Sequence

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation.

    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    >>> normalize_answer("a cat, an owl and THE dog")
    'cat owl and dog'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> int:
    return int(normalize_answer(prediction) == normalize_answer(gold))


def f1(prediction: str, gold: str, version: int = 2) -> float:
    """Token F1 of normalised answers; `version` 1 or 2 treats empty answers
    as the official script of that version does."""
    predicted = normalize_answer(prediction).split() if prediction else []
    golden = normalize_answer(gold).split() if gold else []
    if version == 2 and (not predicted or not golden):
        return float(predicted == golden)
    common = collections.Counter(predicted) & collections.Counter(golden)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(predicted)
    recall = same / len(golden)
    return 2 * precision * recall / (precision + recall)


def gold_answers(answers: Iterable[str], version: int = 2) -> list[str]:
    """The gold texts a prediction is scored against (v2: never empty)."""
    answers = list(answers)
    if version == 1:
        return answers
    kept = [answer for answer in answers if normalize_answer(answer)]
    return kept or [""]


def raw_scores(
    golds: Mapping[str, Sequence[str]],
    predictions: Mapping[str, str],
    version: int = 2,
) -> tuple[dict[str, float], dict[str, float]]:
    """Per question id: (exact match, F1), each the max over its gold answers.

    Questions without a prediction are left out.
    """
    exact, token_f1 = {}, {}
    for qid, answers in golds.items():
        if qid not in predictions:
            continue
        prediction = predictions[qid]
        candidates = gold_answers(answers, version)
        if version == 1 and not candidates:
            exact[qid], token_f1[qid] = 0, 0.0
            continue
        exact[qid] = max(exact_match(prediction, gold) for gold in candidates)
        token_f1[qid] = max(f1(prediction, gold, version) for gold in candidates)
    return exact, token_f1


def evaluate_v1(
    golds: Mapping[str, Sequence[str]], predictions: Mapping[str, str]
) -> dict[str, float]:
    """`evaluate-v1.1.py`: `{"exact_match", "f1"}` over all questions
    (a missing prediction scores 0)."""
    exact, token_f1 = raw_scores(golds, predictions, version=1)
    total = len(golds)
    if total == 0:
        raise ValueError("no questions to evaluate")
    return {
        "exact_match": 100.0 * sum(exact.values()) / total,
        "f1": 100.0 * sum(token_f1.values()) / total,
    }


def _summary(exact, token_f1, qids):
    total = len(qids)
    return {
        "exact": 100.0 * sum(exact[q] for q in qids) / total,
        "f1": 100.0 * sum(token_f1[q] for q in qids) / total,
        "total": total,
    }


def _thresholded(scores, na_scores, has_answer, threshold):
    return {
        qid: float(not has_answer[qid]) if na_scores[qid] > threshold else score
        for qid, score in scores.items()
    }


def best_threshold(
    predictions: Mapping[str, str],
    scores: Mapping[str, float],
    na_scores: Mapping[str, float],
    has_answer: Mapping[str, bool],
) -> tuple[float, float]:
    """The official `find_best_thresh`: (best score in %, its threshold).

    Questions are visited in increasing no-answer score; a threshold at a
    question's score answers it and every question before it (as predicted)
    and abstains on the rest. Starting from "abstain on everything" (every
    NoAns question right), the best running total wins; ties keep the lower
    threshold. When abstaining on everything is best the official script
    reports 0.0, which is below every score for probabilities; for scores
    that can be 0 or negative (logits) we report one below the lowest, so
    that applying the threshold reproduces the best score.
    """
    current = sum(1 for qid in has_answer if not has_answer[qid])
    lowest = min(na_scores.values(), default=1.0)
    best, threshold = current, 0.0 if lowest > 0.0 else lowest - 1.0
    for qid in sorted(na_scores, key=lambda q: na_scores[q]):
        if qid not in scores:
            continue
        if has_answer[qid]:
            current += scores[qid]
        elif predictions[qid]:
            current -= 1
        if current > best:
            best, threshold = current, na_scores[qid]
    return 100.0 * best / len(scores), threshold


def evaluate_v2(
    golds: Mapping[str, Sequence[str]],
    predictions: Mapping[str, str],
    na_scores: Mapping[str, float] | None = None,
    na_threshold: float = 1.0,
) -> dict[str, float]:
    """`evaluate-v2.0.py`: overall, HasAns and NoAns exact/F1, and best thresholds.

    Args:
        golds: question id -> gold answer texts (empty for unanswerable).
        predictions: question id -> predicted text ("" for no answer).
        na_scores: question id -> no-answer score (higher: more likely
            unanswerable), the official `na_prob` file; None means 0 for all
            and no best-threshold entries.
        na_threshold: predictions whose no-answer score exceeds it count as
            "" (the official default 1.0 suits probabilities).
    """
    has_answer = {qid: bool(answers) for qid, answers in golds.items()}
    exact, token_f1 = raw_scores(golds, predictions, version=2)
    if not exact:
        raise ValueError("no question has a prediction")
    scores_na = na_scores if na_scores is not None else {q: 0.0 for q in predictions}
    exact_t = _thresholded(exact, scores_na, has_answer, na_threshold)
    f1_t = _thresholded(token_f1, scores_na, has_answer, na_threshold)
    results = _summary(exact_t, f1_t, list(exact_t))
    for prefix, wanted in (("HasAns", True), ("NoAns", False)):
        # The official script lists every question of the kind here, also
        # those without a prediction (it would then fail); we keep predicted.
        qids = [q for q in exact_t if has_answer[q] == wanted]
        if qids:
            for key, value in _summary(exact_t, f1_t, qids).items():
                results[f"{prefix}_{key}"] = value
    if na_scores is not None:
        for name, scores in (("exact", exact), ("f1", token_f1)):
            best, threshold = best_threshold(predictions, scores, na_scores, has_answer)
            results[f"best_{name}"] = best
            results[f"best_{name}_thresh"] = threshold
    return results


def apply_threshold(
    predictions: Mapping[str, str],
    na_scores: Mapping[str, float],
    threshold: float,
) -> dict[str, str]:
    """The official-format answers: "" where the no-answer score exceeds
    `threshold`, the predicted text elsewhere."""
    return {
        qid: "" if na_scores.get(qid, -float("inf")) > threshold else text
        for qid, text in predictions.items()
    }
