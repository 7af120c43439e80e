"""ELECTRA for token classification (tagging): one tag per word."""

from __future__ import annotations

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from electra_tf.models.compile_on_load import CompileOnLoad
from electra_tf.models.dynamic_padding import (
    length_order,
    pad_rows,
    padded_rows,
    trim_padding,
)
from electra_tf.models.encoder import ElectraEncoder, truncated_normal
from electra_tf.models.hashed_dropout import HashedDropout
from electra_tf.models.in_memory import (
    ShuffledFit,
    in_memory_dataset,
    is_in_memory,
)
from electra_tf.models.loss_reduction import keras_reduction
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.token_classifier_preprocessor import (
    ElectraTokenClassifierPreprocessor,
    as_ragged,
)
from electra_tf.precision import head_dtype

ENCODER_INPUTS = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTokenClassifier(CompileOnLoad, ShuffledFit, keras_hub.models.Task):
    """`ElectraEncoder` -> `sequence_output` -> dropout -> dense, at every token.

    The original ELECTRA's tagging head: dropout and one dense layer with a
    truncated-normal (stddev 0.02) kernel on each token's final hidden state,
    giving logits [windows, sequence_length, num_classes]. Each word is read
    at its first WordPiece (`ElectraTokenClassifierPreprocessor`).

    With a preprocessor, `fit()` and `evaluate()` take sentences as lists of
    words and one tag per word (strings from the preprocessor's `tags`, or
    ids; `fit()` shuffles them every epoch, `ShuffledFit`); `predict()` takes
    words or raw text and returns, per sentence, the logits of each word
    [words, num_classes]; `predict_tags()` the tags. A
    sentence longer than a window is predicted over several windows, so every
    word gets a tag. Without a preprocessor they are Keras' own, on the
    encoder's packed inputs.

    The default loss is cross-entropy on logits averaged over labelled words
    (`reduction="mean_with_sample_weight"`: other pieces and specials have
    weight 0; `compile(loss_reduction="sum")` sums it over them instead), and
    the default metric token accuracy over the same words.

    Args:
        backbone: an `ElectraEncoder`.
        num_classes: number of tags; None: one per tag of the preprocessor.
        preprocessor: an `ElectraTokenClassifierPreprocessor` or None.
        dropout: dropout rate before the dense layer (ELECTRA: 0.1).

    Example:
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...               "the", "fox", "jump", "##s", "a", "dog"]
    >>> tokenizer = keras_hub.models.ElectraTokenizer(
    ...     vocabulary=vocabulary, lowercase=True)
    >>> preprocessor = ElectraTokenClassifierPreprocessor(
    ...     tokenizer, tags=["DET", "NOUN", "VERB"], sequence_length=8)
    >>> encoder = ElectraEncoder(
    ...     vocabulary_size=len(vocabulary), num_layers=1, num_heads=1,
    ...     hidden_dim=16, embedding_dim=8, intermediate_dim=32,
    ...     max_sequence_length=8)
    >>> tagger = ElectraTokenClassifier(
    ...     backbone=encoder, num_classes=3, preprocessor=preprocessor)
    >>> history = tagger.fit(
    ...     x=[["The", "fox", "jumps"], ["a", "dog"]],
    ...     y=[["DET", "NOUN", "VERB"], ["DET", "NOUN"]], batch_size=2, verbose=0)
    >>> [len(tags) for tags in tagger.predict_tags([["a", "fox"], ["jumps"] * 9])]
    [2, 9]
    """

    backbone_cls = ElectraEncoder
    preprocessor_cls = ElectraTokenClassifierPreprocessor

    def __init__(
        self, backbone, num_classes=None, preprocessor=None, dropout=0.1, **kwargs
    ):
        if num_classes is None:
            if preprocessor is None or not preprocessor.tags:
                raise ValueError("num_classes, or a preprocessor with tags, is needed")
            num_classes = len(preprocessor.tags)
        if preprocessor is not None and preprocessor.tags:
            if len(preprocessor.tags) != num_classes:
                raise ValueError(
                    f"{num_classes} classes but the preprocessor has "
                    f"{len(preprocessor.tags)} tags"
                )
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        # Hashed, as the encoder's: Keras' own dropout is slow under XLA on
        # CPUs (see HashedDropout).
        self.output_dropout = HashedDropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.output_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=truncated_normal(backbone.initializer_range),
            dtype=head_dtype(backbone.dtype_policy),
            name="output_dense",
        )

        # === Functional Model ===
        inputs = backbone.input
        sequence_output = backbone(inputs)["sequence_output"]
        outputs = self.output_dense(self.output_dropout(sequence_output))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout
        self._word_logits_function = None

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """The preprocessor's windows, cut to the batch's longest
        (`trim_padding`; to one of a few lengths under XLA), with their
        labels and weights. Under XLA the windows are also padded to one of
        a few counts (`pad_rows`, with weight 0), as each shape compiles."""
        # Packed ids without a preprocessor (a dict) are windows already.
        sentences = _sentences(x) if self.preprocessor is not None else None
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
            super().preprocess_samples(x, y, sample_weight)
        )
        if self.preprocessor is not None:
            xla = self.jit_compile is True
            x, y, sample_weight = trim_padding(x, y, sample_weight, few_lengths=xla)
            if xla and y is not None:
                rows = padded_rows(tf.shape(x["token_ids"])[0], sentences)
                x, y, sample_weight = pad_rows(x, y, sample_weight, rows=rows)
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def compile(
        self,
        optimizer="auto",
        loss="auto",
        *,
        metrics="auto",
        loss_reduction="mean",
        **kwargs,
    ):
        """Adam(5e-5), masked cross-entropy and token accuracy for "auto".

        `loss_reduction` reduces the "auto" loss over the labelled words:
        "mean" or "sum" (the original ELECTRA's; `electra_tf.models.loss_reduction`).
        """
        reduction = keras_reduction(loss, loss_reduction, "mean_with_sample_weight")
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(5e-5)
        if loss == "auto":
            loss = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction=reduction
            )
        if metrics == "auto":
            metrics = None
            kwargs.setdefault(
                "weighted_metrics",
                [keras.metrics.SparseCategoricalAccuracy("accuracy")],
            )
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.update({"num_classes": self.num_classes, "dropout": self.dropout})
        return config

    @classmethod
    def from_preset(
        cls,
        preset,
        tags,
        load_weights=True,
        sequence_length=128,
        dtype=None,
        encoder_dropout=None,
        segment_id=0,
        **kwargs,
    ):
        """A tagger on a keras-hub ELECTRA preset (our pre-training export),
        with a new head for `tags`, its windows in segment `segment_id`
        (`ElectraTokenClassifierPreprocessor`); see
        `ElectraTextClassifier.from_preset`.

        Raises:
            PretrainedModelError: the directory is not a preset, or its
                vocabulary and embedding sizes differ.
        """
        # The text classifier's loader checks the preset and converts the
        # encoder; its head is dropped. (Its head's initialisation draws from
        # the seeded generators before this tagger's head: recorded fine-tuning
        # runs, tests/finetuning/demo_runs.json, depend on that order.)
        classifier = ElectraTextClassifier.from_preset(
            preset,
            num_classes=2,
            load_weights=load_weights,
            sequence_length=sequence_length,
            dtype=dtype,
            encoder_dropout=encoder_dropout,
        )
        preprocessor = ElectraTokenClassifierPreprocessor(
            classifier.preprocessor.tokenizer,
            tags=tags,
            sequence_length=sequence_length,
            segment_id=segment_id,
        )
        return cls(backbone=classifier.backbone, preprocessor=preprocessor, **kwargs)

    # === Words in, words out ===

    def in_memory_inputs(self, x, y):
        """Sentences as lists of words (or a ragged tf.string [batch, (words)])
        and one tag (string or id) per word, as ragged tensors."""
        if self.preprocessor is None:
            return x, y
        return as_ragged(x), None if y is None else as_ragged(y)

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        if is_in_memory(x):
            x, y = self.in_memory_inputs(x, y)
        return super().evaluate(
            x=x, y=y, batch_size=batch_size, sample_weight=sample_weight, **kwargs
        )

    def word_logits(self, x):
        """Logits of each word [batch, (words), num_classes], and the windows.

        `x`: words (ragged tf.string [batch, (words)]) or raw text (tf.string
        [batch]). A graph-friendly function: the SavedModel export runs it.
        """
        windows = self.preprocessor.windows(x)
        # Positions past the longest window are never read: skip them.
        inputs = trim_padding({key: windows[key] for key in ENCODER_INPUTS})
        logits = self(inputs, training=False)
        index = tf.stack(
            [windows["word_window"].flat_values, windows["word_position"].flat_values],
            axis=1,
        )
        per_word = tf.gather_nd(tf.cast(logits, tf.float32), index)
        return windows["words"].with_flat_values(per_word), windows

    def predict(self, x=None, batch_size=None, verbose="auto", **kwargs):
        """Per sentence, the logits of each word: a list of [words, num_classes].

        `x`: lists of words, raw texts, or a dataset of either (batches).
        In memory, they are predicted shortest first (`length_order`) and
        returned in the order given. Without a preprocessor: Keras'
        `predict` on packed inputs.
        """
        if self.preprocessor is None:
            return super().predict(x, batch_size=batch_size, verbose=verbose, **kwargs)
        if self._word_logits_function is None:
            self._word_logits_function = tf.function(
                lambda batch: self.word_logits(batch)[0], reduce_retracing=True
            )
        order = None
        if is_in_memory(x):
            x = _words_or_text(x)
            order = length_order(x)
            x = in_memory_dataset(tf.gather(x, order), batch_size=batch_size)
        results = []
        for batch in x:
            if isinstance(batch, tuple):
                batch = batch[0]
            logits = self._word_logits_function(batch)
            flat = logits.flat_values.numpy()
            results.extend(np.split(flat, logits.row_splits.numpy()[1:-1]))
        if order is None:
            return results
        given = [None] * len(results)
        for rank, index in enumerate(order):
            given[index] = results[rank]
        return given

    def predict_tags(self, x, batch_size=None) -> list[list[str]]:
        """One tag string per word of each sentence (words or raw text in)."""
        tags = self.preprocessor.tags
        return [
            [tags[i] for i in logits.argmax(-1)]
            for logits in self.predict(x, batch_size=batch_size, verbose=0)
        ]


def _sentences(x) -> tf.Tensor:
    """The number of sentences (words or raw text) in a batch: int32."""
    if isinstance(x, tf.RaggedTensor):
        return tf.cast(x.nrows(), tf.int32)
    if isinstance(x, (list, tuple)):
        return tf.constant(len(x), tf.int32)
    return tf.shape(x)[0]


def _words_or_text(x):
    if isinstance(x, (tf.Tensor, tf.RaggedTensor, np.ndarray)):
        return x
    if x and isinstance(x[0], (list, tuple)):
        return as_ragged(x)
    return np.asarray(list(x), dtype=object)
