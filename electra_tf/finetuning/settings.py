"""A fine-tuning run's settings: flags, the size's recipe and `--hparams`, in one pass.

`resolve_finetuning_config` starts from the paper's recipe for the encoder's width,
lays the flags over it and `--hparams` over the flags, and builds the
`FinetuningConfig` once.
"""

from __future__ import annotations

import dataclasses
import logging
import os

import tensorflow as tf

from electra_tf.config import Config, ConfigError, parse_hparams
from electra_tf.models.text_classifier import POOLINGS

# The pre-training demo's export, which the fine-tuning demo starts from.
DEMO_PRETRAINED = "runs/pretrain/export/discriminator"
_ASSETS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "assets")
# The demo task: a movie-review excerpt in SST-2's layout.
DEMO_DATA = os.path.join(_ASSETS, "tasks", "rt_polarity")
# The tagging demo: the first sentences of the Brown POS task, CoNLL layout.
DEMO_TAGGING = os.path.join(_ASSETS, "tasks", "brown_pos")
# The shortest packed example: [CLS], one or two [SEP]s and a few tokens of
# text (the pre-training minimum too).
MIN_SEQ_LENGTH = 8

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class FinetuningConfig(Config):
    """ELECTRA's GLUE fine-tuning recipe (the paper's Appendix, Table 7)."""

    # Peak learning rate: small 3e-4, base 1e-4, large 5e-5 (see RECIPES).
    learning_rate: float = 1e-4
    # Layer-wise learning-rate decay factor: 0.8 (small, base), 0.9 (large);
    # 1.0 turns it off.
    layerwise_decay: float = 0.8
    # The intended layer-wise decay (top encoder layer decay**1) instead of the
    # original's (decay**2); see `electra_tf.finetuning.layerwise_decay`.
    corrected_layerwise_decay: bool = False
    # Fraction of all training steps spent in linear warm-up.
    warmup_fraction: float = 0.1
    # Decoupled weight decay (LayerNorm weights and biases are excluded).
    weight_decay: float = 0.01
    # Adam epsilon (the original's 1e-6; no bias correction either).
    adam_epsilon: float = 1e-6
    # Clip gradients to this global norm.
    clip_norm: float = 1.0
    # Passes over the training data; 0 means the task's (3; RTE, STS-B: 10).
    epochs: int = 0
    # Stop once the dev score has not improved for this many epochs (0: train
    # every epoch). The best dev epoch is restored either way; the learning
    # rate still decays over all `epochs`.
    early_stopping_patience: int = 0
    # Examples per update.
    batch_size: int = 32
    # Batch training examples with others of similar length, so that most
    # batches are far shorter than max_seq_length (every batch is cut to its
    # longest example); every example is still trained every epoch. See
    # `electra_tf.finetuning.length_grouping`.
    group_by_length: bool = True
    # Examples per batch when evaluating and predicting.
    eval_batch_size: int = 128
    # Tokens per packed example; longer inputs are truncated round-robin.
    max_seq_length: int = 128
    # Dropout before the classifier's dense layer.
    head_dropout: float = 0.1
    # Dropout inside the encoder while fine-tuning: the paper's 0.1, whatever
    # the pre-training used (the CPU demo pre-trains without dropout; left at
    # the preset's 0.0, a fine-tuned demo encoder overfits its 2,000 sentences).
    encoder_dropout: float = 0.1
    # What the classifier's head reads: "cls" (the original's [CLS] state) or
    # "mean" (the mean final state over the unpadded tokens).
    pooling: str = "cls"
    # Re-initialise this many of a pre-trained encoder's top transformer
    # blocks before fine-tuning (0: none; all of them: only the embeddings are
    # transferred), with BERT's initialiser (truncated normal, 0.02) whatever
    # the pre-training's initializer_range was. For few labels (Zhang et al.,
    # 2021), and to tell what pre-training left in the embeddings from what it
    # left in the blocks (BENCHMARKS.md section 16).
    reinit_layers: int = 0
    # Also train on MRPC and STS-B pairs with their sentences swapped.
    swap_pairs: bool = True
    # Compile train and eval steps with XLA (worth it on GPUs and TPUs; on
    # CPUs Keras' dropout under XLA is slow).
    jit_compile: bool = False

    def __post_init__(self):
        if self.learning_rate <= 0.0:
            raise ConfigError(f"learning_rate must be > 0, got {self.learning_rate}")
        if not 0.0 < self.layerwise_decay <= 1.0:
            raise ConfigError(
                f"layerwise_decay must be in (0, 1], got {self.layerwise_decay}"
            )
        self._check_positive("batch_size", "eval_batch_size")
        if self.max_seq_length < MIN_SEQ_LENGTH:
            raise ConfigError(
                f"max_seq_length must be at least {MIN_SEQ_LENGTH} ([CLS], [SEP] "
                f"and some text), got {self.max_seq_length}"
            )
        for name in ("epochs", "reinit_layers", "early_stopping_patience"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        self._check_fractions("warmup_fraction", "head_dropout", "encoder_dropout")
        self._check_choice("pooling", POOLINGS)


# The paper's per-size recipe. "tiny" (2 layers, H=64; the CPU demo and the
# tests) is not in the paper; its rate was chosen on the demo task (2,000
# rt_polarity sentences, 3 epochs = 189 updates, median dev accuracy of 3
# seeds, random initialisation and the demo's 4,785-token vocabulary): 3e-4
# reached 0.662, 1e-3 0.700, and 3e-3 diverged to the majority class (0.616).
# Small models tolerate larger steps, and a short run needs them.
RECIPES: dict[str, FinetuningConfig] = {
    "tiny": FinetuningConfig(learning_rate=1e-3, layerwise_decay=0.8),
    "small": FinetuningConfig(learning_rate=3e-4, layerwise_decay=0.8),
    "base": FinetuningConfig(learning_rate=1e-4, layerwise_decay=0.8),
    "large": FinetuningConfig(learning_rate=5e-5, layerwise_decay=0.9),
}


def recipe_for_width(hidden_dim: int) -> tuple[str, FinetuningConfig]:
    """The recipe of the paper size closest to an encoder of width `hidden_dim`.

    tiny: H <= 128; small: H <= 256; base: H <= 768; large above.
    """
    for size, widest in (("tiny", 128), ("small", 256), ("base", 768)):
        if hidden_dim <= widest:
            return size, RECIPES[size]
    return "large", RECIPES["large"]


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


def refuse_train_examples(flags: FinetuningFlags) -> None:
    """`ConfigError` if `--train-examples` was given to a task that cannot draw
    them (tagging, SQuAD): the draw is of whole classification examples."""
    if flags.train_examples is not None:
        raise ConfigError("--train-examples is for classification and regression tasks")


# The flags that only your own classification files read.
OWN_FILE_FLAGS = ("text_columns", "label_column", "label_type")


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


def check_output_dir(output_dir: str, overwrite: bool) -> None:
    """Refuses an `output_dir` holding a previous run (its `metrics.json`)
    unless `overwrite`; then that run's TensorBoard logs are deleted, so
    that the new run's events are not mixed with them (its other files are
    overwritten as the run writes its own)."""
    if not tf.io.gfile.exists(os.path.join(output_dir, "metrics.json")):
        return
    if not overwrite:
        raise ConfigError(
            f"--output-dir {output_dir} holds a previous run (metrics.json); pass "
            "--overwrite to replace it, or choose another directory"
        )
    logs = os.path.join(output_dir, "logs")
    if tf.io.gfile.exists(logs):
        tf.io.gfile.rmtree(logs)
    logger.info("--overwrite: replacing the previous run in %s", output_dir)


def resolve_finetuning_config(
    flags: FinetuningFlags, kind, architecture: dict, *, jit_compile: bool
) -> tuple[str, FinetuningConfig]:
    """The recipe's size name and the run's config, in one pass.

    The task kind's recipe (`kind.recipe`) for the paper size closest to the
    encoder's width (`architecture["hidden_dim"]`), then the flags
    (`flag_overrides`), then `jit_compile` (`--jit` resolved), then
    `--hparams` (unknown keys raise `ConfigError`, and so do the settings the
    kind does not read, `kind.settings_not_read`), fitted to the encoder
    where the kind needs it (`kind.fit_recipe`).
    """
    size, recipe = recipe_for_width(architecture["hidden_dim"])
    hparams = parse_hparams(flags.hparams)
    for name in hparams:
        if name in kind.settings_not_read:
            raise ConfigError(
                f"--hparams {name} does not apply to --task {flags.task} "
                f"({kind.settings_not_read[name]})"
            )
    changes = {**flag_overrides(flags), "jit_compile": jit_compile, **hparams}
    return size, kind.fit_recipe(kind.recipe(recipe), changes, architecture)
