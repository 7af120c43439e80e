"""Makes electra_tf/assets/corpus/ from ../shared/data/corpus.

Run once; kept for provenance.

Takes whole documents from the start of the Brown Corpus and of the Python 3.11
manual until each reaches its byte budget, keeping the one-sentence-per-line,
blank-line-between-documents format. gcide (GPL) is not used.

    python scripts/make_demo_corpus.py --shared ../shared/data/corpus
"""

import argparse
import gzip
import pathlib

BUDGETS = {"brown.txt.gz": 1_200_000, "pydoc.txt.gz": 800_000}


def excerpt(path: pathlib.Path, budget: int) -> str:
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    kept, size = [], 0
    for document in text.split("\n\n"):
        document = document.strip("\n")
        if not document:
            continue
        if size + len(document.encode()) > budget:
            break
        kept.append(document)
        size += len(document.encode()) + 2
    return "\n\n".join(kept) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared/data/corpus")
    parser.add_argument("--output", default="electra_tf/assets/corpus")
    args = parser.parse_args()
    output = pathlib.Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    for name, budget in BUDGETS.items():
        text = excerpt(pathlib.Path(args.shared) / name, budget)
        (output / name).write_bytes(gzip.compress(text.encode("utf-8"), mtime=0))
        print(name, len(text.encode()), "bytes,", text.count("\n\n") + 1, "documents")


if __name__ == "__main__":
    main()
