"""Build pre-training TFRecords from raw text.

Input: text files (plain or .gz; local or gs://; files, directories or globs),
one sentence per line, a blank line between documents. Output, in --output-dir:
`train-NNNNN-of-NNNNN.tfrecord` and `eval-...` shards (int64 features input_ids,
input_mask, segment_ids of length --max-seq-length; whole documents held out for
eval), `vocab.txt` and `stats.json`.

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
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import tempfile

PACKAGE = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="build_data.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    source = parser.add_argument_group("input")
    source.add_argument(
        "--input",
        action="append",
        metavar="PATH",
        help="Text file, directory (all files below it) or glob; repeatable.",
    )
    source.add_argument(
        "--tfds-dataset",
        metavar="NAME",
        help="Also read a tensorflow-datasets text dataset, e.g. "
        "'wikipedia/20230601.en' (one record = one document; its lines are the "
        "sentences). Needs network access or a prepared TFDS data dir.",
    )
    source.add_argument(
        "--tfds-split", default="train", metavar="SPLIT", help="Default: train."
    )
    source.add_argument(
        "--tfds-text-key",
        default="text",
        metavar="KEY",
        help="The dataset's feature holding the text. Default: text.",
    )
    vocab = parser.add_argument_group("vocabulary")
    choice = vocab.add_mutually_exclusive_group()
    choice.add_argument(
        "--vocab",
        metavar="PATH",
        help="vocab.txt to tokenise with. Default: the bundled BERT uncased "
        "vocabulary (30,522 tokens), as the released ELECTRA models use.",
    )
    choice.add_argument(
        "--learn-vocab-size",
        type=int,
        metavar="N",
        help="Instead, learn a WordPiece vocabulary of at most N tokens from the "
        "input (keras-hub's learner; [PAD]=0 and the special tokens first).",
    )
    vocab.add_argument(
        "--no-lowercase",
        action="store_true",
        help="Keep case (for cased vocabularies).",
    )
    vocab.add_argument("--no-strip-accents", action="store_true", help="Keep accents.")
    output = parser.add_argument_group("output")
    output.add_argument(
        "--output-dir",
        required=True,
        metavar="DIR",
        help="Where the shards, vocab.txt and stats.json go (created if missing).",
    )
    output.add_argument(
        "--max-seq-length", type=int, default=128, metavar="L", help="Default: 128."
    )
    output.add_argument(
        "--num-shards",
        type=int,
        metavar="N",
        default=8,
        help="Training shards; a multiple of --num-hosts. Default: 8.",
    )
    output.add_argument(
        "--num-eval-shards",
        type=int,
        metavar="N",
        help="Held-out shards; a multiple of --num-hosts. Default: --num-hosts.",
    )
    output.add_argument(
        "--num-hosts",
        type=int,
        metavar="N",
        default=1,
        help="Hosts that will read the data, each a disjoint subset of the "
        "shards. Default: 1.",
    )
    output.add_argument(
        "--eval-fraction",
        type=float,
        metavar="F",
        default=0.02,
        help="Share of documents held out for evaluation. Default: 0.02.",
    )
    output.add_argument(
        "--overwrite",
        action="store_true",
        help="Allow a non-empty --output-dir (replaces a previous build's files).",
    )
    run = parser.add_argument_group("run")
    run.add_argument("--seed", type=int, default=0, metavar="N", help="Default: 0.")
    run.add_argument(
        "--processes",
        type=int,
        metavar="N",
        default=1,
        help="Worker processes (each loads TensorFlow: worth it for corpora "
        "of more than ~10 MB). Default: 1.",
    )
    run.add_argument("--no-progress", action="store_true", help="No progress bar.")
    return parser.parse_args(argv)


def _check_hosts(args) -> None:
    from electra_tf.data.tfrecord_writer import BuildError

    if args.num_hosts < 1:
        raise BuildError(f"--num-hosts must be at least 1, got {args.num_hosts}")
    for flag, count in (
        ("--num-shards", args.num_shards),
        ("--num-eval-shards", args.num_eval_shards),
    ):
        if count % args.num_hosts:
            raise BuildError(
                f"{flag} {count} is not a multiple of --num-hosts {args.num_hosts}: "
                "hosts would read unequal shares"
            )


def _tfds_to_text(name: str, split: str, key: str, directory: str) -> str:
    """Writes a tensorflow-datasets text dataset as a corpus file; returns its path.

    Each record becomes a document; its non-blank lines, its sentences.
    """
    import tensorflow_datasets as tfds

    from electra_tf.data.tfrecord_writer import BuildError

    try:
        dataset = tfds.load(name, split=split)
    except Exception as error:  # tfds raises many types (network, unknown name)
        raise BuildError(f"cannot load tfds dataset {name!r}: {error}") from error
    if key not in dataset.element_spec:
        raise BuildError(
            f"tfds dataset {name!r} has no feature {key!r} "
            f"(it has {sorted(dataset.element_spec)}); pass --tfds-text-key"
        )
    path = os.path.join(directory, f"tfds-{name.replace('/', '_')}-{split}.txt")
    with open(path, "w", encoding="utf-8") as f:
        for record in tfds.as_numpy(dataset.map(lambda r: r[key])):
            text = record.decode("utf-8", errors="replace")
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            if lines:
                f.write("\n".join(lines) + "\n\n")
    return path


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.num_eval_shards is None:
        args.num_eval_shards = args.num_hosts
    # Imported after parsing, so that --help answers without loading TensorFlow.
    import tensorflow as tf

    from electra_tf.data.corpus import CorpusError
    from electra_tf.data.input_pipeline import DataError
    from electra_tf.data.tfrecord_writer import (
        BuildError,
        build_pretraining_data,
        check_output_dir,
    )
    from electra_tf.data.vocabulary import (
        BUNDLED_VOCABULARY,
        Vocabulary,
        VocabularyError,
        learn_vocabulary,
    )

    try:
        _check_hosts(args)
        # Fail before any slow step (downloading, learning a vocabulary).
        check_output_dir(args.output_dir, args.overwrite)
        inputs = list(args.input or [])
        if not inputs and not args.tfds_dataset:
            raise BuildError("give at least one --input (or --tfds-dataset)")
        # Intermediate files (tfds text, a learned vocabulary before the build
        # copies it) live outside --output-dir, which must stay empty until then.
        with tempfile.TemporaryDirectory(prefix="build_data-") as scratch:
            if args.tfds_dataset:
                inputs.append(
                    _tfds_to_text(
                        args.tfds_dataset, args.tfds_split, args.tfds_text_key, scratch
                    )
                )
            if args.learn_vocab_size is not None:
                vocabulary = learn_vocabulary(
                    inputs,
                    args.learn_vocab_size,
                    os.path.join(scratch, "vocab.txt"),
                    lowercase=not args.no_lowercase,
                    strip_accents=not args.no_strip_accents,
                )
            else:
                vocabulary = Vocabulary.from_file(args.vocab or BUNDLED_VOCABULARY)
            stats = build_pretraining_data(
                inputs,
                vocabulary,
                args.output_dir,
                max_seq_length=args.max_seq_length,
                num_shards=args.num_shards,
                num_eval_shards=args.num_eval_shards,
                eval_fraction=args.eval_fraction,
                lowercase=not args.no_lowercase,
                strip_accents=not args.no_strip_accents,
                seed=args.seed,
                num_processes=args.processes,
                overwrite=args.overwrite,
                progress=not args.no_progress,
            )
    except (BuildError, CorpusError, DataError, VocabularyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (OSError, tf.errors.OpError) as error:  # e.g. permission denied
        message = getattr(error, "message", None) or str(error)
        print(f"error: {message}", file=sys.stderr)
        return 2
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
