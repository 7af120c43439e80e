"""In-graph checks of a serving request, run before any op reads it.

A loaded SavedModel signature checks the dtype of each input (TensorFlow
refuses an int32 tensor where a string is declared: `InvalidArgumentError:
... input #0(zero-based) was expected to be a string tensor but is a int32
tensor`) but not its shape: a [batch, 1] text or a scalar reaches the graph,
and two texts of different batch sizes reached the tokenizer and packer,
which answered silently for the shorter batch, or aborted the whole process
(`std::length_error`, exit 134) for the other order. Every exported signature
passes its inputs through `checked_texts` or `checked_ids` first, so such a
request gets an `InvalidArgumentError` naming the input instead:

* `Shape of tensor text [2,1] is not compatible with expected shape [?].`
  (a `tf.ensure_shape`, which TensorFlow runs even where the declared shape
  would let its optimizer drop a rank check);
* `text and text_pair must have the same batch size` (with both sizes);
* `token_ids, segment_ids and padding_mask must have the same shape`;
* `token_ids must be in [0, vocabulary_size)` (with the offending values);
* `token_ids is longer than the N positions of the model` (with its length; was
  TensorFlow's `Expected size[0] in [0, N], but got L` from the position
  embedding's slice, naming no input).

An empty batch is a valid request: every signature answers it with empty
outputs.
"""

from __future__ import annotations

import tensorflow as tf


def _after(checks, tensors):
    """`tensors`, each only available after every op in `checks` has run."""
    with tf.control_dependencies(checks):
        return tuple(tf.identity(t) for t in tensors)


def checked_texts(**texts: tf.Tensor) -> tuple[tf.Tensor, ...]:
    """The tf.string inputs `texts` (by name), each checked to be [batch],
    all of one batch size; returned in order, as a tuple."""
    names = list(texts)
    values = tuple(tf.ensure_shape(texts[name], [None]) for name in names)
    checks = [
        tf.debugging.assert_equal(
            tf.shape(value)[0],
            tf.shape(values[0])[0],
            message=f"{names[0]} and {name} must have the same batch size",
        )
        for name, value in zip(names[1:], values[1:])
    ]
    return _after(checks, values) if checks else values


def checked_ids(
    inputs: dict, vocabulary_size: int | None = None, max_length: int | None = None
) -> dict:
    """The int32 [batch, length] inputs (by name; the first holds token ids
    when `vocabulary_size` is given), checked to be of one shape, the ids to be
    in [0, vocabulary_size) and the length at most `max_length` (the model's
    positions) where given; returned as a dict of the same keys."""
    names = list(inputs)
    values = [tf.ensure_shape(inputs[name], [None, None]) for name in names]
    together = ", ".join(names[:-1]) + f" and {names[-1]}"
    checks = [
        tf.debugging.assert_equal(
            tf.shape(value),
            tf.shape(values[0]),
            message=f"{together} must have the same shape",
        )
        for value in values[1:]
    ]
    if vocabulary_size is not None:
        checks.append(
            tf.debugging.assert_less(
                values[0],
                tf.cast(vocabulary_size, values[0].dtype),
                message=f"{names[0]} must be in [0, {vocabulary_size})",
            )
        )
        checks.append(
            tf.debugging.assert_non_negative(
                values[0], message=f"{names[0]} must be in [0, {vocabulary_size})"
            )
        )
    if max_length is not None:
        checks.append(
            tf.debugging.assert_less_equal(
                tf.shape(values[0])[1],
                max_length,
                message=(
                    f"{names[0]} is longer than the {max_length} positions of the model"
                ),
            )
        )
    return dict(zip(names, _after(checks, values)))
