"""Accuracy in bfloat16 against float32 (issue 50), seed by seed.

    python -m bench.studies.precision_parity --task-dir ../shared/data/tasks \\
        --seeds 1,2,3 --train-examples 2000 --epochs 2
    python -m bench.studies.precision_parity --tasks pretraining --seeds 0,1,2

`pretraining` is README command 1 (`pretrain/run.py` with no flags but the
precision and `{"seed": S}`, which seeds the weights and every draw), its
held-out RTD AUC at each evaluation recorded. A run already finished in
`--work-dir` is read, not rerun, so the two precisions can run as two processes
and a killed study resumes.

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
import json
import os
import pathlib
import statistics

from bench.result_file import write_result

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

TASKS = ("rt_polarity", "brown_pos", "pretraining")
PRECISIONS = ("float32", "mixed_bfloat16")


def first_sentences(source: pathlib.Path, target: pathlib.Path, count: int) -> str:
    """The first `count` (0: all) blank-line-separated sentences of a CoNLL file."""
    sentences = source.read_text(encoding="utf-8").strip().split("\n\n")
    sentences = sentences[:count] if count else sentences
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
            "train_examples": args.train_examples or None,
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


def pretraining_run(precision: str, seed: str, args) -> dict:
    """README command 1 at `precision` with weight and draw seed `seed`."""
    import keras

    from bench.studies.paper.pretraining import held_out_history
    from electra_tf.pretraining.run import pretrain
    from electra_tf.pretraining.settings import PretrainingFlags

    model_dir = pathlib.Path(args.work_dir) / "pretraining" / precision / seed
    finished = model_dir / "eval_results.json"
    if not finished.exists():
        hparams = json.dumps({"seed": int(seed)})
        pretrain(
            PretrainingFlags(
                model_dir=str(model_dir), hparams=hparams, precision=precision
            )
        )
        keras.backend.clear_session()  # the next run builds its own models
    training = json.loads((model_dir / "config.json").read_text())["training"]
    return {
        "test": json.loads(finished.read_text())["rtd_auc"],
        **{key: training[key] for key in ("precision", "jit_compile")},
        "rtd_auc_by_step": {
            point["step"]: point["rtd_auc"] for point in held_out_history(model_dir)
        },
    }


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--task-dir", default="../shared/data/tasks")
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--precisions", default=",".join(PRECISIONS))
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--pretrained", default="none", help="An encoder to tune.")
    parser.add_argument("--hparams", default="{}", help="JSON fine-tuning config.")
    parser.add_argument("--train-examples", type=int, default=2000, help="0: all.")
    parser.add_argument("--eval-sentences", type=int, default=1000, help="0: all.")
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
        for precision in args.precisions.split(","):
            runs = {}
            for seed in args.seeds.split(","):
                if task == "pretraining":
                    runs[seed] = pretraining_run(precision, seed, args)
                    continue
                output_dir = os.path.join(args.work_dir, task, precision, seed)
                flags = FinetuningFlags(
                    **task_flags(task, args),
                    pretrained=args.pretrained,
                    preset=args.preset,
                    hparams=args.hparams,
                    seeds=seed,
                    epochs=args.epochs,
                    precision=precision,
                    output_dir=output_dir,
                    overwrite=True,
                )
                # A finished run is read, not rerun (the study resumes).
                # (`test` is written last: without it the run was killed.)
                metrics = pathlib.Path(output_dir) / "metrics.json"
                summary = json.loads(metrics.read_text()) if metrics.exists() else {}
                summary = summary if "test" in summary else finetune(flags)[1]
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
        means = {p: results[task][p]["test_mean"] for p in results[task]}
        if set(PRECISIONS) <= set(means):
            difference = means["mixed_bfloat16"] - means["float32"]
            results[task]["bf16_minus_float32"] = difference
        write_result(
            args.output, {**run_info(__file__), **vars(args), "tasks": results}
        )


if __name__ == "__main__":
    main()
