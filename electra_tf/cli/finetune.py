"""Fine-tune ELECTRA on a GLUE task: `python finetune/run.py [flags]`.

With no flags, runs the built-in demo: fine-tunes the pre-training demo's
discriminator (`runs/pretrain/export/discriminator`, written by
`python pretrain/run.py`) on the movie-review excerpt shipped in
`electra_tf/assets/tasks/rt_polarity` as task sst2, on the CPU in a few
minutes. `--pretrained none` trains the same model from random initialisation
(the no-pre-training baseline).

On GLUE: `--task mnli --data-dir glue_data` (the official download's layout)
or `--task mnli --tfds`. Writes `metrics.json` (per seed and epoch, and the
median over seeds), TensorBoard logs, GLUE-server TSVs of the test splits
(MNLI also AX.tsv) and a raw-text SavedModel to --output-dir.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[1]

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DEMO_DATA = PACKAGE / "assets" / "tasks" / "rt_polarity"
DEMO_PRETRAINED = "runs/pretrain/export/discriminator"
DEFAULT_VOCAB = PACKAGE / "assets" / "vocab.txt"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--task",
        default="sst2",
        help="cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte or wnli (default: sst2). "
        "AX is predicted by the mnli run.",
    )
    parser.add_argument(
        "--pretrained",
        default=DEMO_PRETRAINED,
        help="A keras-hub ELECTRA preset: the directory pre-training exports "
        f"(default: {DEMO_PRETRAINED}) or a keras-hub preset name; 'none' for "
        "random initialisation.",
    )
    data = parser.add_mutually_exclusive_group()
    data.add_argument(
        "--data-dir",
        help="GLUE data in the official layout: the root holding CoLA/, SST-2/, "
        "... or one task's directory. Default: the demo excerpt (sst2 only).",
    )
    data.add_argument(
        "--tfds",
        action="store_true",
        help="Read glue/<task> from tensorflow-datasets (downloads it).",
    )
    parser.add_argument(
        "--output-dir", help="Output directory (default: runs/finetune/<task>)."
    )
    parser.add_argument(
        "--seeds",
        default="1,2,3",
        help="Comma-separated seeds; one run each, medians reported (default 1,2,3).",
    )
    parser.add_argument("--epochs", type=int, help="Default: the task's (3 or 10).")
    parser.add_argument("--batch-size", type=int, help="Default: 32.")
    parser.add_argument(
        "--learning-rate", type=float, help="Peak LR. Default: by model size."
    )
    parser.add_argument(
        "--layerwise-decay", type=float, help="Default: 0.8 (0.9 for large)."
    )
    parser.add_argument(
        "--hparams",
        default="{}",
        help='JSON object of FinetuningConfig overrides, e.g. \'{"warmup_fraction": '
        '0.05, "corrected_layerwise_decay": true}\'. Unknown keys are an error.',
    )
    baseline = parser.add_argument_group("random initialisation (--pretrained none)")
    baseline.add_argument(
        "--preset", default="tiny", help="Model size to build (default: tiny)."
    )
    baseline.add_argument(
        "--vocab",
        default=str(DEFAULT_VOCAB),
        help="WordPiece vocab.txt (default: the bundled BERT uncased one).",
    )
    baseline.add_argument(
        "--no-lowercase", action="store_true", help="Cased vocabulary: keep case."
    )
    parser.add_argument(
        "--jit",
        default="auto",
        choices=["auto", "on", "off"],
        help="XLA; auto = on GPUs and TPUs only.",
    )
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")

    # Imported here so that --help answers without loading TensorFlow.
    from electra_tf.config import ConfigError
    from electra_tf.data.vocabulary import VocabularyError
    from electra_tf.distribution import DistributionError
    from electra_tf.finetuning.glue_readers import GlueDataError
    from electra_tf.finetuning.glue_tasks import UnknownTaskError
    from electra_tf.models.text_classifier import PretrainedModelError

    try:
        return _run(args)
    except (
        ConfigError,
        DistributionError,
        GlueDataError,
        PretrainedModelError,
        UnknownTaskError,
        VocabularyError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _seeds(text: str) -> list[int]:
    from electra_tf.config import ConfigError

    try:
        seeds = [int(seed) for seed in text.split(",") if seed.strip()]
    except ValueError:
        raise ConfigError(
            f"--seeds must be comma-separated integers: {text!r}"
        ) from None
    if not seeds:
        raise ConfigError("--seeds is empty")
    return seeds


def _run(args) -> int:
    from electra_tf.config import ConfigError
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.distribution import resolve_jit_compile
    from electra_tf.finetuning.glue_tasks import get_task
    from electra_tf.finetuning.run import (
        RECIPES,
        build_classifier,
        load_task_data,
        recipe_for_width,
        run_finetuning,
    )
    from electra_tf.presets import get_preset

    task = get_task(args.task)
    seeds = _seeds(args.seeds)
    try:
        hparams = json.loads(args.hparams)
    except json.JSONDecodeError as error:
        raise ConfigError(f"--hparams is not valid JSON: {error}") from error
    if not isinstance(hparams, dict):
        raise ConfigError(f"--hparams must be a JSON object, got {args.hparams!r}")

    # Data: --data-dir, --tfds, or the demo excerpt (as SST-2).
    data_dir = args.data_dir
    if not data_dir and not args.tfds:
        if task.name != "sst2":
            raise ConfigError(
                f"no --data-dir or --tfds for {task.name}: the built-in demo data "
                "is for sst2 only"
            )
        data_dir = str(DEMO_DATA)
    data = load_task_data(task, data_dir, use_tfds=args.tfds)

    # Model: a pre-trained preset, or random initialisation.
    pretrained = None if args.pretrained.lower() == "none" else args.pretrained
    if pretrained is None:
        vocabulary = Vocabulary.from_file(args.vocab)
        model_config = get_preset(args.preset).model.override(
            vocabulary_size=vocabulary.size
        )
        size, recipe = recipe_for_width(model_config.hidden_dim)
        vocabulary_tokens = vocabulary.tokens
    else:
        if pretrained == DEMO_PRETRAINED and not os.path.isdir(pretrained):
            raise ConfigError(
                f"{pretrained} not found: run `python pretrain/run.py` first (the "
                "pre-training demo exports it there), or pass --pretrained none"
            )
        model_config = vocabulary_tokens = None
        # Built once up front to fail early (missing files, vocabulary
        # mismatch) and to choose the recipe for the model's size.
        probe = build_classifier(task, RECIPES["base"], pretrained)
        size, recipe = recipe_for_width(probe.backbone.hidden_dim)
        del probe

    flags = {
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "learning_rate": args.learning_rate,
        "layerwise_decay": args.layerwise_decay,
    }
    config = recipe.override(**{k: v for k, v in flags.items() if v is not None})
    # XLA on CPUs is measured to pay off for pre-training, not for fine-tuning.
    config = config.override(jit_compile=resolve_jit_compile(args.jit, on_cpu=False))
    config = config.override(**hparams)
    logging.info("%s recipe for %s: %s", size, task.name, config.to_dict())

    def make_classifier():
        return build_classifier(
            task,
            config,
            pretrained,
            model_config=model_config,
            vocabulary_tokens=vocabulary_tokens,
            lowercase=not args.no_lowercase,
        )

    output_dir = args.output_dir or os.path.join("runs", "finetune", task.name)
    summary = run_finetuning(
        task,
        data,
        make_classifier,
        config,
        output_dir,
        seeds=seeds,
        run_info={
            "pretrained": pretrained or "none",
            "data": "tfds" if args.tfds else data_dir,
            "recipe": size,
        },
    )
    median = summary["median"]
    logging.info(
        "%s dev, median of %d seeds: %s (score %.4f)",
        task.name,
        len(seeds),
        json.dumps(median["dev"]),
        median["score"],
    )
    logging.info("Metrics, submissions and SavedModel in %s", output_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
