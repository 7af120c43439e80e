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
from electra_tf.data.vocabulary import DEMO_VOCABULARY_REQUEST
from electra_tf.presets import get_preset


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
    precision: str = TrainingConfig.precision
    strategy: str = TrainingConfig.strategy
    devices: str | None = None
    tpu: str | None = None
    tpu_zone: str | None = None
    gcp_project: str | None = None
    steps_per_execution: int = TrainingConfig.steps_per_execution
    jit: str = "auto"


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
    (`electra_tf.distribution.resolve_jit_compile`). The model's
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
    steps = flags.steps or preset.optimizer.total_steps
    from_flags = {
        "model_dir": flags.model_dir,
        "train_steps": steps,
        "total_steps": steps,
        "batch_size": flags.batch_size or preset.batch_size,
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
    return configs
