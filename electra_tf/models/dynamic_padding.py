"""Packed batches cut to their longest sequence, so padding costs no compute.

The preprocessors pack every example to `sequence_length` (the exports serve
that fixed shape). For fine-tuning and evaluation, `trim_padding` cuts a
batch to the first of `LENGTHS` evenly spaced lengths (for 4: a quarter, a
half, three quarters or all of the packed length) that holds its longest
example. The encoder's result at real tokens does not change: the attention
mask already zeroes padded keys, and every other layer works per token. Real
tokens must come first in each row, as the packers leave them.

With batches grouped by length (`electra_tf.finetuning.length_grouping`),
most batches are far shorter than `sequence_length`: Brown POS sentences
average 21 words against windows of 64 or 128 pieces.
"""

from __future__ import annotations

import tensorflow as tf

# A few lengths, not every one: XLA compiles one program per input shape
# (the first step of `small` takes 100-200 s under XLA on a CPU).
LENGTHS = 4


def trimmed_length(padding_mask: tf.Tensor, lengths: int = LENGTHS):
    """The first of `lengths` evenly spaced lengths up to the packed length
    that holds the batch's longest real sequence (an int32 scalar tensor)."""
    packed = tf.shape(padding_mask)[1]
    step = (packed + lengths - 1) // lengths
    real = tf.reduce_sum(tf.cast(padding_mask, tf.int32), axis=1)
    longest = tf.maximum(tf.reduce_max(tf.concat([real, [1]], 0)), 1)
    return tf.minimum((longest + step - 1) // step * step, packed)


def trim_padding(x: dict, *per_token, lengths: int = LENGTHS):
    """`x` (the encoder's inputs [batch, packed length]) and any per-token
    tensors (labels, sample weights of the same [batch, packed length]) cut
    to `trimmed_length`. Returns `x` alone, or `(x, *per_token)` when given.
    """
    length = trimmed_length(x["padding_mask"], lengths)
    trimmed = {key: value[:, :length] for key, value in x.items()}
    if not per_token:
        return trimmed
    return (trimmed, *(None if t is None else t[:, :length] for t in per_token))
