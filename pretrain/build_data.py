"""Build pre-training TFRecords from raw text: `python pretrain/build_data.py ...`.

Input: text files (plain or .gz; local or gs://), one sentence per line, a blank
line between documents. Output: `train-*.tfrecord` and `eval-*.tfrecord` shards
with int64 features input_ids, input_mask, segment_ids [max_seq_length],
`stats.json` and a copy of `vocab.txt`. Deterministic for a given --seed,
whatever --processes is. Refuses a non-empty output directory unless --overwrite
(which replaces only shard files and stats.json; nothing else is deleted).

Example:
  python pretrain/build_data.py --input ../shared/data/corpus \
      --output-dir data/corpus128
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # runs from a checkout without installing
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--input",
        action="append",
        help="Text files, directories or globs (repeatable).",
    )
    parser.add_argument(
        "--tfds-dataset",
        help="A tensorflow-datasets text dataset (e.g. 'wikipedia/20230601.en') "
        "to add to the input; needs network access to download.",
    )
    parser.add_argument("--tfds-split", default="train")
    parser.add_argument(
        "--tfds-text-key", default="text", help="Feature holding the text."
    )
    parser.add_argument(
        "--vocab",
        default=str(REPO / "electra_tf" / "assets" / "vocab.txt"),
        help="vocab.txt to use (default: bundled BERT uncased).",
    )
    parser.add_argument(
        "--learn-vocab-size",
        type=int,
        help="Learn a WordPiece vocabulary of this size from the input instead "
        "(written to OUTPUT_DIR/vocab.txt).",
    )
    parser.add_argument("--output-dir", required=True)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--num-shards", type=int, default=8)
    parser.add_argument("--num-eval-shards", type=int, default=1)
    parser.add_argument(
        "--num-hosts",
        type=int,
        default=1,
        help="Hosts that will read the data; --num-shards must be a multiple.",
    )
    parser.add_argument("--eval-fraction", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--no-lowercase", action="store_true")
    parser.add_argument("--no-strip-accents", action="store_true")
    parser.add_argument("--overwrite", action="store_true")
    parser.add_argument("--no-progress", action="store_true")
    return parser.parse_args(argv)


def _tfds_to_text(name, split, key, directory) -> str:
    """Writes a tfds text dataset as a corpus file (one document per record)."""
    import tensorflow_datasets as tfds

    path = os.path.join(directory, f"tfds-{name.replace('/', '_')}-{split}.txt")
    with open(path, "w", encoding="utf-8") as f:
        for record in tfds.as_numpy(tfds.load(name, split=split)):
            text = record[key].decode("utf-8")
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            f.write("\n".join(lines) + "\n\n")
    return path


def main(argv=None) -> int:
    args = parse_args(argv)
    from electra_tf.data.corpus import CorpusError
    from electra_tf.data.tfrecord_writer import BuildError, build_pretraining_data
    from electra_tf.vocabulary import Vocabulary, VocabularyError, learn_vocabulary

    try:
        if args.num_shards % args.num_hosts:
            raise BuildError(
                f"--num-shards {args.num_shards} is not a multiple of "
                f"--num-hosts {args.num_hosts}"
            )
        inputs = list(args.input or [])
        if args.tfds_dataset:
            os.makedirs(args.output_dir, exist_ok=True)
            inputs.append(
                _tfds_to_text(
                    args.tfds_dataset,
                    args.tfds_split,
                    args.tfds_text_key,
                    args.output_dir,
                )
            )
        if not inputs:
            raise BuildError("give --input and/or --tfds-dataset")
        if args.learn_vocab_size:
            from electra_tf.data.corpus import expand_paths

            vocabulary = learn_vocabulary(
                expand_paths(inputs),
                args.learn_vocab_size,
                os.path.join(args.output_dir, "learned_vocab.txt"),
                lowercase=not args.no_lowercase,
                strip_accents=not args.no_strip_accents,
            )
        else:
            vocabulary = Vocabulary.from_file(args.vocab)
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
    except (BuildError, CorpusError, VocabularyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(
        f"{stats['train_examples']} train and {stats['eval_examples']} eval examples "
        f"from {stats['documents']} documents ({stats['tokens']} tokens, "
        f"{stats['unknown_token_rate']:.2%} unknown, "
        f"{stats['padding_fraction']:.1%} padding) in {args.output_dir}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
