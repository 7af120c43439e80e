"""Batches cut to their longest sequence (`trim_padding`): the encoder's
outputs at real tokens do not change, and XLA gets few lengths; a tagger's
windows padded to few counts under XLA (`pad_rows`) leave its loss and
gradients unchanged. Batches
grouped by length are tested in `tests/finetuning/test_length_grouping.py`."""

import keras
import numpy as np
import tensorflow as tf

from electra_tf.models.dynamic_padding import (
    length_order,
    pad_rows,
    padded_rows,
    trim_padding,
    trimmed_length,
)
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.presets import get_preset
from tests.helpers import TINY_VOCABULARY_SIZE, random_batch, randomize_weights


def test_length_is_the_longest_row_rounded_up_few_lengths_under_xla():
    mask = np.zeros((3, 64), bool)
    mask[0, :5] = mask[1, :17] = mask[2, :2] = True
    assert int(trimmed_length(mask)) == 17  # the longest
    assert int(trimmed_length(mask, few_lengths=True)) == 32  # of 16, 32, 48, 64
    assert int(trimmed_length(mask[:, :50], few_lengths=True)) == 26  # steps of 13
    mask[1, :] = True
    assert int(trimmed_length(mask)) == 64
    assert int(trimmed_length(mask[:, :60])) == 60  # capped at the packed length
    # An empty batch (a tagging batch of empty sentences) keeps a length.
    assert int(trimmed_length(np.zeros((0, 64), bool))) == 1


def test_length_order_is_fewest_characters_first_for_texts_and_words():
    texts = np.array(["a long one", "x", "mid dle"], dtype=object)
    assert list(length_order(texts)) == [1, 2, 0]
    words = tf.ragged.constant([["a", "long", "one"], ["x"], ["mid", "dle"]])
    assert list(length_order(words)) == [1, 2, 0]


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
    assert trimmed["token_ids"].shape == (4, 20)
    assert none is None
    np.testing.assert_array_equal(trimmed_labels, labels[:, :20])
    full = encoder(batch)["sequence_output"].numpy()
    cut = encoder(trimmed)["sequence_output"].numpy()
    real = batch["padding_mask"][:, :20].astype(bool)
    np.testing.assert_allclose(cut[real], full[:, :20][real], atol=1e-5)


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
    assert shapes == {False: (2, 5), True: (2, 16)}


def test_rows_are_padded_to_a_multiple_of_a_quarter_of_the_sentences():
    for rows, sentences, padded in [
        (32, 32, 32),
        (33, 32, 40),
        (41, 32, 48),
        (3, 3, 3),
    ]:
        assert int(padded_rows(rows, sentences)) == padded
    x = {
        "token_ids": np.array([[2, 7, 3]], np.int32),
        "padding_mask": np.array([[True, True, True]]),
    }
    (padded, labels, weights) = pad_rows(x, np.ones((1, 3), np.int32), None, rows=3)
    np.testing.assert_array_equal(
        padded["token_ids"], [[2, 7, 3], [0, 0, 0], [0, 0, 0]]
    )
    assert not padded["padding_mask"].numpy()[1:].any()
    np.testing.assert_array_equal(labels, [[1, 1, 1], [0, 0, 0], [0, 0, 0]])
    assert weights is None


def test_a_tagger_under_xla_pads_its_windows_and_its_loss_and_gradients_do_not_change():
    import keras_hub

    from electra_tf.models.token_classifier import ElectraTokenClassifier
    from electra_tf.models.token_classifier_preprocessor import (
        ElectraTokenClassifierPreprocessor,
    )

    vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"]
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=vocabulary)
    config = get_preset("tiny").model.override(
        vocabulary_size=len(vocabulary), max_sequence_length=8, dropout=0.0
    )
    tagger = ElectraTokenClassifier(
        ElectraEncoder.discriminator_from_config(config),
        num_classes=2,
        preprocessor=ElectraTokenClassifierPreprocessor(
            tokenizer, tags=["A", "B"], sequence_length=8
        ),
        dropout=0.0,
    )
    randomize_weights(tagger, seed=2)
    # 8 sentences, 9 windows of 6 pieces: one of 9 words needs two.
    words = [["a", "b"], ["b"] * 9, ["a"], ["b", "a", "a"], ["a"], ["b"], ["a"] * 2]
    words = tf.ragged.constant(words + [["b", "a"]])
    tags = [[0, 1], [1, 0] * 4 + [1], [0], [1, 0, 0], [0], [1], [0, 0], [1, 0]]
    tags = tf.ragged.constant(tags)
    batches = {}
    for jit in (False, True):
        tagger.compile(jit_compile=jit)
        batches[jit] = keras.utils.unpack_x_y_sample_weight(
            tagger.preprocess_samples(words, tags)
        )
    assert batches[False][0]["token_ids"].shape == (9, 8)
    assert batches[True][0]["token_ids"].shape == (10, 8)  # a multiple of 8 / 4

    loss = keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, reduction="mean_with_sample_weight"
    )
    results = {}
    for jit, (x, y, weight) in batches.items():
        with tf.GradientTape() as tape:
            logits = tagger(x, training=True)
            value = loss(y, logits, weight)
        gradients = tape.gradient(value, tagger.trainable_variables)
        accuracy = keras.metrics.SparseCategoricalAccuracy()
        accuracy.update_state(y, logits, weight)
        results[jit] = [value, accuracy.result(), *map(tf.convert_to_tensor, gradients)]
    # Rows of weight 0 add exact zeros: equal but for the order of sums.
    for padded, unpadded in zip(results[True], results[False]):
        np.testing.assert_allclose(padded, unpadded, rtol=1e-6, atol=1e-7)
