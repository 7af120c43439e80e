"""A fine-tuned classifier as a SavedModel that takes raw text.

The SavedModel runs the whole pipeline in the graph: WordPiece tokenization
and `[CLS] A [SEP] B [SEP]` packing (the classifier's preprocessor), the
encoder and the head. Serving it needs `tensorflow` and `tensorflow_text`
(import it before `tf.saved_model.load`, for the WordPiece op); no Keras.
"""

from __future__ import annotations

from collections.abc import Sequence

import tensorflow as tf

from electra_tf.export.float32 import float32_model
from electra_tf.export.saved_model import save_saved_model
from electra_tf.request_checks import checked_ids, checked_texts


class TextClassifierServing(tf.Module):
    """Signatures:

    * `serving_default` / `predict_text`: tf.string [batch] per text segment
      -> predictions. Inputs are named by `text_features` (one name for
      single-sentence tasks, two for pairs, e.g. `premise` and `hypothesis`);
      tokenization, packing and truncation are the classifier
      preprocessor's, in the graph.
    * `predict_token_ids`: the packed int32 `token_ids`, `segment_ids`,
      `padding_mask` [batch, length] -> the same predictions.

    Outputs:

    * classification: `logits` and `probabilities` (float32
      [batch, num_classes]), `label_id` (int32 [batch]) and `label`
      (tf.string [batch], from `label_names`);
    * regression (`num_classes == 1`): `score` (float32 [batch]), the model's
      output multiplied by `label_scale` (STS-B: back to 0..5).

    Args:
        classifier: an `ElectraTextClassifier` with a preprocessor.
        text_features: names of the text inputs, in packing order.
        label_names: class names in id order (classification only).
        label_scale: factor applied to regression outputs.
    """

    def __init__(
        self,
        classifier,
        text_features: Sequence[str],
        label_names: Sequence[str] = (),
        label_scale: float = 1.0,
    ):
        super().__init__()
        if classifier.preprocessor is None:
            raise ValueError("the classifier needs a preprocessor to take raw text")
        if not 1 <= len(text_features) <= 2:
            raise ValueError(f"one or two text inputs, got {list(text_features)}")
        regression = classifier.num_classes == 1
        if not regression and len(label_names) != classifier.num_classes:
            raise ValueError(
                f"{len(label_names)} label names for {classifier.num_classes} classes"
            )
        self.classifier = classifier
        self.preprocessor = classifier.preprocessor
        self.text_features = tuple(text_features)
        self.label_names = tf.constant(list(label_names) or [""], tf.string)
        self.label_scale = float(label_scale)
        self.regression = regression
        specs = [tf.TensorSpec([None], tf.string, name=name) for name in text_features]
        # A fixed arity per signature: one text input, or two.
        if len(specs) == 1:
            self.serve = tf.function(
                lambda text: self._predict((text,)), input_signature=specs
            )
        else:
            self.serve = tf.function(
                lambda text_a, text_b: self._predict((text_a, text_b)),
                input_signature=specs,
            )
        self.predict_token_ids = tf.function(
            self._predict_checked_ids,
            input_signature=[
                {
                    name: tf.TensorSpec([None, None], tf.int32, name=name)
                    for name in ("token_ids", "segment_ids", "padding_mask")
                }
            ],
        )

    def _predict(self, texts):
        texts = checked_texts(**dict(zip(self.text_features, texts)))
        # `x=`: a positional 2-tuple would be taken for `(x, y)`.
        x = self.preprocessor(x=texts[0] if len(texts) == 1 else texts)
        # The packer pads every input to `sequence_length`; cut the batch to
        # its longest real input, as dynamic padding does. Padded positions
        # are masked out of attention and the head reads position 0, so the
        # outputs are the same while a short request costs far less.
        length = tf.reduce_max(tf.reduce_sum(tf.cast(x["padding_mask"], tf.int32), -1))
        x = {name: value[:, : tf.maximum(length, 1)] for name, value in x.items()}
        return self._predict_packed(x)

    def _predict_checked_ids(self, x):
        names = ("token_ids", "segment_ids", "padding_mask")
        backbone = self.classifier.backbone
        x = checked_ids(
            {name: x[name] for name in names},
            backbone.vocabulary_size,
            backbone.max_sequence_length,
        )
        return self._predict_packed(x)

    def _predict_packed(self, x):
        outputs = tf.cast(self.classifier(x, training=False), tf.float32)
        if self.regression:
            return {"score": outputs[:, 0] * self.label_scale}
        label_id = tf.argmax(outputs, axis=-1, output_type=tf.int32)
        return {
            "logits": outputs,
            "probabilities": tf.nn.softmax(outputs, axis=-1),
            "label_id": label_id,
            "label": tf.gather(self.label_names, label_id),
        }


def export_text_classifier(
    classifier,
    export_dir: str,
    text_features: Sequence[str],
    label_names: Sequence[str] = (),
    label_scale: float = 1.0,
) -> str:
    """Saves `TextClassifierServing(...)` to `export_dir`; returns the path.
    The SavedModel computes in float32 (`float32_model`).

    Example (serving the export; `tensorflow_text` registers WordPiece):

        import tensorflow as tf, tensorflow_text  # noqa: F401
        serve = tf.saved_model.load(export_dir).signatures["serving_default"]
        serve(sentence=tf.constant(["a gripping film"]))["probabilities"]
    """
    serving = TextClassifierServing(
        float32_model(classifier),
        text_features,
        label_names=label_names,
        label_scale=label_scale,
    )
    # The TensorSpec names become the signature's input keys.
    text = serving.serve.get_concrete_function()
    return save_saved_model(
        serving,
        export_dir,
        signatures={
            "serving_default": text,
            "predict_text": text,
            "predict_token_ids": serving.predict_token_ids.get_concrete_function(),
        },
    )
