"""Packed batches cut to their longest sequence, so padding costs no compute.

The preprocessors pack every example to `sequence_length` (the exports serve
that fixed shape). For fine-tuning and evaluation, `trim_padding` cuts a
batch to just past its longest example. The encoder's result at real tokens
does not change: the attention mask already zeroes padded keys, and every
other layer works per token. Real tokens must come first in each row, as the
packers leave them.

How close it cuts depends on how the step runs. In graph mode (Keras traces
with `reduce_retracing`, so one trace of unknown length serves every batch)
it cuts to the longest example (to a multiple of 8 until 2026-11-26, which
left 12% of the positions padding; BENCHMARKS.md section 12). Under XLA,
which compiles one program per input shape (the first step of `small` takes
100-200 s on a CPU), it cuts to the first of `XLA_LENGTHS` evenly spaced lengths (a
quarter, a half, three quarters or all of the packed length) that holds the
longest example.

A tagging batch holds more windows than sentences when a sentence's pieces
exceed a window, so its row count varies too: on Brown POS at length 64, 39-41
shapes in one epoch, each a new XLA compilation. Under XLA `pad_rows` pads
the windows to a multiple of a quarter of the batch's sentences
(`ROW_STEPS`), rows the loss and metrics weigh 0, so the same epoch compiles
9 shapes.

With batches grouped by length (`electra_tf.finetuning.length_grouping`),
most batches are far shorter than `sequence_length`: Brown POS sentences
average 21 words against windows of 64 or 128 pieces. Prediction does the
same with `length_order`.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

# XLA: a few lengths, so a few compilations.
XLA_LENGTHS = 4
# XLA: rows (windows) padded to a multiple of the sentences / ROW_STEPS.
ROW_STEPS = 4


def trimmed_length(padding_mask: tf.Tensor, few_lengths: bool = False):
    """The length a batch is cut to (an int32 scalar tensor): its longest
    real sequence, or with `few_lengths` (XLA) rounded up to one of
    `XLA_LENGTHS` evenly spaced lengths; never more than the packed length."""
    packed = tf.shape(padding_mask)[1]
    if few_lengths:
        step = (packed + XLA_LENGTHS - 1) // XLA_LENGTHS
    else:
        step = tf.constant(1)
    real = tf.reduce_sum(tf.cast(padding_mask, tf.int32), axis=1)
    # The 1 keeps a length for a batch with no rows (no real sentence).
    longest = tf.reduce_max(tf.concat([real, [1]], 0))
    return tf.minimum((longest + step - 1) // step * step, packed)


def trim_padding(x: dict, *per_token, few_lengths: bool = False):
    """`x` (the encoder's inputs [batch, packed length]) and any per-token
    tensors (labels, sample weights of the same [batch, packed length]) cut
    to `trimmed_length`. Returns `x` alone, or `(x, *per_token)` when given.
    """
    length = trimmed_length(x["padding_mask"], few_lengths)
    trimmed = {key: value[:, :length] for key, value in x.items()}
    if not per_token:
        return trimmed
    return (trimmed, *(None if t is None else t[:, :length] for t in per_token))


def padded_rows(rows, sentences):
    """`rows` rounded up to a multiple of `ceil(sentences / ROW_STEPS)` (int32
    scalars): a batch of 32 sentences gets 32, 40, 48, ... rows."""
    step = tf.maximum((sentences + ROW_STEPS - 1) // ROW_STEPS, 1)
    return (rows + step - 1) // step * step


def pad_rows(x: dict, *per_row, rows):
    """`x` (the encoder's inputs [batch, length]) and per-row tensors (labels,
    sample weights of the same [batch, length]) padded with zero rows to
    `rows` rows: `[PAD]` tokens (id 0) that are all padding, label 0 and
    weight 0, so a loss or metric weighted by the sample weights is unchanged.
    Returns `(x, *per_row)`.
    """

    def pad(value):
        if value is None:
            return None
        extra = rows - tf.shape(value)[0]
        return tf.pad(value, [[0, extra], [0, 0]])

    return ({key: pad(value) for key, value in x.items()}, *map(pad, per_row))


def length_order(texts) -> np.ndarray:
    """The order of `texts` (raw strings [n], or words [n, (words)]) from
    fewest characters to most, a proxy for their packed length that needs no
    tokenizer. Predicting in that order (and restoring it after) cuts each
    batch to about its own sentences' length instead of the longest of a
    random draw: tagging Brown POS dev (5,860 sentences, batches of 128, the
    `cpu` preset's size) takes a third less CPU time (BENCHMARKS.md section
    12, "Tagging dev in length order")."""
    lengths = tf.strings.length(texts)
    if lengths.shape.rank > 1:
        lengths = tf.reduce_sum(lengths, axis=1)
    return np.argsort(lengths.numpy(), kind="stable")
