"""A bag-of-words reference for a sentence task in SST-2 layout: how far
words and word pairs alone get, beside the encoders of the paper's
experiments.

TF-IDF over unigrams and bigrams (sublinear term frequency, words seen at
least twice in training) and a logistic regression, its inverse
regularisation `C` chosen on dev from `--c-grid`, then test scored once with
the chosen `C`: the study's protocol, selection on dev and the figure on
test. Deterministic (the lbfgs solver), so one run is the figure.

With `--vocab` the features are the WordPiece pieces the encoders read (the
same tokenizer, `Vocabulary.tokenizer`) and their pairs, cut to the first
`--max-pieces` as fine-tuning cuts them: whether what the transformers lose
against words is lost in the pieces and the cut, or in the model.

    python -m bench.tasks.linear_baseline --task-dir data/sotu_party \\
        --output bench/results/linear_baseline_sotu_party.json
"""

from __future__ import annotations

import argparse
import dataclasses
import pathlib
import sys

from bench.result_file import write_result
from bench.run_info import run_info


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--task-dir",
        required=True,
        help="train.tsv, dev.tsv and a labelled test.tsv (sentence<TAB>label).",
    )
    parser.add_argument("--c-grid", default="0.25,0.5,1,2,4,8")
    parser.add_argument(
        "--vocab", help="Features from this WordPiece vocabulary's pieces, not words."
    )
    parser.add_argument(
        "--max-pieces",
        type=int,
        default=0,
        help="With --vocab: keep each sentence's first N pieces (default 0: all; "
        "the study's length 64 keeps 62).",
    )
    parser.add_argument("--output", required=True, help="The result JSON.")
    return parser.parse_args(argv)


def read_split(task_dir: pathlib.Path, split: str) -> tuple[list[str], list[int]]:
    """`split`'s sentences and labels, read as the study reads them
    (`read_glue_tsv`, SST-2's layout with a labelled test.tsv)."""
    from electra_tf.errors import ElectraError
    from electra_tf.finetuning.glue_readers import read_glue_tsv
    from electra_tf.finetuning.glue_tasks import get_task

    task = dataclasses.replace(get_task("sst2"), test_splits=())
    try:
        examples = read_glue_tsv(task, split, str(task_dir))
    except ElectraError as error:
        raise SystemExit(f"error: {error}") from None
    return list(examples.texts[0]), examples.labels.tolist()


def as_pieces(texts: list[str], vocab: str, max_pieces: int) -> list[str]:
    """Each text as its WordPiece ids, space-separated, the first
    `max_pieces` of them (all if 0)."""
    from electra_tf.data.vocabulary import Vocabulary

    # Given a Python list, keras-hub's tokenizer returns lists of ids.
    ids = Vocabulary.from_file(vocab).tokenizer().tokenize(texts)
    return [" ".join(map(str, row[: max_pieces or None])) for row in ids]


def run(args) -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    task_dir = pathlib.Path(args.task_dir)
    grid = [float(c) for c in args.c_grid.split(",")]
    (train, y_train), (dev, y_dev) = (read_split(task_dir, s) for s in ("train", "dev"))
    features = {"ngram_range": (1, 2), "min_df": 2, "sublinear_tf": True}
    if args.vocab:
        # Pieces as they are: no lower-casing or word pattern of sklearn's.
        features.update(lowercase=False, token_pattern=r"\S+")
        train, dev = (as_pieces(t, args.vocab, args.max_pieces) for t in (train, dev))
    words = TfidfVectorizer(**features)
    x_train = words.fit_transform(train)
    x_dev = words.transform(dev)
    models, dev_scores = {}, {}
    for c in grid:
        models[c] = LogisticRegression(C=c, max_iter=5000).fit(x_train, y_train)
        dev_scores[c] = float(models[c].score(x_dev, y_dev))
    chosen = max(grid, key=lambda c: dev_scores[c])  # the first of a tie
    # Test is read only now, once C is chosen.
    test, y_test = read_split(task_dir, "test")
    if args.vocab:
        test = as_pieces(test, args.vocab, args.max_pieces)
    return {
        **run_info(__file__),
        "task_dir": str(task_dir),
        "features": "words" if not args.vocab else "pieces",
        "vocab": args.vocab,
        "max_pieces": args.max_pieces,
        "examples": {"train": len(train), "dev": len(dev), "test": len(test)},
        "feature_count": len(words.vocabulary_),
        "dev_accuracy_by_c": {str(c): s for c, s in dev_scores.items()},
        "chosen_c": chosen,
        "dev_accuracy": dev_scores[chosen],
        "test_accuracy": float(models[chosen].score(words.transform(test), y_test)),
        "test_majority_share": max(sum(y_test), len(y_test) - sum(y_test))
        / len(y_test),
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    result = run(args)
    write_result(args.output, result)
    print(
        f"{args.task_dir}: C={result['chosen_c']:g} chosen on dev "
        f"({result['dev_accuracy']:.4f}); test accuracy {result['test_accuracy']:.4f} "
        f"(majority class {result['test_majority_share']:.4f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
