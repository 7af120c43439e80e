"""Fine-tune ELECTRA on a GLUE task, SQuAD or MRQA: `python finetune/run.py [flags]`.

With no flags: the demo's discriminator (`runs/pretrain/export/discriminator`) on the
bundled rt_polarity excerpt as task sst2, a few CPU minutes. `--pretrained none` trains
the same model from random initialisation (the no-pre-training baseline).

On GLUE: `--task mnli --data-dir glue_data` (the official download's layout) or `--task
mnli --tfds`. On your own files: `--train-file train.csv --dev-file dev.csv
--text-columns review --label-column stars` (CSV, TSV or JSON Lines; classes or scores
inferred from the labels, or `--label-type`). Tagging: `--task tagging --train-file
train.conll --dev-file dev.conll` (CoNLL layout; `--tfds`: CoNLL-2003 NER from
tensorflow-datasets; neither, the bundled Brown POS excerpt). SQuAD: `--task squad2
--data-dir squad` (train-v2.0.json, dev-v2.0.json; squad1: v1.1) or `--tfds`. MRQA:
`--task mrqa --train-file NewsQA.jsonl.gz --dev-file ...` or `mrqa/news_qa --tfds`.
Writes to --output-dir `metrics.json` (per seed and epoch, the median over seeds),
TensorBoard logs, test predictions and a raw-text SavedModel. The `score` logged and in
metrics.json picks the best epoch and seed: the mean of the task's dev metrics (GLUE,
own files), span F1 (BIO tags, else accuracy) or F1 (SQuAD, MRQA; 2.0: best threshold).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from electra_tf.cli import command_line, flags_from, load_library
from electra_tf.finetuning.settings import FinetuningFlags
from electra_tf.precision import PRECISION_CHOICES
from electra_tf.presets import RECIPES

# Each flag's default, from its one home (`flags_from`), for the help.
DEFAULT = FinetuningFlags()


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # A table of flags, one call each: kept as written.
    # fmt: off
    add = parser.add_argument
    add("--task", help="cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, wnli, squad1, "
        "squad2, mrqa, mrqa/<config> (--tfds) (default: sst2; AX: the mnli run's); "
        "'tagging' for token classification on CoNLL files. With --train-file and "
        "no --task: your own classification or regression data.")
    add("--pretrained", help="A keras-hub ELECTRA preset: "
        f"the directory pre-training exports (default: {DEFAULT.pretrained}) or a "
        "keras-hub preset name; 'none' for random initialisation.")
    files = parser.add_argument_group("your own data (--train-file): CSV, TSV, "
        "JSON Lines (.jsonl; .json: lines or one array); CoNLL for tagging; MRQA's")
    files.add_argument("--train-file", help="Training examples.")
    files.add_argument("--dev-file", help="Labelled examples to evaluate on.")
    files.add_argument("--test-file", help="Predicted (optional); scored if labelled.")
    files.add_argument("--text-columns", help="One column, or two for text "
        "pairs, comma-separated (default: text).")
    files.add_argument("--label-column", help="The label's column (default: label).")
    files.add_argument("--label-type",
        choices=["auto", "classification", "regression"],
        help="auto (the default): numbers that are not a small set of integers "
        "mean regression; the inferred type and classes are logged.")
    data = parser.add_mutually_exclusive_group()
    data.add_argument("--data-dir", help="GLUE data in the official layout: the "
        "root holding CoLA/, SST-2/, ... or one task's directory. Default: the "
        "demo excerpt (sst2 only).")
    data.add_argument("--tfds", action="store_true",
        help="Read the task from tensorflow-datasets (downloads it): glue/<task>; "
        "squad/v1.1 or v2.0; mrqa/<config>; for --task tagging, conll2003 (NER).")
    add("--output-dir", help="Default: runs/finetune/<task> (custom for your own "
        "data). One holding a previous run is refused unless --overwrite.")
    add("--overwrite", action="store_true", help="Replace a previous run in "
        "--output-dir: its TensorBoard logs are deleted, other files overwritten.")
    add("--seeds", help="Comma-separated seeds; one run each, "
        f"medians reported (default {DEFAULT.seeds}).")
    add("--train-examples", type=int, help="Train on this many training examples "
        "(default all), one draw with --sample-seed for every --seeds run.")
    add("--sample-seed", type=int, help=f"Default {DEFAULT.sample_seed}.")
    add("--epochs", type=int, help=">= 1; default: 3 (RTE, STS-B 10; SQuAD, MRQA 2).")
    add("--batch-size", type=int, help=f"Default: {RECIPES['base'].batch_size}.")
    add("--learning-rate", type=float, help="Peak LR. Default: by model size.")
    add("--layerwise-decay", type=float, help="Default: "
        f"{RECIPES['base'].layerwise_decay} ({RECIPES['large'].layerwise_decay} "
        "for large).")
    add("--max-seq-length", type=int, help="Tokens per example (SQuAD, MRQA: window), "
        "at least 8; longer inputs are truncated (tagging; SQuAD, MRQA: windowed). "
        f"Default: {RECIPES['base'].max_seq_length}; SQuAD, MRQA: 512, or the "
        "encoder's length if shorter.")
    add("--hparams", help="JSON object of recipe fields: "
        'FinetuningConfig\'s (e.g. \'{"warmup_fraction": 0.05}\'); for SQuAD and MRQA, '
        "QuestionAnsweringConfig's (e.g. doc_stride); for tagging, TaggingConfig's "
        "(segment_id). Unknown keys are an error.")
    add = parser.add_argument_group(
        "random initialisation (--pretrained none)").add_argument
    add("--preset", help=f"Model size to build (default: {DEFAULT.preset}), "
        "or a keras-hub preset directory such as a pre-training export: its "
        "architecture, freshly initialised (the same model without pre-training).")
    add("--vocab", help="WordPiece vocab.txt (default: the --preset directory's "
        "own, else the bundled BERT uncased one).")
    add("--no-lowercase", action="store_true", help="Cased vocabulary: keep case.")
    add = parser.add_argument
    add("--precision", choices=PRECISION_CHOICES, help="Keras dtype policy "
        f"(default {DEFAULT.precision}). auto: mixed_bfloat16 where bfloat16 is native "
        "(avx512_bf16/amx_bf16 CPUs at widths >= 128, GPUs of compute capability >= "
        "8.0, TPUs), else float32; mixed_float16 needs a GPU. Exports: float32.")
    add("--jit", choices=["auto", "on", "off"], help=f"XLA (default {DEFAULT.jit}); "
        "auto = on GPUs and TPUs only (off on a CPU under bfloat16).")
    # fmt: on
    return parser.parse_args(argv)


@command_line(parse_args)
def main(args) -> int:
    finetune = load_library("electra_tf.finetuning.finetune").finetune
    output_dir, summary = finetune(flags_from(FinetuningFlags, args))
    logging.info(
        "%s dev, median of %d seeds: %s (score %.4f = %s)",
        summary["task"],
        len(summary["seeds"]),
        json.dumps(summary["median"]["dev"]),
        summary["median"]["score"],
        summary["score_definition"],
    )
    logging.info("Metrics, predictions and SavedModel in %s", output_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
