"""The MRQA 2019 shared task's files (NewsQA, NaturalQuestions, TriviaQA,
SearchQA, HotpotQA, SQuAD, ...), read as `SquadExample`s.

The official layout is gzipped JSON Lines: a header line `{"header":
{"dataset": "NewsQA", "split": "train"}}`, then one context a line,
`{"context", "context_tokens", "qas": [{"qid", "question",
"question_tokens", "answers": [str], "detected_answers": [{"text",
"char_spans": [[start, end]], "token_spans"}]}]}`, where `char_spans` are
character (code point) offsets with the end inclusive. `read_mrqa_file`
reads it (gzipped or not, one line at a time); `load_tfds_mrqa`
tensorflow-datasets' `mrqa/<config>` (one record a question, the same fields).

Each question becomes one `SquadExample`, the type SQuAD's readers give, so
MRQA runs through the same task kind, windows, model and trainer:

* `answers` are every detected span, `(context[start:end + 1], start)`, in
  file order; training uses the first, as the original (`qa_tasks.py`:
  `detected_answers[0]["char_spans"][0]`). A span matches its text when the
  two agree ignoring case and runs of whitespace (MRQA found its spans that
  way); one that does not is kept with the detected text, so that training
  leaves its question out (`SquadExample.answer_is_aligned`), with a warning
  - or, when most spans do not match, the file is refused.
* `gold_texts` are the question's `answers`, what the official evaluation
  (`mrqa_official_eval.py`) scores against; its metric is SQuAD v1.1's
  (`squad_metrics.evaluate_v1`).
* The tokens MRQA gives (`context_tokens`, `question_tokens`, `token_spans`)
  are not read: the model's WordPiece tokenizer finds its own, with their
  character offsets (`ElectraQuestionAnswererPreprocessor`).

Contexts are the datasets' own text: SearchQA's snippets with their `[DOC]`,
`[TLE]` and `[PAR]` markers and NaturalQuestions' HTML tags (`<P>`,
`<Table>`) are ordinary text to the tokenizer (`[`, `doc`, `]`), as in the
original, never special tokens; long contexts (NewsQA, TriviaQA: thousands
of tokens) are cut into overlapping windows like SQuAD's.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping

from electra_tf.errors import FinetuningDataError
from electra_tf.finetuning.files import json_object, load_tfds, read_lines, shorten
from electra_tf.finetuning.squad_data import SquadExample

logger = logging.getLogger(__name__)

# tensorflow-datasets' `mrqa` configs with training and validation splits
# (the shared task's in-domain datasets); the others (bio_asq, drop, duo_rc,
# race, relation_extraction, textbook_qa) have a test split only.
TFDS_TRAINING_CONFIGS = (
    "squad",
    "news_qa",
    "trivia_qa",
    "search_qa",
    "hotpot_qa",
    "natural_questions",
)

# Their test split's only configs: out-of-domain data to test on
# (`--test-file tfds:mrqa/<config>`).
TFDS_TEST_CONFIGS = (
    "bio_asq",
    "drop",
    "duo_rc",
    "race",
    "relation_extraction",
    "textbook_qa",
)
# `--test-file tfds:mrqa/<config>`: a tensorflow-datasets split, not a file.
TFDS_PREFIX = "tfds:"


class MrqaDataError(FinetuningDataError):
    """MRQA data is missing or malformed."""


def _loose(text: str) -> str:
    """`text` lower-cased with runs of whitespace as one space: how a span
    is compared with its detected text."""
    return " ".join(text.split()).lower()


@dataclasses.dataclass
class _Reading:
    """What reading one split has found so far."""

    source: str
    training: bool
    dataset: str = ""
    spans: int = 0
    # (where, qid, start, end, text, context) of each span off its text.
    misaligned: list = dataclasses.field(default_factory=list)
    seen: dict = dataclasses.field(default_factory=dict)
    examples: list = dataclasses.field(default_factory=list)

    def fail(self, where: str, message: str):
        raise MrqaDataError(f"{self.source}, {where}: {message}")

    def add_context(self, where: str, paragraph: Mapping):
        """Every question of one context line (or tfds record)."""
        context, qas = paragraph.get("context"), paragraph.get("qas")
        if not isinstance(context, str) or not isinstance(qas, list):
            self.fail(
                where,
                "expected an MRQA context: an object with a 'context' string and "
                f"a 'qas' list; its keys: {sorted(paragraph)}",
            )
        if not context.strip():
            self.fail(where, "the context is empty")
        for qa in qas:
            if not isinstance(qa, Mapping):
                self.fail(where, f"a question is {shorten(qa)}, not an object")
            self.add_question(where, context, qa)

    def add_question(self, where: str, context: str, qa: Mapping):
        missing = [
            key
            for key in ("qid", "question", "answers", "detected_answers")
            if key not in qa
        ]
        if missing:
            self.fail(
                where, f"a question has no {missing[0]!r}; its keys: {sorted(qa)}"
            )
        qid, question = qa["qid"], qa["question"]
        if not isinstance(qid, str) or not qid:
            self.fail(where, f"qid {shorten(qid)} is not a non-empty string")
        if qid in self.seen:
            self.fail(
                where,
                f"question id {qid!r} occurs twice (first at {self.seen[qid]}); ids "
                "must be unique, answers are scored by id",
            )
        self.seen[qid] = where
        here = f"{where}, question {qid}"
        if not isinstance(question, str) or not question.strip():
            self.fail(
                here, f"the question {shorten(question)} is empty or not a string"
            )
        golds = qa["answers"]
        if not isinstance(golds, list) or not all(isinstance(a, str) for a in golds):
            self.fail(here, f"'answers' {shorten(golds)} is not a list of strings")
        if not self.training and not golds:
            self.fail(here, "'answers' is empty: nothing to score a prediction against")
        spans = self.spans_of(here, context, qa["detected_answers"])
        if self.training and not spans:
            self.fail(
                here,
                "no detected answer (a training question needs one: its first "
                "detected answer's first char_spans entry is the target)",
            )
        self.examples.append(
            SquadExample(
                qid,
                question,
                context,
                tuple(spans),
                title=self.dataset,
                gold_texts=tuple(golds),
            )
        )

    def spans_of(self, here: str, context: str, detected) -> list[tuple[str, int]]:
        """`(text, start)` of every span of `detected_answers`: the context's
        own text where it matches the detected text, else the detected text
        (recorded in `misaligned`)."""
        if not isinstance(detected, list):
            self.fail(here, f"'detected_answers' {shorten(detected)} is not a list")
        spans = []
        for answer in detected:
            text = answer.get("text") if isinstance(answer, Mapping) else None
            char_spans = answer.get("char_spans") if text is not None else None
            if not isinstance(text, str) or not isinstance(char_spans, list):
                self.fail(
                    here,
                    f"a detected answer {shorten(answer)} is not an object with a "
                    "'text' string and a 'char_spans' list",
                )
            for span in char_spans:
                spans.append(self.span(here, context, text, span))
        return spans

    def span(self, here: str, context: str, text: str, span) -> tuple[str, int]:
        if (
            not isinstance(span, (list, tuple))
            or len(span) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in span)
        ):
            self.fail(
                here,
                f"char_spans entry {shorten(span)} for {text!r} is not a pair of "
                "integers [start, end]",
            )
        start, end = span
        if not 0 <= start <= end < len(context):
            self.fail(
                here,
                f"char_spans [{start}, {end}] for {text!r} is outside its context of "
                f"{len(context)} characters (or ends before it starts; MRQA's ends "
                "are inclusive)",
            )
        self.spans += 1
        found = context[start : end + 1]
        if _loose(found) == _loose(text):
            return found, start
        self.misaligned.append((here, start, end, text, context))
        return text, start

    def finish(self) -> list[SquadExample]:
        """The examples, once the span check (`check_misaligned`) passes."""
        if not self.examples:
            raise MrqaDataError(f"{self.source}: no questions")
        self.check_misaligned()
        return self.examples

    def check_misaligned(self):
        """Refuses a split whose spans mostly do not hold their text; warns
        about a few (their questions are not trained on)."""
        if not self.misaligned:
            return
        here, start, end, text, context = self.misaligned[0]
        first = (
            f"{here}: char_spans [{start}, {end}] reads "
            f"{context[start : end + 1]!r}, not the answer {text!r}"
        )
        if 2 * len(self.misaligned) <= self.spans:
            logger.warning(
                "%s: %d of %d detected answer spans do not hold their text (first: "
                "%s); a question whose first span is one of them is not trained on",
                self.source,
                len(self.misaligned),
                self.spans,
                first,
            )
            return
        exclusive = sum(
            _loose(c[s:e]) == _loose(t) for _, s, e, t, c in self.misaligned
        )
        cause = (
            "their ends look exclusive; MRQA's char_spans end on the answer's last "
            "character"
            if 2 * exclusive >= len(self.misaligned)
            else "char_spans must be 0-based character offsets of the answer in its "
            "context, the end inclusive"
        )
        raise MrqaDataError(
            f"{self.source}: {len(self.misaligned)} of {self.spans} detected answer "
            f"spans do not hold their text (first: {first}); {cause}"
        )


def read_mrqa_file(path: str, training: bool) -> list[SquadExample]:
    """The questions of an official MRQA file (`NewsQA.jsonl.gz`, gzipped or
    not; local or any `tf.io.gfile` path), one line at a time.

    Args:
        training: a training split: every question needs a detected answer
            (its target); else (dev) every question needs `answers`.
    """
    reading = _Reading(path, training)
    header = False
    for number, line in read_lines(path, MrqaDataError):
        if not line.strip():
            continue
        row = json_object(path, number, line, MrqaDataError)
        where = f"line {number}"
        if not header:
            fields = row.get("header")
            if not isinstance(fields, Mapping) or not isinstance(
                fields.get("dataset"), str
            ):
                reading.fail(
                    where,
                    'no MRQA header (a first line {"header": {"dataset": ..., '
                    f'"split": ...}}}}); the line has {sorted(row)}',
                )
            header, reading.dataset = True, fields["dataset"]
            continue
        if "header" in row:
            reading.fail(where, "a second header line")
        reading.add_context(where, row)
    if not header:
        raise MrqaDataError(f"{path}: empty (no MRQA header, no questions)")
    return reading.finish()


def _text(value) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _rows(value) -> list[list[int]]:
    """A [answers, (spans)] field of a tfds record as lists (tfds gives a
    ragged value, or a 2-D array when every row has the same length)."""
    if hasattr(value, "to_list"):
        return value.to_list()
    return [[int(v) for v in row] for row in value]


def examples_from_tfds(
    records: Iterable[Mapping], training: bool, source: str = "tfds"
) -> list[SquadExample]:
    """tensorflow-datasets `mrqa/<config>` records (one question each, as
    `tfds.as_numpy` yields them) read and checked as the file's lines are."""
    reading = _Reading(source, training)
    for index, record in enumerate(records):
        reading.dataset = _text(record.get("subset", b""))
        detected = record["detected_answers"]
        starts = _rows(detected["char_spans"]["start"])
        ends = _rows(detected["char_spans"]["end"])
        question = {
            "qid": _text(record["qid"]),
            "question": _text(record["question"]),
            "answers": [_text(a) for a in record["answers"]],
            "detected_answers": [
                {"text": _text(text), "char_spans": [list(p) for p in zip(s, e)]}
                for text, s, e in zip(detected["text"], starts, ends)
            ],
        }
        context = {"context": _text(record["context"]), "qas": [question]}
        reading.add_context(f"record {index}", context)
    return reading.finish()


def load_tfds_mrqa(
    config: str, split: str, data_dir: str | None = None
) -> list[SquadExample]:
    """`split` ("train", "dev" or "test") of tensorflow-datasets' `mrqa/<config>`.

    tfds downloads and prepares it on first use (into `data_dir`, or its
    default `~/tensorflow_datasets`). Only the configs with a training split
    (`TFDS_TRAINING_CONFIGS`) can be fine-tuned on; "test" is any config's
    held-out split: the test split of `TFDS_TEST_CONFIGS`, the validation
    split of the others.
    """
    name = f"mrqa/{config}"
    if split == "test":
        if config not in TFDS_TRAINING_CONFIGS + TFDS_TEST_CONFIGS:
            raise MrqaDataError(
                f"{name} is not a tensorflow-datasets MRQA dataset; those are: "
                f"{', '.join(TFDS_TRAINING_CONFIGS + TFDS_TEST_CONFIGS)}"
            )
        tfds_split = "test" if config in TFDS_TEST_CONFIGS else "validation"
        records, _ = load_tfds(name, tfds_split, data_dir, MrqaDataError)
        return examples_from_tfds(
            records, training=False, source=f"tfds {name}:{tfds_split}"
        )
    if config not in TFDS_TRAINING_CONFIGS:
        raise MrqaDataError(
            f"{name} is not a tensorflow-datasets MRQA dataset with a "
            f"training split; those are: {', '.join(TFDS_TRAINING_CONFIGS)}; "
            f"the test-only ones ({', '.join(TFDS_TEST_CONFIGS)}) are read as "
            f"--test-file tfds:mrqa/<config>"
        )
    tfds_split = {"train": "train", "dev": "validation"}.get(split, split)
    records, _ = load_tfds(name, tfds_split, data_dir, MrqaDataError)
    return examples_from_tfds(
        records, training=split == "train", source=f"tfds {name}:{tfds_split}"
    )
