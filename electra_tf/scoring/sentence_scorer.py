"""`SentenceScorer`: raw sentences in, one pseudo-log-likelihood each out."""

from __future__ import annotations

import keras_hub
import numpy as np
import tensorflow as tf

from electra_tf.errors import ElectraError
from electra_tf.models.cloze_generator import ElectraClozeGenerator
from electra_tf.models.discriminator import ElectraDiscriminator
from electra_tf.models.generator import ElectraGenerator
from electra_tf.request_checks import checked_texts
from electra_tf.scoring.pseudo_log_likelihood import (
    cloze_token_scores,
    electric_token_scores,
    mlm_token_scores,
)

# What each method scores with (see `SentenceScorer`).
METHOD_MODELS = {
    "electric": ElectraDiscriminator,
    "mlm": ElectraGenerator,
    "cloze": ElectraClozeGenerator,
}


class ScoringError(ElectraError, ValueError):
    """A scorer asked of a model that cannot give it."""


class SentenceScorer(tf.Module):
    """Scores raw sentences by their pseudo-log-likelihood (natural log).

    A sentence is WordPiece-tokenised and packed as `[CLS] sentence [SEP]`
    (in the graph, as the serving SavedModels do); its score is the sum over
    its tokens (not `[CLS]` or `[SEP]`) of log p(x_t | the other tokens), as
    `electra_tf.scoring.pseudo_log_likelihood` computes it per `method`:

    * "electric": an Electric discriminator's -E(x)_t, one forward pass per
      batch of sentences (`objective="electric"`; an ELECTRA discriminator's
      logit is not an energy and gives no such score);
    * "mlm": a masked-language model's log-probability of each token with it
      masked, one pass per token, `copies_per_batch` masked copies a pass
      (ELECTRA's generator, or the model of `objective="mlm"`);
    * "cloze": Electric's two-tower cloze model, one pass.

    Higher is more likely. Sentences longer than `sequence_length - 2`
    tokens are truncated: `token_count` says how many tokens were scored.

    `score_sentences` is the SavedModel signature (tf.string `text` [batch]
    -> float32 `score` [batch], int32 `token_count` [batch], float32
    `token_scores` and int32 `token_ids` [batch, length], length the longest
    packed sentence of the batch); `score(sentences)` is the same for a
    Python list, in batches.

    Args:
        model: the method's model (`METHOD_MODELS`).
        tokenizer: a `keras_hub.models.ElectraTokenizer` of its vocabulary.
        sequence_length: the packed length (the pre-training run's).
        method: "electric", "mlm" or "cloze".
        copies_per_batch: "mlm" only: masked copies per forward pass.
    """

    def __init__(
        self, model, tokenizer, sequence_length, *, method, copies_per_batch=256
    ):
        super().__init__()
        if method not in METHOD_MODELS:
            raise ScoringError(
                f"unknown scoring method {method!r}; choose from "
                f"{', '.join(METHOD_MODELS)}"
            )
        if not isinstance(model, METHOD_MODELS[method]):
            raise ScoringError(
                f"method {method!r} scores with an {METHOD_MODELS[method].__name__}, "
                f"not a {type(model).__name__}"
            )
        self.model = model
        self.tokenizer = tokenizer
        self.sequence_length = int(sequence_length)
        self.method = method
        self.copies_per_batch = int(copies_per_batch)
        self.packer = keras_hub.layers.MultiSegmentPacker(
            sequence_length=self.sequence_length,
            start_value=tokenizer.cls_token_id,
            end_value=tokenizer.sep_token_id,
            pad_value=tokenizer.pad_token_id,
        )
        self.special_token_ids = (
            tokenizer.pad_token_id,
            tokenizer.cls_token_id,
            tokenizer.sep_token_id,
            tokenizer.mask_token_id,
        )

    def token_scores(self, inputs):
        """(float32 token scores [B, L], bool scored positions [B, L])."""
        # The positions pre-training masks: real tokens that are not special
        # (as `pretraining.masking.candidate_mask`, not imported: a run's
        # export, which `pretraining` calls, builds this scorer).
        token_ids = tf.cast(inputs["token_ids"], tf.int32)
        special = tf.reduce_any(
            token_ids[..., None] == tf.constant(self.special_token_ids, tf.int32),
            axis=-1,
        )
        scored = tf.cast(inputs["padding_mask"], tf.bool) & ~special
        if self.method == "electric":
            scores = electric_token_scores(self.model, inputs)
        elif self.method == "cloze":
            scores = cloze_token_scores(self.model, inputs)
        else:
            scores = mlm_token_scores(
                self.model,
                inputs,
                scored,
                mask_token_id=self.tokenizer.mask_token_id,
                copies_per_batch=self.copies_per_batch,
            )
        return tf.where(scored, scores, 0.0), scored

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def score_sentences(self, text):
        (text,) = checked_texts(text=text)
        token_ids, segment_ids = self.packer(self.tokenizer(text))
        token_ids = tf.cast(token_ids, tf.int32)
        padding_mask = tf.cast(token_ids != self.tokenizer.pad_token_id, tf.int32)
        # Only as long as the longest sentence: "mlm" runs one copy per token.
        length = tf.maximum(tf.reduce_max(tf.reduce_sum(padding_mask, axis=1)), 1)
        inputs = {
            "token_ids": token_ids[:, :length],
            "segment_ids": tf.cast(segment_ids, tf.int32)[:, :length],
            "padding_mask": padding_mask[:, :length],
        }
        scores, scored = self.token_scores(inputs)
        return {
            "score": tf.reduce_sum(scores, axis=1),
            "token_count": tf.reduce_sum(tf.cast(scored, tf.int32), axis=1),
            "token_scores": scores,
            "token_ids": inputs["token_ids"],
        }

    def score(self, sentences, batch_size=64) -> np.ndarray:
        """float64 [len(sentences)]: the scores of a list of str, in batches."""
        return score_in_batches(self.score_sentences, sentences, batch_size)["score"]


def score_in_batches(score_sentences, sentences, batch_size=64) -> dict:
    """Scores a list of str with a `score_sentences` function, `batch_size` at a time.

    `score_sentences` is a `SentenceScorer`'s or that of a loaded
    `sentence_scorer` SavedModel (`tf.saved_model.load(path).score_sentences`).
    Returns `score` (float64) and `token_count` (int64), each [len(sentences)].
    """
    if batch_size < 1:
        raise ScoringError(f"batch_size must be >= 1, got {batch_size}")
    parts = {"score": [np.zeros([0])], "token_count": [np.zeros([0], "int64")]}
    for start in range(0, len(sentences), batch_size):
        batch = tf.constant(list(sentences[start : start + batch_size]), tf.string)
        out = score_sentences(batch)
        for name, values in parts.items():
            values.append(out[name].numpy())
    return {
        "score": np.concatenate(parts["score"]).astype("float64"),
        "token_count": np.concatenate(parts["token_count"]).astype("int64"),
    }
