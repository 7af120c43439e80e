"""A fine-tuned tagger as a SavedModel that takes raw text.

Serving needs `tensorflow` and `tensorflow_text` (import it before
`tf.saved_model.load`: it registers the WordPiece and regex-split ops); no
Keras. The graph splits text into words (whitespace; punctuation and CJK
characters are words of their own), tokenizes and windows them as the
tagger's preprocessor does, and runs the encoder and head:

* `serving_default` / `tag_text`: `text` tf.string [batch] ->
  `words`, `tags` (tf.string [batch, max words], "" after the last word),
  `tag_ids` (int32, -1 after the last word), `start`, `end` (int32
  character offsets of each word in the text, Python string indices, -1
  after the last word), `word_count` (int32 [batch]) and `probabilities`
  (float32 [batch, max words, num tags]).

Example (serving the export):

    import tensorflow as tf, tensorflow_text  # noqa: F401
    tag = tf.saved_model.load(export_dir).signatures["serving_default"]
    out = tag(text=tf.constant(["Peter lives in Berlin."]))
    out["tags"][0, : out["word_count"][0]]
"""

from __future__ import annotations

import tensorflow as tf

from electra_tf.export.float32 import float32_model
from electra_tf.export.saved_model import save_saved_model
from electra_tf.request_checks import checked_texts


class TokenClassifierServing(tf.Module):
    """The `tag_text` signature of an `ElectraTokenClassifier` with a preprocessor."""

    def __init__(self, tagger):
        super().__init__()
        if tagger.preprocessor is None or not tagger.preprocessor.tags:
            raise ValueError("the tagger needs a preprocessor with its tags")
        self.tagger = tagger
        self.preprocessor = tagger.preprocessor
        self.tag_names = tf.constant(list(tagger.preprocessor.tags), tf.string)
        self.tag_text = tf.function(
            self._tag_text,
            input_signature=[tf.TensorSpec([None], tf.string, name="text")],
        )

    def _tag_text(self, text):
        (text,) = checked_texts(text=text)
        logits, windows = self.tagger.word_logits(text)
        tag_ids = logits.with_flat_values(
            tf.argmax(logits.flat_values, axis=-1, output_type=tf.int32)
        )
        probabilities = logits.with_flat_values(tf.nn.softmax(logits.flat_values))
        return {
            "words": windows["words"].to_tensor(default_value=""),
            "tags": tf.gather(self.tag_names, tag_ids).to_tensor(default_value=""),
            "tag_ids": tag_ids.to_tensor(default_value=-1),
            "start": windows["word_start"].to_tensor(default_value=-1),
            "end": windows["word_end"].to_tensor(default_value=-1),
            "word_count": tf.cast(windows["words"].row_lengths(), tf.int32),
            "probabilities": probabilities.to_tensor(),
        }


def export_token_classifier(tagger, export_dir: str) -> str:
    """Saves `TokenClassifierServing(tagger)` to `export_dir`; returns the
    path. The SavedModel computes in float32 (`float32_model`)."""
    serving = TokenClassifierServing(float32_model(tagger))
    signature = serving.tag_text.get_concrete_function()
    return save_saved_model(
        serving,
        export_dir,
        signatures={"serving_default": signature, "tag_text": signature},
    )
