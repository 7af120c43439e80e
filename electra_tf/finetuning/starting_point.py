"""`StartingPoint`: the encoder fine-tuning starts from, pre-trained or not.

Either a pre-trained keras-hub preset (`--pretrained DIR` or a preset name), or
a randomly initialised encoder of an architecture and vocabulary
(`--pretrained none` with `--preset` and `--vocab`: the no-pre-training
baseline). Every task kind builds its model from it, and the recipe is chosen
for its width (`architecture`).
"""

from __future__ import annotations

import dataclasses
import functools
import os

import keras_hub

from electra_tf.config import ConfigError, ModelConfig
from electra_tf.data.vocabulary import (
    BUNDLED_VOCABULARY,
    Vocabulary,
    check_vocabulary_fits,
)
from electra_tf.finetuning.settings import DEMO_PRETRAINED, FinetuningFlags
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.keras_hub_preset import preset_architecture, preset_vocabulary
from electra_tf.presets import PRESETS, get_preset


@dataclasses.dataclass(frozen=True)
class StartingPoint:
    """A keras-hub preset (`pretrained`), or None and the architecture and
    vocabulary of a randomly initialised encoder."""

    pretrained: str | None = None
    model_config: ModelConfig | None = None
    vocabulary: Vocabulary | None = None

    def __post_init__(self):
        if self.pretrained is None and None in (self.model_config, self.vocabulary):
            raise ValueError("a randomly initialised encoder needs a model config")

    @classmethod
    def from_flags(cls, flags: FinetuningFlags) -> StartingPoint:
        """`--pretrained`, or `--pretrained none` with `--preset`, `--vocab` and
        `--no-lowercase` (`random_init_model`)."""
        if flags.pretrained.lower() == "none":
            return cls(None, *random_init_model(flags))
        check_demo_pretrained(flags.pretrained)
        return cls(flags.pretrained)

    @property
    def name(self) -> str:
        """What `metrics.json` records as `pretrained`."""
        return self.pretrained or "none"

    @functools.cached_property
    def architecture(self) -> dict:
        """The encoder's `ElectraEncoder.architecture()` (`hidden_dim`,
        `num_layers`, `max_sequence_length`, ...), read without building it."""
        if self.pretrained is not None:
            return preset_architecture(self.pretrained)
        return dataclasses.asdict(self.model_config)

    def build(self, model_class, config, preprocessor_args=None, **head):
        """A `model_class` (one of our keras-hub task models) on this encoder
        with a new `head` (constructor arguments), the config's sequence length
        and encoder dropout, and `preprocessor_args`. A preset's encoder gets
        its top `config.reinit_layers` blocks re-drawn with BERT's initialiser.
        """
        preprocessor_args = preprocessor_args or {}
        if self.pretrained is not None:
            model = model_class.from_preset(
                self.pretrained,
                sequence_length=config.max_seq_length,
                encoder_dropout=config.encoder_dropout,
                **preprocessor_args,
                **head,
            )
            model.backbone.reinitialize_top_layers(
                config.reinit_layers, ModelConfig.initializer_range
            )
            return model
        model_config, vocabulary = self.model_config, self.vocabulary
        check_vocabulary_fits(
            vocabulary.size, model_config.vocabulary_size, error=ConfigError
        )
        tokenizer = keras_hub.models.ElectraTokenizer(
            vocabulary=list(vocabulary.tokens), lowercase=vocabulary.lowercase
        )
        encoder = ElectraEncoder.discriminator_from_config(
            model_config.override(dropout=config.encoder_dropout)
        )
        preprocessor = model_class.preprocessor_cls(
            tokenizer, sequence_length=config.max_seq_length, **preprocessor_args
        )
        return model_class(backbone=encoder, preprocessor=preprocessor, **head)

    def check_reinit_layers(self, reinit_layers: int) -> None:
        """`ConfigError` if a pre-trained encoder has fewer blocks to re-draw."""
        layers = self.architecture["num_layers"]
        if self.pretrained is not None and reinit_layers > layers:
            raise ConfigError(
                f"reinit_layers is {reinit_layers}, but {self.pretrained} has "
                f"{layers} transformer layers"
            )


def check_demo_pretrained(pretrained: str) -> None:
    """`ConfigError` if `pretrained` is the default `DEMO_PRETRAINED` and is
    missing. That default is relative to the working directory, as is the
    pre-training demo's `--model-dir`: the message names the absolute path
    looked at and the command that writes it there."""
    if pretrained != DEMO_PRETRAINED or os.path.isdir(pretrained):
        return
    raise ConfigError(
        f"no pre-trained model at {os.path.abspath(pretrained)} (the default "
        f"--pretrained, {DEMO_PRETRAINED}, under the current directory): run "
        f"`python pretrain/run.py` (or `electra-pretrain`) in {os.getcwd()} "
        "first, which exports it there; or pass --pretrained PATH, or "
        "--pretrained none"
    )


def random_init_model(flags: FinetuningFlags) -> tuple[ModelConfig, Vocabulary]:
    """The architecture and vocabulary of a randomly initialised encoder
    (`--pretrained none`), from `--preset`, `--vocab` and `--no-lowercase`.

    `--preset` is one of ours (`tiny`, `small`, ...) or a keras-hub preset
    directory, such as a pre-training export, whose architecture is rebuilt
    with fresh weights and, without `--vocab`, its own vocabulary and casing:
    the pre-trained model without its pre-training. Initialisation is BERT's
    (`ModelConfig.initializer_range`) whatever the preset's pre-training used.

    Raises:
        ConfigError: an unknown preset name.
        PretrainedModelError: a directory that is not a keras-hub preset.
        VocabularyError: a missing or unreadable `--vocab`.
    """
    if flags.preset in PRESETS:
        model_config = get_preset(flags.preset).model
        vocabulary = Vocabulary.from_file(
            flags.vocab or BUNDLED_VOCABULARY, flags.lowercase
        )
    elif os.path.isdir(flags.preset):
        architecture = preset_architecture(flags.preset)
        model_config = ModelConfig(
            **{
                field.name: architecture[field.name]
                for field in dataclasses.fields(ModelConfig)
                if field.name in architecture
            }
        )
        if flags.vocab:
            vocabulary = Vocabulary.from_file(flags.vocab, flags.lowercase)
        else:
            vocabulary = preset_vocabulary(flags.preset)
    else:
        raise ConfigError(
            f"--preset {flags.preset!r} is neither one of {', '.join(PRESETS)} "
            "nor a keras-hub preset directory"
        )
    return model_config.override(vocabulary_size=vocabulary.size), vocabulary
