"""Writes tests/fixtures/squad/{train,dev}-v1.1.json and -v2.0.json.

The paragraphs are sentences of the bundled corpora
(`electra_tf/assets/corpus/brown.txt.gz` and `pydoc.txt.gz`), joined with
spaces; the questions and answers below were written by hand for them. An
answer is given as its text and which occurrence of that text in the
paragraph it is (its character offset is computed, so it cannot be wrong).
Questions marked None are unanswerable from their paragraph: they go into
the v2.0 files only. Dev questions have several gold answers where the span
is fairly ambiguous, as SQuAD's dev set has.

    python -m scripts.make_squad_fixture     (from the repository's root)
"""

from __future__ import annotations

import gzip
import pathlib

from electra_tf.finetuning.files import write_json
from electra_tf.finetuning.squad_data import SquadExample


def write_squad_json(path: str, examples: list[SquadExample], version: int) -> str:
    """Writes examples in the official layout (one article per title,
    paragraphs in order of first appearance). Only this script writes SQuAD
    JSON, so the writer lives here rather than in the library."""
    articles: dict[str, dict[str, list]] = {}
    for example in examples:
        paragraphs = articles.setdefault(example.title, {})
        qa = {
            "id": example.qid,
            "question": example.question,
            "answers": [
                {"text": text, "answer_start": start} for text, start in example.answers
            ],
        }
        if version == 2:
            qa["is_impossible"] = example.is_impossible
        paragraphs.setdefault(example.context, []).append(qa)
    data = {
        "version": "2.0" if version == 2 else "1.1",
        "data": [
            {
                "title": title,
                "paragraphs": [
                    {"context": context, "qas": qas} for context, qas in paras.items()
                ],
            }
            for title, paras in articles.items()
        ],
    }
    return write_json(path, data)


REPO = pathlib.Path(__file__).resolve().parents[1]

CORPUS = REPO / "electra_tf" / "assets" / "corpus"
OUT = REPO / "tests" / "fixtures" / "squad"


def sentences(name: str, first: str, count: int) -> str:
    """`count` corpus lines starting at the one that begins with `first`."""
    with gzip.open(CORPUS / name, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    return " ".join(lines[start : start + count])


# (title, corpus, first words, number of lines, [(split, question, answers)]),
# answers: a list of texts (each its first occurrence) or (text, occurrence)
# pairs; None for an unanswerable question.
PARAGRAPHS = [
    (
        "Fulton_County_Grand_Jury",
        "brown.txt.gz",
        "The Fulton County Grand Jury said Friday",
        5,
        [
            ("train", "What did the investigation produce?", ["no evidence"]),
            ("train", "Which county's grand jury made the statement?", ["Fulton"]),
            ("train", "On what day did the grand jury speak?", ["Friday"]),
            ("train", "Who was the Superior Court judge?", ["Durwood Pye"]),
            ("train", "Who won the primary?", ["Mayor-nominate Ivan Allen Jr."]),
            (
                "train",
                "Which committee had charge of the election?",
                ["the City Executive Committee"],
            ),
            ("train", "How many voters took part in the primary?", None),
            (
                "dev",
                "Which judge charged the jury?",
                [
                    "Durwood Pye",
                    "Judge Durwood Pye",
                    "Fulton Superior Court Judge Durwood Pye",
                ],
            ),
            ("dev", "What kind of primary was it?", ["hard-fought"]),
            (
                "dev",
                "Whose registration and election laws were outmoded?",
                ["Georgia's", "Georgia"],
            ),
            ("dev", "What was the name of the losing candidate?", None),
        ],
    ),
    (
        "Chauffeur_Driven_Cars",
        "brown.txt.gz",
        "The fees for the rental of chauffeur-driven cars",
        5,
        [
            (
                "train",
                "How much will transportation cost per day per passenger?",
                ["$10.00"],
            ),
            ("train", "How far does an average day's drive go?", ["150 kilometers"]),
            ("train", "What language does the chauffeur speak?", ["English"]),
            (
                "train",
                "Which limousines are not recommended?",
                ["an Imperial or Cadillac limousine"],
            ),
            (
                "train",
                "What sweepstakes might one have won?",
                ["the Irish Sweepstakes"],
            ),
            ("train", "Which airline flies to Europe?", None),
            (
                "dev",
                "What does the expense average per passenger each day?",
                ["very close to $10.00", "$10.00", "close to $10.00 per day"],
            ),
            (
                "dev",
                "How many kilometers are driven on average in a day?",
                ["150", "150 kilometers"],
            ),
            (
                "dev",
                "What would one need to own to afford a limousine?",
                ["a producing oil well", "producing oil well"],
            ),
            ("dev", "How many passengers fit in a Cadillac?", None),
        ],
    ),
    (
        "Biplane",
        "brown.txt.gz",
        "Buffeted by swirling winds, the little green biplane",
        2,
        [
            ("train", "What color was the biplane?", ["green"]),
            ("train", "Which direction did the biplane fly?", ["northward"]),
            ("train", "In which month did the cold blast come?", ["November"]),
            ("train", "Where was the pilot sitting?", ["the open cockpit"]),
            ("train", "What was the pilot's name?", None),
            (
                "dev",
                "What was the biplane flying past?",
                ["the mountains beyond Northfield Gulf", "Northfield Gulf"],
            ),
            ("dev", "What color were the wings?", ["silver", "the silver wings"]),
            ("dev", "Where did the biplane land?", None),
        ],
    ),
    (
        "Value_Statements",
        "brown.txt.gz",
        "But before discussing it, I should like to record",
        8,
        [
            (
                "train",
                "Who wrote so clearly that he could be found out?",
                ["John Stuart Mill"],
            ),
            (
                "train",
                "Which statement would people most universally agree with?",
                ["intense pain is bad"],
            ),
            (
                "train",
                "What does the author offer the theorists a vote of?",
                ["thanks"],
            ),
            ("train", "What does the author want to work through?", ["an example"]),
            ("train", "In what year did Mill die?", None),
            ("dev", "What is nearly everyone agreed is bad?", ["intense pain", "pain"]),
            ("dev", "Which philosopher is mentioned?", ["John Stuart Mill", "Mill"]),
            (
                "dev",
                "What does the author say he will argue?",
                ["that we do mean to do just that", "we do mean to do just that"],
            ),
        ],
    ),
    (
        "Python_Documentation",
        "pydoc.txt.gz",
        "These documents are generated from reStructuredText_",
        4,
        [
            ("train", "What is the document processor called?", ["Sphinx_"]),
            (
                "train",
                "What are the documents generated from?",
                ["reStructuredText_ sources"],
            ),
            ("train", "Where is the partial list of contributors?", ["Misc/ACKS"]),
            ("train", "Who are always welcome?", ["New volunteers"]),
            ("train", "How many people wrote the documentation?", None),
            (
                "dev",
                "What kind of effort is the documentation's development?",
                ["an entirely volunteer effort", "volunteer"],
            ),
            (
                "dev",
                "Which page explains how to contribute?",
                ["the reporting-bugs page", "reporting-bugs"],
            ),
            ("dev", "Which file format does Sphinx write?", None),
        ],
    ),
]


def _locate(context, answer):
    text, occurrence = (answer, 1) if isinstance(answer, str) else answer
    start = -1
    for _ in range(occurrence):
        start = context.index(text, start + 1)
    return text, start


def build():
    splits = {"train": [], "dev": []}
    for title, corpus, first, count, questions in PARAGRAPHS:
        context = sentences(corpus, first, count)
        for number, (split, question, answers) in enumerate(questions):
            splits[split].append(
                SquadExample(
                    qid=f"{title.lower()}_{number:02d}",
                    question=question,
                    context=context,
                    answers=tuple(_locate(context, a) for a in answers or ()),
                    is_impossible=answers is None,
                    title=title,
                )
            )
    return splits


def main():
    splits = build()
    for split, examples in splits.items():
        write_squad_json(str(OUT / f"{split}-v2.0.json"), examples, version=2)
        answerable = [e for e in examples if not e.is_impossible]
        write_squad_json(str(OUT / f"{split}-v1.1.json"), answerable, version=1)
        print(f"{split}: {len(examples)} questions, {len(answerable)} answerable")


if __name__ == "__main__":
    main()
