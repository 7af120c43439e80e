"""Writes a task's training sentences, without labels, as pre-training text.

Task-adaptive pre-training (Gururangan et al., 2020): the unlabelled text of
the fine-tuning task's training split, added to the pre-training corpus. The
output is the corpus format `pretrain/build_data.py` reads: one sentence per
line, a blank line after every `--sentences-per-document` sentences. Each of
`--copies` copies shuffles the sentences anew (Python's `random`, seeded with
the copy's number) and so groups them into other documents; labels, dev and
test sentences are never written.

    python scripts/task_text_corpus.py \\
        --tsv ../shared/data/tasks/rt_polarity/train.tsv --copies 4 \\
        --output rt_corpus/rt_train_x4.txt
"""

import argparse
import csv
import pathlib
import random


def read_sentences(path: pathlib.Path, column: str) -> list[str]:
    """The column's values; a missing or unreadable file is one line naming it."""
    try:
        with path.open(encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            if column not in (reader.fieldnames or []):
                raise SystemExit(f"{path}: no column {column!r} ({reader.fieldnames})")
            return [row[column] for row in reader]
    except (OSError, UnicodeDecodeError) as error:
        raise SystemExit(f"{path}: cannot read it ({error})") from None


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tsv", required=True, type=pathlib.Path)
    parser.add_argument("--column", default="sentence")
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--sentences-per-document", type=int, default=20)
    parser.add_argument("--output", required=True, type=pathlib.Path)
    args = parser.parse_args(argv)
    sentences = read_sentences(args.tsv, args.column)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    per_document = args.sentences_per_document
    with args.output.open("w", encoding="utf-8") as f:
        for copy in range(args.copies):
            shuffled = sentences[:]
            random.Random(copy).shuffle(shuffled)
            for start in range(0, len(shuffled), per_document):
                f.write("\n".join(shuffled[start : start + per_document]) + "\n\n")
    print(f"{args.copies} x {len(sentences):,} sentences in {args.output}")


if __name__ == "__main__":
    main()
