"""ELECTRA's fine-tuning model: the encoder plus a linear head on `[CLS]`."""

from __future__ import annotations

import keras
import keras_hub

from electra_tf.config import POOLINGS
from electra_tf.models.compile_on_load import CompileOnLoad
from electra_tf.models.dynamic_padding import trim_padding
from electra_tf.models.encoder import ElectraEncoder, truncated_normal
from electra_tf.models.hashed_dropout import HashedDropout
from electra_tf.models.in_memory import ShuffledFit
from electra_tf.models.keras_hub_preset import load_task_parts
from electra_tf.models.loss_reduction import keras_reduction
from electra_tf.models.text_classifier_preprocessor import (
    ElectraTextClassifierPreprocessor,
)
from electra_tf.precision import head_dtype

# How the head reads the encoder: the [CLS] state, or the mean over tokens.


def masked_mean(sequence, padding_mask):
    """Mean over the positions where `padding_mask` is true: [batch, hidden]."""
    # expand_dims, not `[:, :, None]`: LiteRT's builtin StridedSlice takes
    # no new axis (electra_tf.export.litert).
    weights = keras.ops.expand_dims(keras.ops.cast(padding_mask, sequence.dtype), -1)
    return keras.ops.sum(sequence * weights, axis=1) / keras.ops.maximum(
        keras.ops.sum(weights, axis=1), 1.0
    )


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTextClassifier(
    CompileOnLoad, ShuffledFit, keras_hub.models.TextClassifier
):
    """`ElectraEncoder` -> `sequence_output[:, 0]` -> dropout -> dense.

    The head is the original ELECTRA's: the final hidden state of `[CLS]`
    (no tanh pooler), dropout, and one dense layer with a truncated-normal
    (stddev 0.02) kernel giving `num_classes` logits [batch, num_classes].
    Hugging Face's `ElectraClassificationHead` (dense + GELU first) differs.
    `pooling="mean"` reads the mean of the final hidden states over the
    unpadded tokens instead of `[CLS]`'s: all ELECTRA's discriminator learns
    at `[CLS]` is that it is never replaced, and in small CPU-pre-trained
    ones `[CLS]` puts 45% of its first layer's attention on itself; through
    it, fine-tuning may never leave the majority class (`BENCHMARKS.md`
    section 15).
    Regression (GLUE's STS-B) is `num_classes=1`: the output [batch, 1] is
    the prediction, and `compile()` then defaults to a mean-squared-error loss.

    As with `keras_hub.models.BertTextClassifier`, a `preprocessor` makes
    `fit()`, `evaluate()` and `predict()` accept raw strings (or tuples of
    two string batches for sentence pairs); with `preprocessor=None` they take
    the encoder's dict of `token_ids`, `segment_ids` and `padding_mask`.
    `fit()` shuffles in-memory inputs every epoch (`ShuffledFit`).

    Args:
        backbone: an `ElectraEncoder`.
        num_classes: number of logits; 1 for regression.
        preprocessor: an `ElectraTextClassifierPreprocessor` or None.
        activation: optional activation of the outputs (e.g. "softmax");
            None gives logits.
        dropout: dropout rate before the dense layer (ELECTRA: 0.1).
        pooling: "cls" (the original's) or "mean" (over unpadded tokens).

    Example:
    >>> import numpy as np
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...               "a", "good", "bad", "film"]
    >>> tokenizer = keras_hub.models.ElectraTokenizer(
    ...     vocabulary=vocabulary, lowercase=True)
    >>> encoder = ElectraEncoder(
    ...     vocabulary_size=len(vocabulary), num_layers=1, num_heads=1,
    ...     hidden_dim=16, embedding_dim=8, intermediate_dim=32,
    ...     max_sequence_length=8)
    >>> preprocessor = ElectraTextClassifierPreprocessor(tokenizer, sequence_length=8)
    >>> classifier = ElectraTextClassifier(
    ...     backbone=encoder, num_classes=2, preprocessor=preprocessor)
    >>> history = classifier.fit(
    ...     x=["a good film", "a bad film"], y=np.array([1, 0]), batch_size=2,
    ...     verbose=0)
    >>> classifier.predict(["a good film"], verbose=0).shape
    (1, 2)
    """

    backbone_cls = ElectraEncoder
    preprocessor_cls = ElectraTextClassifierPreprocessor

    def __init__(
        self,
        backbone,
        num_classes,
        preprocessor=None,
        activation=None,
        dropout=0.1,
        pooling="cls",
        **kwargs,
    ):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        # Hashed, as the encoder's: Keras' own dropout is slow under XLA on
        # CPUs (see HashedDropout).
        self.classifier_dropout = HashedDropout(
            dropout, dtype=backbone.dtype_policy, name="classifier_dropout"
        )
        self.output_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=truncated_normal(backbone.initializer_range),
            activation=activation,
            dtype=head_dtype(backbone.dtype_policy),
            name="output_dense",
        )

        # === Functional Model ===
        inputs = backbone.input
        encoded = backbone(inputs)
        if pooling == "cls":
            # `pooled_output` is `sequence_output[:, 0]`: the [CLS] position.
            pooled = encoded["pooled_output"]
        else:
            pooled = masked_mean(encoded["sequence_output"], inputs["padding_mask"])
        outputs = self.output_dense(self.classifier_dropout(pooled))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.activation = keras.activations.get(activation)
        self.dropout = dropout
        self.pooling = pooling

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """The preprocessor's packed batch, cut to its longest sequence
        (`trim_padding`; to one of a few lengths under XLA): `fit`,
        `evaluate` and `predict` skip the padding."""
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
            super().preprocess_samples(x, y, sample_weight)
        )
        if self.preprocessor is not None:
            x = trim_padding(x, few_lengths=self.jit_compile is True)
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
        """keras-hub's defaults, except that regression gets a squared-error loss.

        For `num_classes > 1` "auto" means sparse categorical cross-entropy and
        accuracy (as `keras_hub.models.TextClassifier`); for `num_classes == 1`
        it means squared error and no metrics. `loss_reduction` reduces the
        "auto" loss over the batch: "mean" (keras-hub's) or "sum" (the
        original ELECTRA's; `electra_tf.models.loss_reduction`).
        """
        reduction = keras_reduction(loss, loss_reduction, "sum_over_batch_size")
        # `Task.__init__` compiles before `num_classes` is set: ask the layer.
        regression = self.output_dense.units == 1
        if loss == "auto" and regression:
            loss = keras.losses.MeanSquaredError(reduction=reduction)
        elif loss == "auto":
            # keras-hub's "auto", with the reduction.
            activation = keras.activations.get(getattr(self, "activation", None))
            loss = keras.losses.SparseCategoricalCrossentropy(
                from_logits=activation != keras.activations.softmax,
                reduction=reduction,
            )
        if regression and metrics == "auto":
            metrics = []
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_classes": self.num_classes,
                "activation": keras.activations.serialize(self.activation),
                "dropout": self.dropout,
                "pooling": self.pooling,
            }
        )
        return config

    @classmethod
    def from_preset(
        cls,
        preset,
        num_classes,
        load_weights=True,
        sequence_length=128,
        dtype=None,
        encoder_dropout=None,
        **kwargs,
    ):
        """A classifier on a keras-hub ELECTRA preset, with a new head.

        `preset` is a directory written by `keras_hub`'s `save_to_preset` (our
        pre-training export `<model_dir>/export/discriminator/` is one) or the
        name of a keras-hub ELECTRA preset (downloaded, so it needs network
        access). Its `ElectraBackbone` is converted to an `ElectraEncoder`
        (exact GELU, no tanh pooler; see `electra_tf.models.keras_hub_preset`) and
        its `ElectraTokenizer` becomes the preprocessor's (`load_task_parts`).

        Args:
            preset: a preset directory or keras-hub preset name.
            num_classes: logits of the new head (1 for regression).
            load_weights: False keeps the encoder randomly initialised (with
                the preset's architecture and vocabulary).
            sequence_length: the preprocessor's packed length.
            dtype: dtype policy of the encoder and head.
            encoder_dropout: dropout inside the encoder; None keeps the
                preset's rate.
            **kwargs: passed to the constructor (`activation`, `dropout`, ...).

        Raises:
            PretrainedModelError: the directory is not a preset, or its
                vocabulary and embedding sizes differ.
        """
        encoder, preprocessor = load_task_parts(
            preset,
            ElectraTextClassifierPreprocessor,
            load_weights=load_weights,
            sequence_length=sequence_length,
            dtype=dtype,
            encoder_dropout=encoder_dropout,
        )
        return cls(
            backbone=encoder,
            num_classes=num_classes,
            preprocessor=preprocessor,
            **kwargs,
        )
