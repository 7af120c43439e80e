"""Typed configuration: one dataclass per concern.

* `ModelConfig`: the discriminator's architecture (and the generator's size).
* `PretrainingConfig`: the pre-training objective, masking and sampling.
* `OptimizerConfig`: optimiser and learning-rate schedule.
* `TrainingConfig`: how pre-training runs (devices, precision, checkpoints).
* `FinetuningConfig`: the fine-tuning recipe (`presets.RECIPES` per size).

Every config is plain data (JSON in, JSON out, never evaluated) and `override()`
rejects unknown keys, so a typo in `--hparams` fails loudly instead of being
silently ignored.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Self

from electra_tf.errors import ElectraError


class ConfigError(ElectraError, ValueError):
    """A configuration value is unknown, of the wrong type or out of range."""


@dataclasses.dataclass(frozen=True)
class Config:
    """The base of every configuration (ours and fine-tuning's): a frozen
    dataclass whose `override` rejects unknown keys and wrong types, and that
    round-trips through a dict and JSON."""

    def override(self, **changes: Any) -> Self:
        """Returns a copy with `changes` applied; unknown keys raise `ConfigError`."""
        known = {f.name: f for f in dataclasses.fields(self)}
        for key, value in changes.items():
            if key not in known:
                raise ConfigError(
                    f"Unknown hparam {key!r} for {type(self).__name__}; "
                    f"known: {', '.join(sorted(known))}"
                )
            expected = type(getattr(self, key))
            if (
                expected is float
                and isinstance(value, int)
                and not isinstance(value, bool)
            ):
                changes[key] = float(value)
            elif getattr(self, key) is not None and not isinstance(value, expected):
                raise ConfigError(
                    f"hparam {key!r} of {type(self).__name__} must be "
                    f"{expected.__name__}, got {value!r}"
                )
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Self:
        return cls().override(**values)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def _check_positive(self, *names: str) -> None:
        """Each named field (a size or a count) must be > 0."""
        for name in names:
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")

    def _check_choice(self, name: str, choices: tuple) -> None:
        """The named field must be one of `choices`."""
        if getattr(self, name) not in choices:
            raise ConfigError(
                f"{name} must be one of {choices}, got {getattr(self, name)!r}"
            )

    def _check_fractions(self, *names: str) -> None:
        """Each named field (a dropout rate or the like) must be in [0, 1)."""
        for name in names:
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {value}")


# `ModelConfig.embedding_sharing`: ELECTRA's, DeBERTaV3's GDES, or none.
EMBEDDING_SHARING = ("tied", "gdes", "none")


@dataclasses.dataclass(frozen=True)
class ModelConfig(Config):
    """Architecture of the discriminator encoder and of the generator."""

    # Number of WordPiece ids; the token embedding has this many rows.
    vocabulary_size: int = 30522
    # Transformer blocks in the discriminator (the generator has as many unless
    # `generator_layers` says otherwise).
    num_layers: int = 12
    # Discriminator hidden width H.
    hidden_dim: int = 256
    # Width E of the shared token/position/segment embeddings. When E != H each
    # tower projects E -> its own width with its own dense layer.
    embedding_dim: int = 128
    # Attention heads; 0 means the original rule max(1, hidden_dim // 64).
    num_heads: int = 0
    # Feed-forward width; 0 means the original rule 4 * hidden_dim.
    intermediate_dim: int = 0
    # Dropout on embeddings, attention probabilities and block outputs.
    dropout: float = 0.1
    # Rows of the position embedding: the longest sequence the model accepts.
    max_sequence_length: int = 512
    # Rows of the segment (token type) embedding.
    num_segments: int = 2
    # LayerNorm epsilon; the original uses 1e-12 (Keras' default is 1e-3).
    layer_norm_epsilon: float = 1e-12
    # Stddev of the truncated-normal initialiser.
    initializer_range: float = 0.02
    # Generator width as a fraction of hidden_dim (small: 1/4, base: 1/3).
    generator_hidden_size: float = 0.25
    # Generator depth; 0 means the same as `num_layers`.
    generator_layers: int = 0
    # How the generator's embeddings relate to the discriminator's:
    # * "tied": ELECTRA's; one embedding block (token, position, segment
    #   embeddings and their LayerNorm) that both towers read and both losses
    #   train;
    # * "gdes": DeBERTaV3's gradient-disentangled sharing; the generator owns
    #   its embedding block, and the discriminator's token table is the
    #   generator's with the gradient stopped plus a residual table that
    #   starts at zero and only the discriminator's loss trains (its position
    #   and segment embeddings and LayerNorm are its own);
    # * "none": each tower owns its embedding block (the original's
    #   `untied_generator_embeddings`): the generator's is as wide as its
    #   hidden size (`generator_embedding_dim`), with no projection, as the
    #   original builds it.
    # In every case the generator's MLM output matrix is its own token table,
    # transposed. Configs stored with the older boolean `tie_embeddings` load
    # as "tied" (true) or "none" (false).
    embedding_sharing: str = "tied"

    def __post_init__(self):
        self._check_choice("embedding_sharing", EMBEDDING_SHARING)
        self._check_positive(
            "vocabulary_size", "num_layers", "hidden_dim", "embedding_dim"
        )
        self._check_fractions("dropout")
        if not 0.0 < self.generator_hidden_size <= 1.0:
            raise ConfigError(
                "generator_hidden_size must be in (0, 1], got "
                f"{self.generator_hidden_size}"
            )
        if self.resolved_num_heads and self.hidden_dim % self.resolved_num_heads:
            raise ConfigError(
                f"hidden_dim {self.hidden_dim} is not divisible by "
                f"num_heads {self.resolved_num_heads}"
            )

    def override(self, **changes: Any) -> Self:
        # The boolean this setting replaced, as stored configs still have it.
        if "tie_embeddings" in changes:
            tied = changes.pop("tie_embeddings")
            if not isinstance(tied, bool):
                raise ConfigError(f"hparam 'tie_embeddings' must be bool, got {tied!r}")
            changes.setdefault("embedding_sharing", "tied" if tied else "none")
        return super().override(**changes)

    # Derived values live here, in one place.
    @property
    def resolved_num_heads(self) -> int:
        return self.num_heads or max(1, self.hidden_dim // 64)

    @property
    def resolved_intermediate_dim(self) -> int:
        return self.intermediate_dim or 4 * self.hidden_dim

    @property
    def generator_hidden_dim(self) -> int:
        return max(1, int(round(self.hidden_dim * self.generator_hidden_size)))

    @property
    def generator_embedding_dim(self) -> int:
        """Width of the generator's embeddings: E when they are the
        discriminator's or disentangled from them ("tied", "gdes"); its own
        hidden width when untied ("none"), as the original's
        `untied_generator_embeddings`, which then needs no projection."""
        if self.embedding_sharing == "none":
            return self.generator_hidden_dim
        return self.embedding_dim

    @property
    def generator_num_heads(self) -> int:
        return max(1, self.generator_hidden_dim // 64)

    @property
    def generator_intermediate_dim(self) -> int:
        return 4 * self.generator_hidden_dim

    @property
    def generator_num_layers(self) -> int:
        return self.generator_layers or self.num_layers


# The pre-training objectives of the paper's efficiency analysis (section 3.3),
# and Electric (Clark et al., EMNLP 2020).
OBJECTIVES = (
    "electra",
    "electra_15",
    "mlm",
    "replace_mlm",
    "all_tokens_mlm",
    "electric",
)
# Objectives whose discriminator-sized model reads generator samples.
SAMPLING_OBJECTIVES = (
    "electra",
    "electra_15",
    "replace_mlm",
    "all_tokens_mlm",
    "electric",
)
# Objectives whose discriminator-sized model has the binary RTD head (for
# electric, a per-token energy that the noise correction turns into a logit).
RTD_OBJECTIVES = ("electra", "electra_15", "electric")
# The paper's weight of the discriminator's loss, per objective (`disc_weight`
# 0). ELECTRA's 50 offsets that a per-token binary cross-entropy is an order of
# magnitude smaller than an MLM cross-entropy over the vocabulary. The paper
# gives no weight for Replace MLM and All-Tokens MLM; their losses are
# cross-entropies over the vocabulary like the generator's, so they get the
# generator's weight, 1 (as BERT's MLM loss has).
DEFAULT_DISC_WEIGHTS = {
    "electra": 50.0,
    "electra_15": 50.0,
    "electric": 50.0,
    "replace_mlm": 1.0,
    "all_tokens_mlm": 1.0,
}
# The keys of `electra_tf.pretraining.sampling.SAMPLERS` (not imported: no
# TensorFlow here).
SAMPLERS = ("gumbel_max", "inverse_cdf")


@dataclasses.dataclass(frozen=True)
class PretrainingConfig(Config):
    """The pre-training objective: masking, sampling and loss weights."""

    # What the discriminator-sized model (the one kept for fine-tuning) learns:
    # * "electra": replaced token detection (RTD) over all real tokens;
    # * "electra_15": RTD with the loss only over the masked positions;
    # * "mlm": BERT, the MLM loss on [MASK]ed input (no generator);
    # * "replace_mlm": MLM whose masked positions hold generator samples
    #   instead of [MASK];
    # * "all_tokens_mlm": predicts the identity of every token of the
    #   generator-corrupted input, with a copy mechanism;
    # * "electric": Electric's noise-contrastive estimation; the generator is
    #   a two-tower cloze model of the unmasked input, and the RTD logit is
    #   corrected by the cloze log-probability of the token present and
    #   log(mask_prob / (1 - mask_prob)); every sampled position is noise.
    objective: str = "electra"
    # Sequence length of the TFRecords and of every batch (static on TPU).
    max_seq_length: int = 128
    # Fraction of real tokens to mask.
    mask_prob: float = 0.15
    # Of the masked positions, the fraction shown as [MASK]; the rest keep the
    # original token. ELECTRA never substitutes a random token.
    mask_token_prob: float = 0.85
    # Weight of the generator's MLM loss in the summed loss.
    gen_weight: float = 1.0
    # Weight of the discriminator-sized model's loss in the summed loss (RTD
    # for electra and electra_15, its MLM loss for replace_mlm and
    # all_tokens_mlm); 0 means the objective's default, 50 for the RTD
    # objectives and 1 for the MLM ones (see DEFAULT_DISC_WEIGHTS).
    disc_weight: float = 0.0
    # Softmax temperature when sampling replacements from the generator.
    temperature: float = 1.0
    # Never sample the original token (its logit is pushed down by 1e3).
    disallow_correct: bool = False
    # How replacements are drawn from softmax(logits / temperature): both are
    # exact samples of it (tests/pretraining/test_sampling.py). "inverse_cdf" draws one
    # uniform number per slot instead of a Gumbel number and two logarithms
    # per vocabulary entry: the small step on 2 CPU cores takes 7% less
    # time (BENCHMARKS.md sections 3 and 7). "gumbel_max" is the original's.
    sampler: str = "inverse_cdf"
    # Replace masked tokens with uniformly random tokens instead of generator
    # samples (the paper's uniform-generator ablation): the generator is then
    # neither run nor trained, and costs no FLOPs.
    uniform_generator: bool = False
    # A curriculum of replacements: for the first `uniform_share_steps` steps
    # each masked position draws from `s * uniform + (1 - s) * generator`, the
    # uniform share `s` falling linearly from 1 to 0; 0 (the paper's): the
    # generator's samples from the first step. An untrained generator's
    # samples are near-uniform anyway; this keeps the discriminator's task
    # learnable while the generator is poor and then hands it over.
    uniform_share_steps: int = 0
    # The discriminator-sized model's loss weight rises linearly from 0 to
    # `disc_weight` over these steps; 0 (the paper's): full weight from the
    # first step. It holds the discriminator back while the generator is poor.
    disc_weight_ramp_steps: int = 0
    # Seed of every random draw in the train step. Draws are keyed by
    # (seed, optimizer step, global example index), so a resumed run and a run
    # on a different number of replicas see the same masks and samples.
    seed: int = 0

    def __post_init__(self):
        self._check_choice("objective", OBJECTIVES)
        if self.uniform_generator and self.objective not in SAMPLING_OBJECTIVES:
            raise ConfigError(
                f"uniform_generator needs an objective that samples replacements "
                f"({', '.join(SAMPLING_OBJECTIVES)}), not {self.objective!r}"
            )
        for name in ("uniform_share_steps", "disc_weight_ramp_steps"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.uniform_share_steps and (
            self.objective not in SAMPLING_OBJECTIVES or self.uniform_generator
        ):
            raise ConfigError(
                "uniform_share_steps moves replacements from uniform to the "
                "generator's samples: it needs an objective that samples them "
                f"({', '.join(SAMPLING_OBJECTIVES)}) and uniform_generator False"
            )
        if self.disc_weight_ramp_steps and self.objective == "mlm":
            raise ConfigError(
                "disc_weight_ramp_steps ramps the discriminator's loss, and "
                "objective 'mlm' has none"
            )
        if self.disc_weight < 0.0:
            raise ConfigError(f"disc_weight must be >= 0, got {self.disc_weight}")
        if not 0.0 < self.mask_prob < 1.0:
            raise ConfigError(f"mask_prob must be in (0, 1), got {self.mask_prob}")
        if not 0.0 <= self.mask_token_prob <= 1.0:
            raise ConfigError(
                f"mask_token_prob must be in [0, 1], got {self.mask_token_prob}"
            )
        self._check_choice("sampler", SAMPLERS)
        if self.temperature <= 0.0:
            raise ConfigError(f"temperature must be > 0, got {self.temperature}")
        if self.max_seq_length < MIN_SEQ_LENGTH:
            raise ConfigError(
                f"max_seq_length must be at least {MIN_SEQ_LENGTH}, got "
                f"{self.max_seq_length}"
            )

    @property
    def resolved_disc_weight(self) -> float:
        """`disc_weight`, or the objective's default when it is 0."""
        return self.disc_weight or DEFAULT_DISC_WEIGHTS.get(self.objective, 0.0)

    @property
    def max_predictions_per_seq(self) -> int:
        """Masked slots per example, computed as the original does (19 at 128)."""
        return int((self.mask_prob + 0.005) * self.max_seq_length)


def check_model_and_objective(model: ModelConfig, pretraining: PretrainingConfig):
    """Raises `ConfigError` for settings of the two configs that do not go together.

    GDES splits the discriminator's token table into the generator's (trained
    by the MLM loss) plus a residual (trained by the discriminator's loss): it
    needs a generator that trains, so neither objective "mlm" (no separate
    generator) nor `uniform_generator` (a generator that is never run).
    """
    if model.embedding_sharing != "gdes":
        return
    if pretraining.objective == "mlm":
        raise ConfigError(
            "embedding_sharing='gdes' needs a generator, and objective 'mlm' has "
            "none: use embedding_sharing 'tied' or another objective"
        )
    if pretraining.uniform_generator:
        raise ConfigError(
            "embedding_sharing='gdes' needs a trained generator, and "
            "uniform_generator=True never runs it: use embedding_sharing 'tied' "
            "or 'none', or drop uniform_generator"
        )


@dataclasses.dataclass(frozen=True)
class OptimizerConfig(Config):
    """Adam with decoupled weight decay and the warm-up x linear-decay schedule."""

    # Peak learning rate (never quite reached: warm-up and decay multiply).
    learning_rate: float = 5e-4
    # Steps of linear warm-up.
    warmup_steps: int = 10000
    # Step at which the learning rate reaches zero.
    total_steps: int = 1000000
    # Exponent of the polynomial decay (1 = linear).
    decay_power: float = 1.0
    # Decoupled weight decay; LayerNorm weights and biases are excluded.
    weight_decay: float = 0.01
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-6
    # Clip the (cross-replica) gradient to this global norm; 0 disables.
    clip_norm: float = 1.0
    # Micro-batches whose gradients are summed before one update.
    gradient_accumulation_steps: int = 1

    def __post_init__(self):
        if self.learning_rate <= 0.0:
            raise ConfigError(f"learning_rate must be > 0, got {self.learning_rate}")
        if self.total_steps <= 0:
            raise ConfigError(f"total_steps must be > 0, got {self.total_steps}")
        if self.warmup_steps < 0:
            raise ConfigError(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        if self.gradient_accumulation_steps < 1:
            raise ConfigError(
                "gradient_accumulation_steps must be >= 1, got "
                f"{self.gradient_accumulation_steps}"
            )


STRATEGIES = ("default", "mirrored", "multi_worker", "tpu")
PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
# LiteRT exports (`electra_tf.export.litert`).
QUANTIZATIONS = ("float32", "dynamic_int8", "full_int8")


@dataclasses.dataclass(frozen=True)
class TrainingConfig(Config):
    """How a pre-training run is driven: steps, batches, devices, files."""

    # Directory for checkpoints, TensorBoard logs, metrics and exports.
    model_dir: str = "runs/pretrain"
    # TFRecord file pattern(s) of training data, comma-separated.
    train_data: str = ""
    # TFRecord file pattern(s) of held-out data; empty = no evaluation.
    eval_data: str = ""
    # Optimizer updates to train for (the run resumes until it reaches this).
    train_steps: int = 1000
    # GLOBAL batch size (split across replicas).
    batch_size: int = 32
    # Save a checkpoint every this many steps (also the length of one Keras
    # "epoch", so evaluation and logging happen on the same boundaries). A run
    # shorter than that checkpoints once, at its end: `train_steps` replaces it.
    checkpoint_every: int = 100
    # Checkpoints kept on disk.
    keep_checkpoints: int = 3
    # Evaluate on `eval_data` every this many checkpoints (0 = only at the end).
    eval_every_checkpoints: int = 1
    # Batches per evaluation.
    eval_steps: int = 20
    # "default" (one device), "mirrored", "multi_worker" or "tpu".
    strategy: str = "default"
    # Keras dtype policy: "float32", "mixed_bfloat16" or "mixed_float16".
    precision: str = "float32"
    # Compile the train step with XLA.
    jit_compile: bool = True
    # Train steps per host round trip (TPUs want many).
    steps_per_execution: int = 1
    # Examples in the input pipeline's shuffle buffer.
    shuffle_buffer: int = 10000
    # Seed of file and example shuffling.
    data_seed: int = 0
    # Read every TFRecord once before training and leave out damaged files
    # (logged) instead of stopping at the first damaged record.
    skip_corrupt_files: bool = False

    def __post_init__(self):
        self._check_choice("strategy", STRATEGIES)
        self._check_choice("precision", PRECISIONS)
        self._check_positive(
            "train_steps", "batch_size", "checkpoint_every", "eval_steps"
        )
        if self.checkpoint_every > self.train_steps:
            object.__setattr__(self, "checkpoint_every", self.train_steps)
        if self.train_steps % self.checkpoint_every:
            raise ConfigError(
                f"train_steps ({self.train_steps}) must be a multiple of "
                f"checkpoint_every ({self.checkpoint_every})"
            )
        if self.checkpoint_every % self.steps_per_execution:
            raise ConfigError(
                f"checkpoint_every ({self.checkpoint_every}) must be a multiple of "
                f"steps_per_execution ({self.steps_per_execution})"
            )


# What a classifier's head reads: the [CLS] state, or the mean over the tokens.
POOLINGS = ("cls", "mean")
# How a fine-tuning batch's loss is reduced: transformers' mean, or the
# original's sum (`FinetuningConfig.loss_reduction`).
LOSS_REDUCTIONS = ("mean", "sum")
# The shortest packed example: [CLS], one or two [SEP]s and a few tokens of
# text (pre-training's and fine-tuning's).
MIN_SEQ_LENGTH = 8


@dataclasses.dataclass(frozen=True)
class FinetuningConfig(Config):
    """ELECTRA's fine-tuning recipe (the paper's Appendix, Table 7); the
    paper's values for each size are `presets.RECIPES`."""

    # Peak learning rate: small 3e-4, base 1e-4, large 5e-5 (see `presets.RECIPES`).
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
    # "mean" (transformers'): the loss is averaged over the batch's examples
    # (tagging: its labelled tokens; question answering: its windows). "sum"
    # (the original's `FinetuningModel.loss`): the same terms summed over the
    # global batch, so after global-norm clipping its step is the mean's with
    # clip_norm divided by the number of terms (docs/faithfulness.md).
    loss_reduction: str = "mean"
    # Passes over the training data; 0 means the task's (3; RTE, STS-B: 10).
    epochs: int = 0
    # Stop once the dev score has not improved for this many epochs (0: train
    # every epoch). The best dev epoch is restored either way; the learning
    # rate still decays over all `epochs`.
    early_stopping_patience: int = 0
    # Examples per update.
    batch_size: int = 32
    # Batch training examples with others of similar length in pieces, so
    # that most batches are far shorter than max_seq_length (every batch is
    # cut to its longest example); every example is still trained every
    # epoch. See
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
    # Keras dtype policy of training: "float32", "mixed_bfloat16" or
    # "mixed_float16" (`--precision auto` is resolved before this config,
    # see `electra_tf.precision`). Exports keep float32 weights and outputs.
    precision: str = "float32"

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
        self._check_choice("loss_reduction", LOSS_REDUCTIONS)
        self._check_choice("precision", PRECISIONS)


def parse_hparams(hparams: str | dict, flag: str = "--hparams") -> dict[str, Any]:
    """`--hparams` (or another `flag`) as a dict; not a JSON object raises
    `ConfigError` naming the flag."""
    if isinstance(hparams, dict):
        return dict(hparams)
    try:
        parsed = json.loads(hparams)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{flag} is not valid JSON: {error}") from error
    if not isinstance(parsed, dict):
        raise ConfigError(f"{flag} must be a JSON object, got {hparams!r}")
    return parsed


def route_hparams(
    configs: dict[str, Config], hparams: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Sorts flat `{name: value}` overrides by the config that has the field.

    Field names are unique across our configs, so `{"mask_prob": 0.2,
    "hidden_dim": 128}` needs no nesting. A key no config has raises
    `ConfigError` naming it. Returns `{config name: {field: value}}`, with an
    entry (maybe empty) for every config.
    """
    fields = {
        name: {f.name for f in dataclasses.fields(config)}
        for name, config in configs.items()
    }
    routed: dict[str, dict[str, Any]] = {name: {} for name in configs}
    for key, value in hparams.items():
        owners = [name for name in configs if key in fields[name]]
        if not owners:
            known = sorted(set().union(*fields.values()))
            raise ConfigError(f"Unknown hparam {key!r}; known: {', '.join(known)}")
        routed[owners[0]][key] = value
    return routed


def apply_hparams(
    configs: dict[str, Config], hparams: dict[str, Any]
) -> dict[str, Config]:
    """`configs` with flat `{name: value}` overrides applied (see `route_hparams`).

    Each config is rebuilt once with all of its changes, so values that must
    agree (`train_steps` and `checkpoint_every`) may change together.
    """
    routed = route_hparams(configs, hparams)
    return {name: config.override(**routed[name]) for name, config in configs.items()}
