"""Fine-tuned task models and the pre-trained discriminator as LiteRT models.

`litert_model` converts a model whose inputs are the encoder's packed
`token_ids`, `segment_ids` and `padding_mask` (int32 [batch, length]) —
`ElectraTextClassifier`, `ElectraTokenClassifier`, `ElectraQuestionAnswerer`,
`ElectraDiscriminator` — with TensorFlow's `tf.lite.TFLiteConverter` into a
`.tflite` flatbuffer with one signature, `predict_token_ids`, whose outputs
are the Keras model's (a dict's keys, or `logits` for a single tensor),
floats as float32. The batch and the length are dynamic: the interpreter
resizes its inputs to each request.

Quantizations (`QUANTIZATIONS`):

* `float32`: the weights as they are (the model computes in float32 whatever
  precision it trained in: `electra_tf.export.float32`);
* `dynamic_int8`: int8 weights of the dense layers and embeddings
  (`tf.lite.Optimize.DEFAULT` without a calibration set); activations stay
  float and are quantized on the fly inside each matrix product;
* `full_int8`: int8 weights and int8 activations with ranges measured on a
  calibration set (`calibration`: packed inputs drawn from the training
  file); ops without an int8 kernel stay float. Refused for the question
  answerer (`check_quantization`): its span logits carry a -1000 mask
  outside the context, which stretches their int8 range to steps of about 4
  (measured on a tiny model: span logits off by ~500); its dynamic_int8
  model keeps float32's spans (BENCHMARKS, LiteRT).

Text goes in as token ids, with the tokenizer shipped beside the model
(`vocab.txt` and `tokenizer_config.json`, `export_litert`): the caller
tokenizes and packs
`[CLS] text [SEP]` itself. Raw text in is not offered yet: our models were
trained with keras-hub's tokenizer, whose ops have no LiteRT kernels; TF
Text's `FastBertTokenizer` has them (`ai_edge_litert`'s
`InterpreterWithCustomOps` with `tensorflow_text.tflite_registrar
.SELECT_TFTEXT_OPS` loads and runs it), but that its tokens equal
keras-hub's on every input is unchecked. Running a model needs only
`ai-edge-litert`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable

import keras
import tensorflow as tf

from electra_tf.config import QUANTIZATIONS
from electra_tf.errors import ElectraError
from electra_tf.export.float32 import float32_model

ENCODER_INPUTS = ("token_ids", "segment_ids", "padding_mask")
SIGNATURE = "predict_token_ids"


def _predict_token_ids(model):
    """The model on the packed inputs, its outputs a dict of float32."""

    # Optional inputs beside the encoder's (the question answerer's
    # `start_positions`, for training) are left out.
    optional = [name for name in model.input if name not in ENCODER_INPUTS]

    def predict(inputs):
        outputs = model({**inputs, **dict.fromkeys(optional)}, training=False)
        if not isinstance(outputs, dict):
            outputs = {"logits": outputs}
        return {
            name: tf.cast(value, tf.float32) if value.dtype.is_floating else value
            for name, value in outputs.items()
        }

    return predict


def litert_model(
    model,
    quantization: str = "float32",
    calibration: Iterable[dict] | None = None,
) -> bytes:
    """The `.tflite` flatbuffer of `model` (see the module docstring).

    Args:
        model: a Keras model on `token_ids`, `segment_ids`, `padding_mask`.
        quantization: one of `QUANTIZATIONS`.
        calibration: for `full_int8` only: packed inputs (dicts of int32
            numpy arrays [batch, length] keyed by `ENCODER_INPUTS`), e.g.
            `calibration_batches` over the training file.
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(
            f"quantization must be one of {QUANTIZATIONS}, got {quantization!r}"
        )
    if (quantization == "full_int8") != (calibration is not None):
        raise ValueError("a calibration set goes with full_int8, and only with it")
    check_quantization(model, quantization)
    # Through Keras' export archive, as `model.export(format="litert")`
    # does: a `tf.Module` of our own left the weights as resource variables
    # the interpreter read uninitialised (NaN outputs).
    # The functional graph alone: tracking the task model would take its
    # preprocessor along (a tagger's tag lookup table has no LiteRT kernel).
    # Computing in float32 whatever precision the model trained in.
    model = float32_model(model)
    model = keras.Model(model.input, model.output)
    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint(
        SIGNATURE,
        _predict_token_ids(model),
        input_signature=[
            {
                name: tf.TensorSpec([None, None], tf.int32, name=name)
                for name in ENCODER_INPUTS
            }
        ],
    )
    with tempfile.TemporaryDirectory() as saved_model:
        archive.write_out(saved_model, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(
            saved_model, signature_keys=[SIGNATURE]
        )
        return _convert(converter, quantization, calibration)


def check_quantization(model, quantization: str) -> None:
    """Raises `LiteRTExportError` for a quantization that would give `model`
    wrong outputs: `full_int8` of a question answerer (module docstring)."""
    outputs = model.output if isinstance(model.output, dict) else {}
    if quantization == "full_int8" and "start_logits" in outputs:
        raise LiteRTExportError(
            "full_int8 does not fit a question answerer: its span logits carry "
            "a -1000 mask outside the context, which stretches their int8 range "
            "until near spans are one value; use dynamic_int8 (int8 weights, "
            "float activations), which keeps float32's spans"
        )


def _convert(converter, quantization, calibration) -> bytes:
    if quantization != "float32":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantization == "full_int8":
        batches = list(calibration)
        if not batches:
            raise ValueError("the calibration set is empty")
        converter.representative_dataset = lambda: (
            {name: batch[name] for name in ENCODER_INPUTS} for batch in batches
        )
    return converter.convert()


def read_calibration_file(path: str):
    """The examples of `--calibration-file`, as the model's preprocessor
    takes them: a list of texts, or for a model of text pairs (tab-separated
    on each line) a tuple of two lists."""
    with open(path, encoding="utf-8") as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    if not lines:
        raise LiteRTExportError(f"{path}: no sentences")
    fields = [line.split("\t") for line in lines]
    if all(len(row) == 1 for row in fields):
        return lines
    for number, row in enumerate(fields, 1):
        if len(row) != 2:
            raise LiteRTExportError(
                f"{path}, line {number}: {len(row)} tab-separated texts; a "
                "calibration file holds one text a line, or for a model of text "
                "pairs two, separated by a tab, on every line"
            )
    return tuple(map(list, zip(*fields)))


def calibration_batches(preprocessor, inputs, batches: int = 32):
    """Packed single-example inputs for `full_int8` from `inputs` (what the
    task model's preprocessor takes: sentences, or a tuple of two lists),
    each cut to its real length as serving cuts requests."""
    if isinstance(inputs, tuple):
        examples = list(zip(*inputs))[:batches]
    else:
        examples = list(inputs)[:batches]
    result = []
    for example in examples:
        x = preprocessor(x=[example] if isinstance(example, str) else example)
        if isinstance(x, tuple):
            x = x[0]
        length = max(1, int(tf.reduce_sum(tf.cast(x["padding_mask"], tf.int32))))
        result.append(
            {
                name: tf.cast(x[name], tf.int32).numpy().reshape(1, -1)[:, :length]
                for name in ENCODER_INPUTS
            }
        )
    return result


class LiteRTExportError(ElectraError, ValueError):
    """A model file that cannot be exported, or a missing vocabulary."""


def load_task_model(path: str):
    """A `.keras` task model or discriminator (safe mode) to export."""
    if not tf.io.gfile.exists(path):
        raise LiteRTExportError(f"{path}: no such model file")
    try:
        model = keras.models.load_model(path, safe_mode=True, compile=False)
    except (ValueError, OSError, TypeError) as error:
        raise LiteRTExportError(f"{path}: not a Keras model file ({error})") from None
    missing = [name for name in ENCODER_INPUTS if name not in (model.input or {})]
    if not isinstance(model.input, dict) or missing:
        raise LiteRTExportError(
            f"{path}: the model does not take the encoder inputs {list(ENCODER_INPUTS)}"
        )
    return model


def model_tokenizer(model):
    """The keras-hub tokenizer of the model's preprocessor, or None."""
    preprocessor = getattr(model, "preprocessor", None)
    return None if preprocessor is None else preprocessor.tokenizer


def export_litert(
    model,
    export_dir: str,
    tokenizer,
    quantizations: Iterable[str] = ("float32", "dynamic_int8"),
    calibration: Iterable[dict] | None = None,
) -> dict[str, str]:
    """Writes `model_<quantization>.tflite` for each quantization and the
    tokenizer beside them: `vocab.txt` (one token a line, in id order) and
    `tokenizer_config.json` (`{"lowercase": ...}`), what
    `keras_hub.models.ElectraTokenizer(vocabulary=..., lowercase=...)` takes.
    `tokenizer`: the keras-hub tokenizer the model was trained with. Returns
    the paths by name (`vocab`, `tokenizer_config` and each quantization)."""
    quantizations = list(quantizations)
    for quantization in quantizations:  # before anything is written
        check_quantization(model, quantization)
    tf.io.gfile.makedirs(export_dir)
    paths = {
        "vocab": os.path.join(export_dir, "vocab.txt"),
        "tokenizer_config": os.path.join(export_dir, "tokenizer_config.json"),
    }
    for quantization in quantizations:
        flatbuffer = litert_model(
            model,
            quantization,
            calibration=calibration if quantization == "full_int8" else None,
        )
        path = os.path.join(export_dir, f"model_{quantization}.tflite")
        with tf.io.gfile.GFile(path, "wb") as f:
            f.write(flatbuffer)
        paths[quantization] = path
    with tf.io.gfile.GFile(paths["vocab"], "w") as f:
        f.write("".join(f"{token}\n" for token in tokenizer.get_vocabulary()))
    with tf.io.gfile.GFile(paths["tokenizer_config"], "w") as f:
        f.write(json.dumps({"lowercase": bool(tokenizer.lowercase)}) + "\n")
    return paths
