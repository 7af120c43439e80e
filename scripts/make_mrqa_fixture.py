"""Writes tests/fixtures/mrqa/train.jsonl.gz and dev.jsonl.gz, the MRQA 2019 layout.

Where the text comes from, all of it shipped with the project:

* the answerable questions of the SQuAD-layout fixture
  (`tests/fixtures/squad/{train,dev}-v1.1.json`, questions written by hand
  for sentences of the bundled corpora; `scripts/make_squad_fixture.py`),
  one MRQA line per paragraph;
* a long news-like context, NewsQA-style: 36 consecutive lines of the
  bundled Brown corpus (`electra_tf/assets/corpus/brown.txt.gz`, the Fulton
  County article), about 900 WordPiece tokens, so that its answers fall in
  different windows; its questions and answers are written below;
* a SearchQA-style context: snippets of the bundled Python documentation
  (`pydoc.txt.gz`), each as `[DOC] [TLE] <title> [PAR] <snippet>`, the titles
  written below; its answers are given in lower case, as SearchQA's are, so
  their spans differ from their text in case only.

Each question's `answers` are its gold texts (several where the span is
ambiguous); `detected_answers` give each distinct answer with every
occurrence in the context (case-insensitive, whole words), in context order,
as MRQA's do: `char_spans` `[start, end]` with the end inclusive,
`token_spans` over whitespace tokens (`context_tokens`: `[token, offset]`).
Written with gzip's mtime 0, so the files are the same on every run.

    python -m scripts.make_mrqa_fixture     (from the repository's root)
"""

from __future__ import annotations

import gzip
import json
import pathlib
import re

REPO = pathlib.Path(__file__).resolve().parents[1]
CORPUS = REPO / "electra_tf" / "assets" / "corpus"
SQUAD = REPO / "tests" / "fixtures" / "squad"
OUT = REPO / "tests" / "fixtures" / "mrqa"
DATASET = "CorpusFixture"

# (qid, split, question, answers): the long context's questions.
LONG_QUESTIONS = [
    ("long_00", "train", "What should be combined?", ["these two offices"]),
    (
        "long_01",
        "train",
        "What is the City Purchasing Department lacking in?",
        ["experienced clerical personnel"],
    ),
    ("long_02", "train", "What did his petition charge?", ["mental cruelty"]),
    ("long_03", "train", "When was the couple married?", ["Aug. 2, 1913"]),
    (
        "long_04",
        "train",
        "Who was listed as the mayor's attorney?",
        ["Henry L. Bowden"],
    ),
    (
        "long_05",
        "train",
        "How many additional deputies should the jail employ?",
        ["Four"],
    ),
    (
        "long_06",
        "train",
        "Who filed suit for divorce?",
        ["Mayor William B. Hartsfield", "William B. Hartsfield"],
    ),
    ("long_07", "dev", "How old was the mayor?", ["71"]),
    (
        "long_08",
        "dev",
        "Where was the mayor's wife born?",
        ["Opelika, Ala.", "Opelika"],
    ),
    (
        "long_09",
        "dev",
        "What was the name of the mayor's wife?",
        ["Pearl Williams Hartsfield"],
    ),
    (
        "long_10",
        "dev",
        "What is the name of the couple's son?",
        ["William Berry Jr.", "William Berry Jr"],
    ),
]

# (title, first words of a pydoc line): the SearchQA-style snippets.
SNIPPETS = [
    ("Sphinx documentation generator", "These documents are generated from"),
    ("About the documentation", "Development of the documentation and its"),
    ("Python contributors", "Many people have contributed to the Python"),
]
SEARCH_QUESTIONS = [
    (
        "search_00",
        "train",
        "This document processor was written for the Python documentation",
        ["sphinx"],
    ),
    (
        "search_01",
        "train",
        "The documentation's development is this kind of effort, like Python itself",
        ["volunteer", "an entirely volunteer effort"],
    ),
    (
        "search_02",
        "dev",
        "Misc/ACKS lists some of these people",
        ["contributors", "python contributors"],
    ),
]


def corpus_lines(name: str) -> list[str]:
    with gzip.open(CORPUS / name, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def long_context() -> str:
    lines = corpus_lines("brown.txt.gz")
    first = next(
        i
        for i, line in enumerate(lines)
        if line.startswith("The Fulton County Grand Jury said Friday")
    )
    return " ".join(lines[first + 5 : first + 41])


def search_context() -> str:
    lines = corpus_lines("pydoc.txt.gz")
    snippets = []
    for title, first in SNIPPETS:
        line = next(line for line in lines if line.startswith(first))
        snippets.append(f"[DOC] [TLE] {title} [PAR] {line}")
    return " ".join(snippets)


def tokens(text: str) -> list[tuple[str, int]]:
    """Whitespace tokens with their character offsets, MRQA's `[token, offset]`."""
    return [(m.group(), m.start()) for m in re.finditer(r"\S+", text)]


def detected(context: str, answers: list[str]) -> list[dict]:
    """Each distinct answer with every whole-word occurrence in `context`."""
    words = tokens(context)
    found = []
    for text in dict.fromkeys(answers):
        pattern = r"(?<![A-Za-z0-9])" + re.escape(text) + r"(?![A-Za-z0-9])"
        spans = [[m.start(), m.end() - 1] for m in re.finditer(pattern, context, re.I)]
        if not spans:
            continue
        token_spans = [
            [
                next(i for i, (w, o) in enumerate(words) if o + len(w) > start),
                max(i for i, (_, o) in enumerate(words) if o <= end),
            ]
            for start, end in spans
        ]
        found.append({"text": text, "char_spans": spans, "token_spans": token_spans})
    if not found:
        raise ValueError(f"none of {answers} is in the context")
    return found


def qa(qid: str, question: str, context: str, answers: list[str]) -> dict:
    return {
        "qid": qid,
        "question": question,
        "question_tokens": tokens(question),
        "answers": answers,
        "detected_answers": detected(context, answers),
    }


def context_line(context: str, qas: list[dict]) -> dict:
    return {"context": context, "context_tokens": tokens(context), "qas": qas}


def build() -> dict[str, list[dict]]:
    splits = {}
    for split in ("train", "dev"):
        lines = []
        squad = json.loads((SQUAD / f"{split}-v1.1.json").read_text(encoding="utf-8"))
        for article in squad["data"]:
            for paragraph in article["paragraphs"]:
                context = paragraph["context"]
                qas = [
                    qa(
                        q["id"],
                        q["question"],
                        context,
                        [a["text"] for a in q["answers"]],
                    )
                    for q in paragraph["qas"]
                ]
                lines.append(context_line(context, qas))
        for context, questions in (
            (long_context(), LONG_QUESTIONS),
            (search_context(), SEARCH_QUESTIONS),
        ):
            qas = [
                qa(qid, question, context, answers)
                for qid, where, question, answers in questions
                if where == split
            ]
            lines.append(context_line(context, qas))
        splits[split] = lines
    return splits


def write(path: pathlib.Path, split: str, lines: list[dict]) -> None:
    header = {"header": {"dataset": DATASET, "split": split}}
    text = "".join(
        json.dumps(row, ensure_ascii=False) + "\n" for row in [header, *lines]
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))


def main():
    for split, lines in build().items():
        write(OUT / f"{split}.jsonl.gz", split, lines)
        questions = sum(len(line["qas"]) for line in lines)
        print(f"{split}: {len(lines)} contexts, {questions} questions")


if __name__ == "__main__":
    main()
