"""Pre-training objectives at equal compute: the paper's efficiency analysis on a CPU.

For each variant (an objective; optionally ELECTRA with other generator sizes
or a uniform generator) this pre-trains the SAME discriminator-sized model for
the same number of training FLOPs, counted as the paper counts them
(`electra_tf/pretraining/flops.py`): a variant whose step costs more gets fewer steps.
Each run keeps its encoder at several fractions of that budget (`--fractions`),
then every kept encoder, and a randomly initialised one (0 FLOPs), is
fine-tuned on rt_polarity (SST-2 layout) with several seeds. Written:

* `<out-dir>/results.json`: every finished pre-training segment and every
  fine-tuning run. Rerunning the same command skips what is recorded there
  and resumes a killed pre-training run from its newest checkpoint.
* `<output>.json`, `<output>.md`, `<output>.png`: the results, a markdown
  table and the plot of median dev accuracy against pre-training FLOPs, one
  line per variant (the paper's Figure 1 left and section 3.3), rewritten
  after every variant.
* `<output>_tensorboard/<variant>/`: the scalar pre-training curves of the
  `--tensorboard` variants, copied out of the run's logs (kilobytes).

The accuracy reported for a run is the dev accuracy after its last epoch (no
epoch is chosen on dev); the table shows the median over seeds.

Smoke run (what tests/bench/test_objectives_bench.py runs, smaller still):

    python -m bench.studies.objectives --preset tiny --max-seq-length 64 \\
        --corpus electra_tf/assets/corpus/brown.txt.gz --learn-vocab-size 0 \\
        --task-dir electra_tf/assets/tasks/rt_polarity --electra-steps 20 \\
        --checkpoint-every 5 --fractions 0.5,1 --seeds 1 \\
        --out-dir /tmp/objectives --output /tmp/objectives/report

`--estimate` times a few steps of every variant and of fine-tuning and prints
the expected CPU time of the run instead of running it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import pathlib
import shutil
import statistics
import sys
import time

from bench.run_info import run_info

# The variants, their labels and the FLOP-matched step plan are the paper
# experiments study's, which supersedes this one.
from bench.studies.paper_experiments import (  # noqa: F401
    LABELS,
    OBJECTIVES,
    Variant,
    flops_per_sequence,
    label,
    plan_steps,
)

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

DEFAULT_CORPUS = "/work/shared/data/corpus"
DEFAULT_TASK_DIR = "/work/shared/data/tasks/rt_polarity"
# What a held-out evaluation of each objective reports in the table.
HELD_OUT_METRICS = {
    "electra": ("mlm_accuracy", "rtd_auc"),
    "electra_15": ("mlm_accuracy", "rtd_auc"),
    "mlm": ("mlm_accuracy",),
    "replace_mlm": ("mlm_accuracy", "replace_mlm_accuracy"),
    "all_tokens_mlm": ("mlm_accuracy", "all_tokens_mlm_replaced_accuracy"),
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    data = parser.add_argument_group("pre-training data")
    data.add_argument(
        "--data",
        help="TFRecord pattern (train-*) from pretrain/build_data.py; its vocab.txt "
        "and eval-* shards are used. Default: built from --corpus into "
        "<out-dir>/data.",
    )
    data.add_argument(
        "--corpus",
        default=DEFAULT_CORPUS,
        help=f"Raw text to build TFRecords from (default {DEFAULT_CORPUS}).",
    )
    data.add_argument(
        "--learn-vocab-size",
        type=int,
        default=8192,
        help="Learn a WordPiece vocabulary of at most this many tokens from "
        "--corpus (default 8192; 0: use --vocab). On this CPU the tiny model's "
        "steps with BERT's 30,522 tokens take 2.5x (ELECTRA) to 10x (All-Tokens "
        "MLM) as long: sampling and the MLM heads scale with the vocabulary.",
    )
    data.add_argument(
        "--vocab",
        default=str(REPO / "electra_tf" / "assets" / "vocab.txt"),
        help="WordPiece vocabulary with --learn-vocab-size 0 (default: the "
        "bundled BERT uncased one).",
    )
    data.add_argument("--max-seq-length", type=int, default=128)
    data.add_argument(
        "--build-processes", type=int, default=2, help="Processes building data."
    )
    model = parser.add_argument_group("model and budget")
    model.add_argument(
        "--preset",
        default="tiny",
        help="Model preset (default tiny: the only preset whose 60-odd "
        "fine-tuning runs fit in a few CPU hours; see BENCHMARKS.md).",
    )
    model.add_argument(
        "--hparams",
        default="{}",
        help="JSON overrides of ModelConfig/PretrainingConfig/OptimizerConfig "
        "fields, applied to every variant (e.g. '{\"num_layers\": 4}').",
    )
    model.add_argument("--batch-size", type=int, default=32)
    budget = model.add_mutually_exclusive_group()
    budget.add_argument(
        "--flops", type=float, help="Training FLOPs of every variant (paper's count)."
    )
    budget.add_argument(
        "--electra-steps",
        type=int,
        default=2000,
        help="Budget = this many ELECTRA steps at the preset's size (default 2000).",
    )
    model.add_argument(
        "--warmup-fraction",
        type=float,
        default=0.1,
        help="Warm-up as a fraction of each variant's steps, unless --hparams "
        "sets warmup_steps (default 0.1).",
    )
    model.add_argument(
        "--fractions",
        default="0.125,0.25,0.5,1",
        help="Fractions of the budget at which encoders are kept and fine-tuned.",
    )
    model.add_argument(
        "--checkpoint-every",
        type=int,
        default=50,
        help="Steps between checkpoints and TensorBoard points; kept encoders "
        "fall on these boundaries (default 50).",
    )
    model.add_argument("--eval-steps", type=int, default=10, help="Held-out batches.")
    variants = parser.add_argument_group("variants")
    variants.add_argument(
        "--objectives",
        default=",".join(OBJECTIVES),
        help=f"Comma-separated objectives (default: {','.join(OBJECTIVES)}).",
    )
    variants.add_argument(
        "--generator-sizes",
        default="",
        help="Also ELECTRA with these generator widths (fractions of the "
        "discriminator's), e.g. 0.125,0.25,0.5,1 (the paper's sweep).",
    )
    variants.add_argument(
        "--uniform-generator",
        action="store_true",
        help="Also ELECTRA with uniformly random replacements (no generator).",
    )
    finetune = parser.add_argument_group("fine-tuning")
    finetune.add_argument(
        "--task-dir",
        default=DEFAULT_TASK_DIR,
        help=f"rt_polarity in SST-2 layout (default {DEFAULT_TASK_DIR}; a small "
        "excerpt ships in electra_tf/assets/tasks/rt_polarity).",
    )
    finetune.add_argument("--seeds", default="1,2,3")
    finetune.add_argument(
        "--finetune-hparams",
        default='{"max_seq_length": 64}',
        help="JSON overrides of FinetuningConfig (default: max_seq_length 64; "
        "the recipe is the one for the model's width).",
    )
    finetune.add_argument(
        "--finetune-examples",
        type=int,
        default=0,
        help="Use only the first N training sentences (0: all; for smoke runs).",
    )
    output = parser.add_argument_group("output")
    output.add_argument("--out-dir", default="runs/objectives")
    output.add_argument(
        "--output",
        default="bench/results/objectives",
        help="Prefix of the .json, .md, .png and _tensorboard/ outputs.",
    )
    output.add_argument(
        "--tensorboard",
        default="electra,mlm",
        help="Variants whose pre-training curves are copied out (default electra,mlm).",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="Threads of each TensorFlow thread pool (default 0: TensorFlow's "
        "choice, every core). 1 keeps the run to about one core of a shared "
        "machine.",
    )
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="Time a few steps of each variant and of fine-tuning, print the "
        "expected CPU time of the run, and stop.",
    )
    parser.add_argument(
        "--estimate-steps", type=int, default=20, help="Timed steps per variant."
    )
    return parser.parse_args(argv)


def _floats(text, name):
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(
            f"error: {name} must be comma-separated numbers: {text!r}"
        ) from None


def _json_object(text, name):
    from electra_tf.config import ConfigError, parse_hparams

    try:
        return parse_hparams(text, name)
    except ConfigError as error:
        raise SystemExit(f"error: {error}") from None


def make_variants(args) -> list[Variant]:
    variants = []
    for objective in (o.strip() for o in args.objectives.split(",") if o.strip()):
        if objective not in OBJECTIVES:
            raise SystemExit(
                f"error: unknown objective {objective!r} in --objectives; "
                f"choose from {', '.join(OBJECTIVES)}"
            )
        variants.append(Variant(objective, objective))
    for size in _floats(args.generator_sizes, "--generator-sizes"):
        variants.append(Variant(f"electra_generator_{size:g}", "electra", size))
    if args.uniform_generator:
        variants.append(
            Variant("electra_uniform_generator", "electra", uniform_generator=True)
        )
    if not variants:
        raise SystemExit("error: no variant to run")
    return variants


# === Results file ===
class Results:
    """`results.json`: what is done, written whole (temp file + rename) each time."""

    def __init__(self, path: pathlib.Path, setup: dict):
        self.path = path
        self.data = {"setup": setup, "variants": {}, "finetuning": {}}
        if path.exists():
            try:
                stored = json.loads(path.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                raise SystemExit(f"error: {path} is not valid JSON: {error}") from None
            changed = sorted(
                key
                for key in set(setup) | set(stored.get("setup", {}))
                if setup.get(key) != stored.get("setup", {}).get(key)
            )
            if changed:
                raise SystemExit(
                    f"error: {path} holds results of another setup (differs in "
                    f"{', '.join(changed)}); use another --out-dir"
                )
            self.data = stored

    def save(self) -> None:
        temporary = self.path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(self.data, indent=2, sort_keys=True) + "\n")
        os.replace(temporary, self.path)


# === Configurations ===
def base_configs(args, vocabulary, max_seq_length):
    from electra_tf.config import apply_hparams
    from electra_tf.presets import get_preset

    preset = get_preset(args.preset)
    configs = {
        "model": preset.model.override(vocabulary_size=vocabulary.size),
        "pretraining": preset.pretraining.override(max_seq_length=max_seq_length),
        "optimizer": preset.optimizer,
    }
    return apply_hparams(configs, _json_object(args.hparams, "--hparams"))


def variant_configs(base, variant: Variant):
    from electra_tf.config import apply_hparams

    return apply_hparams(base, variant.overrides())


# === Pre-training ===
def pretrain_variant(args, variant, configs, plan, data, results, strategy):
    """Trains `variant` segment by segment; records and keeps each encoder."""
    import keras

    from electra_tf.config import TrainingConfig
    from electra_tf.distribution import resolve_jit_compile
    from electra_tf.pretraining.run import run_pretraining

    total, kept = plan
    record = results.data["variants"].setdefault(variant.name, {})
    record.update(
        objective=variant.objective,
        overrides=variant.overrides(),
        configs={k: v.to_dict() for k, v in configs.items()},
        flops_per_sequence=flops_per_sequence(configs),
        total_steps=total,
    )
    record.setdefault("checkpoints", {})
    model_dir = pathlib.Path(args.out_dir) / variant.name
    optimizer = configs["optimizer"].override(total_steps=total)
    if "warmup_steps" not in _json_object(args.hparams, "--hparams"):
        optimizer = optimizer.override(
            warmup_steps=int(round(args.warmup_fraction * total))
        )
    for step in kept:
        if str(step) in record["checkpoints"]:
            continue
        training = TrainingConfig(
            model_dir=str(model_dir),
            train_data=data["train"],
            eval_data=data["eval"],
            train_steps=step,
            batch_size=args.batch_size,
            checkpoint_every=args.checkpoint_every,
            keep_checkpoints=2,
            # About ten held-out evaluations per run, and one at every kept step.
            eval_every_checkpoints=max(1, total // args.checkpoint_every // 10),
            eval_steps=args.eval_steps,
            jit_compile=resolve_jit_compile("auto", strategy),
        )
        print(f"[{variant.name}] pre-training to step {step} of {total}", flush=True)
        wall, cpu = time.perf_counter(), time.process_time()
        evaluation = run_pretraining(
            configs["model"],
            configs["pretraining"],
            optimizer,
            training,
            data["vocabulary"],
            strategy,
            verbose=0,
        )
        keras.backend.clear_session()  # the next segment builds its own model
        encoder_dir = model_dir / "encoders" / f"step_{step}"
        temporary = encoder_dir.with_name(encoder_dir.name + ".tmp")
        shutil.rmtree(temporary, ignore_errors=True)
        shutil.copytree(model_dir / "export" / "discriminator", temporary)
        shutil.rmtree(encoder_dir, ignore_errors=True)
        os.replace(temporary, encoder_dir)
        record["checkpoints"][str(step)] = {
            "step": step,
            "flops": step * args.batch_size * record["flops_per_sequence"],
            "encoder": str(encoder_dir),
            "held_out": evaluation,
            "wall_seconds": time.perf_counter() - wall,
            "cpu_seconds": time.process_time() - cpu,
        }
        results.save()
        shown = {k: round(v, 4) for k, v in evaluation.items() if k != "step"}
        print(f"[{variant.name}] step {step}: held-out {shown}", flush=True)


# === Fine-tuning ===
def load_task(args):
    from electra_tf.finetuning.glue_readers import load_glue_split
    from electra_tf.finetuning.glue_tasks import get_task
    from electra_tf.finetuning.run import TaskData

    task = get_task("sst2")  # rt_polarity is in SST-2's layout
    train = load_glue_split(task, "train", args.task_dir)
    if args.finetune_examples:
        train = dataclasses.replace(
            train,
            texts=tuple(t[: args.finetune_examples] for t in train.texts),
            labels=train.labels[: args.finetune_examples],
        )
    dev = load_glue_split(task, "dev", args.task_dir)
    return task, TaskData(train=train, dev={"dev": dev}, test={})


def finetuning_config(args, hidden_dim):
    from electra_tf.distribution import resolve_jit_compile
    from electra_tf.finetuning.settings import recipe_for_width

    _, recipe = recipe_for_width(hidden_dim)
    recipe = recipe.override(jit_compile=resolve_jit_compile("auto"))
    return recipe.override(**_json_object(args.finetune_hparams, "--finetune-hparams"))


def finetune_point(args, key, make_classifier, task, data, config, results, seeds):
    """Fine-tunes one encoder (or the random baseline) with every seed."""
    import keras

    from electra_tf.finetuning.run import finetune_seed

    record = results.data["finetuning"].setdefault(key, {"seeds": {}})
    for seed in seeds:
        if str(seed) in record["seeds"]:
            continue
        wall, cpu = time.perf_counter(), time.process_time()
        _, outcome = finetune_seed(make_classifier, task, data, config, seed, verbose=0)
        accuracies = [epoch["dev"]["dev"]["accuracy"] for epoch in outcome["epochs"]]
        record["seeds"][str(seed)] = {
            "dev_accuracy": accuracies[-1],
            "dev_accuracy_per_epoch": accuracies,
            "wall_seconds": time.perf_counter() - wall,
            "cpu_seconds": time.process_time() - cpu,
        }
        results.save()
        print(f"[{key}] seed {seed}: dev accuracy {accuracies[-1]:.4f}", flush=True)
        keras.backend.clear_session()  # dozens of models in one process


def finetune_all(args, variants, base, results, vocabulary, seeds):
    from electra_tf.finetuning.run import build_classifier

    task, data = load_task(args)
    config = finetuning_config(args, base["model"].hidden_dim)
    results.data["finetuning_config"] = config.to_dict()

    def random_init():
        return build_classifier(
            task, config, None, base["model"], vocabulary=vocabulary
        )

    finetune_point(args, "none@0", random_init, task, data, config, results, seeds)
    for variant in variants:
        checkpoints = results.data["variants"].get(variant.name, {}).get("checkpoints")
        records = sorted((checkpoints or {}).items(), key=lambda x: int(x[0]))
        for step, point in records:

            def pretrained(encoder=point["encoder"]):
                return build_classifier(task, config, encoder)

            key = f"{variant.name}@{step}"
            finetune_point(args, key, pretrained, task, data, config, results, seeds)


# === Report ===
def summarise(results, variants) -> dict:
    """Per variant, the points (FLOPs, step, median/min/max dev accuracy)."""
    summary = {}
    finetuning = results.data["finetuning"]

    def point(key, flops, step, held_out=None):
        seeds = finetuning.get(key, {}).get("seeds", {})
        if not seeds:
            return None
        accuracies = [run["dev_accuracy"] for run in seeds.values()]
        return {
            "flops": flops,
            "step": step,
            "seeds": len(accuracies),
            "median": statistics.median(accuracies),
            "min": min(accuracies),
            "max": max(accuracies),
            "held_out": held_out or {},
        }

    summary["none"] = [p for p in [point("none@0", 0.0, 0)] if p]
    for variant in variants:
        checkpoints = results.data["variants"].get(variant.name, {}).get("checkpoints")
        points = []
        records = sorted((checkpoints or {}).items(), key=lambda x: int(x[0]))
        for step, record in records:
            p = point(
                f"{variant.name}@{step}", record["flops"], int(step), record["held_out"]
            )
            if p:
                points.append(p)
        summary[variant.name] = points
    return summary


def write_report(args, results, variants, summary) -> None:
    output = pathlib.Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    setup = results.data["setup"]
    payload = {
        "setup": setup,
        "finetuning_config": results.data.get("finetuning_config"),
        "variants": {
            name: {
                k: v
                for k, v in results.data["variants"].get(name, {}).items()
                if k != "configs"
            }
            for name in summary
            if name != "none"
        },
        "summary": summary,
    }
    output.with_suffix(".json").write_text(
        json.dumps({**run_info(__file__), **payload}, indent=2, sort_keys=True) + "\n"
    )
    output.with_suffix(".md").write_text(markdown_table(results, variants, summary))
    plot(summary, output.with_suffix(".png"), setup)


def markdown_table(results, variants, summary) -> str:
    setup = results.data["setup"]
    fractions = setup["fractions"]
    budget = setup["budget_flops"]

    def cell(p):
        if p["seeds"] == 1:
            return f"{p['median']:.3f}"
        return f"{p['median']:.3f} [{p['min']:.3f}, {p['max']:.3f}]"

    lines = [
        f"Budget {budget:.3g} training FLOPs per variant (the paper's count), "
        f"batch {setup['batch_size']}. Cells: rt_polarity dev accuracy after the "
        "last fine-tuning epoch, median over seeds [min, max], at the kept "
        "encoders (columns: pre-training FLOPs; each run's steps are rounded to "
        f"multiples of {setup['checkpoint_every']}, see the JSON for exact FLOPs).",
        "",
        "| variant | steps | FLOPs/seq | 0 | "
        + " | ".join(f"{f * budget:.2g}" for f in fractions)
        + " | held-out at the end |",
        "|---|---:|---:|---:|" + "---:|" * len(fractions) + "---|",
    ]
    for b in summary.get("none") or []:
        lines.append(
            f"| {label('none')} | 0 | 0 | {cell(b)} | "
            + " | " * (len(fractions) - 1)
            + " | |"
        )
    for variant in variants:
        record = results.data["variants"].get(variant.name)
        if not record:
            continue
        points = summary.get(variant.name) or []
        # A run too short to keep an encoder at every fraction leaves gaps.
        cells = [""] * len(fractions)
        for p in points:
            column = min(
                range(len(fractions)),
                key=lambda i: abs(fractions[i] * budget - p["flops"]),
            )
            cells[column] = cell(p)
        held_out = ""
        if points:
            metrics = points[-1]["held_out"]
            held_out = ", ".join(
                f"{name} {metrics[name]:.3f}"
                for name in HELD_OUT_METRICS[variant.objective]
                if name in metrics
            )
        lines.append(
            f"| {label(variant.name)} | {record['total_steps']} | "
            f"{record['flops_per_sequence']:.3g} | | "
            + " | ".join(cells)
            + f" | {held_out} |"
        )
    return "\n".join(lines) + "\n"


def plot(summary, path, setup) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    baseline = summary.get("none") or []
    for name, points in summary.items():
        if name == "none" or not points:
            continue
        points = baseline + points  # every curve starts from no pre-training
        x = [p["flops"] for p in points]
        y = [p["median"] for p in points]
        errors = [
            [p["median"] - p["min"] for p in points],
            [p["max"] - p["median"] for p in points],
        ]
        axes.errorbar(x, y, yerr=errors, marker="o", capsize=3, label=label(name))
    if baseline:
        axes.axhline(baseline[0]["median"], color="grey", linestyle=":", linewidth=1)
    axes.set_xlabel("pre-training FLOPs (paper's count)")
    axes.set_ylabel("rt_polarity dev accuracy (median of seeds)")
    axes.set_title(
        f"Equal-compute comparison, {setup['preset']} "
        f"{setup['hparams'] if setup['hparams'] != {} else ''}".strip()
    )
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def copy_scalar_curves(model_dir: pathlib.Path, destination: pathlib.Path) -> int:
    """Rewrites the run's epoch-level scalars into small event files.

    The run's own logs also hold the graph, per-batch duplicates and text
    summaries (megabytes); the curves are the epoch scalars and the learning
    rate. Returns the number of points written.
    """
    import tensorflow as tf

    written = 0
    for split in ("train", "validation", "extra"):
        points = {}
        for path in sorted((model_dir / "logs" / split).glob("events.out.tfevents.*")):
            for event in tf.compat.v1.train.summary_iterator(str(path)):
                for value in event.summary.value:
                    keep = value.tag.startswith("epoch_") or split == "extra"
                    if not keep or value.metadata.plugin_data.plugin_name != "scalars":
                        continue
                    number = float(tf.make_ndarray(value.tensor))
                    points[value.tag, event.step] = number
        if not points:
            continue
        target = destination / split
        shutil.rmtree(target, ignore_errors=True)
        writer = tf.summary.create_file_writer(str(target))
        with writer.as_default():
            for (tag, step), number in sorted(points.items(), key=lambda x: x[0][1]):
                tf.summary.scalar(tag, number, step=step)
        writer.close()
        written += len(points)
    return written


# === Estimate ===
def _median_step_seconds(model, dataset, steps):
    """Median time between consecutive train steps of one `fit` call.

    Intervals, not the call's duration: `fit` spends seconds setting up and
    tracing, which would swamp a few timed steps.
    """
    import keras

    times = []

    class Timer(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            times.append(time.perf_counter())

    model.fit(dataset, steps_per_epoch=steps + 3, verbose=0, callbacks=[Timer()])
    intervals = [b - a for a, b in zip(times[2:], times[3:])]
    return statistics.median(intervals)


def estimate(args, variants, base, plans, data, seeds):
    """Times steps of each variant and of fine-tuning; prints the run's cost."""
    import keras
    import tensorflow as tf

    from electra_tf.data.input_pipeline import make_pretraining_dataset
    from electra_tf.finetuning.glue_metrics import task_metrics
    from electra_tf.finetuning.run import build_classifier, make_optimizer
    from electra_tf.pretraining.run import build_pretrainer

    batches = make_pretraining_dataset(
        data["train"], args.batch_size, base["pretraining"].max_seq_length
    )
    batch = next(iter(batches))
    repeated = tf.data.Dataset.from_tensors(batch).repeat()
    rows = []
    for variant in variants:
        configs = variant_configs(base, variant)
        model = build_pretrainer(
            configs["model"],
            configs["pretraining"],
            configs["optimizer"],
            data["vocabulary"],
            jit_compile=False,
        )
        seconds = _median_step_seconds(model, repeated, args.estimate_steps)
        total, kept = plans[variant.name]
        rows.append((variant.name, seconds, total, len(kept)))
        keras.backend.clear_session()

    task, task_data = load_task(args)
    config = finetuning_config(args, base["model"].hidden_dim)
    classifier = build_classifier(
        task, config, None, base["model"], vocabulary=data["vocabulary"]
    )
    classifier.compile(
        optimizer=make_optimizer(config, classifier.backbone.num_layers, 1000),
        metrics=task_metrics(task),
        jit_compile=config.jit_compile,
    )
    train = task_data.train.to_dataset(config.batch_size).repeat()
    finetune_step = _median_step_seconds(classifier, train, args.estimate_steps)
    dev = task_data.dev["dev"].to_dataset(config.eval_batch_size)
    classifier.evaluate(dev, verbose=0)  # trace
    start = time.perf_counter()
    classifier.evaluate(dev, verbose=0)
    dev_seconds = time.perf_counter() - start

    epochs = config.epochs or task.epochs
    steps = epochs * -(-len(task_data.train) // config.batch_size)
    per_finetune = steps * finetune_step + epochs * dev_seconds
    # Tracing, evaluation and export around each pre-training segment, and
    # building each classifier: a rough allowance, not measured here.
    segment_overhead, finetune_overhead = 60.0, 15.0
    print(f"\n{'variant':28} {'s/step':>7} {'steps':>7} {'pre-train min':>14}")
    total_seconds = 0.0
    finetunes = 1  # the no-pre-training baseline
    for name, seconds, total, segments in rows:
        minutes = (total * seconds + segments * segment_overhead) / 60
        total_seconds += minutes * 60
        finetunes += segments
        print(f"{name:28} {seconds:7.3f} {total:7d} {minutes:14.1f}")
    finetune_seconds = finetunes * len(seeds) * (per_finetune + finetune_overhead)
    print(
        f"\nfine-tuning: {finetune_step:.3f} s/step x {steps} steps + {epochs} dev "
        f"passes of {dev_seconds:.1f} s = {per_finetune / 60:.1f} min per run, "
        f"{finetunes} encoders x {len(seeds)} seeds = {finetune_seconds / 60:.0f} min"
    )
    print(
        f"estimated total: {(total_seconds + finetune_seconds) / 3600:.1f} h "
        "(wall time on this machine at its current load; includes 60 s per "
        "pre-training segment and 15 s per fine-tuning run of overhead)"
    )


# === Main ===
def prepare_data(args):
    from electra_tf.data.input_pipeline import read_data_stats
    from electra_tf.data.preparation import prepare_pretraining_data

    data = prepare_pretraining_data(
        args.out_dir,
        # With --data, the length the TFRecords were built with.
        None if args.data else args.max_seq_length,
        data=args.data,
        corpus=[args.corpus],
        vocab=None if args.learn_vocab_size else args.vocab,
        learn_vocab_size=args.learn_vocab_size,
        num_shards=4,
        eval_fraction=0.02,
        num_processes=args.build_processes,
        progress=False,
    )
    stats = read_data_stats(data.data_dir) or {}
    return {
        "train": data.train_data,
        "eval": data.eval_data,
        "vocabulary": data.vocabulary,
        "max_seq_length": data.max_seq_length,
        "stats": {k: stats.get(k) for k in ("train_examples", "eval_examples")},
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    fractions = _floats(args.fractions, "--fractions")
    if not fractions or not all(0.0 < f <= 1.0 for f in fractions):
        raise SystemExit(f"error: --fractions must be in (0, 1]: {args.fractions!r}")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        raise SystemExit(f"error: --seeds must be integers: {args.seeds!r}") from None
    variants = make_variants(args)
    if not pathlib.Path(args.task_dir, "train.tsv").exists():
        raise SystemExit(f"error: {args.task_dir}/train.tsv not found (--task-dir)")

    if args.threads < 0:
        raise SystemExit(f"error: --threads must be 0 or more, got {args.threads}")

    import tensorflow as tf

    from electra_tf.errors import ElectraError

    if args.threads:
        # Before TensorFlow starts its runtime: later calls raise.
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    out_dir = pathlib.Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        data = prepare_data(args)
        base = base_configs(args, data["vocabulary"], data["max_seq_length"])
        configs = {v.name: variant_configs(base, v) for v in variants}
        budget = args.flops
        if budget is None:
            electra = variant_configs(base, Variant("electra", "electra"))
            budget = args.electra_steps * args.batch_size * flops_per_sequence(electra)
        plans = {
            name: plan_steps(
                budget,
                flops_per_sequence(c),
                args.batch_size,
                args.checkpoint_every,
                fractions,
            )
            for name, c in configs.items()
        }
    except ElectraError as error:
        raise SystemExit(f"error: {error}") from None
    for name, (total, kept) in plans.items():
        print(f"{name}: {total} steps, encoders kept at {kept}", flush=True)
    if args.estimate:
        estimate(args, variants, base, plans, data, seeds)
        return 0

    setup = {
        "preset": args.preset,
        "hparams": _json_object(args.hparams, "--hparams"),
        "batch_size": args.batch_size,
        "budget_flops": budget,
        "fractions": fractions,
        "checkpoint_every": args.checkpoint_every,
        "warmup_fraction": args.warmup_fraction,
        "data": data["train"],
        "vocabulary_md5": data["vocabulary"].md5(),
        "task_dir": args.task_dir,
        "finetune_hparams": _json_object(args.finetune_hparams, "--finetune-hparams"),
        "finetune_examples": args.finetune_examples,
    }
    results = Results(out_dir / "results.json", setup)
    results.data["data_stats"] = data["stats"]
    strategy = tf.distribute.get_strategy()
    tensorboard = {t.strip() for t in args.tensorboard.split(",") if t.strip()}
    vocabulary = data["vocabulary"]
    finetune_all(args, [], base, results, vocabulary, seeds)  # the baseline first
    for variant in variants:
        plan = plans[variant.name]
        pretrain_variant(
            args, variant, configs[variant.name], plan, data, results, strategy
        )
        finetune_all(args, [variant], base, results, vocabulary, seeds)
        if variant.name in tensorboard:
            destination = pathlib.Path(f"{args.output}_tensorboard") / variant.name
            copy_scalar_curves(out_dir / variant.name, destination)
        write_report(args, results, variants, summarise(results, variants))
    print(pathlib.Path(args.output).with_suffix(".md").read_text(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
