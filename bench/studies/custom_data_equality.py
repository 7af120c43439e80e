"""rt_polarity through the custom-file path gives `--task sst2`'s dev accuracy.

    python -m bench.studies.custom_data_equality \
        --data-dir ../shared/data/tasks/rt_polarity

Fine-tunes twice with the same seed: once as GLUE's sst2 (`load_task_data`),
once from the same TSV files as the user's own data (`load_custom_data` with
`--text-columns sentence --label-column label`), and reports each epoch's dev
accuracy of both and whether they are equal. `--pretrained PATH` starts from
a keras-hub preset; the default `none` is the `--preset` architecture, randomly
initialised, with the bundled vocabulary. Writes `--output` (JSON).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import sys

from bench.result_file import write_result

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data-dir",
        default=str(REPO / "electra_tf" / "assets" / "tasks" / "rt_polarity"),
        help="train.tsv and dev.tsv in the SST-2 layout (default: the bundled excerpt)",
    )
    parser.add_argument("--pretrained", default="none")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--output", default="bench/results/custom_data_equality.json")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    from bench.run_info import run_info
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.finetuning.classification import (
        ClassificationTask,
        build_classifier,
        load_task_data,
    )
    from electra_tf.finetuning.custom_data import load_custom_data
    from electra_tf.finetuning.glue_tasks import get_task
    from electra_tf.finetuning.starting_point import StartingPoint
    from electra_tf.finetuning.trainer import finetune_seed
    from electra_tf.presets import get_preset, recipe_for_width

    pretrained = None if args.pretrained == "none" else args.pretrained
    model_config = vocabulary = None
    if pretrained is None:
        vocabulary = Vocabulary.from_file(REPO / "electra_tf" / "assets" / "vocab.txt")
        model_config = get_preset(args.preset).model.override(
            vocabulary_size=vocabulary.size
        )
        _, recipe = recipe_for_width(model_config.hidden_dim)
    else:
        probe = build_classifier(
            get_task("sst2"), recipe_for_width(64)[1], StartingPoint(pretrained)
        )
        _, recipe = recipe_for_width(probe.backbone.hidden_dim)
    config = recipe.override(epochs=args.epochs)

    sst2 = get_task("sst2")
    _, custom_data = load_custom_data(
        os.path.join(args.data_dir, "train.tsv"),
        os.path.join(args.data_dir, "dev.tsv"),
        text_columns=["sentence"],
        label_column="label",
    )
    report = {
        **run_info(__file__),
        "data": os.path.relpath(args.data_dir, REPO),
        "seed": args.seed,
        "pretrained": args.pretrained,
        "config": config.to_dict(),
        "runs": {},
    }
    start = StartingPoint(pretrained, model_config, vocabulary)
    for name, data in (
        ("sst2", load_task_data(sst2, args.data_dir)),
        ("custom", custom_data),
    ):
        _, results = finetune_seed(
            ClassificationTask(data, config, start), args.seed, verbose=0
        )
        report["runs"][name] = [e["dev"]["dev"]["accuracy"] for e in results["epochs"]]
    report["equal"] = report["runs"]["sst2"] == report["runs"]["custom"]
    write_result(args.output, report)
    print(json.dumps({"runs": report["runs"], "equal": report["equal"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
