"""The generator: an encoder plus keras-hub's masked-LM head at masked positions."""

from __future__ import annotations

import keras
from keras_hub.layers import MaskedLMHead

from electra_tf.models.encoder import ElectraEncoder, truncated_normal
from electra_tf.models.tower import ENCODER_INPUTS, ElectraTower, encoder_inputs


def masked_lm_head(encoder) -> MaskedLMHead:
    """The original's MLM head, its output tied to `encoder`'s token embedding."""
    return MaskedLMHead(
        token_embedding=encoder.token_embedding,
        intermediate_activation="gelu",
        layer_norm_epsilon=encoder.layer_norm_epsilon,
        kernel_initializer=truncated_normal(encoder.initializer_range),
        dtype=encoder.dtype_policy,
        name="mlm_head",
    )


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraGenerator(ElectraTower):
    """Masked-LM logits at the masked positions only.

    The head is the original's: dense(E) -> GELU -> LayerNorm -> logits =
    h @ token_embedding^T + bias (keras-hub's `MaskedLMHead` is exactly this).
    Gathering before the head means the [B, L, V] logits tensor is never built:
    only [B, N, V] with N = max_predictions_per_seq (19 of 128).

    Inputs: `token_ids`, `segment_ids`, `padding_mask` int32 [B, L] and
    `mask_positions` int32 [B, N]. Output: float32 logits [B, N, V].

    Args:
        encoder: an `ElectraEncoder` (in ELECTRA, one sharing the
            discriminator's embeddings; for the MLM baseline, the
            discriminator's encoder itself).
    """

    def __init__(self, encoder, **kwargs):
        # === Layers ===
        self.encoder = encoder
        self.mlm_head = masked_lm_head(encoder)
        # Sampling and losses need float32 logits under mixed precision.
        self.logits_cast = keras.layers.Activation(
            "linear", dtype="float32", name="mlm_logits"
        )

        # === Functional Model ===
        inputs = encoder_inputs("mask_positions")
        sequence_output = encoder({k: inputs[k] for k in ENCODER_INPUTS})[
            "sequence_output"
        ]
        logits = self.mlm_head(sequence_output, mask_positions=inputs["mask_positions"])
        super().__init__(inputs=inputs, outputs=self.logits_cast(logits), **kwargs)


def standalone_generator(generator: ElectraGenerator) -> ElectraGenerator:
    """A copy of `generator` that owns its embeddings, for saving on its own."""
    encoder = ElectraEncoder(
        **generator.encoder.architecture(), name="generator_encoder"
    )
    copy = ElectraGenerator(encoder, name="generator")
    copy.set_weights(generator.get_weights())
    return copy
