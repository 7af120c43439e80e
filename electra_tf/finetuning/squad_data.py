"""SQuAD 1.1 and 2.0: the official JSON files, tensorflow-datasets, and back out.

`read_squad_json` reads the official layout (`{"data": [{"title",
"paragraphs": [{"context", "qas": [{"id", "question", "answers": [{"text",
"answer_start"}], "is_impossible"}]}]}]}`; `is_impossible` only in 2.0), whose
`answer_start`s are character (code point) offsets into the context;
`load_tfds_squad` tensorflow-datasets' `squad/v1.1` or `v2.0`. A malformed
file raises `SquadDataError` naming the file and the article or question.
`write_predictions_json` and `write_null_odds_json` write the files the
official evaluation scripts read.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterable, Mapping

from electra_tf.errors import FinetuningDataError
from electra_tf.finetuning.files import load_tfds, read_text, write_json

logger = logging.getLogger(__name__)


class SquadDataError(FinetuningDataError):
    """SQuAD data is missing or malformed."""


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question on one paragraph.

    `answers` are the gold `(text, char_start)` pairs (several on dev; empty
    for an unanswerable 2.0 question). Training uses the first. `gold_texts`,
    when given, are the texts answers are scored against instead of
    `answers`' own: MRQA's `answers` list, whose spans in the context
    (`detected_answers`) are `answers` (`mrqa_data`).
    """

    qid: str
    question: str
    context: str
    answers: tuple[tuple[str, int], ...] = ()
    is_impossible: bool = False
    title: str = ""
    gold_texts: tuple[str, ...] = ()

    @property
    def answer_texts(self) -> list[str]:
        """The texts a predicted answer is scored against (max over them)."""
        if self.gold_texts:
            return list(self.gold_texts)
        return [text for text, _ in self.answers]

    @property
    def answer_is_aligned(self) -> bool:
        """The first answer's text is at its `answer_start` (training uses it)."""
        if not self.answers:
            return True
        text, start = self.answers[0]
        return self.context[start : start + len(text)] == text


def version_suffix(version: int) -> str:
    """ "v1.1" or "v2.0", as in the official file names."""
    if version not in (1, 2):
        raise SquadDataError(f"SQuAD version must be 1 or 2, got {version}")
    return "v1.1" if version == 1 else "v2.0"


def squad_split_path(data_dir: str, version: int, split: str) -> str:
    """`<data_dir>/<split>-v1.1.json` or `<split>-v2.0.json` (the official names)."""
    return os.path.join(data_dir, f"{split}-{version_suffix(version)}.json")


def _check_answer(source, qid, context, text, start, misaligned):
    if not isinstance(text, str):
        raise SquadDataError(
            f"{source}: question {qid}: answer text {text!r} is not a string"
        )
    if isinstance(start, bool) or not isinstance(start, int):
        raise SquadDataError(
            f"{source}: question {qid}: answer_start {start!r} must be an integer "
            "(a character offset into the context)"
        )
    if not 0 <= start <= len(context):
        raise SquadDataError(
            f"{source}: question {qid}: answer_start {start!r} is outside its "
            f"context of {len(context)} characters"
        )
    if context[start : start + len(text)] != text:
        misaligned.append((qid, context, text, start))


def _likely_cause(misaligned) -> str:
    """Why most answers are off their `answer_start`, if one shift explains
    at least half of them: 1-based offsets, or UTF-8 byte offsets."""

    def at(context, text, start):
        return context[start : start + len(text)] == text

    def char_offset(context, byte_start):
        return len(context.encode("utf-8")[:byte_start].decode("utf-8", "ignore"))

    one_based = sum(at(c, t, s - 1) for _, c, t, s in misaligned)
    in_bytes = sum(at(c, t, char_offset(c, s)) for _, c, t, s in misaligned)
    if 2 * one_based >= len(misaligned) and one_based >= in_bytes:
        return (
            "they are 1-based (the answer is at answer_start - 1); SQuAD's "
            "offsets count characters from 0"
        )
    if 2 * in_bytes >= len(misaligned):
        return (
            "they look like UTF-8 byte offsets; SQuAD's offsets count characters "
            "(code points) from 0"
        )
    return (
        "answer_start must be the 0-based character offset of the answer in its "
        "context (were the contexts changed after the offsets were computed?)"
    )


def _check_misaligned(source, misaligned, answers: int):
    """Refuses a file whose answers are mostly off their `answer_start` (its
    offsets are counted another way); warns about a few."""
    if not misaligned:
        return
    qid, context, text, start = misaligned[0]
    first = (
        f"question {qid}: answer_start {start} reads "
        f"{context[start : start + len(text)]!r}, not the answer {text!r}"
    )
    if 2 * len(misaligned) > answers:
        raise SquadDataError(
            f"{source}: {len(misaligned)} of {answers} answers are not at their "
            f"answer_start (first: {first}); {_likely_cause(misaligned)}"
        )
    # As the original, such answers are kept for evaluation (only their text
    # counts) and their questions left out of training.
    logger.warning(
        "%s: %d of %d answers are not at their answer_start (first: %s); their "
        "questions are not trained on",
        source,
        len(misaligned),
        answers,
        first,
    )


def _check_texts(source, qid, question, context):
    for name, value in (("question", question), ("context", context)):
        if not isinstance(value, str):
            raise SquadDataError(
                f"{source}: question {qid}: the {name} {value!r:.40} is not a string"
            )
        if not value.strip():
            raise SquadDataError(f"{source}: question {qid}: the {name} is empty")


def _check_unique(source, qid, title, seen: dict):
    if qid in seen:
        where = f"{seen[qid]!r} and {title!r}" if seen[qid] != title else repr(title)
        raise SquadDataError(
            f"{source}: question id {qid!r} occurs twice (article {where}); ids "
            "must be unique, answers are scored by id"
        )
    seen[qid] = title


def examples_from_json(
    data: Mapping, version: int, source: str = ""
) -> list[SquadExample]:
    """`SquadExample`s of a parsed official-layout JSON object; answers off
    their `answer_start` are kept with a warning (`_check_misaligned`), and
    training skips their questions (`answer_is_aligned`), as the original."""
    version_suffix(version)
    if not isinstance(data, Mapping) or not isinstance(data.get("data"), list):
        raise SquadDataError(f"{source}: not a SQuAD file (no 'data' list)")
    examples, misaligned, seen = [], [], {}
    answer_count = 0
    for index, article in enumerate(data["data"]):
        if not isinstance(article, Mapping):
            raise SquadDataError(
                f"{source}: article {index} is a {type(article).__name__}, not an "
                "object with 'title' and 'paragraphs'"
            )
        title = article.get("title", "")
        paragraphs = article.get("paragraphs")
        if not isinstance(paragraphs, list):
            raise SquadDataError(
                f"{source}: article {index} ({title!r}) has no 'paragraphs' list; "
                f"its keys: {sorted(article)}"
            )
        for paragraph in paragraphs:
            if not isinstance(paragraph, Mapping):
                raise SquadDataError(
                    f"{source}: article {index} ({title!r}): a paragraph is a "
                    f"{type(paragraph).__name__}, not an object with 'context' and "
                    "'qas'"
                )
            try:
                context = paragraph["context"]
                qas = paragraph["qas"]
            except KeyError as error:
                raise SquadDataError(
                    f"{source}: article {title!r}: a paragraph has no {error}"
                ) from None
            if not isinstance(qas, list) or not all(
                isinstance(qa, Mapping) for qa in qas
            ):
                raise SquadDataError(
                    f"{source}: article {index} ({title!r}): a paragraph's 'qas' is "
                    "not a list of question objects"
                )
            for qa in qas:
                qid = qa.get("id")
                if qid is None or "question" not in qa:
                    raise SquadDataError(
                        f"{source}: article {title!r}: a question has no id or text"
                    )
                _check_unique(source, str(qid), title, seen)
                _check_texts(source, qid, qa["question"], context)
                impossible = qa.get("is_impossible", False)
                if not isinstance(impossible, bool):
                    raise SquadDataError(
                        f"{source}: question {qid}: is_impossible must be true or "
                        f"false (a JSON boolean), not the {type(impossible).__name__}"
                        f" {impossible!r}"
                    )
                if impossible and version == 1:
                    raise SquadDataError(
                        f"{source}: question {qid} is unanswerable, which only "
                        "SQuAD 2.0 allows (read the file as version 2)"
                    )
                answers = []
                for answer in qa.get("answers", []):
                    text, start = answer.get("text"), answer.get("answer_start")
                    if text is None or start is None:
                        raise SquadDataError(
                            f"{source}: question {qid}: an answer lacks text "
                            "or answer_start"
                        )
                    _check_answer(source, qid, context, text, start, misaligned)
                    answers.append((text, start))
                answer_count += len(answers)
                if impossible and answers:
                    raise SquadDataError(
                        f"{source}: question {qid} is marked unanswerable but "
                        "has answers"
                    )
                if not impossible and not answers:
                    raise SquadDataError(f"{source}: question {qid} has no answer")
                examples.append(
                    SquadExample(
                        str(qid),
                        qa["question"],
                        context,
                        tuple(answers),
                        impossible,
                        title,
                    )
                )
    _check_misaligned(source, misaligned, answer_count)
    if not examples:
        raise SquadDataError(f"{source}: no questions")
    return examples


def read_squad_json(path: str, version: int) -> list[SquadExample]:
    """Reads an official SQuAD JSON file (local or any `tf.io.gfile` path)."""
    try:
        data = json.loads(read_text(path, SquadDataError))
    except json.JSONDecodeError as error:
        raise SquadDataError(f"{path} is not JSON: {error}") from None
    return examples_from_json(data, version, source=path)


def golds(examples: Iterable[SquadExample]) -> dict[str, list[str]]:
    """Question id -> gold answer texts, what `squad_metrics` scores against."""
    return {example.qid: example.answer_texts for example in examples}


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def examples_from_tfds(
    records: Iterable[Mapping], version: int, source: str = "tfds"
) -> list[SquadExample]:
    """Converts tensorflow-datasets `squad/v1.1` or `squad/v2.0` records (one
    question each, as `tfds.as_numpy` yields it) into one-question articles of
    the official layout, read and checked by `examples_from_json`."""
    articles = []
    for record in records:
        qid = _text(record["id"])
        texts, starts = record["answers"]["text"], record["answers"]["answer_start"]
        if len(texts) != len(starts):
            raise SquadDataError(f"{source}: question {qid}: answers are misaligned")
        question = {
            "id": qid,
            "question": _text(record["question"]),
            "answers": [
                {"text": _text(text), "answer_start": int(start)}
                for text, start in zip(texts, starts)
            ],
            "is_impossible": version == 2 and bool(record.get("is_impossible")),
        }
        paragraph = {"context": _text(record["context"]), "qas": [question]}
        title = _text(record.get("title", b""))
        articles.append({"title": title, "paragraphs": [paragraph]})
    return examples_from_json({"data": articles}, version, source=source)


def load_tfds_squad(
    version: int, split: str, data_dir: str | None = None
) -> list[SquadExample]:
    """`split` ("train" or "dev") of tensorflow-datasets' `squad/v1.1` or `v2.0`.

    tfds downloads and prepares it on first use (into `data_dir`, or its
    default `~/tensorflow_datasets`).
    """
    name = f"squad/{version_suffix(version)}"
    tfds_split = {"train": "train", "dev": "validation"}.get(split, split)
    records, _ = load_tfds(name, tfds_split, data_dir, SquadDataError)
    return examples_from_tfds(records, version, source=f"tfds {name}:{tfds_split}")


def load_squad_split(
    version: int, split: str, data_dir: str | None = None, use_tfds: bool = False
) -> list[SquadExample]:
    """A split from `<data_dir>/<split>-v1.1.json` (or v2.0), or from tfds."""
    if use_tfds:
        return load_tfds_squad(version, split, data_dir)
    if not data_dir:
        raise SquadDataError(
            f"squad{version} needs --data-dir (holding {split}-"
            f"{version_suffix(version)}.json) or --tfds"
        )
    return read_squad_json(squad_split_path(data_dir, version, split), version)


def write_predictions_json(path: str, predictions: Mapping[str, str]) -> str:
    """`{question id: answer text}`, the official scripts' prediction file
    ("" is "no answer" in 2.0)."""
    return write_json(path, {str(k): str(v) for k, v in predictions.items()})


def write_null_odds_json(path: str, na_scores: Mapping[str, float]) -> str:
    """`{question id: no-answer score}`, the official 2.0 script's `--na-prob-file`."""
    return write_json(path, {str(k): float(v) for k, v in na_scores.items()})
