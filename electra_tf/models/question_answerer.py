"""ELECTRA's SQuAD model: the encoder plus XLNet's joint start/end span head."""

from __future__ import annotations

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from electra_tf.models.compile_on_load import CompileOnLoad
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.keras_hub_preset import load_task_parts
from electra_tf.models.question_answerer_preprocessor import (
    ElectraQuestionAnswererPreprocessor,
)
from electra_tf.models.span_decoding import answer_text_batch
from electra_tf.models.span_head import SpanHead


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraQuestionAnswerer(CompileOnLoad, keras_hub.models.Task):
    """`ElectraEncoder` -> `SpanHead`: extractive question answering (SQuAD).

    Inputs: the encoder's `token_ids`, `segment_ids`, `padding_mask` and an
    optional `start_positions` [batch] (the gold start, which the end is
    conditioned on in training; -1 or None to search the `beam_size` best
    starts). Outputs: see `SpanHead`.

    With a preprocessor (`ElectraQuestionAnswererPreprocessor`), `fit()` and
    `evaluate()` take `x=(questions, contexts)` and `y={"answer_start",
    "answer_text"}` (answer_start -1 for no answer) and train on every
    window of every question; `answer()` returns the best answer of each
    question over all its windows, as text and character offsets.

    `compile()` defaults to the original's loss: the mean over windows of
    (start cross-entropy + end cross-entropy) / 2, plus 0.5 x the sigmoid
    cross-entropy of the no-answer logit (SQuAD 2.0).

    Args:
        backbone: an `ElectraEncoder`.
        preprocessor: an `ElectraQuestionAnswererPreprocessor` or None.
        answerable: add the no-answer classifier (SQuAD 2.0).
        head_hidden_dim: width of the end and no-answer hidden layers (512).
        beam_size: starts searched at prediction time (original: 20).
        max_answer_length: longest answer in tokens (original: 30).
        answerable_weight: weight of the no-answer loss (original: 0.5).

    Example:
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...               "who", "flew", "the", "green", "plane", "?", "pilot"]
    >>> tokenizer = keras_hub.models.ElectraTokenizer(
    ...     vocabulary=vocabulary, lowercase=True)
    >>> encoder = ElectraEncoder(
    ...     vocabulary_size=len(vocabulary), num_layers=1, num_heads=1,
    ...     hidden_dim=16, embedding_dim=8, intermediate_dim=32,
    ...     max_sequence_length=16)
    >>> model = ElectraQuestionAnswerer(
    ...     backbone=encoder, head_hidden_dim=8,
    ...     preprocessor=ElectraQuestionAnswererPreprocessor(
    ...         tokenizer, sequence_length=16, max_query_length=4))
    >>> history = model.fit(
    ...     x=(["Who flew?"], ["The pilot flew the green plane"]),
    ...     y={"answer_start": [4], "answer_text": ["pilot"]}, verbose=0)
    >>> answers = model.answer(["Who flew?"], ["The pilot flew the plane"])
    >>> sorted(answers)
    ['answer_end', 'answer_start', 'no_answer_score', 'score', 'text']
    """

    backbone_cls = ElectraEncoder
    preprocessor_cls = ElectraQuestionAnswererPreprocessor

    def __init__(
        self,
        backbone,
        preprocessor=None,
        answerable=True,
        head_hidden_dim=512,
        beam_size=20,
        max_answer_length=30,
        answerable_weight=0.5,
        **kwargs,
    ):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.span_head = SpanHead(
            hidden_dim=head_hidden_dim,
            beam_size=beam_size,
            answerable=answerable,
            dtype=backbone.dtype_policy,
            name="span_head",
        )

        # === Functional Model ===
        inputs = dict(backbone.input)
        inputs["start_positions"] = keras.Input(
            shape=(), dtype="int32", name="start_positions", optional=True
        )
        hidden = backbone({k: inputs[k] for k in backbone.input})["sequence_output"]
        outputs = self.span_head(
            hidden,
            inputs["segment_ids"],
            inputs["padding_mask"],
            start_positions=inputs["start_positions"],
        )
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.answerable = answerable
        self.head_hidden_dim = head_hidden_dim
        self.beam_size = beam_size
        self.max_answer_length = max_answer_length
        self.answerable_weight = answerable_weight
        self._answer_function = None

    def compile(self, optimizer="auto", loss="auto", *, metrics=None, **kwargs):
        """`loss="auto"`: the original's span (and no-answer) loss; `optimizer="auto"`:
        Adam(5e-5)."""
        if optimizer == "auto":
            optimizer = keras.optimizers.Adam(5e-5)
        loss_weights = kwargs.pop("loss_weights", None)
        if loss == "auto":
            cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            loss = {"start_logits": cross_entropy, "end_logits": cross_entropy}
            loss_weights = {"start_logits": 0.5, "end_logits": 0.5}
            # `Task.__init__` compiles before the config attributes are set.
            if self.span_head.answerable:
                loss["no_answer_logit"] = keras.losses.BinaryCrossentropy(
                    from_logits=True
                )
                loss_weights["no_answer_logit"] = getattr(
                    self, "answerable_weight", 0.5
                )
            loss["start_index"] = None
            loss_weights["start_index"] = 0.0
        super().compile(
            optimizer=optimizer,
            loss=loss,
            loss_weights=loss_weights,
            metrics=metrics,
            **kwargs,
        )

    def preprocess_samples(self, x, y=None, sample_weight=None):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
            super().preprocess_samples(x, y, sample_weight)
        )
        if isinstance(y, dict) and not self.span_head.answerable:
            # SQuAD 1.1: no no-answer head to train.
            y = {k: v for k, v in y.items() if k != "no_answer_logit"}
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def answer(self, questions, contexts, batch_size=32):
        """The best answer of each question over all windows of its context.

        Returns numpy arrays [num_questions]: `text` (str; "" when no span
        is allowed), `answer_start` and `answer_end` (character offsets in
        the context, end exclusive; -1 for no span), `score` (start + end
        log-probability of the span) and `no_answer_score` (SQuAD 2.0: the
        lowest no-answer logit over the windows, the original's null score;
        0 without the classifier). Empty answers by threshold are for the
        caller (`squad_metrics.apply_threshold`).
        """
        if self.preprocessor is None:
            raise ValueError("answer() needs a preprocessor to take raw text")
        if self._answer_function is None:
            # One trace for every batch size.
            self._answer_function = tf.function(
                lambda q, c: answer_text_batch(self, q, c),
                input_signature=[tf.TensorSpec([None], tf.string)] * 2,
            )
        questions, contexts = list(questions), list(contexts)
        if len(questions) != len(contexts):
            raise ValueError(f"{len(questions)} questions but {len(contexts)} contexts")
        parts = []
        for begin in range(0, len(questions), batch_size):
            batch = self._answer_function(
                tf.constant(questions[begin : begin + batch_size], tf.string),
                tf.constant(contexts[begin : begin + batch_size], tf.string),
            )
            parts.append({k: v.numpy() for k, v in batch.items()})
        if not parts:
            return {}
        results = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        results["text"] = np.array(
            [t.decode("utf-8", "replace") for t in results["text"]]
        )
        return results

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "answerable": self.answerable,
                "head_hidden_dim": self.head_hidden_dim,
                "beam_size": self.beam_size,
                "max_answer_length": self.max_answer_length,
                "answerable_weight": self.answerable_weight,
            }
        )
        return config

    @classmethod
    def from_preset(
        cls,
        preset,
        load_weights=True,
        sequence_length=384,
        max_query_length=64,
        doc_stride=128,
        dtype=None,
        encoder_dropout=None,
        **kwargs,
    ):
        """A question answerer on a keras-hub ELECTRA preset, with a new head;
        see `ElectraTextClassifier.from_preset`. `max_query_length` and
        `doc_stride` are the preprocessor's; `**kwargs` go to the constructor
        (`answerable`, ...).

        Raises:
            PretrainedModelError: the directory is not a preset, or its
                vocabulary and embedding sizes differ.
        """
        encoder, preprocessor = load_task_parts(
            preset,
            ElectraQuestionAnswererPreprocessor,
            load_weights=load_weights,
            sequence_length=sequence_length,
            dtype=dtype,
            encoder_dropout=encoder_dropout,
            max_query_length=max_query_length,
            doc_stride=doc_stride,
        )
        return cls(backbone=encoder, preprocessor=preprocessor, **kwargs)
