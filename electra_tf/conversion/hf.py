"""Hugging Face ELECTRA checkpoints (config.json + safetensors) to ours and back.

A Hugging Face ELECTRA directory holds one tower: `ElectraForPreTraining`
(the discriminator), `ElectraForMaskedLM` (the generator) or `ElectraModel`
(the encoder alone). Weights are read and written with `safetensors.numpy`,
so neither torch nor transformers is needed, and pickle
(`pytorch_model.bin`) is refused.

Names go through the original TF1 layout (`electra_tf.conversion.original_layout`):
`electra.encoder.layer.3.attention.self.query.weight` is
`electra/encoder/layer_3/attention/self/query/kernel`, transposed (torch
Linear weights are [out, in]); `discriminator_predictions.dense_prediction`
is `discriminator_predictions/dense_1`; `generator_lm_head.bias` is
`generator_predictions/output_bias`, and `generator_lm_head.weight` is the
(tied) word embedding.

A generator + discriminator pair becomes one `ElectraPretrainer`: the two
checkpoints each carry an embedding block; identical blocks (a tied ELECTRA,
as released) are shared, different ones give `embedding_sharing="none"`.
Writing a pretrainer gives `discriminator/` and `generator/` directories that
`transformers.ElectraForPreTraining.from_pretrained` and
`ElectraForMaskedLM.from_pretrained` load.

Numerics: Hugging Face's "gelu" is the exact erf form, as ours, so outputs
agree to float32 round-off (tests: < 1e-4, measured ~1e-6).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re

import numpy as np
import safetensors.numpy

from electra_tf.config import ModelConfig, PretrainingConfig
from electra_tf.conversion.original_layout import (
    DISCRIMINATOR_SCOPE,
    GENERATOR_SCOPE,
    assign_tensors,
    check_convertible,
    model_config_from_tensors,
    pretrainer_from_tensors,
    read_tensors,
    tower_variables,
)
from electra_tf.data.vocabulary import Vocabulary, check_vocabulary_fits
from electra_tf.errors import ConversionError
from electra_tf.models.discriminator import ElectraDiscriminator
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.generator import ElectraGenerator
from electra_tf.models.tower import standalone_tower
from electra_tf.pretraining.pretrainer import ElectraPretrainer

logger = logging.getLogger(__name__)

DISCRIMINATOR = "ElectraForPreTraining"
GENERATOR = "ElectraForMaskedLM"
ENCODER = "ElectraModel"
ARCHITECTURES = (DISCRIMINATOR, GENERATOR, ENCODER)
WEIGHTS_NAME = "model.safetensors"
# Buffers older transformers versions saved with the weights; not weights.
_BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")


class HfCheckpoint:
    """One Hugging Face ELECTRA directory, read without torch.

    Attributes:
        directory: where it was read from.
        config: the parsed `config.json`.
        architecture: `ElectraForPreTraining`, `ElectraForMaskedLM` or
            `ElectraModel`.
        tensors: `{name: float32 array}` with the encoder's `electra.` prefix
            removed (`embeddings.word_embeddings.weight`, ...).
        vocabulary: the tokens of `vocab.txt` or `tokenizer.json`, or None.
        lowercase: the tokenizer's `do_lower_case` (True if unknown).
    """

    def __init__(self, directory):
        self.directory = os.fspath(directory)
        config_path = os.path.join(self.directory, "config.json")
        if not os.path.isdir(self.directory):
            raise ConversionError(f"{self.directory} is not a directory")
        if not os.path.exists(config_path):
            raise ConversionError(f"{self.directory} has no config.json")
        with open(config_path, encoding="utf-8") as f:
            try:
                self.config = json.load(f)
            except json.JSONDecodeError as error:
                raise ConversionError(f"{config_path} is not JSON: {error}") from error
        if self.config.get("model_type", "electra") != "electra":
            raise ConversionError(
                f"{config_path}: model_type {self.config['model_type']!r}, not electra"
            )
        architectures = self.config.get("architectures") or [ENCODER]
        self.architecture = architectures[0]
        if self.architecture not in ARCHITECTURES:
            raise ConversionError(
                f"{config_path}: architecture {self.architecture!r}; convertible: "
                f"{', '.join(ARCHITECTURES)}"
            )
        if self.config.get("hidden_act", "gelu") != "gelu":
            raise ConversionError(
                f"{config_path}: hidden_act {self.config['hidden_act']!r}; ours is "
                "'gelu' (exact erf GELU)"
            )
        if self.config.get("position_embedding_type", "absolute") != "absolute":
            raise ConversionError(
                f"{config_path}: position_embedding_type "
                f"{self.config['position_embedding_type']!r}; ours is absolute"
            )
        self.tensors = {
            name.removeprefix("electra."): value
            for name, value in _load_safetensors(self.directory).items()
            if name.removeprefix("electra.") not in _BUFFERS
        }
        self.vocabulary, self.lowercase = _read_tokenizer(self.directory)

    def encoder(self, name="discriminator_encoder") -> ElectraEncoder:
        """A new `ElectraEncoder` (owning its embeddings) of this config."""
        c = self.config
        return ElectraEncoder(
            vocabulary_size=c["vocab_size"],
            num_layers=c["num_hidden_layers"],
            num_heads=c["num_attention_heads"],
            hidden_dim=c["hidden_size"],
            embedding_dim=c.get("embedding_size", c["hidden_size"]),
            intermediate_dim=c["intermediate_size"],
            dropout=c.get("hidden_dropout_prob", 0.1),
            max_sequence_length=c.get("max_position_embeddings", 512),
            num_segments=c.get("type_vocab_size", 2),
            layer_norm_epsilon=c.get("layer_norm_eps", 1e-12),
            initializer_range=c.get("initializer_range", 0.02),
            name=name,
        )

    def original_tensors(self, scope: str, embeddings_scope: str) -> dict:
        """All tensors under their original names (see `original_name`).

        A tensor with no original name keeps its Hugging Face name, so that
        `assign_tensors` lists it with the other problems.

        Raises:
            ConversionError: the output layer is not the word embeddings.
        """
        tensors = {}
        for name, value in self.tensors.items():
            if name == "generator_lm_head.weight":
                word = self.tensors.get("embeddings.word_embeddings.weight")
                if word is None or not np.array_equal(word, value):
                    raise ConversionError(
                        f"{self.directory}: generator_lm_head.weight differs from "
                        "the word embeddings; our generator's output layer is "
                        "tied to them"
                    )
                continue
            try:
                original, transpose = original_name(name, scope, embeddings_scope)
            except ValueError:
                tensors[name] = value
                continue
            tensors[original] = value.T if transpose else value
        return tensors


def _load_safetensors(directory) -> dict[str, np.ndarray]:
    single = os.path.join(directory, WEIGHTS_NAME)
    index = os.path.join(directory, WEIGHTS_NAME + ".index.json")
    if os.path.exists(single):
        files = [single]
    elif os.path.exists(index):
        with open(index, encoding="utf-8") as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        files = [os.path.join(directory, shard) for shard in shards]
    elif os.path.exists(os.path.join(directory, "pytorch_model.bin")):
        raise ConversionError(
            f"{directory} has only pytorch_model.bin, a pickle, which we never "
            "load; save it as safetensors first (transformers' save_pretrained "
            "does by default)"
        )
    else:
        raise ConversionError(f"{directory} has no {WEIGHTS_NAME}")
    tensors = {}
    for path in files:
        try:
            loaded = safetensors.numpy.load_file(path)
        except Exception as error:  # safetensors raises its own error types
            raise ConversionError(f"cannot read {path}: {error}") from error
        tensors.update({k: np.asarray(v, dtype=np.float32) for k, v in loaded.items()})
    return tensors


def _read_tokenizer(directory):
    lowercase = True
    config_path = os.path.join(directory, "tokenizer_config.json")
    if os.path.exists(config_path):
        with open(config_path, encoding="utf-8") as f:
            lowercase = bool(json.load(f).get("do_lower_case", True))
    vocab_path = os.path.join(directory, "vocab.txt")
    if os.path.exists(vocab_path):
        with open(vocab_path, encoding="utf-8") as f:
            return [line.rstrip("\n").removesuffix("\r") for line in f], lowercase
    tokenizer_path = os.path.join(directory, "tokenizer.json")
    if os.path.exists(tokenizer_path):
        with open(tokenizer_path, encoding="utf-8") as f:
            tokenizer = json.load(f)
        vocab = tokenizer.get("model", {}).get("vocab")
        normalizer = tokenizer.get("normalizer") or {}
        lowercase = bool(normalizer.get("lowercase", lowercase))
        if isinstance(vocab, dict):
            return [
                t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])
            ], lowercase
    return None, lowercase


def hf_name(original: str, scope: str) -> tuple[str, bool]:
    """The Hugging Face name of an original-layout tensor, and whether torch
    stores it transposed. The encoder's names come without `electra.`.

    >>> hf_name("electra/encoder/layer_3/attention/self/query/kernel", "electra")
    ('encoder.layer.3.attention.self.query.weight', True)
    >>> hf_name("discriminator_predictions/dense_1/bias", "electra")
    ('discriminator_predictions.dense_prediction.bias', False)
    """
    if original == "generator_predictions/output_bias":
        return "generator_lm_head.bias", False
    parts = original.split("/")
    if parts[0] in (DISCRIMINATOR_SCOPE, GENERATOR_SCOPE):
        parts = parts[1:]
    *module, parameter = parts
    module = [
        m.replace("layer_", "layer.") if re.fullmatch(r"layer_\d+", m) else m
        for m in module
    ]
    if module[:1] == ["discriminator_predictions"] and module[1:] == ["dense_1"]:
        module = ["discriminator_predictions", "dense_prediction"]
    if parameter.endswith("_embeddings"):
        return ".".join([*module, parameter, "weight"]), False
    renamed = {"kernel": "weight", "gamma": "weight", "beta": "bias", "bias": "bias"}
    if parameter not in renamed:
        raise ValueError(f"no Hugging Face name for {original}")
    return ".".join([*module, renamed[parameter]]), parameter == "kernel"


def original_name(name: str, scope: str, embeddings_scope: str) -> tuple[str, bool]:
    """The original-layout name of a Hugging Face tensor (without `electra.`),
    and whether torch stores it transposed; the inverse of `hf_name`.

    >>> original_name("embeddings.LayerNorm.weight", "generator", "electra/embeddings")
    ('electra/embeddings/LayerNorm/gamma', False)
    >>> original_name("encoder.layer.0.output.dense.weight", "generator", "x")
    ('generator/encoder/layer_0/output/dense/kernel', True)
    """
    if name == "generator_lm_head.bias":
        return "generator_predictions/output_bias", False
    *module, parameter = name.split(".")
    if not module or parameter not in ("weight", "bias"):
        raise ValueError(f"not an ELECTRA weight: {name}")
    if module[0] == "embeddings":
        base, module = [embeddings_scope], module[1:]
    elif module[0] in ("discriminator_predictions", "generator_predictions"):
        base = []
    elif module[0] in ("embeddings_project", "encoder"):
        base = [scope]
    else:
        raise ValueError(f"not an ELECTRA weight: {name}")
    parts, i = [], 0
    while i < len(module):
        if module[i] == "layer" and i + 1 < len(module) and module[i + 1].isdigit():
            parts.append(f"layer_{module[i + 1]}")
            i += 2
        else:
            parts.append(module[i])
            i += 1
    if parts == ["discriminator_predictions", "dense_prediction"]:
        parts = ["discriminator_predictions", "dense_1"]
    if parts and parts[-1].endswith("_embeddings") and parameter == "weight":
        return "/".join(base + parts), False
    if parts and parts[-1] == "LayerNorm":
        renamed = {"weight": "gamma", "bias": "beta"}[parameter]
        return "/".join(base + parts + [renamed]), False
    renamed = {"weight": "kernel", "bias": "bias"}[parameter]
    return "/".join(base + parts + [renamed]), parameter == "weight"


def _prefixed(name: str, architecture: str) -> str:
    """The full name in a checkpoint of `architecture`."""
    heads = (
        "discriminator_predictions.",
        "generator_predictions.",
        "generator_lm_head",
    )
    if architecture == ENCODER or name.startswith(heads):
        return name
    return "electra." + name


# === Hugging Face -> ours ===


def load_hf_encoder(directory) -> ElectraEncoder:
    """The encoder of any Hugging Face ELECTRA directory (heads are ignored)."""
    checkpoint = HfCheckpoint(directory)
    encoder = checkpoint.encoder()
    tensors = checkpoint.original_tensors(DISCRIMINATOR_SCOPE, "electra/embeddings")
    heads = ("discriminator_predictions/", "generator_predictions/")
    tensors = {k: v for k, v in tensors.items() if not k.startswith(heads)}
    assign_tensors(
        tower_variables(encoder, DISCRIMINATOR_SCOPE, "electra/embeddings"),
        tensors,
        checkpoint.directory,
    )
    return encoder


def load_hf_discriminator(directory) -> ElectraDiscriminator:
    """Our `ElectraDiscriminator` from an `ElectraForPreTraining` directory."""
    checkpoint = _checkpoint_of(directory, DISCRIMINATOR)
    discriminator = ElectraDiscriminator(checkpoint.encoder(), name="discriminator")
    assign_tensors(
        tower_variables(discriminator, DISCRIMINATOR_SCOPE, "electra/embeddings"),
        checkpoint.original_tensors(DISCRIMINATOR_SCOPE, "electra/embeddings"),
        checkpoint.directory,
    )
    return discriminator


def load_hf_generator(directory) -> ElectraGenerator:
    """Our `ElectraGenerator` (owning its embeddings) from `ElectraForMaskedLM`."""
    checkpoint = _checkpoint_of(directory, GENERATOR)
    generator = ElectraGenerator(
        checkpoint.encoder(name="generator_encoder"), name="generator"
    )
    assign_tensors(
        tower_variables(generator, GENERATOR_SCOPE, "generator/embeddings"),
        checkpoint.original_tensors(GENERATOR_SCOPE, "generator/embeddings"),
        checkpoint.directory,
    )
    return generator


def _checkpoint_of(directory, architecture) -> HfCheckpoint:
    checkpoint = HfCheckpoint(directory)
    if checkpoint.architecture != architecture:
        raise ConversionError(
            f"{checkpoint.directory} holds {checkpoint.architecture}, not "
            f"{architecture}"
        )
    return checkpoint


@dataclasses.dataclass
class HfPretrainingCheckpoint:
    """A discriminator + generator pair in the original layout.

    Attributes:
        tensors: both towers under original names; identical embedding blocks
            kept once (tied), different ones with the generator's under
            `generator/embeddings/`.
        model_config: the `ModelConfig` of these tensors.
        vocabulary: the tokens, if either directory has a tokenizer.
        lowercase: the tokenizer's `do_lower_case`.
        source: both directories, for messages.
    """

    tensors: dict
    model_config: ModelConfig
    vocabulary: list | None
    lowercase: bool
    source: str


def read_hf_pretraining_pair(
    discriminator_dir, generator_dir
) -> HfPretrainingCheckpoint:
    """Reads an `ElectraForPreTraining` and an `ElectraForMaskedLM` directory."""
    discriminator = _checkpoint_of(discriminator_dir, DISCRIMINATOR)
    generator = _checkpoint_of(generator_dir, GENERATOR)
    source = f"{discriminator.directory} + {generator.directory}"
    tensors = discriminator.original_tensors(DISCRIMINATOR_SCOPE, "electra/embeddings")
    generator_tensors = generator.original_tensors(
        GENERATOR_SCOPE, "generator/embeddings"
    )
    own = [k for k in generator_tensors if k.startswith("generator/embeddings/")]
    tied = all(
        np.array_equal(
            generator_tensors[k], tensors.get(k.replace("generator/", "electra/", 1))
        )
        for k in own
    )
    if tied:
        generator_tensors = {k: v for k, v in generator_tensors.items() if k not in own}
    else:
        logger.info("%s: different embeddings, so embedding_sharing='none'", source)
    tensors.update(generator_tensors)
    config = discriminator.config
    model_config = model_config_from_tensors(
        tensors,
        source,
        num_heads=config["num_attention_heads"],
        generator_num_heads=generator.config["num_attention_heads"],
        dropout=float(config.get("hidden_dropout_prob", 0.1)),
        layer_norm_epsilon=float(config.get("layer_norm_eps", 1e-12)),
        initializer_range=float(config.get("initializer_range", 0.02)),
    )
    return HfPretrainingCheckpoint(
        tensors=tensors,
        model_config=model_config,
        vocabulary=discriminator.vocabulary or generator.vocabulary,
        lowercase=discriminator.lowercase,
        source=source,
    )


def load_hf_pretrainer(
    discriminator_dir,
    generator_dir,
    pretraining_config: PretrainingConfig | None = None,
    **special_token_ids,
) -> ElectraPretrainer:
    """An `ElectraPretrainer` from a discriminator and a generator directory.

    Its `ModelConfig` is read from the shapes and configs (see
    `original_layout.model_config_from_tensors`); `pretraining_config`
    defaults to ours with `max_seq_length` at most the position table.
    `special_token_ids` (`pad_token_id`, ...) go to `ElectraPretrainer`.
    """
    pair = read_hf_pretraining_pair(discriminator_dir, generator_dir)
    return pretrainer_from_tensors(
        pair.tensors,
        pair.model_config,
        pair.source,
        pretraining_config=pretraining_config,
        **special_token_ids,
    )


# === ours -> Hugging Face ===


def hf_config(encoder, architecture: str, pad_token_id: int = 0) -> dict:
    """The `config.json` of `encoder` as a Hugging Face `architecture`."""
    return {
        "architectures": [architecture],
        "model_type": "electra",
        "vocab_size": encoder.vocabulary_size,
        "embedding_size": encoder.embedding_dim,
        "hidden_size": encoder.hidden_dim,
        "num_hidden_layers": encoder.num_layers,
        "num_attention_heads": encoder.num_heads,
        "intermediate_size": encoder.intermediate_dim,
        "hidden_act": "gelu",
        "hidden_dropout_prob": encoder.dropout,
        "attention_probs_dropout_prob": encoder.dropout,
        "max_position_embeddings": encoder.max_sequence_length,
        "type_vocab_size": encoder.num_segments,
        "initializer_range": encoder.initializer_range,
        "layer_norm_eps": encoder.layer_norm_epsilon,
        "pad_token_id": pad_token_id,
        "position_embedding_type": "absolute",
        "tie_word_embeddings": True,
        "dtype": "float32",
    }


def _save(
    variables,
    scope: str,
    encoder,
    architecture: str,
    directory,
    vocabulary: Vocabulary | None,
) -> str:
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    tensors = {}
    for original, value in read_tensors(variables).items():
        name, transpose = hf_name(original, scope)
        tensors[_prefixed(name, architecture)] = np.ascontiguousarray(
            value.T if transpose else value
        )
    pad_token_id = 0
    if vocabulary is not None:
        check_vocabulary_fits(
            vocabulary.size, encoder.vocabulary_size, error=ConversionError
        )
        pad_token_id = vocabulary.pad_id
        with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
            f.write(vocabulary.to_text())
        with open(
            os.path.join(directory, "tokenizer_config.json"), "w", encoding="utf-8"
        ) as f:
            json.dump(
                {
                    "tokenizer_class": "ElectraTokenizer",
                    "do_lower_case": vocabulary.lowercase,
                    "model_max_length": encoder.max_sequence_length,
                },
                f,
                indent=2,
            )
    # The metadata transformers expects of a torch-layout safetensors file.
    safetensors.numpy.save_file(
        tensors, os.path.join(directory, WEIGHTS_NAME), metadata={"format": "pt"}
    )
    with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as f:
        json.dump(hf_config(encoder, architecture, pad_token_id), f, indent=2)
    return directory


def save_hf_encoder(encoder, directory, vocabulary: Vocabulary | None = None) -> str:
    """Writes `encoder` as a Hugging Face `ElectraModel` directory."""
    variables = tower_variables(encoder, DISCRIMINATOR_SCOPE, "electra/embeddings")
    return _save(
        variables,
        DISCRIMINATOR_SCOPE,
        encoder,
        ENCODER,
        directory,
        vocabulary,
    )


def save_hf_discriminator(
    discriminator, directory, vocabulary: Vocabulary | None = None
) -> str:
    """Writes `discriminator` as a Hugging Face `ElectraForPreTraining` directory.

    A GDES discriminator's token table is written folded (see
    `standalone_tower`).
    """
    if discriminator.encoder.disentangles_embeddings:
        discriminator = standalone_tower(discriminator)
    variables = tower_variables(
        discriminator, DISCRIMINATOR_SCOPE, "electra/embeddings"
    )
    return _save(
        variables,
        DISCRIMINATOR_SCOPE,
        discriminator.encoder,
        DISCRIMINATOR,
        directory,
        vocabulary,
    )


def save_hf_generator(
    generator, directory, vocabulary: Vocabulary | None = None
) -> str:
    """Writes `generator` as a Hugging Face `ElectraForMaskedLM` directory.

    A generator that shares the discriminator's embeddings gets a copy of
    them (each Hugging Face checkpoint is self-contained).
    """
    embeddings = (
        "electra/embeddings"
        if generator.encoder.shares_embeddings
        else "generator/embeddings"
    )
    variables = tower_variables(generator, GENERATOR_SCOPE, embeddings)
    return _save(
        variables,
        GENERATOR_SCOPE,
        generator.encoder,
        GENERATOR,
        directory,
        vocabulary,
    )


def save_hf_pretrainer(
    pretrainer, directory, vocabulary: Vocabulary | None = None
) -> dict[str, str]:
    """Writes `directory/discriminator` and `directory/generator`.

    Returns their paths by name. The MLM baseline (no discriminator) writes
    only the generator.

    Raises:
        ConversionError: an objective with no Hugging Face counterpart
            (`original_layout.check_convertible`).
    """
    check_convertible(pretrainer)
    directory = os.fspath(directory)
    paths = {}
    if pretrainer.discriminator is not None:
        paths["discriminator"] = save_hf_discriminator(
            pretrainer.discriminator,
            os.path.join(directory, "discriminator"),
            vocabulary,
        )
        paths["generator"] = save_hf_generator(
            pretrainer.generator,
            os.path.join(directory, "generator"),
            vocabulary,
        )
    else:
        variables = tower_variables(
            pretrainer.generator, DISCRIMINATOR_SCOPE, "electra/embeddings"
        )
        paths["generator"] = _save(
            variables,
            DISCRIMINATOR_SCOPE,
            pretrainer.generator.encoder,
            GENERATOR,
            os.path.join(directory, "generator"),
            vocabulary,
        )
    return paths
