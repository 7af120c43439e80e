"""The fine-tuning deviations of docs/faithfulness.md, measured: our mean loss
against the original's sum, and our tagging head's dropout and segment 0
against the original's none and segment 1.

    python -m bench.suite.finetune_faithfulness \\
        --pretrained runs/pretrain/export/discriminator \\
        --rt-polarity-dir ../shared/data/tasks/rt_polarity --seeds 1,2,3

One pre-trained encoder (`--pretrained`, a keras-hub preset such as README
command 1's export; `none` with `--preset` for a randomly initialised one) is
fine-tuned under each arm, each with every seed; a seed fixes the head's
initialisation, the dropout draws and the order of the training data alike in
every arm (but for what the arm changes), so the arms' runs are paired by seed:

* `mean`: today's defaults;
* `sum`: `loss_reduction` "sum", the original's loss;
* `no_head_dropout`: `head_dropout` 0.0, the original's tagging head;
* `segment_1`: `segment_id` 1, the original's tagging inputs;
* `original`: the three together.

Tasks: `brown_pos`, tagging on the bundled Brown POS excerpt (`--brown-pos-dir`)
with the tagging demo's recipe (`presets.DEMO_RECIPE`), every arm; and
`rt_polarity`, own-file classification of the SST-2-layout files in
`--rt-polarity-dir` (a labelled test.tsv) with the recipe for the encoder's
width and the tagging demo's 64 tokens, the `mean` and `sum` arms only (the
original's classifier has the same head dropout, and its segments are ours).
Each run's epoch is chosen on dev as `finetune/run.py` does; test is read
once per run, after. Every run records each step's global gradient norm
before clipping and counts those below the clip norm: in the `mean` arm, the
steps the sum would have clipped and the mean does not.

Writes `--output` after every run (a run already there with the same settings
is kept, not rerun): per task and arm the seeds' dev and test accuracy, their
mean and standard deviation, and per arm its differences to `mean`, seed by
seed, with their mean and standard deviation.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

REPO = pathlib.Path(__file__).resolve().parents[2]
# Each arm's `--hparams` over the task's recipe.
ARMS = {
    "mean": {},
    "sum": {"loss_reduction": "sum"},
    "no_head_dropout": {"head_dropout": 0.0},
    "segment_1": {"segment_id": 1},
    "original": {"loss_reduction": "sum", "head_dropout": 0.0, "segment_id": 1},
}
# The arms where a task differs from the original: a classifier's head has
# the original's dropout, and its segments are the original's.
TASK_ARMS = {"brown_pos": tuple(ARMS), "rt_polarity": ("mean", "sum")}
BASELINE = "mean"
SPLITS = ("dev", "test")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument
    add("--pretrained", required=True, help="A keras-hub preset, or none.")
    add("--preset", default="tiny", help="With --pretrained none: its size.")
    add("--tasks", default=",".join(TASK_ARMS))
    add("--arms", default=",".join(ARMS), help="Each task runs those it has.")
    add("--seeds", default="1,2,3")
    add("--brown-pos-dir", default=str(REPO / "electra_tf/assets/tasks/brown_pos"))
    add("--rt-polarity-dir", default="../shared/data/tasks/rt_polarity")
    add("--train-sentences", type=int, default=0, help="Brown POS; 0: all.")
    add("--eval-sentences", type=int, default=0, help="Brown POS dev, test; 0: all.")
    add("--train-examples", type=int, default=0, help="rt_polarity; 0: all.")
    add("--epochs", type=int, help="Default: each task's recipe.")
    add("--threads", type=int, default=1, help="TensorFlow's intra- and inter-op.")
    add("--work-dir", default="/tmp/finetune_faithfulness")
    add("--output", default="bench/results/finetune_faithfulness.json")
    return parser.parse_args(argv)


def first_sentences(source: pathlib.Path, target: pathlib.Path, count: int) -> str:
    """The first `count` (0: all) blank-line-separated sentences of a CoNLL file."""
    sentences = source.read_text(encoding="utf-8").strip().split("\n\n")
    sentences = sentences[:count] if count else sentences
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n\n".join(sentences) + "\n", encoding="utf-8")
    return str(target)


def task_flags(task: str, args) -> dict:
    """The `FinetuningFlags` of a task's data and recipe."""
    from electra_tf.presets import DEMO_RECIPE

    if task == "rt_polarity":
        directory = pathlib.Path(args.rt_polarity_dir)
        return {
            **{f"{split}_file": str(directory / f"{split}.tsv") for split in SPLITS},
            "train_file": str(directory / "train.tsv"),
            "text_columns": "sentence",
            "train_examples": args.train_examples or None,
            # The pre-training's length, as the tagging demo's.
            "max_seq_length": DEMO_RECIPE["max_seq_length"],
            "epochs": args.epochs,
        }
    directory = pathlib.Path(args.brown_pos_dir)
    work = pathlib.Path(args.work_dir) / "brown_pos"
    counts = {"train": args.train_sentences, "dev": args.eval_sentences}
    counts["test"] = args.eval_sentences
    return {
        "task": "tagging",
        **{
            f"{split}_file": first_sentences(
                directory / f"{split}.conll", work / f"{split}.conll", count
            )
            for split, count in counts.items()
        },
        **DEMO_RECIPE,
        **({"epochs": args.epochs} if args.epochs else {}),
    }


def recording_optimizers():
    """A stand-in for `trainer.make_optimizer` whose optimizers are its own
    with each step's global gradient norm before clipping kept in `_norms`
    [total_steps]; and the list of the optimizers it made."""
    import keras

    from electra_tf.finetuning import trainer
    from electra_tf.optimization.optimizer import ElectraAdam

    class NormRecordingAdam(ElectraAdam):
        def _clip_gradients(self, grads):
            norm = keras.ops.sqrt(
                sum(keras.ops.sum(keras.ops.square(g)) for g in grads if g is not None)
            )
            self._norms.assign(
                keras.ops.scatter_update(
                    self._norms, keras.ops.reshape(self.iterations, (1, 1)), norm[None]
                )
            )
            return super()._clip_gradients(grads)

    made, original = [], trainer.make_optimizer

    def make_optimizer(config, num_layers, total_steps):
        optimizer = original(config, num_layers, total_steps)
        recording = NormRecordingAdam.from_config(optimizer.get_config())
        recording._norms = keras.Variable(
            keras.ops.zeros((total_steps,)), trainable=False, name="gradient_norms"
        )
        made.append(recording)
        return recording

    return make_optimizer, made


def finetune_run(task_name: str, arm: str, seed: int, args) -> dict:
    """One fine-tuning run: its dev and test accuracy, epochs and gradient norms."""
    from unittest import mock

    import keras
    import numpy as np

    from electra_tf.finetuning import trainer
    from electra_tf.finetuning.classification import ClassificationTask
    from electra_tf.finetuning.finetune import configured_task
    from electra_tf.finetuning.settings import FinetuningFlags
    from electra_tf.finetuning.starting_point import StartingPoint
    from electra_tf.finetuning.tagging import TaggingTask

    flags = FinetuningFlags(
        **task_flags(task_name, args),
        pretrained=args.pretrained,
        preset=args.preset,
        hparams=json.dumps(ARMS[arm]),
        seeds=str(seed),
        precision="float32",
        jit="off",
    )
    kind = TaggingTask if task_name == "brown_pos" else ClassificationTask
    # `finetune_seed` reads train and dev only; test is scored once, after.
    data, _ = kind.load_data(flags)
    test = data.test if kind is TaggingTask else next(iter(data.test.values()), None)
    if test is None or getattr(test, "tags", getattr(test, "labels", None)) is None:
        raise SystemExit(f"{flags.test_file}: no labels to score the test split by")
    _, task = configured_task(kind, data, StartingPoint.from_flags(flags), flags)
    make_optimizer, made = recording_optimizers()
    wall, cpu = time.perf_counter(), time.process_time()
    with mock.patch.object(trainer, "make_optimizer", make_optimizer):
        model, results = trainer.finetune_seed(task, seed, verbose=0)
    seconds = time.perf_counter() - wall, time.process_time() - cpu
    (dev,) = results["dev"].values()  # the one dev split's metrics
    if kind is TaggingTask:
        test_accuracy = task.score(model, test)[0]["accuracy"]
    else:
        dataset = test.to_dataset(task.config.eval_batch_size)
        metrics = model.evaluate(dataset, verbose=0, return_dict=True)
        test_accuracy = metrics["accuracy"]
    norms = np.asarray(made[-1]._norms.numpy(), np.float64)
    clip_norm = task.config.clip_norm
    keras.backend.clear_session()  # the next run builds its own model
    return {
        "dev": float(dev["accuracy"]),
        "test": float(test_accuracy),
        "best_epoch": results["best_epoch"],
        "epoch_scores": [epoch["score"] for epoch in results["epochs"]],
        "config": task.settings(),
        "steps": len(norms),
        "clip_norm": clip_norm,
        "steps_below_clip_norm": int((norms < clip_norm).sum()),
        "gradient_norm": {
            "median": float(np.median(norms)),
            "min": float(norms.min()),
            "max": float(norms.max()),
        },
        "seconds": round(seconds[0], 1),
        "cpu_seconds": round(seconds[1], 1),
    }


def summarise(runs: dict) -> dict:
    """Per arm the splits' spread over seeds and, against `BASELINE`, the
    paired differences (the same seed's run under each arm)."""
    from electra_tf.finetuning.pretraining_gain import spread

    summary = {}
    for arm, by_seed in runs.items():
        summary[arm] = {
            split: spread([run[split] for run in by_seed.values()]) for split in SPLITS
        }
        summary[arm]["steps_below_clip_norm"] = [
            f"{run['steps_below_clip_norm']}/{run['steps']}" for run in by_seed.values()
        ]
        if arm == BASELINE or BASELINE not in runs:
            continue
        base = runs[BASELINE]
        paired = [seed for seed in by_seed if seed in base]
        summary[arm][f"minus_{BASELINE}"] = {
            split: {
                "seeds": {s: by_seed[s][split] - base[s][split] for s in paired},
                **spread([by_seed[s][split] - base[s][split] for s in paired]),
            }
            for split in SPLITS
        }
    return summary


def format_summary(report: dict) -> str:
    lines = []
    for task, results in report["tasks"].items():
        lines.append(f"{task}: accuracy, mean ± std over seeds {report['seeds']}")
        for arm, summary in results["summary"].items():
            row = f"  {arm:<16}" + "  ".join(
                f"{split} {summary[split]['mean']:.4f} ± {summary[split]['std']:.4f}"
                for split in SPLITS
            )
            paired = summary.get(f"minus_{BASELINE}")
            if paired:
                row += "  minus mean: " + "  ".join(
                    f"{split} {paired[split]['mean']:+.4f} ± {paired[split]['std']:.4f}"
                    for split in SPLITS
                )
            below = ", ".join(summary["steps_below_clip_norm"])
            lines.append(row + f"  below clip norm: {below}")
    return "\n".join(lines)


def main(argv=None):
    args = parse_args(argv)
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)

    from bench.result_file import write_result
    from bench.run_info import run_info

    settings = {
        key: value
        for key, value in vars(args).items()
        if key not in ("output", "work_dir", "threads")
    }
    output = pathlib.Path(args.output)
    previous = json.loads(output.read_text()) if output.exists() else {}
    kept = previous.get("tasks", {}) if previous.get("settings") == settings else {}
    report = {
        **run_info(__file__),
        "settings": settings,
        "encoder": encoder_facts(args.pretrained),
        "seeds": args.seeds.split(","),
        "tasks": {},
    }
    arms = args.arms.split(",")
    for task in args.tasks.split(","):
        runs = {}
        for arm in (arm for arm in TASK_ARMS[task] if arm in arms):
            runs[arm] = {}
            for seed in report["seeds"]:
                done = kept.get(task, {}).get("runs", {}).get(arm, {}).get(seed)
                runs[arm][seed] = done or finetune_run(task, arm, int(seed), args)
                print(f"{task} {arm} seed {seed}: {runs[arm][seed]}", flush=True)
                report["tasks"][task] = {"runs": runs, "summary": summarise(runs)}
                write_result(output, report)
    print(format_summary(report))


def encoder_facts(pretrained: str) -> dict:
    """What the encoder is: its path and, for a pre-training export
    (`<model_dir>/export/discriminator`), the run's held-out evaluation."""
    facts = {"pretrained": pretrained}
    model_dir = pathlib.Path(pretrained).parent.parent
    evaluation = model_dir / "eval_results.json"
    if evaluation.exists():
        facts["pretraining_eval"] = json.loads(evaluation.read_text())
    return facts


if __name__ == "__main__":
    main()
