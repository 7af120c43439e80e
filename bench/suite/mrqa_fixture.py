"""`--task mrqa` on the MRQA-layout fixture, beside the untrained model's score.

    python -m bench.suite.mrqa_fixture --seeds 1,2,3 --epochs 2,10

Each arm is the documented fixture command (docs/finetuning.md) through the same
library call (`finetune`) with `--seeds` and `--epochs` set per arm; the floor
is the same seeds' fresh models scored on dev untrained. Exact match and F1
(medians over seeds) on the fixture's 18 dev questions, whose contexts the model
also trains on: a check that the pipeline learns, not a measure of reading.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import tempfile
import time

from bench.result_file import write_result

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

FIXTURE = REPO / "tests" / "fixtures" / "mrqa"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--epochs", default="2,10", help="One arm per value.")
    parser.add_argument("--output", default="bench/results/mrqa_fixture.json")
    return parser.parse_args(argv)


def flags(seeds: str, epochs: int, output_dir: str):
    from electra_tf.finetuning.settings import FinetuningFlags

    return FinetuningFlags(
        task="mrqa",
        train_file=str(FIXTURE / "train.jsonl.gz"),
        dev_file=str(FIXTURE / "dev.jsonl.gz"),
        pretrained="none",
        seeds=seeds,
        epochs=epochs,
        max_seq_length=128,
        hparams={"doc_stride": 64},
        output_dir=output_dir,
    )


def untrained(seeds: list[int]) -> dict:
    """The dev scores of each seed's model before any training step."""
    import keras

    from electra_tf.finetuning.finetune import configured_task
    from electra_tf.finetuning.question_answering import QuestionAnsweringTask
    from electra_tf.finetuning.starting_point import StartingPoint

    arm_flags = flags(",".join(map(str, seeds)), 1, "unused")
    data, _ = QuestionAnsweringTask.load_data(arm_flags)
    _, task = configured_task(
        QuestionAnsweringTask, data, StartingPoint.from_flags(arm_flags), arm_flags
    )
    results = {}
    for seed in seeds:
        keras.utils.set_random_seed(seed)
        scores, _ = task.evaluate(task.build_model(), {})
        results[str(seed)] = scores
    return results


def medians(per_seed: dict) -> dict:
    keys = next(iter(per_seed.values()))
    return {k: statistics.median(s[k] for s in per_seed.values()) for k in keys}


def main(argv=None):
    args = parse_args(argv)
    from bench.run_info import run_info
    from electra_tf.finetuning.finetune import finetune

    seeds = [int(s) for s in args.seeds.split(",")]
    floor = untrained(seeds)
    arms = {"untrained": {"epochs": 0, "dev": floor, "median": medians(floor)}}
    for epochs in (int(e) for e in args.epochs.split(",")):
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as output_dir:
            _, summary = finetune(flags(args.seeds, epochs, output_dir))
        per_seed = {seed: run["dev"] for seed, run in summary["seeds"].items()}
        arms[f"epochs_{epochs}"] = {
            "epochs": epochs,
            "dev": per_seed,
            "median": medians(per_seed),
            "best_epochs": {s: r["best_epoch"] for s, r in summary["seeds"].items()},
            "seconds": round(time.perf_counter() - start),
        }
    report = {
        **run_info(__file__),
        "data": "tests/fixtures/mrqa (scripts/make_mrqa_fixture.py)",
        "train_questions": summary["train_questions"],
        "dev_questions": summary["dev_questions"],
        "config": summary["config"],
        "seeds": seeds,
        "metric": "MRQA official exact match and F1 (%), median over seeds",
        "arms": arms,
    }
    write_result(args.output, report)
    for name, arm in arms.items():
        print(name, {k: round(v, 1) for k, v in arm["median"].items()})


if __name__ == "__main__":
    main()
