"""Dynamic masking, done inside the training graph at every step."""

from __future__ import annotations

from typing import NamedTuple

import tensorflow as tf

from electra_tf import random_streams

# Scores of positions that must never be chosen; finite so XLA and top_k
# behave the same on every device.
_NEVER = -1e9


class MaskedBatch(NamedTuple):
    """What masking produces; N = max_predictions_per_seq."""

    # int32 [B, L]: the input with chosen positions set to [MASK] (85% of them).
    masked_ids: tf.Tensor
    # int32 [B, N]: the chosen positions; slots with weight 0 are padding.
    positions: tf.Tensor
    # float32 [B, N]: 1 for a real masked slot, 0 for an unused slot.
    weights: tf.Tensor
    # int32 [B, N]: the original token at each chosen position.
    target_ids: tf.Tensor
    # bool [B, L]: True where a position was chosen (masked or kept).
    chosen: tf.Tensor


def scatter_to_sequence(values, positions, weights, length):
    """Writes per-slot `values` [B, N] at `positions` [B, N] into a [B, L] tensor.

    Slots with weight 0 write nothing. Chosen positions are distinct (they come
    from `top_k`), so the sum below never adds two values in one place. A
    one-hot contraction is used because it is static-shaped and fast under XLA
    on every device; it costs B*N*L multiply-adds, negligible next to the model.
    """
    one_hot = tf.one_hot(positions, length, dtype=values.dtype)  # [B, N, L]
    live = tf.cast(weights > 0, values.dtype)[..., None]
    return tf.reduce_sum(one_hot * live * values[..., None], axis=1)


def candidate_mask(token_ids, padding_mask, special_token_ids):
    """bool [B, L]: the positions masking may choose (real, not special)."""
    candidate = tf.cast(padding_mask, tf.bool)
    for special in special_token_ids:
        candidate &= tf.not_equal(tf.cast(token_ids, tf.int32), special)
    return candidate


def mask_tokens(
    token_ids,
    padding_mask,
    *,
    key,
    example_index,
    mask_prob: float,
    max_predictions: int,
    mask_token_prob: float,
    mask_token_id: int,
    special_token_ids: tuple[int, ...],
) -> MaskedBatch:
    """Chooses positions to mask, as the original ELECTRA does, and masks them.

    * Candidates are real tokens that are not special (`[CLS]`, `[SEP]`,
      `[MASK]`, `[PAD]`): specials and padding are never chosen.
    * Each example masks `max(1, min(N, round(real_tokens * mask_prob)))`
      positions, where `real_tokens` counts every real token, specials
      included (the original's rule).
    * Positions are drawn uniformly WITHOUT replacement (Gumbel top-k). The
      original draws with replacement, so duplicates silently lower its masking
      rate; drawing without replacement masks exactly the intended count.
    * Of the chosen positions `mask_token_prob` (85%) become `[MASK]`; the rest
      keep their token. No random tokens are substituted.

    Args:
        token_ids: int32 [B, L].
        padding_mask: int32 or bool [B, L], true for real tokens.
        key: uint32 scalar from `random_streams.step_key`.
        example_index: int32 [B], global example indices.
        mask_prob, max_predictions, mask_token_prob: see `PretrainingConfig`.
        mask_token_id: id of `[MASK]`.
        special_token_ids: ids never chosen.
    """
    token_ids = tf.cast(token_ids, tf.int32)
    length = token_ids.shape[1]
    real = tf.cast(padding_mask, tf.bool)
    candidate = candidate_mask(token_ids, padding_mask, special_token_ids)

    noise = random_streams.gumbel(
        key, example_index, random_streams.STREAM_MASK_POSITIONS, (length,)
    )
    scores = tf.where(candidate, noise, _NEVER)
    top_scores, positions = tf.math.top_k(scores, k=max_predictions, sorted=True)

    num_real = tf.reduce_sum(tf.cast(real, tf.float32), axis=-1)
    num_to_mask = tf.cast(tf.round(num_real * mask_prob), tf.int32)
    num_to_mask = tf.maximum(1, tf.minimum(max_predictions, num_to_mask))
    # A slot is live if it is among the first `num_to_mask` and hit a candidate
    # (an example with fewer candidates than slots leaves the rest unused).
    in_count = tf.range(max_predictions)[None, :] < num_to_mask[:, None]
    weights = tf.cast(in_count & (top_scores > _NEVER / 2), tf.float32)

    use_mask_token = (
        random_streams.uniform(
            key, example_index, random_streams.STREAM_MASK_TOKEN, (max_predictions,)
        )
        < mask_token_prob
    )
    mask_token_weights = weights * tf.cast(use_mask_token, tf.float32)
    to_mask_token = (
        scatter_to_sequence(
            tf.ones_like(weights), positions, mask_token_weights, length
        )
        > 0
    )
    chosen = scatter_to_sequence(tf.ones_like(weights), positions, weights, length) > 0
    masked_ids = tf.where(to_mask_token, mask_token_id, token_ids)
    target_ids = tf.gather(token_ids, positions, batch_dims=1)
    return MaskedBatch(masked_ids, positions, weights, target_ids, chosen)


def given_masking(token_ids, masked_ids, positions, weights) -> MaskedBatch:
    """The `MaskedBatch` of masking drawn elsewhere, for tests and tools.

    What lets a step be compared with another implementation's on the same
    draws (`ElectraPretrainer`'s injected draws); training never calls it.

    Args:
        token_ids: int32 [B, L], the original ids.
        masked_ids: int32 [B, L], the generator's input ([MASK] where chosen
            to be, the original token elsewhere).
        positions: int32 [B, N], distinct chosen positions per row.
        weights: float32 [B, N], 1 for a live slot, 0 for an unused one.
    """
    token_ids = tf.cast(token_ids, tf.int32)
    positions = tf.cast(positions, tf.int32)
    weights = tf.cast(weights, tf.float32)
    chosen = (
        scatter_to_sequence(
            tf.ones_like(weights), positions, weights, token_ids.shape[1]
        )
        > 0
    )
    target_ids = tf.gather(token_ids, positions, batch_dims=1)
    return MaskedBatch(
        tf.cast(masked_ids, tf.int32), positions, weights, target_ids, chosen
    )
