"""Fine-tuning accuracy in bfloat16 against float32 (issue 50), seed by seed.

    python -m bench.studies.precision_parity --task-dir ../shared/data/tasks \\
        --seeds 1,2,3 --train-examples 2000 --epochs 2

For each task, precision and seed, one `finetune` run (one seed a run, so each
seed's test split is scored) from a randomly initialised `--preset` encoder:
`rt_polarity` (own-file classification, a seeded draw of `--train-examples`
training sentences) and `brown_pos` (tagging: the first `--train-examples`
training sentences, the first `--eval-sentences` of dev and test). Precisions
are given as such, never `auto`, so no figure depends on the CPU. Writes
`--output`: per task and precision the seeds' test and dev scores, their mean
and spread, and the difference of the means.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics

from bench.result_file import write_result

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

TASKS = ("rt_polarity", "brown_pos")
PRECISIONS = ("float32", "mixed_bfloat16")


def first_sentences(source: pathlib.Path, target: pathlib.Path, count: int) -> str:
    """The first `count` blank-line-separated sentences of a CoNLL file."""
    sentences = source.read_text(encoding="utf-8").strip().split("\n\n")[:count]
    target.write_text("\n\n".join(sentences) + "\n", encoding="utf-8")
    return str(target)


def task_flags(task: str, args) -> dict:
    directory = pathlib.Path(args.task_dir) / task
    if task == "rt_polarity":
        return {
            "train_file": str(directory / "train.tsv"),
            "dev_file": str(directory / "dev.tsv"),
            "test_file": str(directory / "test.tsv"),
            "text_columns": "sentence",
            "train_examples": args.train_examples,
        }
    work = pathlib.Path(args.work_dir)
    work.mkdir(parents=True, exist_ok=True)
    return {
        "task": "tagging",
        **{
            f"{split}_file": first_sentences(
                directory / f"{split}.conll",
                work / f"{split}.conll",
                args.train_examples if split == "train" else args.eval_sentences,
            )
            for split in ("train", "dev", "test")
        },
    }


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task-dir", required=True)
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--train-examples", type=int, default=2000)
    parser.add_argument("--eval-sentences", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--work-dir", default="/tmp/precision_parity")
    parser.add_argument("--output", default="bench/results/precision_parity.json")
    args = parser.parse_args(argv)

    from bench.run_info import run_info
    from electra_tf.finetuning.finetune import finetune
    from electra_tf.finetuning.settings import FinetuningFlags

    results = {}
    for task in args.tasks.split(","):
        results[task] = {}
        for precision in PRECISIONS:
            runs = {}
            for seed in args.seeds.split(","):
                output_dir = os.path.join(args.work_dir, task, precision, seed)
                flags = FinetuningFlags(
                    **task_flags(task, args),
                    pretrained="none",
                    preset=args.preset,
                    seeds=seed,
                    epochs=args.epochs,
                    precision=precision,
                    output_dir=output_dir,
                    overwrite=True,
                )
                _, summary = finetune(flags)
                runs[seed] = {
                    "test": summary["test"]["accuracy"],
                    "dev_score": summary["median"]["score"],
                    "precision": summary["precision"],
                    "jit_compile": summary["jit_compile"],
                }
                print(f"{task} {precision} seed {seed}: {runs[seed]}", flush=True)
            tests = [run["test"] for run in runs.values()]
            results[task][precision] = {
                "seeds": runs,
                "test_mean": statistics.mean(tests),
                "test_spread": max(tests) - min(tests),
            }
        means = {p: results[task][p]["test_mean"] for p in PRECISIONS}
        results[task]["bf16_minus_float32"] = means["mixed_bfloat16"] - means["float32"]
        write_result(
            args.output, {**run_info(__file__), **vars(args), "tasks": results}
        )
    for task, result in results.items():
        print(
            f"{task}: test accuracy float32 {result['float32']['test_mean']:.4f} "
            f"(spread {result['float32']['test_spread']:.4f}), bf16 "
            f"{result['mixed_bfloat16']['test_mean']:.4f} (spread "
            f"{result['mixed_bfloat16']['test_spread']:.4f})"
        )


if __name__ == "__main__":
    main()
