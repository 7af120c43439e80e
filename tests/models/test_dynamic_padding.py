"""Batches cut to their longest sequence (`trim_padding`): the encoder's
outputs at real tokens do not change, and XLA gets few lengths. Batches
grouped by length are tested in `tests/finetuning/test_length_grouping.py`."""

import keras
import numpy as np
import tensorflow as tf

from electra_tf.models.dynamic_padding import trim_padding, trimmed_length
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.presets import get_preset
from tests.helpers import TINY_VOCABULARY_SIZE, random_batch, randomize_weights


def test_length_is_the_longest_row_rounded_up_few_lengths_under_xla():
    mask = np.zeros((3, 64), bool)
    mask[0, :5] = mask[1, :17] = mask[2, :2] = True
    assert int(trimmed_length(mask)) == 24  # a multiple of 8
    assert int(trimmed_length(mask, few_lengths=True)) == 32  # of 16, 32, 48, 64
    assert int(trimmed_length(mask[:, :50], few_lengths=True)) == 26  # steps of 13
    mask[1, :] = True
    assert int(trimmed_length(mask)) == 64
    assert int(trimmed_length(mask[:, :60])) == 60  # capped at the packed length
    # An empty batch (a tagging batch of empty sentences) keeps a length.
    assert int(trimmed_length(np.zeros((0, 64), bool))) == 8


def test_trimmed_inputs_give_the_same_outputs_at_real_tokens():
    config = get_preset("tiny").model.override(
        vocabulary_size=TINY_VOCABULARY_SIZE, max_sequence_length=64
    )
    encoder = ElectraEncoder.discriminator_from_config(config)
    randomize_weights(encoder, seed=3)
    batch = random_batch(batch_size=4, length=64, seed=1)
    batch["padding_mask"][:, 20:] = 0  # the longest row has 20 tokens
    batch["token_ids"][:, 20:] = 0
    labels = np.arange(4 * 64).reshape(4, 64)
    trimmed, trimmed_labels, none = trim_padding(batch, labels, None)
    assert trimmed["token_ids"].shape == (4, 24)
    assert none is None
    np.testing.assert_array_equal(trimmed_labels, labels[:, :24])
    full = encoder(batch)["sequence_output"].numpy()
    cut = encoder(trimmed)["sequence_output"].numpy()
    real = batch["padding_mask"][:, :24].astype(bool)
    np.testing.assert_allclose(cut[real], full[:, :24][real], atol=1e-5)


def test_a_classifier_cuts_its_batches_closer_in_graph_mode_than_under_xla():
    import keras_hub

    from electra_tf.models.text_classifier import ElectraTextClassifier
    from electra_tf.models.text_classifier_preprocessor import (
        ElectraTextClassifierPreprocessor,
    )

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=vocabulary)
    config = get_preset("tiny").model.override(
        vocabulary_size=len(vocabulary), max_sequence_length=64
    )
    classifier = ElectraTextClassifier(
        ElectraEncoder.discriminator_from_config(config),
        num_classes=2,
        preprocessor=ElectraTextClassifierPreprocessor(tokenizer, sequence_length=64),
    )
    texts = tf.constant(["a b a", "b"])  # 5 tokens with [CLS] and [SEP]
    shapes = {}
    for jit in (False, True):
        classifier.compile(jit_compile=jit)
        x, y, _ = keras.utils.unpack_x_y_sample_weight(
            classifier.preprocess_samples(texts, tf.constant([0, 1]))
        )
        shapes[jit] = x["token_ids"].shape
    assert shapes == {False: (2, 8), True: (2, 16)}
