"""What pre-training buys: a pre-trained encoder against the same architecture
without pre-training, fine-tuned on the same task with the same seeds
(`compare_with_no_pretraining`; each run the trainer's `finetune_seed`, test
scored once after dev chose the epoch).

`run_tagging_demo` is what `finetune/demo.py` runs: the pre-training demo's
export against no pre-training on the bundled Brown POS excerpt
(`tagging.TaggingTask`), written to `comparison.json`.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
import os
import time
from collections.abc import Callable, Sequence

import keras
import numpy as np

from electra_tf.config import ConfigError
from electra_tf.finetuning.files import write_json
from electra_tf.finetuning.finetune import configured_task
from electra_tf.finetuning.settings import (
    DEMO_TAGGING,
    FinetuningFlags,
    parse_seeds,
)
from electra_tf.finetuning.starting_point import StartingPoint
from electra_tf.finetuning.tagging import TaggingTask, load_tagging_data
from electra_tf.finetuning.tagging_data import check_tags, read_conll
from electra_tf.finetuning.task import FinetuningTask
from electra_tf.finetuning.trainer import finetune_seed
from electra_tf.presets import DEMO_RECIPE

logger = logging.getLogger(__name__)

# The two arms: the pre-trained encoder, and the same one without pre-training
# (the name `--pretrained none` gives it).
ARMS = ("pretrained", "none")
SPLITS = ("dev", "test")


def spread(values: Sequence[float]) -> dict:
    """Mean, sample standard deviation, min, max and range of per-seed scores."""
    values = np.asarray(values, dtype=np.float64)
    return {
        "mean": float(values.mean()),
        "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
        "min": float(values.min()),
        "max": float(values.max()),
        "range": float(values.max() - values.min()),
    }


def compare_with_no_pretraining(
    task: FinetuningTask,
    baseline: StartingPoint,
    score_test: Callable[[keras.Model], tuple[dict, float]],
    seeds: Sequence[int],
    verbose: int | str = 0,
) -> dict:
    """Fine-tunes `task` from its pre-trained encoder and from `baseline`, per seed.

    Args:
        task: the data, the recipe (`task.config`) and the pre-trained
            starting point. Its data's test split, if any, is not read (only
            `write_outputs` would, and nothing here calls it).
        baseline: the "none" arm's starting point: the same architecture and
            vocabulary, randomly initialised (`StartingPoint.from_flags` with
            `--pretrained none --preset <export>`).
        score_test: `model -> (test metrics, test score)`, called once per
            run after training has restored its best dev epoch (for tagging,
            `TaggingTask.score` on labelled test sentences).
        seeds: one run per seed and arm; a seed fixes the head, dropout and
            the order of the training data, and for "none" the encoder.
        verbose: Keras' `fit` verbosity.

    Returns:
        Per arm each seed's results and each split's `spread`; per split the
        `gain` (difference of the means) and whether it exceeds both arms'
        ranges (`ahead_by_more_than_spread`).
    """
    if task.starting_point.pretrained is None or baseline.pretrained is not None:
        raise ValueError("the task starts pre-trained; the baseline does not")
    tasks = {"pretrained": task, "none": type(task)(task.data, task.config, baseline)}
    logger.info(
        "%s: score = %s, each seed's epoch chosen on dev",
        task.name,
        task.score_definition(),
    )
    arms = {}
    for arm, arm_task in tasks.items():
        per_seed = {}
        for seed in seeds:
            logger.info("%s: fine-tuning with seed %d", arm, seed)
            wall, cpu = time.perf_counter(), time.process_time()
            model, results = finetune_seed(arm_task, seed, verbose=verbose)
            test_metrics, test_score = score_test(model)
            per_seed[str(seed)] = {
                "dev": results["score"],
                "test": test_score,
                "best_epoch": results["best_epoch"],
                "epoch_scores": [epoch["score"] for epoch in results["epochs"]],
                "dev_metrics": results["dev"],
                "test_metrics": test_metrics,
                "seconds": round(time.perf_counter() - wall, 1),
                "cpu_seconds": round(time.process_time() - cpu, 1),
            }
            logger.info("%s, seed %d: %s", arm, seed, per_seed[str(seed)])
        arms[arm] = {
            "seeds": per_seed,
            **{
                split: spread([run[split] for run in per_seed.values()])
                for split in SPLITS
            },
        }
    pre, none = arms["pretrained"], arms["none"]
    gain = {split: pre[split]["mean"] - none[split]["mean"] for split in SPLITS}
    return {
        "score_definition": task.score_definition(),
        "arms": arms,
        "gain": gain,
        "ahead_by_more_than_spread": {
            split: bool(gain[split] > max(pre[split]["range"], none[split]["range"]))
            for split in SPLITS
        },
    }


# The tagging demo's recipe where it departs from the `tiny` recipe, chosen on
# the bundled excerpt's dev split with one seed (BENCHMARKS.md section 21):
# learning rate 3e-3, 2 epochs, and sequences of 64 pieces, the pre-training's
# length.
# What the demo writes into its output directory.
RESULT_FILE = "comparison.json"


def run_tagging_demo(flags: FinetuningFlags, command: str = "") -> tuple[str, dict]:
    """What `finetune/demo.py` runs: `flags.pretrained` against the same
    architecture without pre-training, on `train.conll`, `dev.conll` and
    (labelled) `test.conll` of `flags.data_dir` (default: the bundled Brown
    POS excerpt), with tagging's recipe and `DEMO_RECIPE` for flags left
    unset. Writes `RESULT_FILE` (with `command`, the date, the machine and its
    load) into the output directory; returns its path and contents.
    """
    wall, cpu, load = time.perf_counter(), time.process_time(), os.getloadavg()
    if flags.pretrained.lower() == "none":
        raise ConfigError("--pretrained none: the demo compares a pre-trained encoder")
    start = StartingPoint.from_flags(flags)
    baseline = StartingPoint.from_flags(
        dataclasses.replace(flags, pretrained="none", preset=flags.pretrained)
    )
    seeds = parse_seeds(flags.seeds)
    data_dir = flags.data_dir or DEMO_TAGGING
    # Train and dev only: the test split is read apart, labelled, and scored
    # once per run after dev has chosen the run's epoch.
    data = load_tagging_data(
        os.path.join(data_dir, "train.conll"), os.path.join(data_dir, "dev.conll")
    )
    test = read_conll(os.path.join(data_dir, "test.conll"))
    check_tags(test, data.tags, data.train.source)
    flags = dataclasses.replace(
        flags,
        task="tagging",
        **{k: v for k, v in DEMO_RECIPE.items() if getattr(flags, k) is None},
    )
    size, task = configured_task(TaggingTask, data, start, flags)
    comparison = compare_with_no_pretraining(
        task, baseline, functools.partial(task.score, sentences=test), seeds
    )
    result = {
        "command": command,
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": _machine(),
        "load_average": {"start": list(load), "end": list(os.getloadavg())},
        "pretrained": start.name,
        "data": data_dir,
        "train_sentences": len(data.train),
        "dev_words": sum(len(words) for words in data.dev.words),
        "test_words": sum(len(words) for words in test.words),
        "recipe": size,
        "config": task.settings(),
        "seeds": seeds,
        **comparison,
        "seconds": round(time.perf_counter() - wall, 1),
        "cpu_seconds": round(time.process_time() - cpu, 1),
    }
    output_dir = flags.output_dir or os.path.join("runs", "finetune", "tagging_demo")
    return write_json(os.path.join(output_dir, RESULT_FILE), result), result


def _machine() -> str:
    """The CPU's model (from /proc/cpuinfo where there is one) and count."""
    model = "unknown CPU"
    if os.path.exists("/proc/cpuinfo"):
        with open("/proc/cpuinfo") as cpuinfo:
            names = [line for line in cpuinfo if line.startswith("model name")]
        model = names[0].split(":", 1)[1].strip() if names else model
    return f"{model}, {os.cpu_count()} CPUs"


def format_comparison(result: dict) -> str:
    """`run_tagging_demo`'s result as a table: per arm and split the mean,
    standard deviation, range and every seed; then the gain."""
    lines = [
        f"pretrained: {result['pretrained']}; none: the same architecture and "
        "vocabulary, freshly initialised; "
        f"{result['train_sentences']:,} training sentences of {result['data']}",
        f"{result['score_definition'].removeprefix('dev ')}: each seed's epoch "
        "chosen on dev, test scored once",
        f"{'':<11} {'split':<5} {'mean':>7} {'std':>7} {'range':>7}  seeds",
    ]
    for arm in ARMS:
        runs = result["arms"][arm]
        for split in SPLITS:
            summary = runs[split]
            seeds = "  ".join(
                f"{seed}: {run[split]:.4f}" for seed, run in runs["seeds"].items()
            )
            lines.append(
                f"{arm:<11} {split:<5} {summary['mean']:>7.4f} {summary['std']:>7.4f} "
                f"{summary['range']:>7.4f}  {seeds}"
            )
    for split in SPLITS:
        gain = result["gain"][split]
        widest = max(runs[split]["range"] for runs in result["arms"].values())
        if result["ahead_by_more_than_spread"][split]:
            verdict = "ahead by more than the seeds' spread"
        elif gain > 0:
            verdict = "ahead, but within the seeds' spread"
        else:
            verdict = "not ahead"
        lines.append(
            f"{split}: pre-trained minus none {gain:+.4f}: pre-training is {verdict} "
            f"(the wider arm's range: {widest:.4f})"
        )
    lines.append(
        f"{result['seconds']:.0f} s wall, {result['cpu_seconds']:.0f} CPU-s "
        f"(load average {result['load_average']['start'][0]:.1f} at the start)"
    )
    lines.append(measured_reading(result["gain"]["test"]))
    return "\n".join(lines)


# What the project measured at the `cpu` preset (4 layers x 128, 12,000
# steps' worth of FLOPs for ELECTRA), the figures the demo's closing reading
# prints: Brown POS test accuracy with 8,000 training sentences, each arm's
# epoch chosen on dev, from `bench/results/paper_experiments.json`
# (`summary["pos"]`, keyed "<arm>@<step>"; BENCHMARKS.md, the paper's
# experiments). Kept in this one place; `tests/finetuning/test_demo_tagging.py`
# checks every figure against that file.
CPU_PRESET_POS_TEST = {
    "mlm@8500": ("MLM", "BERT-style MLM, --objective mlm", 0.961, 3, 3),
    "electra_gdes@6000": (
        "GDES",
        """ELECTRA with --hparams '{"embedding_sharing": "gdes"}'""",
        0.931,
        1,
        3,
    ),
    "none@0": ("no pre-training", "no pre-training", 0.920, 3, 3),
    "electric@4000": ("Electric", "Electric, --objective electric", 0.913, 1, 3),
    "electra@6000": ("tied ELECTRA", "ELECTRA as the preset has it", 0.900, 3, 3),
}
# Pre-training FLOPs of those runs, counted as the paper counts them
# (`setup["budget_flops"]` of the same file), and ELECTRA-Small's in the paper
# (Clark et al., 2020, Table 1).
CPU_PRESET_FLOPS = 2.16e14
ELECTRA_SMALL_FLOPS = 1.4e18


def measured_reading(test_gain: float) -> str:
    """What the demo's result means for a user: what this run's budget
    bought (`test_gain`, pre-trained minus none on test), what the project
    measured at the `cpu` preset (`CPU_PRESET_POS_TEST`), and the budgets at
    which the paper reports ELECTRA's advantage."""
    bought = "a gain" if test_gain > 0 else "no gain"
    none = CPU_PRESET_POS_TEST["none@0"][2]
    arms = [arm for key, arm in CPU_PRESET_POS_TEST.items() if key != "none@0"]
    ahead = " and ".join(arm[0] for arm in arms if arm[2] > none)
    behind = " and ".join(arm[0] for arm in arms if arm[2] <= none)
    flops = f"{CPU_PRESET_FLOPS / 1e14:.1f}e14"
    lines = [
        f"What this budget bought: {bought} on test ({test_gain:+.4f}). README "
        "command 1's demo preset (2 layers x 64, 5,000 steps) is sized to show "
        "the pipeline in minutes, not to make pre-training pay.",
        f"Measured at --preset cpu (4 layers x 128, {flops} pre-training FLOPs, "
        "about an hour on 2 cores): Brown POS test accuracy, 8,000 training "
        "sentences, epoch chosen on dev (pre-training runs x fine-tuning seeds):",
    ]
    for _, name, accuracy, runs, seeds in CPU_PRESET_POS_TEST.values():
        lines.append(f"  {accuracy:.3f}  {name} ({runs} x {seeds})")
    lines += [
        f"  {ahead} ahead of no pre-training; {behind} below it. Those test "
        "sentences also occur in that pre-training corpus (it includes Brown).",
        "The paper's smallest comparison of ELECTRA with MLM (ELECTRA-Small "
        f"against BERT-Small) is at {ELECTRA_SMALL_FLOPS / 1e18:.1f}e18 FLOPs, "
        f"{ELECTRA_SMALL_FLOPS / CPU_PRESET_FLOPS:,.0f}x this budget. At that "
        "CPU budget MLM (--objective mlm, 8,500 steps: the FLOPs of 6,000 "
        "ELECTRA steps) was ahead of every other arm (3 runs); GDES sharing "
        "was ahead of no pre-training in its one run (BENCHMARKS.md, the "
        "paper's experiments at CPU scale).",
    ]
    return "\n".join(lines)
