"""Electric's noise model: a two-tower cloze model over the unmasked input, and the
noise correction it gives the discriminator's logit."""

from __future__ import annotations

import math

import keras
import tensorflow as tf
from keras import ops

from electra_tf.models.encoder import standalone_encoder
from electra_tf.models.generator import masked_lm_head
from electra_tf.models.tower import encoder_inputs


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraClozeGenerator(keras.Model):
    """Cloze logits q(x_t | x_<t, x_>t) at every position, never reading x_t.

    Electric (Clark, Luong, Le and Manning, EMNLP 2020): two generator-sized
    encoders read the UNMASKED input, one with left-to-right attention
    (`left_to_right_encoder`, position t sees positions <= t) and one with
    right-to-left attention (`right_to_left_encoder`, positions >= t). The
    representation at t is the left tower's output at t-1 concatenated with
    the right tower's at t+1 (zeros past either end), so it depends on every
    other token but not on x_t. The head is the generator's (dense(E) ->
    GELU -> LayerNorm -> tied output table + bias, keras-hub's
    `MaskedLMHead`), applied at every position: the [B, L, V] logits tensor is
    built, as for All-Tokens MLM.

    Inputs: `token_ids`, `segment_ids`, `padding_mask` int32 [B, L].
    Output: float32 logits [B, L, V].

    Args:
        left_to_right_encoder: an `ElectraEncoder` with
            `attention="left_to_right"`; the head's output table is its token
            embedding.
        right_to_left_encoder: one with `attention="right_to_left"` (in a
            pretrainer, sharing the left tower's embeddings).
    """

    def __init__(self, left_to_right_encoder, right_to_left_encoder, **kwargs):
        # === Layers ===
        self.left_to_right_encoder = left_to_right_encoder
        self.right_to_left_encoder = right_to_left_encoder
        self.mlm_head = masked_lm_head(left_to_right_encoder)
        # Sampling, losses and the discriminator's correction need float32.
        self.logits_cast = keras.layers.Activation(
            "linear", dtype="float32", name="cloze_logits"
        )

        # === Functional Model ===
        inputs = encoder_inputs()
        left = left_to_right_encoder(inputs)["sequence_output"]
        right = right_to_left_encoder(inputs)["sequence_output"]
        # Shift by one: t reads the left tower at t-1 and the right at t+1.
        left = ops.pad(left[:, :-1], [[0, 0], [1, 0], [0, 0]])
        right = ops.pad(right[:, 1:], [[0, 0], [0, 1], [0, 0]])
        context = ops.concatenate([left, right], axis=-1)
        # 0, 1, ..., L-1 per row: the head's gather keeps every position.
        positions = ops.cumsum(ops.ones_like(inputs["token_ids"]), axis=1) - 1
        logits = self.mlm_head(context, mask_positions=positions)
        super().__init__(inputs=inputs, outputs=self.logits_cast(logits), **kwargs)

    def get_config(self):
        return {
            "left_to_right_encoder": keras.layers.serialize(self.left_to_right_encoder),
            "right_to_left_encoder": keras.layers.serialize(self.right_to_left_encoder),
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for name in ("left_to_right_encoder", "right_to_left_encoder"):
            config[name] = keras.layers.deserialize(config[name])
        return cls(**config)


def standalone_cloze_generator(generator: ElectraClozeGenerator):
    """A copy of `generator` whose towers own their embeddings, for saving."""
    copy = ElectraClozeGenerator(
        standalone_encoder(generator.left_to_right_encoder),
        standalone_encoder(generator.right_to_left_encoder),
        name=generator.name,
    )
    # The head's own weights (its output table is the left tower's, copied).
    copy.mlm_head.set_weights(generator.mlm_head.get_weights())
    return copy


def electric_correction(cloze_logits, token_ids, mask_prob):
    """Electric's noise term of the discriminator's logit, float32 [B, L].

    `stop_gradient(log q(x_t | context)) + log(p / (1 - p))`, with q the
    cloze model's softmax at t evaluated at the token present `token_ids`
    [B, L] and p the mask probability: added to the discriminator's
    per-token output, it makes the sigmoid the posterior that x_t is noise,
    so ELECTRA's negative sampling becomes noise-contrastive estimation.

    Args:
        cloze_logits: float [B, L, V].
        token_ids: int32 [B, L], the tokens the discriminator read.
        mask_prob: p.
    """
    cloze_logits = tf.stop_gradient(tf.cast(cloze_logits, tf.float32))
    log_q = tf.gather(cloze_logits, token_ids, batch_dims=2) - tf.reduce_logsumexp(
        cloze_logits, axis=-1
    )
    return log_q + math.log(mask_prob / (1.0 - mask_prob))
