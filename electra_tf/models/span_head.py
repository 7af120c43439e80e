"""XLNet's question-answering head as ELECTRA fine-tunes it on SQuAD."""

from __future__ import annotations

import keras
import tensorflow as tf

# Added to the logits of positions that cannot hold an answer (the original's
# 1000 * (mask - 1)): far below any real logit, yet finite in float16.
_MASKED = -1000.0


@keras.saving.register_keras_serializable(package="electra_tf")
class SpanHead(keras.layers.Layer):
    """Start logits, end logits conditioned on a start, and a no-answer logit.

    google-research/electra's `QATask.get_prediction_module` with its
    defaults (`joint_prediction`, `answerable_classifier`,
    `answerable_uses_start_logits`), which takes XLNet's question-answering
    module:

    * start logits: dense(1) on each token's final hidden state;
    * end logits for a start s: dense(1) of GELU(dense(512) of
      `[h_s; h_e]`) at every position e; h_s is the gold start's state in
      training and, at prediction time, each of the `beam_size` most
      likely starts (a beam over starts, each with all its ends);
    * no-answer logit (SQuAD 2.0): dense(1) of GELU(dense(512) of
      `[h_[CLS]; sum_t p_start(t) h_t]`), trained towards "impossible".

    Starts and ends are allowed only on `[CLS]` and the context segment
    (`segment_ids == 1`, real tokens): other logits get -1000.

    Call: `(sequence_output [B, L, H], segment_ids [B, L], padding_mask
    [B, L], start_positions [B] or None)`. A non-negative `start_positions`
    conditions the end on it (K = 1); None or any negative entry means
    "predict": the top `beam_size` starts (K = min(beam_size, L)). In
    training, `start_positions` is always the gold start (a negative one
    counts as 0, `[CLS]`), so the train step has no data-dependent branch.

    Returns float32 `start_logits` [B, L], `end_logits` [B, K, L],
    int32 `start_index` [B, K] (the starts the ends are conditioned on) and,
    with `answerable`, `no_answer_logit` [B].
    """

    def __init__(self, hidden_dim=512, beam_size=20, answerable=True, **kwargs):
        super().__init__(**kwargs)
        self.hidden_dim = hidden_dim
        self.beam_size = beam_size
        self.answerable = answerable
        # The original's tf.layers.dense: Glorot-uniform kernels, zero biases.
        self.start_dense = keras.layers.Dense(
            1, dtype=self.dtype_policy, name="start_dense"
        )
        # A dense layer on [h_start; h_end], applied as two matmuls so the
        # [B, K, L, 2H] concatenation is never built.
        self.end_hidden = keras.layers.Dense(
            hidden_dim, dtype=self.dtype_policy, name="end_hidden"
        )
        self.end_dense = keras.layers.Dense(
            1, dtype=self.dtype_policy, name="end_dense"
        )
        if answerable:
            self.no_answer_hidden = keras.layers.Dense(
                hidden_dim,
                activation="gelu",
                dtype=self.dtype_policy,
                name="no_answer_hidden",
            )
            self.no_answer_dense = keras.layers.Dense(
                1, dtype=self.dtype_policy, name="no_answer_dense"
            )

    def build(self, sequence_shape, *args, **kwargs):
        width = sequence_shape[-1]
        self.start_dense.build(sequence_shape)
        self.end_hidden.build((None, 2 * width))
        self.end_dense.build((None, self.hidden_dim))
        if self.answerable:
            self.no_answer_hidden.build((None, 2 * width))
            self.no_answer_dense.build((None, self.hidden_dim))
        self.built = True

    def _end_logits(self, hidden, start_index, answer_mask):
        """End logits [B, K, L] for starts `start_index` [B, K]."""
        # Static where known, and no `None`/`...` indexing below: LiteRT's
        # builtin StridedSlice takes neither a new axis nor an ellipsis
        # (electra_tf.export.litert).
        width = hidden.shape[-1] or tf.shape(hidden)[-1]
        kernel = tf.cast(self.end_hidden.kernel, hidden.dtype)
        bias = tf.cast(self.end_hidden.bias, hidden.dtype)
        start_states = tf.gather(hidden, start_index, batch_dims=1)  # [B, K, H]
        from_start = tf.matmul(start_states, kernel[:width])  # [B, K, 512]
        from_end = tf.matmul(hidden, kernel[width:]) + bias  # [B, L, 512]
        x = keras.activations.gelu(
            tf.expand_dims(from_start, 2) + tf.expand_dims(from_end, 1),
            approximate=False,
        )
        logits = tf.cast(tf.squeeze(self.end_dense(x), -1), "float32")  # [B, K, L]
        return logits + _MASKED * (1.0 - tf.expand_dims(answer_mask, 1))

    def call(
        self, hidden, segment_ids, padding_mask, start_positions=None, training=None
    ):
        length = tf.shape(hidden)[1]
        answer_mask = tf.cast(padding_mask, "float32") * tf.cast(segment_ids, "float32")
        answer_mask = tf.maximum(answer_mask, tf.expand_dims(tf.one_hot(0, length), 0))
        start_logits = tf.cast(tf.squeeze(self.start_dense(hidden), -1), "float32")
        start_logits += _MASKED * (1.0 - answer_mask)

        def beam():
            k = tf.minimum(self.beam_size, length)
            return tf.math.top_k(start_logits, k=k).indices

        if start_positions is None:
            start_index = beam()
        elif training:
            # Training windows always carry their gold start (0, [CLS], when
            # the answer is elsewhere). No `tf.cond` here: its branches differ
            # in K, which XLA pads to the beam's K, and the end loss then
            # sees [B, beam_size, L] logits for [B, 1] labels.
            start_index = tf.maximum(tf.cast(start_positions, "int32"), 0)[:, None]
        else:
            gold = tf.cast(start_positions, "int32")[:, None]
            start_index = tf.cond(
                tf.reduce_any(gold < 0), beam, lambda: tf.maximum(gold, 0)
            )
        outputs = {
            "start_logits": start_logits,
            "end_logits": self._end_logits(hidden, start_index, answer_mask),
            "start_index": start_index,
        }
        if self.answerable:
            start_p = tf.cast(tf.nn.softmax(start_logits), hidden.dtype)
            weighted = tf.reduce_sum(tf.expand_dims(start_p, -1) * hidden, axis=1)
            features = tf.concat([hidden[:, 0], weighted], axis=-1)
            logit = self.no_answer_dense(self.no_answer_hidden(features))[:, 0]
            outputs["no_answer_logit"] = tf.cast(logit, "float32")
        return outputs

    def compute_output_spec(
        self, hidden, segment_ids, padding_mask, start_positions=None, training=None
    ):
        batch, length = hidden.shape[0], hidden.shape[1]
        spec = {
            "start_logits": keras.KerasTensor((batch, length), "float32"),
            "end_logits": keras.KerasTensor((batch, None, length), "float32"),
            "start_index": keras.KerasTensor((batch, None), "int32"),
        }
        if self.answerable:
            spec["no_answer_logit"] = keras.KerasTensor((batch,), "float32")
        return spec

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "beam_size": self.beam_size,
                "answerable": self.answerable,
            }
        )
        return config
