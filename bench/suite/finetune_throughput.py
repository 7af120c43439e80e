"""Fine-tuning throughput of each task on this machine: training examples per second.

    python -m bench.suite.finetune_throughput --preset small \
        --tasks classification,tagging

Each task trains the `--preset` encoder (random weights: speed does not
depend on them; the bundled BERT vocabulary) with ELECTRA's recipe and
`model.fit`, on real data: classification on rt_polarity sentences (as SST-2),
tagging on Brown POS sentences. After `--warmup-steps` (tracing, first
batches) it times `--steps` more and reports examples (sentences) per second,
and for tagging also words per second. Writes `--output` (JSON with the
command, date and machine).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

TASKS = ("classification", "tagging")
SHARED = REPO.parent / "shared" / "data" / "tasks"
BUNDLED = REPO / "electra_tf" / "assets" / "tasks"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="small", help="tiny, small, base, large")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--warmup-steps", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--output", default="bench/results/finetune_throughput.json")
    return parser.parse_args(argv)


def _data_dir(name):
    shared = SHARED / name
    return shared if shared.is_dir() else BUNDLED / name


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    import keras

    from bench.run_info import run_info
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.finetuning.glue_readers import read_glue_tsv
    from electra_tf.finetuning.glue_tasks import get_task
    from electra_tf.finetuning.run import build_classifier, make_optimizer
    from electra_tf.finetuning.settings import recipe_for_width
    from electra_tf.finetuning.tagging_run import (
        build_token_classifier,
        load_tagging_data,
    )
    from electra_tf.presets import get_preset

    vocabulary = Vocabulary.from_file(REPO / "electra_tf" / "assets" / "vocab.txt")
    model_config = get_preset(args.preset).model.override(
        vocabulary_size=vocabulary.size
    )
    _, recipe = recipe_for_width(model_config.hidden_dim)
    config = recipe.override(
        batch_size=args.batch_size, max_seq_length=args.max_seq_length
    )
    report = {
        **run_info(__file__),
        "preset": args.preset,
        "batch_size": args.batch_size,
        "max_seq_length": args.max_seq_length,
        "steps": args.steps,
        "tasks": {},
    }
    # The machine may be shared: record how busy it was.
    report["load_average_1min"] = {"before": os.getloadavg()[0]}
    total = args.warmup_steps + args.steps
    for task_name in args.tasks.split(","):
        keras.utils.set_random_seed(1)
        if task_name == "classification":
            task = get_task("sst2")
            examples = read_glue_tsv(task, "train", str(_data_dir("rt_polarity")))
            model = build_classifier(
                task,
                config,
                model_config=model_config,
                vocabulary=vocabulary,
            )
            dataset = examples.to_dataset(args.batch_size, shuffle=True, seed=1)
            words_per_example = None
        elif task_name == "tagging":
            directory = _data_dir("brown_pos")
            data = load_tagging_data(directory / "train.conll", directory / "dev.conll")
            model = build_token_classifier(
                data.tags,
                config,
                model_config=model_config,
                vocabulary=vocabulary,
            )
            dataset = data.train.to_dataset(
                args.batch_size, data.tag_ids, shuffle=True, seed=1
            )
            words_per_example = sum(map(len, data.train.words)) / len(data.train)
        else:
            raise SystemExit(f"unknown task {task_name!r}; choose from {TASKS}")
        model.compile(
            optimizer=make_optimizer(config, model.backbone.num_layers, total),
            jit_compile=False,
        )
        dataset = dataset.repeat()
        model.fit(dataset, steps_per_epoch=args.warmup_steps, epochs=1, verbose=0)
        started = time.perf_counter()
        model.fit(dataset, steps_per_epoch=args.steps, epochs=1, verbose=0)
        seconds = time.perf_counter() - started
        result = {
            "seconds": round(seconds, 2),
            "examples_per_second": round(args.steps * args.batch_size / seconds, 1),
        }
        if words_per_example:
            result["words_per_second"] = round(
                result["examples_per_second"] * words_per_example, 1
            )
        report["tasks"][task_name] = result
        logging.info("%s: %s", task_name, result)
    report["load_average_1min"]["after"] = os.getloadavg()[0]
    pathlib.Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["tasks"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
