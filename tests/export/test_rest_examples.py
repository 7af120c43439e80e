"""docs/serving.md's REST requests for a fine-tuned classifier and tagger,
sent to exported models' signatures in this process: every documented
output is answered, with the documented shape; the tagger's words and
character offsets are the documented ones, and the example's tag ids are
its tags' under fine-tuning's tag order (sorted). The models are tiny and
untrained, so labels, tags and numbers are checked for form, not value."""

import json
import pathlib
import re

import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.data.vocabulary import Vocabulary
from electra_tf.export.classifier import export_text_classifier
from electra_tf.export.token_classifier import export_token_classifier
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.text_classifier_preprocessor import (
    ElectraTextClassifierPreprocessor,
)
from electra_tf.models.token_classifier import ElectraTokenClassifier
from electra_tf.models.token_classifier_preprocessor import (
    ElectraTokenClassifierPreprocessor,
)
from tests.helpers import tiny_serving_config

REPO = pathlib.Path(__file__).parents[2]
# The bundled Brown POS excerpt's tags, in fine-tuning's (sorted) order.
BROWN_TAGS = (".", "ADJ", "ADP", "ADV", "CONJ", "DET", "NOUN", "NUM", "PRON", "PRT")
BROWN_TAGS += ("VERB", "X")
LABELS = ("negative", "positive")


def documented_json() -> list[dict]:
    """The JSON blocks of docs/serving.md's REST section, in order: the
    classifier's request and response, the tagger's request and response."""
    text = (REPO / "docs" / "serving.md").read_text(encoding="utf-8")
    section = text.split("### A fine-tuned classifier and tagger over REST")[1]
    section = section.split("\n## ")[0]
    blocks = re.findall(r"```json\n(.*?)\n```", section, flags=re.DOTALL)
    return [json.loads(block) for block in blocks]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("rest")
    vocabulary = Vocabulary.from_file(REPO / "electra_tf/assets/demo_vocab.txt")
    config = tiny_serving_config(vocabulary.size)
    tokenizer = keras_hub.models.ElectraTokenizer(
        vocabulary=list(vocabulary.tokens), lowercase=True
    )
    classifier = ElectraTextClassifier(
        backbone=ElectraEncoder.discriminator_from_config(config),
        num_classes=2,
        preprocessor=ElectraTextClassifierPreprocessor(tokenizer, sequence_length=16),
        dropout=0.0,
    )
    export_text_classifier(classifier, str(root / "reviews"), ("review",), LABELS)
    tagger = ElectraTokenClassifier(
        ElectraEncoder.discriminator_from_config(config),
        num_classes=len(BROWN_TAGS),
        preprocessor=ElectraTokenClassifierPreprocessor(
            tokenizer, tags=list(BROWN_TAGS), sequence_length=16
        ),
        dropout=0.0,
    )
    export_token_classifier(tagger, str(root / "tagger"))
    return {
        name: tf.saved_model.load(str(root / name)) for name in ("reviews", "tagger")
    }


def _answer(model, request: dict) -> dict:
    """What TF Serving's REST API answers to a columnar `inputs` request."""
    signature = model.signatures[request["signature_name"]]
    inputs = {name: tf.constant(value) for name, value in request["inputs"].items()}
    outputs = signature(**inputs)
    answered = {}
    for name, tensor in outputs.items():
        value = tensor.numpy()
        if value.dtype == object:
            value = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(value)
        answered[name] = value
    return answered


def test_the_documents_hold_two_requests_and_two_responses():
    blocks = documented_json()
    assert [list(block) for block in blocks] == [
        ["signature_name", "inputs"],
        ["outputs"],
        ["signature_name", "inputs"],
        ["outputs"],
    ]


def test_the_classifier_request_gets_the_documented_response(served):
    request, response, _, _ = documented_json()
    answered = _answer(served["reviews"], request)
    documented = response["outputs"]
    assert set(answered) == set(documented)
    for name, value in documented.items():
        assert answered[name].shape == np.shape(value), name
    assert set(answered["label"]) <= set(LABELS)
    assert [LABELS[i] for i in documented["label_id"]] == documented["label"]
    np.testing.assert_allclose(answered["probabilities"].sum(axis=-1), 1.0, rtol=1e-5)


def test_the_tagger_request_gets_the_documented_words_and_offsets(served):
    _, _, request, response = documented_json()
    answered = _answer(served["tagger"], request)
    documented = response["outputs"]
    # Everything but `probabilities` ([batch, words, tags]) is shown.
    assert set(answered) == set(documented) | {"probabilities"}
    words = len(documented["words"][0])
    assert answered["probabilities"].shape == (1, words, len(BROWN_TAGS))
    for name in ("words", "start", "end", "word_count"):
        assert answered[name].tolist() == documented[name], name
    for name in ("tags", "tag_ids"):
        assert answered[name].shape == np.shape(documented[name]), name
    assert set(answered["tags"][0]) <= set(BROWN_TAGS)
    # The example's tags and ids agree under the sorted tag order.
    assert [BROWN_TAGS[i] for i in documented["tag_ids"][0]] == documented["tags"][0]
    text = request["inputs"]["text"][0]
    spans = zip(documented["start"][0], documented["end"][0])
    assert [text[start:end] for start, end in spans] == documented["words"][0]
