"""A run's settings: flags, a preset and `--hparams` become its configs in one pass.

Like the original's `configure_pretraining.py` (and nanoGPT's train script), every
setting is decided here, once, before anything runs: `resolve_configs` starts from
the preset, lays the flags over it and `--hparams` over the flags (so `--hparams`
wins, and its unknown keys are an error), and builds each config once. The two
facts that come from the data, not from a setting (the vocabulary's size and the
TFRecord patterns), are added by `RunConfigs.for_data` when the data are ready.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from electra_tf.config import (
    ConfigError,
    ModelConfig,
    OptimizerConfig,
    PretrainingConfig,
    TrainingConfig,
    check_model_and_objective,
    parse_hparams,
    route_hparams,
)
from electra_tf.presets import DEMO_VOCABULARY_REQUEST, get_preset


@dataclasses.dataclass(frozen=True)
class PretrainingFlags:
    """What a user asked for (`pretrain/run.py`'s flags), and each flag's default
    (the command line sets none of its own); None: the preset's value."""

    # Data (see `electra_tf.data.preparation.prepare_pretraining_data`).
    data: str | None = None
    eval_data: str | None = None
    corpus: tuple[str, ...] = ()
    # The feature `tfds:` corpora read their text from; None: inferred.
    tfds_text_field: str | None = None
    vocab: str | None = None
    learn_vocab_size: int = DEMO_VOCABULARY_REQUEST
    lowercase: bool = True
    skip_corrupt_files: bool = False
    # Model and objective.
    preset: str = "demo"
    objective: str | None = None
    # A JSON object (or dict) of config fields, e.g. '{"mask_prob": 0.2}'.
    hparams: str | dict = "{}"
    init_checkpoint: str | None = None
    # The run.
    model_dir: str = TrainingConfig.model_dir
    steps: int | None = None
    batch_size: int | None = None
    learning_rate: float | None = None
    max_seq_length: int | None = None
    checkpoint_every: int | None = None
    # Resolved per machine and width (`electra_tf.precision`); parity measured
    # in BENCHMARKS.md section 24.
    precision: str = "auto"
    strategy: str = TrainingConfig.strategy
    devices: str | None = None
    tpu: str | None = None
    tpu_zone: str | None = None
    gcp_project: str | None = None
    steps_per_execution: int = TrainingConfig.steps_per_execution
    jit: str = "auto"

    def __post_init__(self):
        # A count of 0 (or less) is never "the default": refused, as
        # fine-tuning's --epochs 0 is, rather than read as "not given".
        for name in POSITIVE_FLAGS:
            value = getattr(self, name)
            if value is not None and value <= 0:
                flag = "--" + name.replace("_", "-")
                raise ConfigError(f"{flag} must be positive, got {value}")
        if self.data and self.corpus:
            raise ConfigError(
                "--corpus and --data exclude each other: --data reads TFRecords "
                "already built, --corpus builds them from text; give one"
            )


# The flags that count something: None means "the preset's", and a value must
# be positive.
POSITIVE_FLAGS = (
    "steps",
    "batch_size",
    "learning_rate",
    "max_seq_length",
    "checkpoint_every",
    "steps_per_execution",
    "learn_vocab_size",
)


@dataclasses.dataclass(frozen=True)
class RunConfigs:
    """The four configs of a pre-training run."""

    model: ModelConfig
    pretraining: PretrainingConfig
    optimizer: OptimizerConfig
    training: TrainingConfig

    def for_data(self, vocabulary_size: int, train_data: str, eval_data: str):
        """These configs with the data's vocabulary size and TFRecord patterns."""
        return dataclasses.replace(
            self,
            model=self.model.override(vocabulary_size=vocabulary_size),
            training=self.training.override(train_data=train_data, eval_data=eval_data),
        )

    def to_dict(self) -> dict[str, dict[str, Any]]:
        return {
            name: getattr(self, name).to_dict()
            for name in ("model", "pretraining", "optimizer", "training")
        }


def resolve_configs(flags: PretrainingFlags, *, jit_compile: bool) -> RunConfigs:
    """The run's configs: the preset, then the flags, then `--hparams`, in one pass.

    `jit_compile` is `--jit` resolved for the strategy
    (`electra_tf.distribution.resolve_jit_compile`), and `flags.precision`
    a resolved one (`auto` is `electra_tf.precision.resolve_precision`'s
    to decide, as `pretrain` does). The model's
    `vocabulary_size` is the preset's until `RunConfigs.for_data` sets the
    vocabulary's; `--hparams` cannot set it (give `--vocab` instead).

    Raises:
        ConfigError: an unknown preset, hparam or objective, a value out of
            range, settings that do not go together
            (`check_model_and_objective`), or `--hparams` that is not a JSON
            object.
    """
    preset = get_preset(flags.preset)
    hparams = parse_hparams(flags.hparams)
    if "vocabulary_size" in hparams:
        raise ConfigError(
            "vocabulary_size is the vocabulary's: give --vocab, not --hparams"
        )
    steps = preset.optimizer.total_steps if flags.steps is None else flags.steps
    batch_size = preset.batch_size if flags.batch_size is None else flags.batch_size
    from_flags = {
        "model_dir": flags.model_dir,
        "train_steps": steps,
        "total_steps": steps,
        "batch_size": batch_size,
        "checkpoint_every": flags.checkpoint_every,
        "strategy": flags.strategy,
        "precision": flags.precision,
        "steps_per_execution": flags.steps_per_execution,
        "skip_corrupt_files": flags.skip_corrupt_files,
        "learning_rate": flags.learning_rate,
        "max_seq_length": flags.max_seq_length,
        "objective": flags.objective,
    }
    changes = {k: v for k, v in from_flags.items() if v is not None}
    # --jit is decided with the strategy, after --hparams (as a flag always was).
    changes = {**changes, **hparams, "jit_compile": jit_compile}
    base = {
        "model": preset.model,
        "pretraining": preset.pretraining,
        "optimizer": preset.optimizer,
        "training": TrainingConfig(),
    }
    routed = route_hparams(base, changes)
    configs = RunConfigs(
        **{name: config.override(**routed[name]) for name, config in base.items()}
    )
    check_model_and_objective(configs.model, configs.pretraining)
    check_position_table(
        configs.pretraining.max_seq_length, configs.model.max_sequence_length, flags
    )
    return configs


def check_position_table(max_seq_length: int, positions: int, flags) -> None:
    """Raises `ConfigError` when the examples are longer than the model's
    position table (before any data are built)."""
    if max_seq_length <= positions:
        return
    raise ConfigError(
        f"max_seq_length {max_seq_length} is longer than the {positions} positions "
        f"of preset {flags.preset!r} (its max_sequence_length): use "
        f"--max-seq-length {positions} or less, or --hparams "
        f"'{{\"max_sequence_length\": {max_seq_length}}}' for a model with more "
        "positions"
    )


# What a resumed run may change (flags a user may give differently when they
# rerun a model directory): paths (a directory copied or moved), how long it
# trains and its peak learning rate (lowered after an instability, as the
# original's users did), how and where it runs, and what is kept or
# evaluated. Every other setting is the run's: the model, the objective, the
# rest of the optimizer, the batch and the data order. `config.json` records
# each resume's changes (`resumed`), so it keeps saying what trained the run.
RESUMABLE_SETTINGS = frozenset(
    {
        "model_dir",
        "train_data",
        "eval_data",
        "train_steps",
        "total_steps",
        "learning_rate",
        "keep_checkpoints",
        "eval_every_checkpoints",
        "eval_steps",
        "strategy",
        "jit_compile",
        "steps_per_execution",
        "skip_corrupt_files",
    }
)


def resume_changes(
    run_config: dict, configs: dict, checkpoint: str, config_path: str, step: int
) -> dict[str, list]:
    """The resumable settings that `configs` changes from the run's `config.json`.

    `run_config` is the run's `config.json` as a dict and `configs` this
    call's, in the same form (`{"model": {...}, "pretraining": {...}, ...}`);
    `step` is the checkpoint's. Returns `{setting: [run's value, new value]}`
    for the settings of `RESUMABLE_SETTINGS` that differ, and for
    `checkpoint_every` if it changes to a divisor of `step` (the run's epochs
    are counted in checkpoints from step 0, so the resumed run's must start at
    `step`; e.g. more --steps than a run shorter than its checkpoint interval).

    Raises:
        ConfigError: naming every other setting that differs, with the run's
            value and the new one (the objective first, as the likeliest).
    """
    changed, refused = {}, []
    for section, values in configs.items():
        stored = run_config.get(section, {})
        for name, value in values.items():
            if name not in stored or stored[name] == value:
                continue
            resumable = name in RESUMABLE_SETTINGS or (
                name == "checkpoint_every" and step % value == 0
            )
            if resumable:
                changed[name] = [stored[name], value]
            else:
                refused.append(f"{name} {stored[name]!r}, not {value!r}")
    if refused:
        refused.sort(key=lambda text: not text.startswith("objective "))
        raise ConfigError(
            f"cannot resume from {checkpoint}: its run was trained with "
            f"{'; '.join(refused)} ({config_path}); rerun with the run's "
            "settings, or give another --model-dir for a new run (a resumed run "
            f"may change only {', '.join(sorted(RESUMABLE_SETTINGS))})"
        )
    return changed
