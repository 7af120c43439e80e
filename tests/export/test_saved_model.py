"""An export does not log TensorFlow's "input name(s) ... will be renamed"
notices (several 300-character lines per export), and keeps every other
message. One tiny classifier (one layer, width 16), saved twice."""

import logging

import keras_hub
import pytest
import tensorflow as tf

from electra_tf.config import ModelConfig
from electra_tf.export.classifier import TextClassifierServing, export_text_classifier
from electra_tf.export.saved_model import RENAMED_INPUTS_NOTICE
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.text_classifier_preprocessor import (
    ElectraTextClassifierPreprocessor,
)

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"]


@pytest.fixture(scope="module")
def classifier():
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=TOKENS, lowercase=True)
    config = ModelConfig(
        vocabulary_size=len(TOKENS),
        num_layers=1,
        hidden_dim=16,
        embedding_dim=16,
        num_heads=2,
        intermediate_dim=32,
        max_sequence_length=16,
    )
    return ElectraTextClassifier(
        backbone=ElectraEncoder.discriminator_from_config(config),
        num_classes=2,
        preprocessor=ElectraTextClassifierPreprocessor(tokenizer, sequence_length=16),
    )


def test_an_export_does_not_log_the_renamed_input_notices(classifier, caplog, tmp_path):
    caplog.set_level(logging.INFO)
    # What TensorFlow logs when the same module is saved as it is.
    serving = TextClassifierServing(classifier, ("sentence",), ("neg", "pos"))
    tf.saved_model.save(
        serving,
        str(tmp_path / "plain"),
        signatures=serving.serve.get_concrete_function(),
    )
    assert RENAMED_INPUTS_NOTICE in caplog.text  # else this test proves nothing
    caplog.clear()
    filters = {
        name: list(logging.getLogger(name).filters) for name in ("absl", "tensorflow")
    }

    export_text_classifier(
        classifier, str(tmp_path / "export"), ("sentence",), ("neg", "pos")
    )

    assert "renamed" not in caplog.text
    assert "Assets written to" in caplog.text  # other messages are kept
    after = {name: list(logging.getLogger(name).filters) for name in filters}
    assert after == filters  # the notices are dropped only while saving
    served = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"]
    assert served(sentence=tf.constant(["a good film"]))["label"].shape == (1,)
