"""Makes the bundled demo corpus, electra_tf/assets/corpus/, from ../shared/data/corpus.

Run once from the repository root; kept for provenance (electra_tf/assets/README.md):

    python scripts/make_demo_corpus.py --shared ../shared/data/corpus

From each source it keeps every k-th whole document, k the smallest stride that
fits the byte budget, so the excerpt spans the whole source (all of the Brown
Corpus' genres, all parts of the Python manual) rather than its first pages. The
format is kept: one sentence per line, a blank line between documents. The output
is reproducible: same sources, same bytes (gzip without a timestamp). gcide (GPL)
is not used.
"""

import argparse
import gzip
import math
import pathlib

# Uncompressed bytes per source; the demo corpus stays under 3 MB of text.
BUDGETS = {"brown.txt.gz": 1_200_000, "pydoc.txt.gz": 800_000}


def excerpt(text: str, budget: int) -> list[str]:
    """Evenly spaced whole documents of `text`, at most `budget` bytes in all."""
    documents = [d.strip("\n") for d in text.split("\n\n") if d.strip()]
    total = sum(len(d.encode()) + 2 for d in documents)
    stride = max(1, math.ceil(total / budget))
    kept = documents[::stride]
    while sum(len(d.encode()) + 2 for d in kept) > budget:
        kept.pop()
    return kept


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared/data/corpus")
    parser.add_argument("--output", default="electra_tf/assets/corpus")
    args = parser.parse_args()
    output = pathlib.Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    for name, budget in BUDGETS.items():
        source = pathlib.Path(args.shared) / name
        documents = excerpt(gzip.decompress(source.read_bytes()).decode(), budget)
        text = "\n\n".join(documents) + "\n"
        (output / name).write_bytes(gzip.compress(text.encode(), mtime=0))
        sentences = sum(len(document.split("\n")) for document in documents)
        print(
            f"{name}: {len(documents)} documents, {sentences} lines, "
            f"{len(text.encode()):,} bytes ({(output / name).stat().st_size:,} gzipped)"
        )


if __name__ == "__main__":
    main()
