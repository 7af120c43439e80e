"""Pre-train ELECTRA: `python pretrain/run.py [flags]`.

With no flags, runs the built-in demo: TFRecords from the bundled corpus
(`electra_tf/assets/corpus`) and its vocabulary (`assets/demo_vocab.txt`), the
`demo` preset for 5,000 steps (minutes on 2 idle CPU cores), a held-out
evaluation and the exports under `runs/pretrain/export`. Rerunning the same
command resumes from the newest checkpoint.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from electra_tf.cli import command_line, flags_from, load_library
from electra_tf.config import OBJECTIVES, STRATEGIES, TrainingConfig
from electra_tf.precision import PRECISION_CHOICES
from electra_tf.pretraining.settings import PretrainingFlags


def parse_args(argv=None):
    default = PretrainingFlags()  # each flag's default, from its one home
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # A table of flags, one call each: kept as written.
    # fmt: off
    add = parser.add_argument_group("data").add_argument
    add("--data", help="TFRecord pattern(s) of training data (comma-separated), "
        "as written by pretrain/build_data.py. Default: built from --corpus.")
    add("--skip-corrupt-files", action="store_true", help="Read every TFRecord "
        "once first and leave out damaged or truncated files (logged). Without "
        "it, a damaged record stops the run with an error naming its file.")
    add("--eval-data", help="TFRecord pattern(s) of held-out data. Default: the "
        "eval shards next to --data, if any.")
    add("--corpus", action="append", help="Raw text (files, dirs or globs; one "
        "sentence per line, blank line between documents) or tfds:<name>"
        "[/<config>][:<split>] (e.g. tfds:imdb_reviews/plain_text:unsupervised; "
        "an example a document) to build TFRecords from without --data; "
        "repeatable. Default: the demo corpus in electra_tf/assets.")
    add("--tfds-text-field", help="Text feature of tfds: corpora (default: inferred).")
    add("--vocab", help="WordPiece vocab.txt, e.g. electra_tf/assets/vocab.txt "
        "(BERT uncased). Default: the vocab.txt next to --data; with --corpus, "
        "one learned from it (--learn-vocab-size); with neither, the demo "
        "corpus' (at the default size and casing the one shipped as "
        "electra_tf/assets/demo_vocab.txt, without relearning it).")
    add("--learn-vocab-size", type=int, help="Size of the vocabulary learned "
        f"from --corpus without --vocab (default {default.learn_vocab_size}).")
    add("--no-lowercase", action="store_true", help="Cased vocabulary: keep case.")
    # fmt: on
    add = parser.add_argument_group("model and objective").add_argument
    add(
        "--preset",
        help=f"{default.preset} (default: the CPU demo, 2 layers of 64), cpu (the "
        "CPU recipe: 4 layers of 128, 12,000 steps; 1 h 14 min on one core in one "
        "run), tiny, small, small++, base or large.",
    )
    add(
        "--objective",
        choices=OBJECTIVES,
        help="What the discriminator-sized "
        "model learns (default: electra): replaced token detection over all "
        "tokens (electra) or only the masked ones (electra_15); BERT's MLM (mlm); "
        "MLM on generator samples instead of [MASK] (replace_mlm); every token's "
        "identity, with a copy mechanism (all_tokens_mlm), the paper's sec. 3.3; "
        "Electric (electric; Clark et al., EMNLP 2020): a two-tower cloze "
        "generator, the discriminator's logit corrected by its noise probability.",
    )
    add(
        "--hparams",
        help="JSON object of config overrides, e.g. "
        '\'{"mask_prob": 0.2, "generator_hidden_size": 0.5}\'. Unknown keys are '
        "an error. embedding_sharing: tied (ELECTRA's, default), gdes "
        "(DeBERTaV3's gradient-disentangled sharing) or none.",
    )
    add(
        "--init-checkpoint",
        help="Start from this checkpoint's weights (an "
        "earlier run's); its step offsets the learning-rate schedule.",
    )
    # fmt: off
    add = parser.add_argument_group("run").add_argument
    add("--model-dir", help=f"Output directory, resumable ({default.model_dir}).")
    add("--steps", type=int, help="Training steps (updates).")
    add("--batch-size", type=int, help="GLOBAL batch size.")
    add("--learning-rate", type=float, help="Peak learning rate.")
    add("--max-seq-length", type=int, help="Sequence length of data and model.")
    add("--checkpoint-every", type=int, help="Steps per checkpoint "
        f"({TrainingConfig.checkpoint_every}, or --steps).")
    add("--precision", choices=PRECISION_CHOICES, help="Keras dtype policy "
        f"(default {default.precision}). auto: mixed_bfloat16 where bfloat16 is "
        "native (avx512_bf16/amx_bf16 CPUs at widths >= 128, GPUs of compute capability"
        " >= 8.0, TPUs), else float32; mixed_float16 needs a GPU. Exports: float32.")
    add("--strategy", choices=STRATEGIES, help="default (the default): one "
        "device; mirrored: all local GPUs (or --devices); multi_worker: several "
        "hosts, each with its own TF_CONFIG (needs --data); tpu: the TPU --tpu.")
    add("--devices", help="With --strategy mirrored: the devices to mirror over, "
        "e.g. /gpu:0,/gpu:2 (default: every local GPU, else the CPU).")
    add("--tpu", help="TPU name or grpc:// address; 'local' on a TPU VM.")
    add("--tpu-zone")
    add("--gcp-project")
    add("--steps-per-execution", type=int, help="Steps per host call "
        f"(default {default.steps_per_execution}).")
    add("--jit", choices=["auto", "on", "off"], help="Compile the train step with "
        f"XLA (default {default.jit}); auto = on (also on one CPU, where float32 is "
        "faster once compiled), but off on a CPU under mixed_bfloat16 (graph "
        "mode sends bfloat16 matmuls to oneDNN); off for debugging or very "
        "short runs.")
    # fmt: on
    return parser.parse_args(argv)


@command_line(parse_args)
def main(args) -> int:
    args.corpus = tuple(args.corpus) if args.corpus else None
    flags = flags_from(PretrainingFlags, args)
    results = load_library("electra_tf.pretraining.run").pretrain(flags)
    if results:
        shown = {k: round(v, 4) for k, v in results.items()}
        logging.info("Held-out evaluation: %s", shown)
    logging.info("Exports in %s", os.path.join(flags.model_dir, "export"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
