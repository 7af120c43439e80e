"""Pre-train ELECTRA: `python pretrain/run.py [flags]`.

With no flags, runs the built-in demo: learns an 8k WordPiece vocabulary from
the small corpus shipped in `electra_tf/assets/corpus`, builds TFRecords from
it, trains the `tiny` preset on the CPU for a few minutes, evaluates on a
held-out shard and exports the discriminator (keras-hub preset and SavedModel)
and the generator under `runs/pretrain/export`.
Rerunning the same command resumes from the newest checkpoint.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import pathlib
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[1]

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ASSETS = PACKAGE / "assets"
DEMO_STEPS = 2000


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    data = parser.add_argument_group("data")
    data.add_argument(
        "--data",
        help="TFRecord file pattern(s) of training data (comma-separated), as "
        "written by pretrain/build_data.py. Default: build them from --corpus.",
    )
    data.add_argument(
        "--skip-corrupt-files",
        action="store_true",
        help="Read every TFRecord once before training and leave out damaged or "
        "truncated files (each logged with its count of readable records). "
        "Without it, a damaged record stops the run with an error naming its file.",
    )
    data.add_argument(
        "--eval-data",
        help="TFRecord pattern(s) of held-out data. Default: the eval shards next "
        "to --data, if any.",
    )
    data.add_argument(
        "--corpus",
        action="append",
        help="Raw text (files, dirs or globs; one sentence per line, blank line "
        "between documents) to build TFRecords from when --data is not given. "
        "Default: the demo corpus in electra_tf/assets/corpus.",
    )
    data.add_argument(
        "--vocab",
        help="WordPiece vocab.txt, e.g. electra_tf/assets/vocab.txt (BERT uncased). "
        "Default: the vocab.txt next to --data; when building from --corpus, "
        "a vocabulary learned from it (--learn-vocab-size).",
    )
    data.add_argument(
        "--learn-vocab-size",
        type=int,
        default=8192,
        help="Size of the vocabulary learned from --corpus when --vocab is not given.",
    )
    data.add_argument(
        "--no-lowercase", action="store_true", help="Cased vocabulary: keep case."
    )
    model = parser.add_argument_group("model and objective")
    model.add_argument(
        "--preset",
        default="tiny",
        help="tiny, small, small++, base or large (default: tiny).",
    )
    model.add_argument(
        "--objective",
        choices=["electra", "electra_15", "mlm", "replace_mlm", "all_tokens_mlm"],
        help="What the discriminator-sized model learns (default: electra): "
        "replaced token detection over all tokens (electra) or only the masked "
        "ones (electra_15); BERT's MLM (mlm); MLM on generator samples instead "
        "of [MASK] (replace_mlm); every token's identity, with a copy mechanism "
        "(all_tokens_mlm). The paper's efficiency analysis, section 3.3.",
    )
    model.add_argument(
        "--hparams",
        default="{}",
        help='JSON object of config overrides, e.g. \'{"mask_prob": 0.2, '
        '"generator_hidden_size": 0.5}\'. Unknown keys are an error.',
    )
    model.add_argument(
        "--init-checkpoint",
        help="Start from this checkpoint's weights (an earlier run's); its step "
        "offsets the learning-rate schedule.",
    )
    run = parser.add_argument_group("run")
    run.add_argument(
        "--model-dir", default="runs/pretrain", help="Output directory (resumable)."
    )
    run.add_argument("--steps", type=int, help="Training steps (updates).")
    run.add_argument("--batch-size", type=int, help="GLOBAL batch size.")
    run.add_argument("--learning-rate", type=float, help="Peak learning rate.")
    run.add_argument(
        "--max-seq-length", type=int, help="Sequence length of data and model."
    )
    run.add_argument(
        "--checkpoint-every", type=int, help="Steps between checkpoints and logs."
    )
    run.add_argument(
        "--precision",
        default="float32",
        choices=["float32", "mixed_bfloat16", "mixed_float16"],
    )
    run.add_argument(
        "--strategy",
        default="default",
        choices=["default", "mirrored", "multi_worker", "tpu"],
        help="default: one device; mirrored: all local GPUs (or --devices); "
        "multi_worker: several hosts, each started with its own TF_CONFIG (needs "
        "--data); tpu: the TPU named by --tpu.",
    )
    run.add_argument(
        "--devices",
        help="With --strategy mirrored: comma-separated devices to mirror over, "
        "e.g. /gpu:0,/gpu:2 (default: every local GPU, else the CPU).",
    )
    run.add_argument("--tpu", help="TPU name or grpc:// address; 'local' on a TPU VM.")
    run.add_argument("--tpu-zone")
    run.add_argument("--gcp-project")
    run.add_argument(
        "--steps-per-execution", type=int, default=1, help="Steps per host call."
    )
    run.add_argument(
        "--jit",
        default="auto",
        choices=["auto", "on", "off"],
        help="Compile the train step with XLA; auto = on (also on CPUs, where it "
        "is faster once compiled); off for debugging or very short runs.",
    )
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")

    # Imported here so that --help answers without loading TensorFlow.
    from electra_tf.config import ConfigError
    from electra_tf.data.corpus import CorpusError
    from electra_tf.data.input_pipeline import DataError
    from electra_tf.data.tfrecord_writer import BuildError
    from electra_tf.data.vocabulary import VocabularyError
    from electra_tf.distribution import DistributionError
    from electra_tf.pretraining.callbacks import NonFiniteLossError

    try:
        return _run(args)
    except (
        BuildError,
        ConfigError,
        CorpusError,
        DataError,
        DistributionError,
        VocabularyError,
        NonFiniteLossError,
    ) as error:
        message = f"error: {error}"
    # What the failed run left (e.g. a checkpoint restore that did not match)
    # logs warnings when it is collected: collect it now, so that the one-line
    # message stays the last thing printed.
    gc.collect()
    print(message, file=sys.stderr)
    return 2


def _run(args) -> int:
    import tensorflow as tf

    from electra_tf.config import ConfigError, TrainingConfig, apply_hparams
    from electra_tf.data.corpus import expand_paths
    from electra_tf.data.input_pipeline import list_files, read_data_stats
    from electra_tf.data.tfrecord_writer import build_pretraining_data
    from electra_tf.data.vocabulary import Vocabulary, learn_vocabulary
    from electra_tf.distribution import (
        check_global_batch,
        make_strategy,
        resolve_jit_compile,
    )
    from electra_tf.presets import get_preset
    from electra_tf.pretraining.run import run_pretraining

    if args.strategy == "multi_worker" and not args.data:
        raise ConfigError(
            "--strategy multi_worker needs --data: build the TFRecords once with "
            "pretrain/build_data.py, not on every worker"
        )
    # First: MultiWorkerMirroredStrategy must exist before any other
    # TensorFlow op runs in this process, and a missing TPU should fail fast.
    if args.devices and args.strategy != "mirrored":
        raise ConfigError("--devices goes with --strategy mirrored")
    strategy = make_strategy(
        args.strategy,
        tpu=args.tpu,
        tpu_zone=args.tpu_zone,
        gcp_project=args.gcp_project,
        devices=args.devices.split(",") if args.devices else None,
    )
    preset = get_preset(args.preset)
    try:
        hparams = json.loads(args.hparams)
    except json.JSONDecodeError as error:
        raise ConfigError(f"--hparams is not valid JSON: {error}") from error
    # Before any data or vocabulary is built (run_pretraining checks it again).
    check_global_batch(
        hparams.get("batch_size") or args.batch_size or preset.batch_size, strategy
    )
    max_seq_length = hparams.get("max_seq_length") or args.max_seq_length
    max_seq_length = max_seq_length or preset.pretraining.max_seq_length
    train_data, eval_data = args.data, args.eval_data
    if train_data:
        data_dir = os.path.dirname(list_files(train_data)[0])
        vocabulary = Vocabulary.from_file(
            args.vocab or os.path.join(data_dir, "vocab.txt")
        )
        if not eval_data and tf.io.gfile.glob(os.path.join(data_dir, "eval-*")):
            eval_data = os.path.join(data_dir, "eval-*")
    else:
        data_dir = os.path.join(args.model_dir, "data")
        corpus = args.corpus or [str(ASSETS / "corpus")]
        if not os.path.exists(os.path.join(data_dir, "stats.json")):
            if args.vocab:
                vocabulary = Vocabulary.from_file(args.vocab)
            else:
                logging.info(
                    "Learning a %d-token vocabulary from %s",
                    args.learn_vocab_size,
                    corpus,
                )
                vocabulary = learn_vocabulary(
                    expand_paths(corpus),
                    args.learn_vocab_size,
                    os.path.join(args.model_dir, "vocab.txt"),
                    lowercase=not args.no_lowercase,
                )
            logging.info("Building TFRecords from %s into %s", corpus, data_dir)
            build_pretraining_data(
                corpus,
                vocabulary,
                data_dir,
                max_seq_length=max_seq_length,
                eval_fraction=0.05,
                lowercase=not args.no_lowercase,
                overwrite=True,
            )
        vocabulary = Vocabulary.from_file(
            args.vocab or os.path.join(data_dir, "vocab.txt")
        )
        train_data = os.path.join(data_dir, "train-*")
        eval_data = eval_data or os.path.join(data_dir, "eval-*")
    stats = read_data_stats(data_dir)
    if (
        stats
        and not stats.get("eval_examples")
        and eval_data == os.path.join(data_dir, "eval-*")
    ):
        logging.warning("%s has no held-out examples: evaluation skipped", data_dir)
        eval_data = None
    if stats and stats.get("max_seq_length") != max_seq_length:
        raise ConfigError(
            f"{data_dir} holds TFRecords of length {stats.get('max_seq_length')} "
            f"but the run's max_seq_length is {max_seq_length}"
        )
    if stats and stats.get("vocabulary_md5") not in (None, vocabulary.md5()):
        raise ConfigError(
            f"{data_dir} was built with another vocabulary than {vocabulary.path}"
        )
    steps = args.steps or (
        DEMO_STEPS if args.preset == "tiny" else preset.optimizer.total_steps
    )
    training = TrainingConfig(
        model_dir=args.model_dir,
        train_steps=steps,
        batch_size=args.batch_size or preset.batch_size,
        checkpoint_every=args.checkpoint_every or min(100, steps),
        strategy=args.strategy,
        precision=args.precision,
        steps_per_execution=args.steps_per_execution,
        skip_corrupt_files=args.skip_corrupt_files,
    )
    configs = {
        "model": preset.model.override(vocabulary_size=vocabulary.size),
        "pretraining": preset.pretraining,
        "optimizer": preset.optimizer.override(total_steps=steps),
        "training": training,
    }
    if args.learning_rate:
        configs["optimizer"] = configs["optimizer"].override(
            learning_rate=args.learning_rate
        )
    configs["pretraining"] = configs["pretraining"].override(
        max_seq_length=max_seq_length
    )
    if args.objective:
        configs["pretraining"] = configs["pretraining"].override(
            objective=args.objective
        )
    configs = apply_hparams(configs, hparams)

    configs["training"] = configs["training"].override(
        train_data=train_data, eval_data=eval_data or ""
    )

    configs["training"] = configs["training"].override(
        jit_compile=resolve_jit_compile(args.jit, strategy)
    )
    results = run_pretraining(
        configs["model"],
        configs["pretraining"],
        configs["optimizer"],
        configs["training"],
        vocabulary,
        strategy,
        init_checkpoint=args.init_checkpoint,
        lowercase=not args.no_lowercase,
    )
    if results:
        shown = {k: round(v, 4) for k, v in results.items()}
        logging.info("Held-out evaluation: %s", shown)
    logging.info("Exports in %s", os.path.join(args.model_dir, "export"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
