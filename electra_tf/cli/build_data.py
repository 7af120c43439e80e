"""Build pre-training TFRecords from raw text.

Input: text files (plain or .gz; local or gs://; files, directories or globs),
one sentence per line, a blank line between documents; or tensorflow-datasets
datasets (tfds:<name>[/<config>][:<split>]), one example per document.
Output, in --output-dir: `train-NNNNN-of-NNNNN.tfrecord` and `eval-...` shards
(int64 features input_ids, input_mask, segment_ids of length --max-seq-length;
whole documents held out for eval), `vocab.txt` and `stats.json`.

The output is byte-identical for the same inputs and flags, whatever --processes
is. A non-empty --output-dir is refused unless --overwrite, which replaces only the
files of a previous build (shards, vocab.txt, stats.json); nothing else is deleted.

Examples:
  python pretrain/build_data.py --input my_corpus/ --output-dir data/mine128
  python pretrain/build_data.py --input 'wiki/*.txt.gz' --input books.txt \\
      --output-dir data/wiki512 --max-seq-length 512 --num-shards 256 \\
      --num-hosts 4 --processes 8
  python pretrain/build_data.py --input corpus/ --learn-vocab-size 30000 \\
      --output-dir data/new_language
  python pretrain/build_data.py --input tfds:imdb_reviews/plain_text:unsupervised \\
      --output-dir data/imdb128
"""

from __future__ import annotations

import argparse
import sys

from electra_tf.cli import command_line, load_library


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="build_data.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # A table of flags, one call each: kept as written.
    # fmt: off
    add = parser.add_argument_group("input").add_argument
    add("--input", action="append", metavar="PATH",
        help="Text file, directory (all files below it) or glob, or a "
        "tensorflow-datasets dataset as tfds:<name>[/<config>][:<split>] "
        "(e.g. tfds:imdb_reviews/plain_text:unsupervised; one example = one "
        "document, its lines the sentences; downloaded and prepared by tfds "
        "on first use); repeatable.")
    add("--tfds-text-field", metavar="FEATURE", help="The feature tfds: inputs "
        "read their text from. Default: the dataset's one text feature (or "
        "the one named 'text').")
    vocab = parser.add_argument_group("vocabulary")
    choice = vocab.add_mutually_exclusive_group()
    choice.add_argument("--vocab", metavar="PATH", help="vocab.txt to tokenise "
        "with. Default: the bundled BERT uncased vocabulary (30,522 tokens), as "
        "the released ELECTRA models use.")
    choice.add_argument("--learn-vocab-size", type=int, metavar="N", help="Instead, "
        "learn a WordPiece vocabulary of at most N tokens from the input "
        "(keras-hub's learner; [PAD]=0 and the special tokens first).")
    vocab.add_argument("--no-lowercase", action="store_true",
        help="Keep case (for cased vocabularies).")
    vocab.add_argument("--no-strip-accents", action="store_true", help="Keep accents.")
    add = parser.add_argument_group("output").add_argument
    add("--output-dir", required=True, metavar="DIR",
        help="Where the shards, vocab.txt and stats.json go (created if missing).")
    add("--max-seq-length", type=int, default=128, metavar="L", help="Default: 128.")
    add("--num-shards", type=int, metavar="N", default=8,
        help="Training shards; a multiple of --num-hosts. Default: 8.")
    add("--num-eval-shards", type=int, metavar="N",
        help="Held-out shards; a multiple of --num-hosts. Default: --num-hosts.")
    add("--num-hosts", type=int, metavar="N", default=1, help="Hosts that will "
        "read the data, each a disjoint subset of the shards. Default: 1.")
    add("--eval-fraction", type=float, metavar="F", default=0.02,
        help="Share of documents held out for evaluation. Default: 0.02.")
    add("--overwrite", action="store_true",
        help="Allow a non-empty --output-dir (replaces a previous build's files).")
    add = parser.add_argument_group("run").add_argument
    add("--seed", type=int, default=0, metavar="N", help="Default: 0.")
    add("--processes", type=int, metavar="N", default=1, help="Worker processes "
        "(each loads TensorFlow: worth it for corpora of more than ~10 MB). "
        "Default: 1.")
    add("--no-progress", action="store_true", help="No progress bar.")
    # fmt: on
    return parser.parse_args(argv)


@command_line(parse_args)
def main(args) -> int:
    options = vars(args)
    options["inputs"] = options.pop("input") or ()
    options["num_processes"] = options.pop("processes")
    for name in ("lowercase", "strip_accents", "progress"):
        options[name] = not options.pop(f"no_{name}")
    preparation = load_library("electra_tf.data.preparation")
    stats = preparation.build_corpus_data(**options)
    print(
        f"{stats['train_examples']:,} train and {stats['eval_examples']:,} eval "
        f"examples of length {stats['max_seq_length']} from "
        f"{stats['documents']:,} documents ({stats['tokens']:,} tokens, "
        f"{stats['unknown_token_rate']:.2%} [UNK], "
        f"{stats['padding_fraction']:.1%} padding) in {args.output_dir}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
