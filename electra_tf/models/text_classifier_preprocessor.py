"""Raw text -> the encoder's inputs, for sentence and sentence-pair classification."""

from __future__ import annotations

import keras
import keras_hub
import numpy as np
import tensorflow as tf


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTextClassifierPreprocessor(keras_hub.models.TextClassifierPreprocessor):
    """Tokenizes and packs one or two text segments for `ElectraTextClassifier`.

    It mirrors `keras_hub.models.BertTextClassifierPreprocessor`:

    1. each segment is tokenized with an `ElectraTokenizer` (WordPiece);
    2. a `keras_hub.layers.MultiSegmentPacker` packs them as
       `[CLS] A [SEP]` or `[CLS] A [SEP] B [SEP]`, truncating the longest
       segment first ("round_robin") and padding to `sequence_length`;
    3. the result is the dict `ElectraEncoder` takes: `token_ids` and
       `segment_ids` (int32 [batch, sequence_length]; segment 0 for
       `[CLS] A [SEP]`, 1 for `B [SEP]`) and `padding_mask` (bool, True on
       real tokens).

    Labels and sample weights pass through unchanged, so the layer maps over
    a `tf.data.Dataset` of `(x, y)` and `keras_hub`'s task API maps it inside
    `fit()`, `evaluate()` and `predict()`.

    `backbone_cls` is keras-hub's `ElectraBackbone` because presets on disk (our
    pre-training export, keras-hub's released ELECTRA models) are saved as
    that class: `from_preset()` then finds the `ElectraTokenizer` in them.

    Args:
        tokenizer: a `keras_hub.models.ElectraTokenizer`.
        sequence_length: length of the packed inputs (ELECTRA's GLUE recipe:
            128).
        truncate: "round_robin" (take one token at a time from each segment
            that still has room, as BERT and ELECTRA do) or "waterfall".

    Example:
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...               "the", "quick", "fox", "a", "whale"]
    >>> tokenizer = keras_hub.models.ElectraTokenizer(
    ...     vocabulary=vocabulary, lowercase=True)
    >>> preprocessor = ElectraTextClassifierPreprocessor(tokenizer, sequence_length=8)
    >>> x = preprocessor(x=(["The quick fox"], ["a whale"]))  # x=: not (x, y)
    >>> x["token_ids"].numpy().tolist()
    [[2, 5, 6, 7, 3, 8, 9, 3]]
    >>> x["segment_ids"].numpy().tolist()
    [[0, 0, 0, 0, 0, 1, 1, 1]]
    >>> x, y = preprocessor(["the fox"], [1])
    >>> x["padding_mask"].numpy().astype(int).tolist(), y
    ([[1, 1, 1, 1, 0, 0, 0, 0]], [1])
    """

    backbone_cls = keras_hub.models.ElectraBackbone
    tokenizer_cls = keras_hub.models.ElectraTokenizer

    def __init__(
        self, tokenizer, sequence_length=128, truncate="round_robin", **kwargs
    ):
        super().__init__(
            tokenizer=tokenizer,
            sequence_length=sequence_length,
            truncate=truncate,
            **kwargs,
        )

    def sequence_lengths(self, x, batch_size: int = 1024) -> np.ndarray:
        """Each example's real positions once packed (int [examples]): its
        pieces after truncation, with `[CLS]` and the `[SEP]`s. `x` is the
        texts as `call` takes them (a string array, or a tuple of two);
        fine-tuning groups training batches by it (`length_grouping`)."""
        # `(x,)`: map would take a pair's two segments as two arguments.
        batches = tf.data.Dataset.from_tensor_slices((x,)).batch(batch_size)
        real = batches.map(
            lambda batch: tf.reduce_sum(
                tf.cast(self(x=batch)["padding_mask"], tf.int32), axis=1
            )
        )
        return np.concatenate([[]] + [r.numpy() for r in real]).astype(np.int64)
