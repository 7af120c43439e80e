"""The discriminator: the encoder plus the replaced-token-detection head."""

from __future__ import annotations

import keras

from electra_tf.models.encoder import truncated_normal
from electra_tf.models.tower import ElectraTower, encoder_inputs


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraDiscriminator(ElectraTower):
    """Per-token logits of "this token was replaced".

    Head as the original's `discriminator_predictions`: dense(H, GELU) ->
    dense(1). Inputs: `token_ids`, `segment_ids`, `padding_mask` int32 [B, L].
    Output: float32 logits [B, L].
    """

    def __init__(self, encoder, **kwargs):
        # === Layers ===
        self.encoder = encoder
        self.rtd_dense = keras.layers.Dense(
            encoder.hidden_dim,
            activation="gelu",
            kernel_initializer=truncated_normal(encoder.initializer_range),
            dtype=encoder.dtype_policy,
            name="rtd_dense",
        )
        self.rtd_output = keras.layers.Dense(
            1,
            # The original left this at the TF1 default (Glorot uniform).
            kernel_initializer="glorot_uniform",
            dtype=encoder.dtype_policy,
            name="rtd_output",
        )
        self.logits_cast = keras.layers.Activation(
            "linear", dtype="float32", name="rtd_logits"
        )

        # === Functional Model ===
        inputs = encoder_inputs()
        x = encoder(inputs)["sequence_output"]
        logits = self.rtd_output(self.rtd_dense(x))[..., 0]
        super().__init__(inputs=inputs, outputs=self.logits_cast(logits), **kwargs)
