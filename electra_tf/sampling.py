"""Sampling replacements from the generator and building the corrupted input."""

from __future__ import annotations

import tensorflow as tf

from electra_tf import random_streams
from electra_tf.masking import MaskedBatch, scatter_to_sequence

# Subtracted from the original token's logit under `disallow_correct`.
_DISALLOW_PENALTY = 1000.0


def gumbel_max_sample(
    logits,
    *,
    key,
    example_index,
    temperature: float = 1.0,
    disallowed_ids=None,
):
    """Draws one id per slot from softmax(logits / temperature).

    Gumbel-max: `argmax(logits / T + g)` with standard Gumbel `g` is an exact
    sample of the softmax. Done in float32 whatever the compute dtype, since
    bfloat16 logits would distort the tail of the distribution.

    Args:
        logits: [B, N, V] generator logits (any float dtype).
        key, example_index: see `random_streams.uniform`.
        temperature: softmax temperature (> 0).
        disallowed_ids: optional int [B, N]; those ids get their logit lowered
            by 1000 so they are (practically) never sampled.

    Returns:
        int32 [B, N] sampled ids, with no gradient path to `logits`.
    """
    logits = tf.stop_gradient(tf.cast(logits, tf.float32)) / temperature
    vocabulary_size = logits.shape[-1]
    if disallowed_ids is not None:
        logits -= _DISALLOW_PENALTY * tf.one_hot(disallowed_ids, vocabulary_size)
    noise = random_streams.gumbel(
        key, example_index, random_streams.STREAM_SAMPLE, tuple(logits.shape[1:])
    )
    return tf.argmax(logits + noise, axis=-1, output_type=tf.int32)


def replace_tokens(token_ids, masked: MaskedBatch, sampled_ids):
    """Writes the sampled ids into the ORIGINAL input at every chosen position.

    Args:
        token_ids: int32 [B, L] original ids.
        masked: the `MaskedBatch` the generator saw.
        sampled_ids: int32 [B, N].

    Returns:
        (corrupted_ids int32 [B, L], is_replaced bool [B, L]). A position whose
        sample equals the original token is labelled original (False).
    """
    token_ids = tf.cast(token_ids, tf.int32)
    length = token_ids.shape[1]
    # stop_gradient is redundant for integer ids but states the boundary.
    sampled_ids = tf.stop_gradient(sampled_ids)
    scattered = scatter_to_sequence(
        sampled_ids, masked.positions, masked.weights, length
    )
    corrupted = tf.where(masked.chosen, scattered, token_ids)
    is_replaced = masked.chosen & tf.not_equal(corrupted, token_ids)
    return corrupted, is_replaced
