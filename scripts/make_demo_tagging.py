"""Makes electra_tf/assets/tasks/brown_pos/ from ../shared/data/tasks/brown_pos.

The tagging demo's excerpt of the shared Brown POS task (universal tags,
CoNLL layout; see ../shared/data/README.md). The shared splits are split by
document, so that no document spans two of them; each split here is cut from
the same split there, as `RUNS` contiguous runs of whole sentences that start
at evenly spaced sentences of the file (the files are in the corpus' order,
genre by genre, so the runs cover its genres). A training run holds a fixed
number of sentences; a dev or test run grows by whole sentences until it has
its share of the split's words. Deterministic: rerunning it gives the same
bytes.

    python scripts/make_demo_tagging.py --shared ../shared/data/tasks/brown_pos
"""

import argparse
import pathlib

# Per split: (runs, sentences per run) for train, (runs, words) for dev and
# test. 2,000 training sentences; at least 6,000 words of dev and of test.
RUNS = {"train": (20, 100), "dev": (12, 6000), "test": (12, 6000)}


def read_sentences(path: pathlib.Path) -> list[list[str]]:
    """The sentences of a CoNLL file, each a list of its `word<TAB>tag` lines."""
    sentences, current = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            current.append(line)
        elif current:
            sentences.append(current)
            current = []
    if current:
        sentences.append(current)
    return sentences


def cut(sentences: list[list[str]], runs: int, size: int, words: bool) -> list[int]:
    """Indices of the sentences kept: `runs` runs starting at evenly spaced
    sentences, each of `size` sentences, or (`words`) of whole sentences up
    to at least `size / runs` words."""
    starts = [i * len(sentences) // runs for i in range(runs)]
    kept = []
    for start in starts:
        index, count = start, 0
        while count < (size / runs if words else size):
            kept.append(index)
            count += len(sentences[index]) if words else 1
            index += 1
    if len(set(kept)) != len(kept):
        raise SystemExit("runs overlap: fewer runs or shorter ones")
    return kept


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared/data/tasks/brown_pos")
    parser.add_argument("--output", default="electra_tf/assets/tasks/brown_pos")
    args = parser.parse_args()
    output = pathlib.Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    for split, (runs, size) in RUNS.items():
        sentences = read_sentences(pathlib.Path(args.shared) / f"{split}.conll")
        kept = cut(sentences, runs, size, words=split != "train")
        text = "".join("\n".join(sentences[i]) + "\n\n" for i in kept)
        (output / f"{split}.conll").write_text(text, encoding="utf-8")
        print(
            f"{split}: {len(kept)} of {len(sentences)} sentences, "
            f"{sum(len(sentences[i]) for i in kept)} words, {runs} runs"
        )


if __name__ == "__main__":
    main()
