"""Score sentences with a pre-trained model: `python pretrain/score.py [flags]`.

Reads a UTF-8 text file, one sentence per line, and writes a TSV with the
header `score`, `token_count`, `sentence` and one row per input line, in
order. The score is the sentence's pseudo-log-likelihood (natural log; higher:
more likely), summed over its `token_count` WordPiece tokens, from the run's
`export/sentence_scorer` SavedModel: an Electric run (`--objective electric`)
scores in one forward pass with its discriminator; the other objectives with
the masked-language model they trained (the generator, or the `mlm`
objective's model), one pass per token. Scores compare sentences scored by the
same model; longer sentences have lower scores (divide by token_count to
compare per token). Text longer than the run's --max-seq-length tokens is
truncated.

Example:
  python pretrain/run.py --objective electric --model-dir runs/electric
  python pretrain/score.py --model-dir runs/electric --input sentences.txt \\
      --output scores.tsv
"""

from __future__ import annotations

import argparse
import sys

from electra_tf.cli import command_line, load_library
from electra_tf.config import TrainingConfig


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="score.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--model-dir",
        default=TrainingConfig.model_dir,
        help="The pre-training run's directory (pretrain/run.py --model-dir; "
        "default %(default)s), its export/ directory, or the "
        "sentence_scorer SavedModel itself.",
    )
    parser.add_argument(
        "--input", required=True, help="UTF-8 text file, one sentence per line."
    )
    parser.add_argument(
        "--output",
        required=True,
        help="TSV file to write (written whole or not at all; the --input file "
        "itself is refused).",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=64,
        help="Sentences per batch, >= 1 (default 64).",
    )
    return parser.parse_args(argv)


@command_line(parse_args)
def main(args) -> int:
    score_file = load_library("electra_tf.scoring.sentence_file").score_file
    count = score_file(args.model_dir, args.input, args.output, args.batch_size)
    print(f"scored {count} sentences: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
