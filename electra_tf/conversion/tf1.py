"""The original google-research/electra TF1 checkpoints to ours.

A pre-training checkpoint of the original (and the released `electra_small`,
`electra_base`, `electra_large` downloads) holds the discriminator under
`electra/`, the generator under `generator/` (sharing `electra/embeddings/`
unless trained with `untied_generator_embeddings`), the heads under
`discriminator_predictions/` and `generator_predictions/`, Adam's
`<name>/adam_m` and `<name>/adam_v`, and `global_step`. Those names are our
conversion layout already (`electra_tf.conversion.original_layout`), so conversion is
reading them with `tf.train.load_checkpoint` (no TF1 code, no graph) and
checking them against our models tensor by tensor.

The architecture is read from the shapes; the number of attention heads is
not visible in any shape and defaults to the original's max(1, hidden // 64)
(right for every released model). The released small model is "small++":
its generator is as wide as the discriminator (256), so it fits the
`small++` preset (generator_hidden_size 1.0), not `small` (1/4); forcing
`small` reports every generator tensor whose shape differs.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import tensorflow as tf

from electra_tf.config import ModelConfig, PretrainingConfig
from electra_tf.conversion.original_layout import (
    DISCRIMINATOR_SCOPE,
    GENERATOR_SCOPE,
    assign_tensors,
    has_generator,
    model_config_from_tensors,
    pretrainer_from_tensors,
    tower_variables,
)
from electra_tf.errors import ConversionError
from electra_tf.models.discriminator import ElectraDiscriminator
from electra_tf.models.encoder import ElectraEncoder

_MODEL_SCOPES = (
    f"{DISCRIMINATOR_SCOPE}/",
    f"{GENERATOR_SCOPE}/",
    "discriminator_predictions/",
    "generator_predictions/",
)
# Optimizer slots of the original's AdamWeightDecayOptimizer.
_SLOT_SUFFIXES = ("/adam_m", "/adam_v")


@dataclasses.dataclass
class Tf1Checkpoint:
    """The model tensors of an original ELECTRA checkpoint.

    Attributes:
        path: the checkpoint prefix read.
        tensors: `{original name: float32 array}`, optimizer slots left out.
        step: its `global_step` (0 if absent): the learning-rate schedule's
            offset when pre-training continues from it.
        ignored: names outside the model scopes (e.g. a fine-tuning head).
    """

    path: str
    tensors: dict[str, np.ndarray]
    step: int
    ignored: list[str]


def read_tf1_checkpoint(path) -> Tf1Checkpoint:
    """Reads a TF1 checkpoint (a prefix such as `model.ckpt-1000000`, or a
    directory with a `checkpoint` file).

    Raises:
        ConversionError: the path is not a readable checkpoint.
    """
    path = os.fspath(path)
    if tf.io.gfile.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None:
            raise ConversionError(f"{path} is a directory without a checkpoint")
        path = latest
    try:
        reader = tf.train.load_checkpoint(path)
    except (ValueError, tf.errors.OpError) as error:
        message = str(error).splitlines()[0]
        raise ConversionError(f"cannot read checkpoint {path}: {message}") from error
    tensors, ignored = {}, []
    for name in sorted(reader.get_variable_to_shape_map()):
        if name.endswith(_SLOT_SUFFIXES) or name == "global_step":
            continue
        if not name.startswith(_MODEL_SCOPES):
            ignored.append(name)
            continue
        tensors[name] = np.asarray(reader.get_tensor(name), dtype=np.float32)
    step = 0
    if reader.has_tensor("global_step"):
        step = int(reader.get_tensor("global_step"))
    return Tf1Checkpoint(path=path, tensors=tensors, step=step, ignored=ignored)


def tf1_model_config(checkpoint: Tf1Checkpoint, num_heads: int = 0) -> ModelConfig:
    """The `ModelConfig` of a TF1 checkpoint's shapes (heads: see module doc)."""
    return model_config_from_tensors(
        checkpoint.tensors, checkpoint.path, num_heads=num_heads
    )


def load_tf1_pretrainer(
    path,
    model_config: ModelConfig | None = None,
    num_heads: int = 0,
    pretraining_config: PretrainingConfig | None = None,
    **special_token_ids,
):
    """An `ElectraPretrainer` with a TF1 pre-training checkpoint's weights.

    Args:
        path: checkpoint prefix or directory.
        model_config: the architecture to load into; None reads it from the
            shapes (`tf1_model_config`). A given config that does not fit is
            reported tensor by tensor (e.g. the released small++ generator
            into `small`'s 1/4-width generator).
        num_heads: attention heads when `model_config` is None.
        pretraining_config, special_token_ids: for `ElectraPretrainer`.

    Returns:
        `(pretrainer, checkpoint)`; `checkpoint.step` is the global step.
    """
    checkpoint = read_tf1_checkpoint(path)
    if not has_generator(checkpoint.tensors):
        raise ConversionError(
            f"{checkpoint.path} has no generator/ tensors: a discriminator-only "
            "checkpoint (see load_tf1_discriminator)"
        )
    if model_config is None:
        model_config = tf1_model_config(checkpoint, num_heads)
    pretrainer = pretrainer_from_tensors(
        checkpoint.tensors,
        model_config,
        checkpoint.path,
        pretraining_config=pretraining_config,
        **special_token_ids,
    )
    return pretrainer, checkpoint


def load_tf1_discriminator(path, num_heads: int = 0) -> ElectraDiscriminator:
    """The discriminator of a TF1 checkpoint (generator tensors are ignored)."""
    checkpoint = read_tf1_checkpoint(path)
    config = tf1_model_config(checkpoint, num_heads)
    discriminator = ElectraDiscriminator(
        ElectraEncoder.discriminator_from_config(config), name="discriminator"
    )
    variables = tower_variables(
        discriminator, DISCRIMINATOR_SCOPE, f"{DISCRIMINATOR_SCOPE}/embeddings"
    )
    tensors = {
        name: value
        for name, value in checkpoint.tensors.items()
        if not name.startswith((f"{GENERATOR_SCOPE}/", "generator_predictions/"))
    }
    assign_tensors(variables, tensors, checkpoint.path)
    return discriminator
