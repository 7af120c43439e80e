"""All-Tokens MLM: predict every input token's identity, with a copy mechanism."""

from __future__ import annotations

import keras
import tensorflow as tf
from keras import ops

from electra_tf.models.encoder import truncated_normal
from electra_tf.models.generator import masked_lm_head
from electra_tf.models.tower import ElectraTower, encoder_inputs


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraAllTokensMLM(ElectraTower):
    """MLM logits at every position plus a per-token copy logit.

    The paper's All-Tokens MLM (section 3.3): on the generator-corrupted
    input, the model predicts the original identity of EVERY token. Its
    output distribution at a position is
    `D * onehot(input token) + (1 - D) * softmax(mlm_logits)`, with the copy
    probability `D = sigmoid(copy_logits)` from one dense layer; the loss
    (`ElectraPretrainer`) is the cross-entropy of the original token under
    that mixture, so D learns only through it.

    The MLM head is the generator's (keras-hub's `MaskedLMHead`: dense(E) ->
    GELU -> LayerNorm -> tied output embedding + bias), here at all L
    positions: the [B, L, V] logits tensor is built, which dominates memory
    (B=32, L=128, V=30,522: 0.5 GB in float32, several times that in the
    backward pass).

    Inputs: `token_ids`, `segment_ids`, `padding_mask` int32 [B, L].
    Outputs: a dict of float32 `mlm_logits` [B, L, V] and `copy_logits` [B, L].

    Args:
        encoder: the discriminator-sized `ElectraEncoder`.
    """

    def __init__(self, encoder, **kwargs):
        # === Layers ===
        self.encoder = encoder
        self.mlm_head = masked_lm_head(encoder)
        self.copy_output = keras.layers.Dense(
            1,
            kernel_initializer=truncated_normal(encoder.initializer_range),
            dtype=encoder.dtype_policy,
            name="copy_output",
        )
        # Losses need float32 under mixed precision.
        self.mlm_logits_cast = keras.layers.Activation(
            "linear", dtype="float32", name="mlm_logits"
        )
        self.copy_logits_cast = keras.layers.Activation(
            "linear", dtype="float32", name="copy_logits"
        )

        # === Functional Model ===
        inputs = encoder_inputs()
        sequence_output = encoder(inputs)["sequence_output"]
        # 0, 1, ..., L-1 per row: the head's gather then keeps every position.
        # (Built from ops, since L is unknown when the graph is built.)
        positions = ops.cumsum(ops.ones_like(inputs["token_ids"]), axis=1) - 1
        logits = self.mlm_head(sequence_output, mask_positions=positions)
        copy_logits = self.copy_output(sequence_output)[..., 0]
        super().__init__(
            inputs=inputs,
            outputs={
                "mlm_logits": self.mlm_logits_cast(logits),
                "copy_logits": self.copy_logits_cast(copy_logits),
            },
            **kwargs,
        )


def copy_mixture_log_likelihood(mlm_logits, copy_logits, input_ids, target_ids):
    """log P(target) under `D * onehot(input) + (1 - D) * softmax(mlm_logits)`.

    Computed in log space (`log D = log_sigmoid(copy_logits)`), so neither a
    confident copy nor a confident prediction underflows.

    Args:
        mlm_logits: float [B, L, V].
        copy_logits: float [B, L], the logit of D.
        input_ids: int32 [B, L], the tokens the model read.
        target_ids: int32 [B, L], the original tokens.

    Returns:
        float32 [B, L].
    """
    mlm_logits = tf.cast(mlm_logits, tf.float32)
    copy_logits = tf.cast(copy_logits, tf.float32)
    target_logit = tf.gather(mlm_logits, target_ids, batch_dims=2)
    log_softmax_target = target_logit - tf.reduce_logsumexp(mlm_logits, axis=-1)
    log_predict = tf.math.log_sigmoid(-copy_logits) + log_softmax_target
    log_copy = tf.math.log_sigmoid(copy_logits)
    # Where the input is the target both terms hold probability mass.
    both = tf.reduce_logsumexp(tf.stack([log_copy, log_predict], axis=-1), axis=-1)
    return tf.where(tf.equal(input_ids, target_ids), both, log_predict)


def copy_mixture_prediction(mlm_logits, copy_logits, input_ids):
    """The most likely token under the copy mixture, int32 [B, L].

    Only the softmax's best token can beat the input token, so no [B, L, V]
    mixture is built: the input wins when `D + (1 - D) p(input)` is at least
    `(1 - D) p(best)`.
    """
    mlm_logits = tf.cast(mlm_logits, tf.float32)
    log_partition = tf.reduce_logsumexp(mlm_logits, axis=-1)
    best = tf.argmax(mlm_logits, axis=-1, output_type=tf.int32)
    p_best = tf.exp(tf.reduce_max(mlm_logits, axis=-1) - log_partition)
    p_input = tf.exp(tf.gather(mlm_logits, input_ids, batch_dims=2) - log_partition)
    copy = tf.sigmoid(tf.cast(copy_logits, tf.float32))
    input_wins = copy + (1.0 - copy) * p_input >= (1.0 - copy) * p_best
    return tf.where(input_wins, input_ids, best)
