"""Exports of a pre-trained ELECTRA: keras-hub preset, generator, SavedModels."""

from __future__ import annotations

import os

import keras
import keras_hub
import tensorflow as tf

from electra_tf.data.vocabulary import Vocabulary
from electra_tf.export.float32 import float32_model
from electra_tf.export.saved_model import save_saved_model
from electra_tf.export.tf_hub import export_tf_hub
from electra_tf.models.cloze_generator import (
    ElectraClozeGenerator,
    electric_correction,
    standalone_cloze_generator,
)
from electra_tf.models.encoder import standalone_encoder
from electra_tf.models.generator import standalone_generator
from electra_tf.models.keras_hub_preset import save_keras_hub_preset
from electra_tf.models.tower import ENCODER_INPUTS, standalone_tower
from electra_tf.request_checks import checked_ids, checked_texts
from electra_tf.scoring.sentence_scorer import SentenceScorer


class DiscriminatorServing(tf.Module):
    """What the discriminator SavedModel serves.

    Signatures:
      * `serving_default` / `detect_replaced_tokens_ids`: int32 `token_ids`,
        `segment_ids`, `padding_mask` [batch, length] -> float32
        `replaced_probability` [batch, length], `sequence_output`
        [batch, length, H], `pooled_output` [batch, H].
      * `detect_replaced_tokens_text`: a tf.string `text` [batch] -> the same
        plus the `token_ids`, `segment_ids` and `padding_mask` it packed
        (WordPiece and `[CLS] text [SEP]` packing run in the graph; text
        longer than `sequence_length` tokens is truncated).
      * `detect_replaced_tokens_text_pair`: `text` and `text_pair` [batch] ->
        the same for `[CLS] text [SEP] text_pair [SEP]` (segment ids 0, 1),
        truncated round-robin: the longer text loses tokens first.
    Loading needs only `tensorflow` and `tensorflow_text` (for the WordPiece op).
    A request of the wrong shape (texts of different batch sizes, ids out
    of the vocabulary) gets an `InvalidArgumentError` naming the input
    (`electra_tf.request_checks`).

    Electric (`electric_mask_prob` set): the discriminator's own logit is an
    energy, not the logit of "replaced"; `replaced_probability` is the
    sigmoid of it plus the noise correction the discriminator was trained
    with (`electric_correction`: log q of the token under `cloze_generator`,
    or of a uniform q with the uniform generator, plus log(p / (1 - p))), the
    probability that the token is a sample the cloze model put in a slot
    masked with probability p.

    Args:
        discriminator: the RTD model (`ElectraDiscriminator`).
        tokenizer: a `keras_hub.models.ElectraTokenizer`.
        sequence_length: the packed length of the text signatures.
        cloze_generator: Electric's trained `ElectraClozeGenerator`, or None.
        electric_mask_prob: Electric's mask probability p; None for the
            other objectives (no correction).
    """

    def __init__(
        self,
        discriminator,
        tokenizer,
        sequence_length,
        cloze_generator=None,
        electric_mask_prob=None,
    ):
        super().__init__()
        self.discriminator = discriminator
        self.cloze_generator = cloze_generator
        self.electric_mask_prob = electric_mask_prob
        self.tokenizer = tokenizer
        self.packer = keras_hub.layers.MultiSegmentPacker(
            sequence_length=sequence_length,
            start_value=tokenizer.cls_token_id,
            end_value=tokenizer.sep_token_id,
            pad_value=tokenizer.pad_token_id,
        )

    def _outputs(self, inputs):
        logits = self.discriminator(inputs, training=False)
        if self.electric_mask_prob is not None:
            if self.cloze_generator is None:  # uniform noise: equal logits
                vocabulary_size = self.discriminator.encoder.vocabulary_size
                cloze_logits = tf.zeros(
                    tf.concat([tf.shape(logits), [vocabulary_size]], 0)
                )
            else:
                cloze_logits = self.cloze_generator(inputs, training=False)
            logits += electric_correction(
                cloze_logits, inputs["token_ids"], self.electric_mask_prob
            )
        encoded = self.discriminator.encoder(inputs, training=False)
        return {
            "replaced_probability": tf.sigmoid(logits),
            "sequence_output": tf.cast(encoded["sequence_output"], tf.float32),
            "pooled_output": tf.cast(encoded["pooled_output"], tf.float32),
        }

    @tf.function(
        input_signature=[
            {
                name: tf.TensorSpec([None, None], tf.int32, name=name)
                for name in ENCODER_INPUTS
            }
        ]
    )
    def detect_replaced_tokens_ids(self, inputs):
        inputs = {name: inputs[name] for name in ENCODER_INPUTS}
        encoder = self.discriminator.encoder
        return self._outputs(
            checked_ids(inputs, encoder.vocabulary_size, encoder.max_sequence_length)
        )

    def _packed_outputs(self, segments):
        token_ids, segment_ids = self.packer(tuple(segments))
        token_ids = tf.cast(token_ids, tf.int32)
        inputs = {
            "token_ids": token_ids,
            "segment_ids": tf.cast(segment_ids, tf.int32),
            "padding_mask": tf.cast(token_ids != self.tokenizer.pad_token_id, tf.int32),
        }
        return {**self._outputs(inputs), **inputs}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def detect_replaced_tokens_text(self, text):
        (text,) = checked_texts(text=text)
        return self._packed_outputs([self.tokenizer(text)])

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string, name="text"),
            tf.TensorSpec([None], tf.string, name="text_pair"),
        ]
    )
    def detect_replaced_tokens_text_pair(self, text, text_pair):
        text, text_pair = checked_texts(text=text, text_pair=text_pair)
        return self._packed_outputs([self.tokenizer(text), self.tokenizer(text_pair)])


def exported_discriminator(pretrainer):
    """(RTD model or None, encoder) as exported: ordinary embedding tables.

    Under `embedding_sharing="gdes"` the discriminator's token table is the
    generator's plus a residual; the export folds the two into one table, so
    fine-tuning, conversion and serving see a standard ELECTRA encoder.
    Otherwise the pre-training models themselves.
    """
    discriminator = pretrainer.discriminator
    encoder = pretrainer.discriminator_encoder
    if not encoder.disentangles_embeddings:
        return discriminator, encoder
    if discriminator is None:
        return None, standalone_encoder(encoder)
    discriminator = standalone_tower(discriminator)
    return discriminator, discriminator.encoder


def export_pretrained(pretrainer, vocabulary: Vocabulary, export_dir):
    """Writes everything a user takes away from pre-training.

    * `discriminator/`: a keras-hub preset (`keras_hub.models.ElectraBackbone`
      + `ElectraTokenizer`), what fine-tuning loads (see
      `exported_discriminator`);
    * `discriminator.keras`: the discriminator with its RTD head;
    * `generator.keras`: the generator with its own copy of the embeddings
      (for Electric, the two-tower `ElectraClozeGenerator`);
    * `saved_model/`: the discriminator for serving (see `DiscriminatorServing`;
      for Electric, `replaced_probability` includes the noise correction);
    * `sentence_scorer/`: raw sentences in, pseudo-log-likelihoods out (a
      `SentenceScorer`, see `sentence_scoring_method`), when the run trained a
      model that scores;
    * `hub/encoder/` and `hub/preprocessing/`: the discriminator's encoder and
      its text preprocessing as TF-Hub style SavedModels (see
      `electra_tf.export.tf_hub`).
    Every one computes in float32, whatever the run's precision
    (`electra_tf.export.float32`). Returns the paths by name.
    """
    tf.io.gfile.makedirs(export_dir)
    paths = {
        "discriminator_preset": os.path.join(export_dir, "discriminator"),
        "discriminator": os.path.join(export_dir, "discriminator.keras"),
        "generator": os.path.join(export_dir, "generator.keras"),
        "saved_model": os.path.join(export_dir, "saved_model"),
    }
    config = pretrainer.pretraining_config
    sequence_length = config.max_seq_length
    tokenizer = keras_hub.models.ElectraTokenizer(
        vocabulary=list(vocabulary.tokens), lowercase=vocabulary.lowercase
    )
    discriminator, encoder = exported_discriminator(pretrainer)
    if discriminator is not None:
        discriminator = float32_model(discriminator)
        encoder = discriminator.encoder
    else:
        encoder = float32_model(encoder)
    save_keras_hub_preset(encoder, vocabulary, paths["discriminator_preset"])
    if discriminator is not None:
        discriminator.save(paths["discriminator"])
    if isinstance(pretrainer.generator, ElectraClozeGenerator):
        generator = standalone_cloze_generator(pretrainer.generator)
    else:
        generator = standalone_generator(pretrainer.generator)
    generator = float32_model(generator)
    generator.save(paths["generator"])
    electric = config.objective == "electric"
    if discriminator is not None:
        serving = DiscriminatorServing(
            discriminator,
            tokenizer,
            sequence_length,
            cloze_generator=(
                generator if electric and not config.uniform_generator else None
            ),
            electric_mask_prob=config.mask_prob if electric else None,
        )
        save_saved_model(
            serving,
            paths["saved_model"],
            signatures={
                "serving_default": serving.detect_replaced_tokens_ids,
                "detect_replaced_tokens_ids": serving.detect_replaced_tokens_ids,
                "detect_replaced_tokens_text": serving.detect_replaced_tokens_text,
                "detect_replaced_tokens_text_pair": (
                    serving.detect_replaced_tokens_text_pair
                ),
            },
        )
    method = sentence_scoring_method(config)
    if method is not None:
        scorer = SentenceScorer(
            discriminator if method == "electric" else generator,
            tokenizer,
            sequence_length,
            method=method,
        )
        paths["sentence_scorer"] = os.path.join(export_dir, "sentence_scorer")
        save_saved_model(
            scorer,
            paths["sentence_scorer"],
            signatures={
                "serving_default": scorer.score_sentences,
                "score_sentences": scorer.score_sentences,
            },
        )
    hub = export_tf_hub(
        encoder,
        vocabulary,
        os.path.join(export_dir, "hub"),
        seq_length=sequence_length,
    )
    paths.update({f"hub_{name}": path for name, path in hub.items()})
    return paths


def sentence_scoring_method(pretraining_config) -> str | None:
    """How a run's export scores sentences (`SentenceScorer`'s method), or None.

    Electric's discriminator in one pass; otherwise the pseudo-log-likelihood
    of the masked-language model the run trained (the `mlm` objective's
    model, or the generator of the others), one pass per token. A uniform
    generator is never trained: an ELECTRA-style run with one has nothing
    that scores.
    """
    if pretraining_config.objective == "electric":
        return "electric"
    if pretraining_config.uniform_generator:
        return None
    return "mlm"


def load_generator(path):
    """Loads `generator.keras` (safe mode: no lambdas or arbitrary code)."""
    return keras.models.load_model(path, safe_mode=True)


def export_encoder(encoder, vocabulary: Vocabulary, export_dir):
    """The exports that need only an encoder (no RTD head, no generator).

    * `discriminator/`: the keras-hub preset (what `finetune/run.py
      --pretrained` takes);
    * `encoder.keras`: our `ElectraEncoder` (exact GELU, no pooler);
    * `hub/encoder/`, `hub/preprocessing/`: TF-Hub style SavedModels.
    All compute in float32 (`electra_tf.export.float32`). Returns the paths
    by name.
    """
    tf.io.gfile.makedirs(export_dir)
    paths = {
        "discriminator_preset": os.path.join(export_dir, "discriminator"),
        "encoder": os.path.join(export_dir, "encoder.keras"),
    }
    encoder = float32_model(encoder)
    save_keras_hub_preset(encoder, vocabulary, paths["discriminator_preset"])
    encoder.save(paths["encoder"])
    hub = export_tf_hub(
        encoder,
        vocabulary,
        os.path.join(export_dir, "hub"),
        seq_length=min(128, encoder.max_sequence_length),
    )
    paths.update({f"hub_{name}": path for name, path in hub.items()})
    return paths
