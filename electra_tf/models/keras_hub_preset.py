"""Keras-hub ELECTRA presets: our `ElectraEncoder` to and from
`keras_hub.models.ElectraBackbone`, and the one loader of a preset.

A preset is our own encoder's saved form, not only a foreign checkpoint: the
pre-training export `export/discriminator/` is one, and the task models'
`from_preset` read one. So it lives with the models, below `conversion/`,
`export/` and `finetuning/`, which all import it.

The encoder and the backbone share layer names, so conversion copies layer by
layer. What differs:

* keras-hub's backbone computes GELU with the tanh approximation and has a
  tanh pooler (`pooled_dense`) the original ELECTRA does not have. Going to
  keras-hub, `pooled_dense` is set to the identity (kernel I, bias 0), so its
  `pooled_output` is `tanh(sequence_output[:, 0])`; coming from keras-hub it
  is dropped. The sequence outputs of the two differ only by the GELU form
  (about 1e-3 relative for the tiny test model; see tests).
* keras-hub fixes LayerNorm epsilon at 1e-12, the original's value; an encoder
  with another epsilon is refused rather than silently changed.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
import urllib.error

import keras_hub
import numpy as np
import tensorflow as tf
from keras_hub.src.tokenizers.word_piece_tokenizer import VOCAB_FILENAME
from keras_hub.src.utils import preset_utils

from electra_tf.data.vocabulary import Vocabulary, check_vocabulary_fits
from electra_tf.errors import ConversionError, ElectraError
from electra_tf.models.encoder import ElectraEncoder


class PretrainedModelError(ElectraError, ValueError):
    """A pre-trained model cannot be loaded or does not fit its tokenizer."""


def _weight_layers(encoder) -> list[str]:
    names = ["token_embedding", "position_embedding", "segment_embedding"]
    names.append("embeddings_layer_norm")
    if encoder.hidden_dim != encoder.embedding_dim:
        names.append("embeddings_projection")
    names += [f"transformer_layer_{i}" for i in range(encoder.num_layers)]
    return names


def copy_layer_weights(source, target, layer_names) -> None:
    """Copies weights of same-named layers.

    Nothing is copied unless every layer fits.

    Raises:
        ConversionError: listing every missing layer and every tensor whose
            shape differs, tensor by tensor.
    """
    problems, copies = [], []
    for name in layer_names:
        try:
            source_weights = source.get_layer(name).get_weights()
            target_layer = target.get_layer(name)
        except ValueError as error:
            problems.append(f"{name}: missing ({error})")
            continue
        target_weights = target_layer.get_weights()
        if len(source_weights) != len(target_weights):
            problems.append(
                f"{name}: {len(source_weights)} tensors in the source, "
                f"{len(target_weights)} in the target"
            )
            continue
        fits = True
        for variable, s, t in zip(target_layer.weights, source_weights, target_weights):
            if s.shape != t.shape:
                fits = False
                problems.append(
                    f"{variable.path}: shape {list(s.shape)} in the source, "
                    f"{list(t.shape)} in the target"
                )
        if fits:
            copies.append((target_layer, source_weights))
    if problems:
        raise ConversionError("Weights do not match", problems)
    for target_layer, weights in copies:
        target_layer.set_weights(weights)


def keras_hub_backbone_from_encoder(encoder: ElectraEncoder):
    """A `keras_hub.models.ElectraBackbone` holding `encoder`'s weights."""
    if encoder.layer_norm_epsilon != 1e-12:
        raise ConversionError(
            "keras-hub's ElectraBackbone fixes layer_norm_epsilon at 1e-12; "
            f"this encoder uses {encoder.layer_norm_epsilon}"
        )
    backbone = keras_hub.models.ElectraBackbone(
        vocab_size=encoder.vocabulary_size,
        num_layers=encoder.num_layers,
        num_heads=encoder.num_heads,
        hidden_dim=encoder.hidden_dim,
        embedding_dim=encoder.embedding_dim,
        intermediate_dim=encoder.intermediate_dim,
        dropout=encoder.dropout,
        max_sequence_length=encoder.max_sequence_length,
        num_segments=encoder.num_segments,
        # float32 whatever the encoder trained in (the preset records its
        # policy, and loading it would compute in bfloat16 everywhere).
        dtype="float32",
    )
    copy_layer_weights(encoder, backbone, _weight_layers(encoder))
    backbone.get_layer("pooled_dense").set_weights(
        [np.eye(encoder.hidden_dim, dtype="float32"), np.zeros(encoder.hidden_dim)]
    )
    return backbone


def encoder_from_keras_hub(backbone, dtype=None) -> ElectraEncoder:
    """An `ElectraEncoder` (exact GELU, no pooler) with `backbone`'s weights."""
    encoder = ElectraEncoder(
        vocabulary_size=backbone.vocab_size,
        num_layers=backbone.num_layers,
        num_heads=backbone.num_heads,
        hidden_dim=backbone.hidden_dim,
        embedding_dim=backbone.embedding_dim,
        intermediate_dim=backbone.intermediate_dim,
        dropout=backbone.dropout,
        max_sequence_length=backbone.max_sequence_length,
        num_segments=backbone.num_segments,
        dtype=dtype,
    )
    copy_layer_weights(backbone, encoder, _weight_layers(encoder))
    return encoder


def save_keras_hub_preset(encoder, vocabulary: Vocabulary, preset_dir):
    """Writes `encoder` and its tokenizer as a keras-hub preset directory.

    `keras_hub.models.ElectraBackbone.from_preset(preset_dir)` and
    `keras_hub.models.ElectraTokenizer.from_preset(preset_dir)` load it.
    """
    backbone = keras_hub_backbone_from_encoder(encoder)
    check_vocabulary_fits(
        vocabulary.size, encoder.vocabulary_size, error=ConversionError
    )
    tokenizer = keras_hub.models.ElectraTokenizer(
        vocabulary=list(vocabulary.tokens), lowercase=vocabulary.lowercase
    )
    preset_dir = str(preset_dir)
    if "://" not in preset_dir:
        backbone.save_to_preset(preset_dir)
        tokenizer.save_to_preset(preset_dir)
        return
    # keras-hub writes presets with `os` and `open`, which know only local
    # paths: write locally, then copy to gs:// (or any tf.io.gfile path).
    with tempfile.TemporaryDirectory() as local:
        backbone.save_to_preset(local)
        tokenizer.save_to_preset(local)
        _copy_tree(local, preset_dir)


def _copy_tree(source: str, destination: str) -> None:
    """Copies a local directory to a `tf.io.gfile` path, files overwritten."""
    for directory, _, files in os.walk(source):
        relative = os.path.relpath(directory, source)
        target = destination if relative == "." else f"{destination}/{relative}"
        tf.io.gfile.makedirs(target)
        for name in files:
            tf.io.gfile.copy(
                os.path.join(directory, name),
                f"{target}/{name}",
                overwrite=True,
            )


def electra_preset_names() -> list[str]:
    """The names of keras-hub's own ELECTRA presets (downloaded when used)."""
    return sorted(keras_hub.models.ElectraBackbone.presets)


def checked_preset(preset, *, weights: bool, tokenizer: bool) -> str:
    """`preset` as a string; a local directory must hold the preset's
    `config.json`, and its weights and tokenizer if the caller reads them.

    kaggle:// or hf:// handles are left to keras-hub; a preset name must be
    one of keras-hub's (`electra_preset_names`), and a local path gets a
    message naming it and the missing file instead of keras-hub's.

    Raises:
        PretrainedModelError: a local path that is not such a directory (a
            file, such as the export's `discriminator.keras`, is named as
            one), or a name keras-hub does not know (with the ELECTRA names).
    """
    preset = os.fspath(preset)
    if "://" in preset:
        return preset
    if not (os.sep in preset or os.path.exists(preset)):
        if preset in preset_utils.BUILTIN_PRESETS:
            return preset
        raise PretrainedModelError(
            f"{preset} is neither a keras-hub preset name nor a directory here; "
            f"keras-hub's ELECTRA presets: {', '.join(electra_preset_names())} "
            "(a pre-training run's export/discriminator directory is a preset too)"
        )
    if os.path.isfile(preset):
        directory = preset.removesuffix(".keras")
        hint = (
            f"; pass the preset directory beside it, {directory}"
            if directory != preset and os.path.isdir(directory)
            else "; pass a preset directory, such as a pre-training run's "
            "export/discriminator"
        )
        raise PretrainedModelError(
            f"{preset} is a file, not a keras-hub preset directory{hint}"
        )
    if not os.path.isdir(preset):
        raise PretrainedModelError(
            f"{preset} is not a keras-hub preset directory: it does not exist"
        )
    needed = [preset_utils.CONFIG_FILE]
    needed += [preset_utils.MODEL_WEIGHTS_FILE] if weights else []
    needed += [preset_utils.TOKENIZER_CONFIG_FILE] if tokenizer else []
    for name in needed:
        if not os.path.exists(os.path.join(preset, name)):
            raise PretrainedModelError(
                f"{preset} is not a keras-hub preset directory: {name} is missing "
                "(see save_keras_hub_preset)"
            )
    return preset


@contextlib.contextmanager
def _downloading(preset):
    """Turns a failed download of a named (or kaggle://, hf://) preset into one
    `PretrainedModelError` line: keras-hub's is a `requests` traceback, and
    offline is the usual cause."""
    try:
        yield
    except PretrainedModelError:
        raise
    except Exception as error:
        if os.path.isdir(preset) or not _is_network_error(error):
            raise
        raise PretrainedModelError(
            f"cannot download keras-hub preset {preset} "
            f"({type(error).__name__}): offline? A preset directory (a "
            "pre-training run's export/discriminator, or one downloaded "
            "elsewhere) loads without the network"
        ) from error


def _is_network_error(error: BaseException) -> bool:
    """Whether `error` (or what caused it) is a failed connection or request."""
    while error is not None:
        module = type(error).__module__.split(".")[0]
        if module in ("requests", "urllib3", "kagglehub", "huggingface_hub"):
            return True
        if isinstance(error, (ConnectionError, TimeoutError, socket.gaierror)):
            return True
        if isinstance(error, urllib.error.URLError):
            return True
        error = error.__cause__ or error.__context__
    return False


def preset_architecture(preset) -> dict:
    """A keras-hub preset's backbone config (`hidden_dim`, `num_layers`, ...),
    read without building the model.

    Raises:
        PretrainedModelError: a local directory that is not a preset.
    """
    preset = checked_preset(preset, weights=False, tokenizer=True)
    with _downloading(preset):
        return preset_utils.load_json(preset, preset_utils.CONFIG_FILE)["config"]


def preset_vocabulary(preset) -> Vocabulary:
    """The WordPiece vocabulary and casing of a keras-hub ELECTRA preset (a
    directory or a preset name), read from the file `save_keras_hub_preset`
    writes: keras-hub's own loader strips each line, which turns a learned
    vocabulary's whitespace token (`" "`) into an empty one.

    Raises:
        PretrainedModelError: a local directory that is not a preset.
    """
    preset = checked_preset(preset, weights=False, tokenizer=True)
    with _downloading(preset):
        path = preset_utils.get_file(
            preset, f"{preset_utils.TOKENIZER_ASSET_DIR}/{VOCAB_FILENAME}"
        )
        tokenizer = preset_utils.load_json(preset, preset_utils.TOKENIZER_CONFIG_FILE)
    return Vocabulary.from_file(path, tokenizer["config"]["lowercase"])


def load_keras_hub_preset(
    preset, dtype=None, *, load_weights=True, dropout=None
) -> ElectraEncoder:
    """Our encoder from a keras-hub ELECTRA preset (a directory or a preset name).

    Args:
        preset: a preset directory or keras-hub preset name.
        dtype: the encoder's dtype policy.
        load_weights: False keeps the encoder randomly initialised (with the
            preset's architecture).
        dropout: replaces the preset's own rate (None keeps it): fine-tuning
            uses the paper's 0.1 even when pre-training ran without dropout.

    Raises:
        PretrainedModelError: naming the preset and what is wrong with it (a
            missing directory or file, or weights whose shapes the config does
            not have), instead of keras-hub's generic messages.
    """
    preset = checked_preset(preset, weights=load_weights, tokenizer=False)
    overrides = {} if dropout is None else {"dropout": dropout}
    try:
        with _downloading(preset):
            backbone = keras_hub.models.ElectraBackbone.from_preset(
                preset, load_weights=load_weights, **overrides
            )
    except PretrainedModelError:
        raise
    except (ValueError, OSError) as error:
        raise PretrainedModelError(
            f"cannot load keras-hub preset {preset}: {error}"
        ) from error
    return encoder_from_keras_hub(backbone, dtype=dtype)


def load_task_parts(
    preset,
    preprocessor_cls,
    *,
    load_weights=True,
    sequence_length=128,
    dtype=None,
    encoder_dropout=None,
    **preprocessor_args,
):
    """The encoder and a new `preprocessor_cls` of a keras-hub ELECTRA preset,
    for a task model's `from_preset`: the preset checked, its backbone
    converted (`load_keras_hub_preset`, `dropout=encoder_dropout`), its
    `ElectraTokenizer` given to the preprocessor with `sequence_length` and
    `preprocessor_args`, and the two checked to fit (`check_preset_fits`).

    Raises:
        PretrainedModelError: the directory is not a preset, or its
            vocabulary and embedding sizes differ.
    """
    preset = checked_preset(preset, weights=load_weights, tokenizer=True)
    encoder = load_keras_hub_preset(
        preset, dtype, load_weights=load_weights, dropout=encoder_dropout
    )
    with _downloading(preset):
        tokenizer = keras_hub.models.ElectraTokenizer.from_preset(preset)
    preprocessor = preprocessor_cls(
        tokenizer,
        sequence_length=sequence_length,
        **preprocessor_args,
    )
    check_preset_fits(preset, encoder, preprocessor.tokenizer, sequence_length)
    return encoder, preprocessor


def check_preset_fits(preset, encoder, tokenizer, sequence_length) -> None:
    """A preset's tokenizer must fit its encoder's embeddings, and the packed
    length its position embeddings.

    Raises:
        PretrainedModelError: either does not fit.
    """
    check_vocabulary_fits(
        tokenizer.vocabulary_size(),
        encoder.vocabulary_size,
        f"{preset}: the tokenizer",
        error=PretrainedModelError,
    )
    if sequence_length > encoder.max_sequence_length:
        raise PretrainedModelError(
            f"sequence_length {sequence_length} exceeds the {preset} model's "
            f"max_sequence_length {encoder.max_sequence_length}"
        )
