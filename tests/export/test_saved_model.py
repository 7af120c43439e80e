"""An export does not log TensorFlow's "input name(s) ... will be renamed"
notices (several 300-character lines per export), and keeps every other
message. One tiny classifier (one layer, width 16)."""

import logging

import keras_hub
import pytest
import tensorflow as tf

from electra_tf.config import ModelConfig
from electra_tf.export.classifier import export_text_classifier
from electra_tf.export.saved_model import RENAMED_INPUTS_NOTICE, save_saved_model
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


def test_save_drops_only_the_rename_notice_and_only_while_saving(caplog, monkeypatch):
    # TensorFlow's own notice depends on what earlier saves in the process
    # named (a test run's order decides): a stand-in save logs it for sure.
    notice = f"Function `f` contains input name(s) x {RENAMED_INPUTS_NOTICE} y"

    def save(module, export_dir, signatures):
        for name in ("absl", "tensorflow"):
            logging.getLogger(name).info(notice)
            logging.getLogger(name).info("Assets written to %s", export_dir)

    for name in ("absl", "tensorflow"):  # whatever earlier tests set them to
        caplog.set_level(logging.INFO, logger=name)
    monkeypatch.setattr(tf.saved_model, "save", save)
    assert save_saved_model(tf.Module(), "out", signatures=None) == "out"
    assert RENAMED_INPUTS_NOTICE not in caplog.text
    assert caplog.text.count("Assets written to out") == 2  # the rest is kept
    logging.getLogger("tensorflow").info(notice)  # after the save: shown
    assert RENAMED_INPUTS_NOTICE in caplog.text


def test_an_export_does_not_log_the_renamed_input_notices(classifier, caplog, tmp_path):
    """TensorFlow's `Function ... contains input name(s) wp_model, resource with
    unsupported characters which will be renamed ...` lines (several of 300
    characters per export, before) are not logged by any export; TensorFlow's other
    messages are kept."""
    caplog.set_level(logging.INFO)
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
