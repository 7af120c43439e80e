"""TF-Hub style SavedModels: the encoder alone and its matching preprocessing.

They mirror TF Hub's BERT pairs (an encoder such as
`bert_en_uncased_L-12_H-768_A-12` and `bert_en_uncased_preprocess`), so code
written for those works with ours. Loading needs only `tensorflow` and
`tensorflow_text` (imported first, for the WordPiece op):

    import tensorflow as tf, tensorflow_text  # noqa: F401
    preprocessor = tf.saved_model.load("export/hub/preprocessing")
    encoder = tf.saved_model.load("export/hub/encoder")
    outputs = encoder(preprocessor(tf.constant(["the quick brown fox"])))
    outputs["pooled_output"]          # [batch, H], the [CLS] state
    # Sentence pairs, and any sequence length:
    segments = [preprocessor.tokenize(questions), preprocessor.tokenize(answers)]
    inputs = preprocessor.bert_pack_inputs(segments, seq_length=tf.constant(64))
    outputs = encoder(inputs)

Encoder (`export_hub_encoder`): `encoder(inputs, training=False)` takes the
dict `input_word_ids`, `input_mask`, `input_type_ids` (int32 [batch, seq])
and returns `sequence_output` (float32 [batch, seq, H]), `pooled_output`
([batch, H]; ELECTRA's is `sequence_output[:, 0]`, no tanh pooler),
`default` (= `pooled_output`) and `encoder_outputs` (each block's output, a
list). `training=True` applies dropout; `trainable_variables` are exposed
for fine-tuning. The `serving_default` signature gives the same with the
blocks as `encoder_outputs_0`, `encoder_outputs_1`, ...

Preprocessing (`export_hub_preprocessing`): `preprocessor(text)` and the
`serving_default` signature map a tf.string [batch] to the encoder's inputs
at the exported `seq_length`; the `preprocess_text_pair` signature does the
same for (`text`, `text_pair`). `tokenize(text)` gives WordPiece ids as a
RaggedTensor [batch, (tokens)] (TF Hub's has a words dimension too; ours are
already merged), and `bert_pack_inputs(segments, seq_length)` packs a list
of one or two of them as `[CLS] A [SEP] B [SEP]`, truncating round-robin
(the longest segment loses tokens first) as our fine-tuning preprocessor
does, and pads to `seq_length`.
"""

from __future__ import annotations

import os

import keras
import keras_hub
import tensorflow as tf
import tensorflow_text as tf_text

from electra_tf.data.vocabulary import Vocabulary, check_vocabulary_fits
from electra_tf.export.float32 import float32_model
from electra_tf.export.saved_model import save_saved_model
from electra_tf.request_checks import checked_ids, checked_texts

INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def encoder_with_block_outputs(encoder) -> keras.Model:
    """`encoder` with each transformer block's output as `encoder_outputs`."""
    outputs = dict(encoder.output)
    outputs["encoder_outputs"] = [layer.output for layer in encoder.transformer_layers]
    return keras.Model(encoder.input, outputs, name=f"{encoder.name}_with_blocks")


class HubEncoder(tf.Module):
    """The encoder SavedModel's object (see the module docstring)."""

    # TF Hub's reusable-SavedModel attributes are saved lists; `tf.Module`
    # only computes these names (properties, which are not saved), so plain
    # attributes shadow them here.
    variables = None
    trainable_variables = None
    regularization_losses = None

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder_with_block_outputs(encoder)
        self.vocabulary_size = int(encoder.vocabulary_size)
        self.max_sequence_length = int(encoder.max_sequence_length)
        self.variables = list(encoder.weights)
        self.trainable_variables = list(encoder.trainable_weights)
        self.regularization_losses = []
        # Keras keeps its dropout seed states out of the object graph; the
        # training trace uses them, so the SavedModel must reach them.
        self.dropout_seed_states = list(encoder.non_trainable_variables)

    @tf.function
    def __call__(self, inputs, training=False):
        inputs = checked_ids(
            {name: inputs[name] for name in INPUT_NAMES},
            self.vocabulary_size,
            self.max_sequence_length,
        )
        outputs = self.encoder(
            {
                "token_ids": inputs["input_word_ids"],
                "segment_ids": inputs["input_type_ids"],
                "padding_mask": inputs["input_mask"],
            },
            training=training,
        )
        pooled = tf.cast(outputs["pooled_output"], tf.float32)
        return {
            "sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
            "pooled_output": pooled,
            "default": pooled,
            "encoder_outputs": [
                tf.cast(x, tf.float32) for x in outputs["encoder_outputs"]
            ],
        }

    @tf.function(
        input_signature=[
            {
                name: tf.TensorSpec([None, None], tf.int32, name=name)
                for name in INPUT_NAMES
            }
        ]
    )
    def serve(self, inputs):
        outputs = self.__call__(inputs, training=False)
        blocks = outputs.pop("encoder_outputs")
        outputs.update({f"encoder_outputs_{i}": x for i, x in enumerate(blocks)})
        return outputs


def export_hub_encoder(encoder, export_dir) -> str:
    """Saves `encoder` (an `ElectraEncoder`) as a TF-Hub style encoder that
    computes in float32 (`float32_model`)."""
    module = HubEncoder(float32_model(encoder))
    spec = {
        name: tf.TensorSpec([None, None], tf.int32, name=name) for name in INPUT_NAMES
    }
    # Both traces are saved, so the loaded encoder runs with and without dropout.
    for training in (False, True):
        module.__call__.get_concrete_function(spec, training=training)
    export_dir = os.fspath(export_dir)
    return save_saved_model(
        module, export_dir, signatures={"serving_default": module.serve}
    )


class HubPreprocessing(tf.Module):
    """The preprocessing SavedModel's object (see the module docstring).

    Args:
        tokenizer: a `keras_hub.models.ElectraTokenizer`.
        seq_length: the packed length of `__call__` and the signatures.
    """

    def __init__(self, tokenizer, seq_length=128):
        super().__init__()
        self.tokenizer = tokenizer
        self.seq_length = int(seq_length)
        self.cls_id = tokenizer.cls_token_id
        self.sep_id = tokenizer.sep_token_id
        self.pad_id = tokenizer.pad_token_id

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def tokenize(self, text):
        (text,) = checked_texts(text=text)
        return tf.cast(self.tokenizer(text), tf.int32)

    def _pack(self, segments, seq_length):
        seq_length = tf.cast(seq_length, tf.int32)
        # Segments of different batch sizes would reach `combine_segments`.
        checks = [
            tf.debugging.assert_equal(
                segment.nrows(out_type=tf.int32),
                segments[0].nrows(out_type=tf.int32),
                message=f"segment {i} and segment 0 must have the same batch size",
            )
            for i, segment in enumerate(segments[1:], start=1)
        ]
        checks.append(
            tf.debugging.assert_greater(
                seq_length,
                len(segments) + 1,
                message=f"seq_length must leave room for [CLS], "
                f"{len(segments)} [SEP] and some text",
            )
        )
        with tf.control_dependencies(checks):
            seq_length = tf.identity(seq_length)
        # [CLS] and one [SEP] per segment take room from the text.
        budget = seq_length - 1 - len(segments)
        trimmed = tf_text.RoundRobinTrimmer(max_seq_length=budget).trim(
            [tf.cast(s, tf.int32) for s in segments]
        )
        token_ids, type_ids = tf_text.combine_segments(
            trimmed, start_of_sequence_id=self.cls_id, end_of_segment_id=self.sep_id
        )
        input_word_ids, input_mask = tf_text.pad_model_inputs(
            token_ids, max_seq_length=seq_length, pad_value=self.pad_id
        )
        input_type_ids, _ = tf_text.pad_model_inputs(
            type_ids, max_seq_length=seq_length
        )
        return {
            "input_word_ids": tf.cast(input_word_ids, tf.int32),
            "input_mask": tf.cast(input_mask, tf.int32),
            "input_type_ids": tf.cast(input_type_ids, tf.int32),
        }

    @tf.function
    def bert_pack_inputs(self, segments, seq_length):
        return self._pack(list(segments), seq_length)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def __call__(self, text):
        return self._pack([self.tokenize(text)], self.seq_length)

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.string, name="text"),
            tf.TensorSpec([None], tf.string, name="text_pair"),
        ]
    )
    def preprocess_text_pair(self, text, text_pair):
        text, text_pair = checked_texts(text=text, text_pair=text_pair)
        return self._pack(
            [self.tokenize(text), self.tokenize(text_pair)], self.seq_length
        )


def export_hub_preprocessing(vocabulary: Vocabulary, export_dir, seq_length=128) -> str:
    """Saves the preprocessing that matches an encoder of this vocabulary."""
    tokenizer = keras_hub.models.ElectraTokenizer(
        vocabulary=list(vocabulary.tokens), lowercase=vocabulary.lowercase
    )
    module = HubPreprocessing(tokenizer, seq_length=seq_length)
    ragged = tf.RaggedTensorSpec([None, None], tf.int32, ragged_rank=1)
    length = tf.TensorSpec([], tf.int32)
    for count in (1, 2):
        module.bert_pack_inputs.get_concrete_function([ragged] * count, length)
    export_dir = os.fspath(export_dir)
    return save_saved_model(
        module,
        export_dir,
        signatures={
            "serving_default": module.__call__,
            "preprocess_text_pair": module.preprocess_text_pair,
        },
    )


def export_tf_hub(
    encoder, vocabulary: Vocabulary, export_dir, seq_length=128
) -> dict[str, str]:
    """`export_dir/encoder` and `export_dir/preprocessing`; returns both paths."""
    check_vocabulary_fits(vocabulary.size, encoder.vocabulary_size)
    export_dir = os.fspath(export_dir)
    return {
        "encoder": export_hub_encoder(encoder, os.path.join(export_dir, "encoder")),
        "preprocessing": export_hub_preprocessing(
            vocabulary,
            os.path.join(export_dir, "preprocessing"),
            seq_length=seq_length,
        ),
    }
