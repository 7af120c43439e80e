"""A fine-tuning run's settings: flags, the size's recipe and `--hparams`, in one pass.

`resolve_finetuning_config` starts from the paper's recipe for the encoder's width
(`presets.RECIPES`: `FinetuningConfig`s, beside the pre-training presets), lays the
flags over it and `--hparams` over the flags, and builds the run's config once.
"""

from __future__ import annotations

import dataclasses
import os

from electra_tf.config import ConfigError, FinetuningConfig, parse_hparams
from electra_tf.presets import recipe_for_width

# The pre-training demo's export, which the fine-tuning demo starts from.
DEMO_PRETRAINED = "runs/pretrain/export/discriminator"
_ASSETS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "assets")
# The demo task: a movie-review excerpt in SST-2's layout.
DEMO_DATA = os.path.join(_ASSETS, "tasks", "rt_polarity")
# The tagging demo: 2,000 training sentences of the Brown POS task, CoNLL layout.
DEMO_TAGGING = os.path.join(_ASSETS, "tasks", "brown_pos")


@dataclasses.dataclass(frozen=True)
class FinetuningFlags:
    """What a user asked for: `finetune/run.py`'s flags (their meanings are
    its `--help`), each flag's default here (the command line sets none of its
    own). None: the kind's or the recipe's value."""

    task: str | None = None
    pretrained: str = DEMO_PRETRAINED
    data_dir: str | None = None
    tfds: bool = False
    train_file: str | None = None
    dev_file: str | None = None
    test_file: str | None = None
    text_columns: str | None = None  # comma-separated; None: "text"
    label_column: str | None = None  # None: "label"
    label_type: str | None = None  # None: "auto"
    output_dir: str | None = None  # None: runs/finetune/<task>
    overwrite: bool = False
    seeds: str = "1,2,3"
    train_examples: int | None = None  # None: all of them
    sample_seed: int = 0
    epochs: int | None = None
    batch_size: int | None = None
    learning_rate: float | None = None
    layerwise_decay: float | None = None
    max_seq_length: int | None = None
    # A JSON object (or dict) of the kind's `config_class` fields.
    hparams: str | dict = "{}"
    # Random initialisation (`--pretrained none`) only.
    preset: str = "tiny"
    vocab: str | None = None
    lowercase: bool = True
    jit: str = "auto"
    # Resolved per machine and encoder width (`electra_tf.precision`).
    precision: str = "auto"


def parse_seeds(text: str) -> list[int]:
    """`--seeds` ("1,2,3") as integers; raises `ConfigError` naming the flag."""
    try:
        seeds = [int(seed) for seed in text.split(",") if seed.strip()]
    except ValueError:
        raise ConfigError(
            f"--seeds must be comma-separated integers: {text!r}"
        ) from None
    if not seeds:
        raise ConfigError("--seeds is empty")
    return seeds


# The flags that only your own classification files read.
OWN_FILE_FLAGS = ("text_columns", "label_column", "label_type")
# The flags only classification reads: the other kinds refuse them. (The
# draw of `--train-examples` is of whole classification examples.)
CLASSIFICATION_FLAGS = ("train_examples", *OWN_FILE_FLAGS)


def refuse_flags(flags: FinetuningFlags, names, why: str) -> None:
    """`ConfigError` naming the first of the flags `names` (fields of
    `FinetuningFlags`) that was given, which a run of `why` would ignore."""
    for name in names:
        if getattr(flags, name) is not None:
            flag = "--" + name.replace("_", "-")
            raise ConfigError(f"{flag} does not apply to {why}")


def refuse_unpaired_files(flags: FinetuningFlags) -> None:
    """`ConfigError` unless `--train-file` and `--dev-file` come together."""
    if bool(flags.train_file) != bool(flags.dev_file):
        raise ConfigError("--train-file and --dev-file go together")


def flag_overrides(flags: FinetuningFlags) -> dict:
    """The config fields the flags set (`--epochs`, `--batch-size`,
    `--learning-rate`, `--layerwise-decay`, `--max-seq-length`), for the
    GLUE, tagging and SQuAD configs alike; the fields' own checks follow.

    `--epochs 0` is refused here: the config's 0 ("the task's default") is
    not a value to reach from the command line by accident.
    """
    if flags.epochs is not None and flags.epochs < 1:
        raise ConfigError(f"--epochs must be >= 1, got {flags.epochs}")
    names = ("epochs", "batch_size", "learning_rate", "layerwise_decay")
    values = {name: getattr(flags, name) for name in (*names, "max_seq_length")}
    return {name: value for name, value in values.items() if value is not None}


def resolve_finetuning_config(
    flags: FinetuningFlags,
    kind,
    architecture: dict,
    *,
    jit_compile: bool,
    precision: str = "float32",
) -> tuple[str, FinetuningConfig]:
    """The recipe's size name and the run's config: the kind's recipe for the
    paper size closest to the encoder's width, then the flags, `jit_compile`
    and `precision` (`--jit` and `--precision` resolved,
    `electra_tf.precision.resolve_precision`) and `--hparams` (unknown keys
    and the settings the kind does not read raise `ConfigError`), fitted to
    the encoder (`kind.fit_recipe`)."""
    size, recipe = recipe_for_width(architecture["hidden_dim"])
    hparams = parse_hparams(flags.hparams)
    for name in hparams:
        if name in kind.settings_not_read:
            raise ConfigError(
                f"--hparams {name} does not apply to --task {flags.task} "
                f"({kind.settings_not_read[name]})"
            )
    resolved = {"jit_compile": jit_compile, "precision": precision}
    changes = {**flag_overrides(flags), **resolved, **hparams}
    return size, kind.fit_recipe(kind.recipe(recipe), changes, architecture)
