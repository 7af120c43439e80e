"""ElectraTextClassifier and its preprocessor on keras-hub's task API.

One tiny classifier (2 layers, H=64, a 200-token vocabulary, length 32) is
built per module; each test that fits does so for one short epoch.
"""

import collections
import copy
import doctest
import pathlib
import re
import warnings

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import electra_tf.models.text_classifier
import electra_tf.models.text_classifier_preprocessor
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.export.classifier import export_text_classifier
from electra_tf.finetuning.glue_metrics import task_metrics
from electra_tf.finetuning.glue_readers import read_glue_tsv
from electra_tf.finetuning.glue_tasks import GLUE_TASKS, get_task
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.keras_hub_preset import PretrainedModelError
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.text_classifier_preprocessor import (
    ElectraTextClassifierPreprocessor,
)
from electra_tf.presets import get_preset
from tests.helpers import TINY_VOCABULARY_SIZE

GLUE_DIR = pathlib.Path(__file__).parents[1] / "fixtures" / "glue"
SEQUENCE_LENGTH = 32
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def fixture_vocabulary(size=TINY_VOCABULARY_SIZE):
    """The most frequent lower-cased words and symbols of the GLUE fixtures' texts."""
    counts = collections.Counter()
    for task in GLUE_TASKS.values():
        splits = (["train"] if task.has_train else []) + list(task.dev_splits)
        for split in splits + list(task.test_splits):
            for segment in read_glue_tsv(task, split, str(GLUE_DIR)).texts:
                for text in segment:
                    counts.update(re.findall(r"\w+|[^\w\s]", text.lower()))
    words = sorted(counts, key=lambda word: (-counts[word], word))
    return SPECIAL + words[: size - len(SPECIAL)]


@pytest.fixture(scope="module")
def vocabulary():
    tokens = fixture_vocabulary()
    assert len(tokens) == TINY_VOCABULARY_SIZE
    return tokens


@pytest.fixture(scope="module")
def preprocessor(vocabulary):
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=vocabulary, lowercase=True)
    return ElectraTextClassifierPreprocessor(tokenizer, sequence_length=SEQUENCE_LENGTH)


def make_encoder():
    config = get_preset("tiny").model.override(
        vocabulary_size=TINY_VOCABULARY_SIZE, max_sequence_length=SEQUENCE_LENGTH
    )
    return ElectraEncoder.discriminator_from_config(config)


@pytest.fixture(scope="module")
def classifier(preprocessor):
    keras.utils.set_random_seed(0)
    model = ElectraTextClassifier(
        backbone=make_encoder(), num_classes=2, preprocessor=preprocessor
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        metrics=task_metrics(get_task("mrpc")),
        jit_compile=False,
    )
    return model


def dataset(task_name, split="train", batch_size=4):
    task = get_task(task_name)
    return read_glue_tsv(task, split, str(GLUE_DIR)).to_dataset(batch_size)


MRPC_DEV = (
    ["He said the foodservice pie business doesn 't fit .", "They drank the pub ."],
    ["The pie business does not fit our strategy .", "The pub was drunk ."],
)


def test_preprocessor_packs_cls_a_sep_b_sep(preprocessor, vocabulary):
    words = ("the", "man", "is", "a", "cat")
    x = preprocessor(x=(tf.constant(["The man is"]), tf.constant(["a cat"])))
    ids = [vocabulary.index(word) for word in words]
    cls, sep, pad = 2, 3, 0
    expected = [cls, *ids[:3], sep, *ids[3:], sep]
    assert x["token_ids"].numpy()[0, : len(expected)].tolist() == expected
    assert set(x["token_ids"].numpy()[0, len(expected) :].tolist()) == {pad}
    assert x["segment_ids"].numpy()[0, :9].tolist() == [0] * 5 + [1] * 3 + [0]
    assert x["padding_mask"].numpy()[0].sum() == len(expected)
    assert x["token_ids"].shape == (1, SEQUENCE_LENGTH)


def test_preprocessor_truncates_round_robin(preprocessor):
    long_a = tf.constant([" ".join(["the"] * 40)])
    short_b = tf.constant(["a cat"])
    x = preprocessor(x=(long_a, short_b))
    segments = x["segment_ids"].numpy()[0]
    # 32 = [CLS] + 27 of A + [SEP] + 2 of B + [SEP]: B is kept whole.
    assert (segments == 1).sum() == 3
    assert x["padding_mask"].numpy()[0].all()


def test_fit_on_raw_strings(classifier):
    history = classifier.fit(dataset("sst2"), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    logits = classifier.predict(["a gripping film", "no wit"], verbose=0)
    assert logits.shape == (2, 2)


def test_fit_on_sentence_pairs_with_glue_metrics(classifier):
    history = classifier.fit(dataset("mrpc"), epochs=1, verbose=0)
    assert {"loss", "accuracy", "f1"} <= set(history.history)
    results = classifier.evaluate(dataset("mrpc", "dev"), verbose=0, return_dict=True)
    assert 0.0 <= results["f1"] <= 1.0
    logits = classifier.predict(tuple(tf.constant(s) for s in MRPC_DEV), verbose=0)
    assert logits.shape == (2, 2)


def test_predict_on_unlabelled_pairs_uses_both_sentences(classifier):
    test = read_glue_tsv(get_task("mnli"), "test_mismatched", str(GLUE_DIR))
    from_dataset = classifier.predict(test.to_dataset(8), verbose=0)
    from_tensors = classifier.predict(
        tuple(tf.constant(s) for s in test.texts), verbose=0
    )
    first_only = classifier.predict(tf.constant(test.texts[0]), verbose=0)
    np.testing.assert_allclose(from_dataset, from_tensors, rtol=1e-5, atol=1e-6)
    assert np.abs(from_dataset - first_only).max() > 1e-4


def test_regression_head_fits_with_squared_error(preprocessor):
    keras.utils.set_random_seed(0)
    regressor = ElectraTextClassifier(
        backbone=make_encoder(), num_classes=1, preprocessor=preprocessor
    )
    regressor.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        metrics=task_metrics(get_task("stsb")),
        jit_compile=False,
    )
    assert isinstance(regressor.loss, keras.losses.MeanSquaredError)
    history = regressor.fit(dataset("stsb"), epochs=1, verbose=0)
    assert {"loss", "pearson", "spearman"} <= set(history.history)
    assert regressor.predict(dataset("stsb", "test"), verbose=0).shape == (1, 1)


def test_head_is_the_original(classifier):
    assert classifier.get_layer("classifier_dropout").rate == 0.1
    dense = classifier.get_layer("output_dense")
    assert dense.units == 2 and dense.activation is keras.activations.linear
    initializer = dense.kernel_initializer
    assert isinstance(initializer, keras.initializers.TruncatedNormal)
    assert initializer.stddev == 0.02


def test_mean_pooling_averages_the_unpadded_final_states(preprocessor, tmp_path):
    keras.utils.set_random_seed(0)
    encoder = make_encoder()
    model = ElectraTextClassifier(
        backbone=encoder, num_classes=3, preprocessor=preprocessor, pooling="mean"
    )
    texts = ["a gripping film", "the pie business does not fit our strategy ."]
    inputs = preprocessor(tf.constant(texts))
    states = encoder(inputs)["sequence_output"].numpy()
    mask = inputs["padding_mask"].numpy()
    assert not mask.all()  # the first text is padded
    pooled = np.stack([s[m].mean(axis=0) for s, m in zip(states, mask)])
    dense = model.get_layer("output_dense")
    expected = pooled @ dense.kernel.numpy() + dense.bias.numpy()
    np.testing.assert_allclose(model.predict(texts, verbose=0), expected, atol=1e-5)
    # The [CLS] head differs, and both survive saving.
    cls_model = ElectraTextClassifier(
        backbone=encoder, num_classes=3, preprocessor=preprocessor
    )
    cls_model.get_layer("output_dense").set_weights(dense.get_weights())
    assert not np.allclose(cls_model.predict(texts, verbose=0), expected, atol=1e-3)
    assert model.get_config()["pooling"] == "mean"
    path = str(tmp_path / "mean.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert restored.pooling == "mean"
    np.testing.assert_allclose(restored.predict(texts, verbose=0), expected, atol=1e-5)
    with pytest.raises(ValueError, match="pooling must be one of"):
        ElectraTextClassifier(backbone=encoder, num_classes=2, pooling="max")


def test_config_round_trip(classifier):
    config = classifier.get_config()
    assert config["num_classes"] == 2 and config["dropout"] == 0.1
    # keras-hub's `Task.from_config` replaces the nested configs in place.
    restored = ElectraTextClassifier.from_config(copy.deepcopy(config))
    assert isinstance(restored.backbone, ElectraEncoder)
    assert isinstance(restored.preprocessor, ElectraTextClassifierPreprocessor)
    assert restored.preprocessor.sequence_length == SEQUENCE_LENGTH
    assert restored.get_config() == config


def test_keras_file_round_trip(classifier, tmp_path):
    path = str(tmp_path / "classifier.keras")
    classifier.save(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        restored = keras.models.load_model(path)  # safe_mode=True by default
    assert isinstance(restored, ElectraTextClassifier)
    # Compiled as saved (CompileOnLoad), not left bare with Keras' warning.
    assert not [w for w in caught if "compile()" in str(w.message)]
    assert restored.compiled and isinstance(restored.optimizer, keras.optimizers.Adam)
    metrics = restored.evaluate(["a gripping film"], [1], verbose=0, return_dict=True)
    assert {"accuracy", "f1", "loss"} <= set(metrics)
    texts = ["a gripping film", "hide new secretions"]
    np.testing.assert_allclose(
        restored.predict(texts, verbose=0),
        classifier.predict(texts, verbose=0),
        rtol=1e-5,
        atol=1e-6,
    )


def test_raw_text_saved_model_matches_keras(classifier, tmp_path):
    mrpc = get_task("mrpc")
    path = export_text_classifier(
        classifier,
        str(tmp_path / "saved_model"),
        text_features=mrpc.text_features,
        label_names=mrpc.label_names,
    )
    serve = tf.saved_model.load(path).signatures["serving_default"]
    outputs = serve(
        sentence1=tf.constant(MRPC_DEV[0]), sentence2=tf.constant(MRPC_DEV[1])
    )
    logits = classifier.predict(tuple(tf.constant(s) for s in MRPC_DEV), verbose=0)
    expected = tf.nn.softmax(logits).numpy()
    np.testing.assert_allclose(
        outputs["probabilities"].numpy(), expected, rtol=1e-5, atol=1e-6
    )
    assert outputs["label_id"].numpy().tolist() == logits.argmax(-1).tolist()
    names = [mrpc.label_names[i].encode() for i in logits.argmax(-1)]
    assert outputs["label"].numpy().tolist() == names


def test_from_preset_loads_an_exported_discriminator(vocabulary, tmp_path):
    from electra_tf.models.keras_hub_preset import save_keras_hub_preset

    encoder = make_encoder()
    preset = tmp_path / "discriminator"
    save_keras_hub_preset(encoder, Vocabulary(tuple(vocabulary)), str(preset))
    classifier = ElectraTextClassifier.from_preset(
        str(preset), num_classes=3, sequence_length=16
    )
    assert classifier.num_classes == 3
    assert classifier.preprocessor.sequence_length == 16
    assert classifier.preprocessor.tokenizer.get_vocabulary() == vocabulary
    for name in ("token_embedding", "embeddings_projection", "transformer_layer_1"):
        for loaded, original in zip(
            classifier.backbone.get_layer(name).get_weights(),
            encoder.get_layer(name).get_weights(),
        ):
            np.testing.assert_array_equal(loaded, original)
    assert classifier.predict(["the film"], verbose=0).shape == (1, 3)


def test_from_preset_sets_the_encoder_dropout_for_fine_tuning(vocabulary, tmp_path):
    # A demo export is pre-trained without dropout; fine-tuning asks for 0.1.
    from electra_tf.models.keras_hub_preset import save_keras_hub_preset

    config = make_encoder().get_config()
    encoder = ElectraEncoder(**{**config, "dropout": 0.0})
    preset = tmp_path / "discriminator"
    save_keras_hub_preset(encoder, Vocabulary(tuple(vocabulary)), str(preset))
    kept = ElectraTextClassifier.from_preset(
        str(preset), num_classes=2, sequence_length=16
    )
    assert kept.backbone.dropout == 0.0
    tuned = ElectraTextClassifier.from_preset(
        str(preset),
        num_classes=2,
        sequence_length=16,
        encoder_dropout=0.1,
        pooling="mean",
    )
    assert tuned.backbone.dropout == 0.1
    assert tuned.backbone.embeddings_dropout.rate == 0.1
    assert tuned.pooling == "mean" and kept.pooling == "cls"


def test_from_preset_rejects_a_vocabulary_of_another_size(vocabulary, tmp_path):
    from electra_tf.models.keras_hub_preset import save_keras_hub_preset

    preset = tmp_path / "discriminator"
    save_keras_hub_preset(make_encoder(), Vocabulary(tuple(vocabulary)), str(preset))
    (vocabulary_file,) = preset.glob("assets/tokenizer/*.txt")
    vocabulary_file.write_text("\n".join(vocabulary[:150]) + "\n")
    with pytest.raises(PretrainedModelError, match="150 tokens .* 200 rows"):
        ElectraTextClassifier.from_preset(str(preset), num_classes=2)


def test_from_preset_rejects_a_directory_that_is_not_a_preset(tmp_path):
    with pytest.raises(PretrainedModelError, match="nowhere .*: it does not exist"):
        ElectraTextClassifier.from_preset(str(tmp_path / "nowhere"), num_classes=2)
    (tmp_path / "empty").mkdir()
    with pytest.raises(PretrainedModelError, match="empty .*: config.json is missing"):
        ElectraTextClassifier.from_preset(str(tmp_path / "empty"), num_classes=2)


@pytest.mark.parametrize(
    "module",
    [electra_tf.models.text_classifier_preprocessor, electra_tf.models.text_classifier],
)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


class _BatchLabelMean(keras.metrics.Metric):
    """The mean label of the last batch (not a running mean)."""

    def __init__(self, name="batch_label_mean"):
        super().__init__(name=name)
        self.value = self.add_variable(shape=(), initializer="zeros", name="value")

    def update_state(self, y_true, y_pred, sample_weight=None):
        self.value.assign(keras.ops.mean(keras.ops.cast(y_true, "float32")))

    def result(self):
        return self.value


@pytest.mark.slow
def test_fit_shuffles_in_memory_inputs_every_epoch(preprocessor):
    """keras-hub batches lists itself and Keras ignores `shuffle`; ours does not."""
    keras.utils.set_random_seed(0)
    model = ElectraTextClassifier(
        backbone=make_encoder(), num_classes=2, preprocessor=preprocessor
    )
    model.compile(optimizer="sgd", metrics=[_BatchLabelMean()], jit_compile=False)
    texts = [f"the film {i}" for i in range(32)]
    labels = np.array([0] * 16 + [1] * 16)  # sorted by label, as files often are

    def batch_means(seed, **kwargs):
        means = []
        record = keras.callbacks.LambdaCallback(
            on_train_batch_end=lambda batch, logs: means.append(
                round(float(logs["batch_label_mean"]), 3)
            )
        )
        keras.utils.set_random_seed(seed)
        model.fit(
            texts,
            labels,
            batch_size=8,
            epochs=2,
            callbacks=[record],
            verbose=0,
            **kwargs,
        )
        return means[:4], means[4:]

    first, second = batch_means(1)
    assert first != [0.0, 0.0, 1.0, 1.0] and first != second
    assert sum(first) == sum(second) == 2.0  # every example once per epoch
    assert batch_means(1) == (first, second)  # seeded
    assert batch_means(2) != (first, second)
    assert batch_means(1, shuffle=False)[0] == [0.0, 0.0, 1.0, 1.0]
