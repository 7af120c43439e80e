"""A fine-tuned question answerer as a SavedModel that takes raw text.

The SavedModel runs the whole pipeline in the graph: WordPiece tokenization
with character offsets, the windows over the context, the encoder and span
head, and the best span over all windows (`electra_tf.models.span_decoding`).
Serving it needs `tensorflow` and `tensorflow_text` (import it before
`tf.saved_model.load`, for the WordPiece and regex-split ops); no Keras.
"""

from __future__ import annotations

import tensorflow as tf

from electra_tf.export.float32 import float32_model
from electra_tf.export.saved_model import save_saved_model
from electra_tf.models.span_decoding import answer_text_batch
from electra_tf.request_checks import checked_texts


class QuestionAnswererServing(tf.Module):
    """Signature `serving_default` / `answer`: `question`, `context` (tf.string
    [batch]) ->

    * `answer` (tf.string): the answer text, a substring of the context;
      "" when the question is judged unanswerable (SQuAD 2.0: its
      `no_answer_score` exceeds `na_threshold`) or no span is allowed;
    * `answer_start`, `answer_end` (int32): its character offsets in the
      context (end exclusive; -1 for "");
    * `score` (float32): the span's start + end log-probability;
    * `no_answer_score` (float32): the no-answer logit (lowest over the
      windows; 0 for a SQuAD 1.1 model);
    * `span_text`, `span_start`, `span_end`: the best span even when the
      answer is "".

    Args:
        model: an `ElectraQuestionAnswerer` with a preprocessor.
        na_threshold: no-answer scores above it give "" (None: never).
    """

    def __init__(self, model, na_threshold: float | None = None):
        super().__init__()
        if model.preprocessor is None:
            raise ValueError("the model needs a preprocessor to take raw text")
        self.model = model
        self.na_threshold = None if na_threshold is None else float(na_threshold)
        self.answer = tf.function(
            self._answer,
            input_signature=[
                tf.TensorSpec([None], tf.string, name="question"),
                tf.TensorSpec([None], tf.string, name="context"),
            ],
        )

    def _answer(self, question, context):
        question, context = checked_texts(question=question, context=context)
        best = answer_text_batch(self.model, question, context)
        unanswered = best["answer_start"] < 0
        if self.na_threshold is not None:
            unanswered |= best["no_answer_score"] > self.na_threshold
        return {
            "answer": tf.where(unanswered, "", best["text"]),
            "answer_start": tf.where(unanswered, -1, best["answer_start"]),
            "answer_end": tf.where(unanswered, -1, best["answer_end"]),
            "score": best["score"],
            "no_answer_score": best["no_answer_score"],
            "span_text": best["text"],
            "span_start": best["answer_start"],
            "span_end": best["answer_end"],
        }


def export_question_answerer(
    model, export_dir: str, na_threshold: float | None = None
) -> str:
    """Saves `QuestionAnswererServing(model, na_threshold)` to `export_dir`;
    the SavedModel computes in float32 (`float32_model`).

    Example (serving the export; `tensorflow_text` registers its ops):

        import tensorflow as tf, tensorflow_text  # noqa: F401
        serve = tf.saved_model.load(export_dir).signatures["serving_default"]
        serve(question=tf.constant(["Who flew?"]),
              context=tf.constant(["The pilot flew."]))["answer"]
    """
    serving = QuestionAnswererServing(float32_model(model), na_threshold=na_threshold)
    answer = serving.answer.get_concrete_function()
    return save_saved_model(
        serving, export_dir, signatures={"serving_default": answer, "answer": answer}
    )
