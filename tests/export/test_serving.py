"""Serving exports load in a fresh process with only TensorFlow and TF Text,
give the Keras models' outputs, and list their signatures in saved_model_cli.

One module-scoped set of exports (a pre-training export with its TF-Hub
style encoder and preprocessing and its sentence scorer, a sentence-pair
classifier and a regression classifier, all on the bundled BERT vocabulary)
is loaded once in one subprocess whose cwd is outside the repository, with
no PYTHONPATH and with `electra_tf`, `keras_hub` and `keras_nlp` made
unimportable.
"""

import json
import math
import os
import pathlib
import subprocess
import sys

import keras
import keras_hub
import numpy as np
import pytest

from electra_tf.config import ModelConfig, PretrainingConfig
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.export.classifier import export_text_classifier
from electra_tf.export.pretrained import DiscriminatorServing, export_pretrained
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.text_classifier_preprocessor import (
    ElectraTextClassifierPreprocessor,
)
from electra_tf.pretraining.pretrainer import ElectraPretrainer
from electra_tf.scoring.sentence_scorer import SentenceScorer
from tests.helpers import (
    SUBPROCESS_TIMEOUT,
    make_pretrainer,
    random_batch,
    randomize_weights,
)

REPO = pathlib.Path(__file__).parents[2]
SEQUENCE_LENGTH = 32
BIN = pathlib.Path(sys.executable).parent


def _sentences():
    rows = (REPO / "electra_tf/assets/tasks/rt_polarity/dev.tsv").read_text()
    real = [line.split("\t")[0] for line in rows.splitlines()[1:6]]
    return real + [
        "",
        " ".join(real) * 40,  # far longer than the sequence: truncated
        "Ce film est très réussi, même si la fin déçoit un peu.",
        "这部电影非常好看 😀",
        "Über-naïve Café-Szene, ¿verdad? — 映画",
    ]


SENTENCES = _sentences()
SECOND = ["It is.", "no", "a very long second segment " * 30, "ok", "", "Öl", "x"] * 2
SECOND = SECOND[: len(SENTENCES)]

FRESH_PROCESS = r"""
import importlib.abc, json, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("electra_tf", "keras_hub", "keras_nlp"):
            raise ImportError(f"{name} must not be needed to serve")

sys.meta_path.insert(0, Refuse())
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the WordPiece ops)

paths, texts, pairs, out = json.loads(sys.argv[1])
texts, pairs = tf.constant(texts), tf.constant(pairs)
results = {}

discriminator = tf.saved_model.load(paths["saved_model"])
single = discriminator.signatures["detect_replaced_tokens_text"](text=texts)
pair = discriminator.signatures["detect_replaced_tokens_text_pair"](
    text=texts, text_pair=pairs)
by_ids = discriminator.signatures["detect_replaced_tokens_ids"](
    token_ids=pair["token_ids"], segment_ids=pair["segment_ids"],
    padding_mask=pair["padding_mask"])
for name, outputs in (("single", single), ("pair", pair), ("ids", by_ids)):
    for key, value in outputs.items():
        results[f"discriminator_{name}_{key}"] = value.numpy()
broken = discriminator.signatures["detect_replaced_tokens_text"](
    text=tf.constant([b"\xff\xfe broken \xc3\x28 bytes", b"\x80"]))
results["discriminator_broken"] = broken["replaced_probability"].numpy()

scorer = tf.saved_model.load(paths["sentence_scorer"])
scored = scorer.signatures["score_sentences"](text=texts)
results["scorer_score"] = scored["score"].numpy()
results["scorer_token_count"] = scored["token_count"].numpy()

classifier = tf.saved_model.load(paths["pair_classifier"])
served = classifier.signatures["serving_default"](premise=texts, hypothesis=pairs)
results["pair_probabilities"] = served["probabilities"].numpy()
results["pair_label"] = served["label"].numpy().astype("U")

regression = tf.saved_model.load(paths["regression"])
results["regression_score"] = regression.signatures["predict_text"](
    sentence=texts)["score"].numpy()

preprocessor = tf.saved_model.load(paths["hub_preprocessing"])
encoder = tf.saved_model.load(paths["hub_encoder"])
inputs = preprocessor(texts)
outputs = encoder(inputs)
results["hub_input_word_ids"] = inputs["input_word_ids"].numpy()
results["hub_pooled_output"] = outputs["pooled_output"].numpy()
results["hub_last_block"] = outputs["encoder_outputs"][-1].numpy()
packed = preprocessor.bert_pack_inputs(
    [preprocessor.tokenize(texts), preprocessor.tokenize(pairs)],
    seq_length=tf.constant(20))
results["hub_pair_input_word_ids"] = packed["input_word_ids"].numpy()
results["hub_pair_sequence_output"] = encoder(packed)["sequence_output"].numpy()

leaked = [m for m in ("electra_tf", "keras_hub", "keras_nlp") if m in sys.modules]
assert not leaked, leaked
np.savez(out, **results)
print("served")
"""


@pytest.fixture(scope="module")
def vocabulary():
    return Vocabulary.from_file(REPO / "electra_tf/assets/vocab.txt")


def _tiny_encoder_config(vocabulary):
    return ModelConfig(
        vocabulary_size=vocabulary.size,
        num_layers=1,
        hidden_dim=32,
        embedding_dim=16,
        num_heads=2,
        max_sequence_length=64,
        generator_hidden_size=0.5,
        dropout=0.0,
    )


@pytest.fixture(scope="module")
def models(vocabulary, tmp_path_factory):
    root = tmp_path_factory.mktemp("serving")
    keras.utils.set_random_seed(0)
    pretrainer = ElectraPretrainer(
        _tiny_encoder_config(vocabulary),
        PretrainingConfig(max_seq_length=SEQUENCE_LENGTH),
        pad_token_id=vocabulary.pad_id,
        cls_token_id=vocabulary.cls_id,
        sep_token_id=vocabulary.sep_id,
        mask_token_id=vocabulary.mask_id,
    )
    randomize_weights(pretrainer, seed=2)
    paths = export_pretrained(pretrainer, vocabulary, root / "export")
    tokenizer = keras_hub.models.ElectraTokenizer(
        vocabulary=list(vocabulary.tokens), lowercase=True
    )
    classifiers = {}
    for name, num_classes, features, labels in (
        ("pair_classifier", 3, ("premise", "hypothesis"), ("yes", "maybe", "no")),
        ("regression", 1, ("sentence",), ()),
    ):
        classifier = ElectraTextClassifier(
            backbone=ElectraEncoder.discriminator_from_config(
                _tiny_encoder_config(vocabulary)
            ),
            num_classes=num_classes,
            preprocessor=ElectraTextClassifierPreprocessor(
                tokenizer, sequence_length=SEQUENCE_LENGTH
            ),
            dropout=0.0,
        )
        randomize_weights(classifier, seed=num_classes)
        paths[name] = export_text_classifier(
            classifier,
            str(root / name),
            features,
            label_names=labels,
            label_scale=5.0 if num_classes == 1 else 1.0,
        )
        classifiers[name] = classifier
    return pretrainer, classifiers, tokenizer, paths


@pytest.fixture(scope="module")
def served(models, tmp_path_factory):
    _, _, _, paths = models
    cwd = tmp_path_factory.mktemp("elsewhere")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    arguments = json.dumps(
        [
            {k: str(v) for k, v in paths.items()},
            SENTENCES,
            SECOND,
            str(cwd / "served.npz"),
        ]
    )
    result = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, arguments],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        cwd=cwd,
        env=env,
    )
    assert result.returncode == 0 and "served" in result.stdout, result.stderr[-3000:]
    with np.load(cwd / "served.npz", allow_pickle=False) as data:
        return dict(data)


def _packed(tokenizer, *segments, sequence_length=SEQUENCE_LENGTH):
    preprocessor = ElectraTextClassifierPreprocessor(
        tokenizer, sequence_length=sequence_length
    )
    x = preprocessor(x=segments[0] if len(segments) == 1 else segments)
    return {k: np.asarray(v).astype("int32") for k, v in x.items()}


def test_discriminator_text_signatures_match_keras(models, served):
    pretrainer, _, tokenizer, _ = models
    for name, segments in (("single", (SENTENCES,)), ("pair", (SENTENCES, SECOND))):
        x = _packed(tokenizer, *segments)
        np.testing.assert_array_equal(
            served[f"discriminator_{name}_token_ids"], x["token_ids"]
        )
        np.testing.assert_array_equal(
            served[f"discriminator_{name}_segment_ids"], x["segment_ids"]
        )
        expected = keras.ops.sigmoid(pretrainer.discriminator(x))
        np.testing.assert_allclose(
            served[f"discriminator_{name}_replaced_probability"], expected, atol=1e-5
        )
    # The pair really has two segments, and the long text fills the sequence.
    assert served["discriminator_pair_segment_ids"].max() == 1
    assert (served["discriminator_single_padding_mask"][6] == 1).all()
    np.testing.assert_allclose(
        served["discriminator_ids_replaced_probability"],
        served["discriminator_pair_replaced_probability"],
        atol=1e-6,
    )
    assert np.isfinite(served["discriminator_broken"]).all()
    # Outputs vary with the input: the comparison above is not vacuous.
    assert np.ptp(served["discriminator_single_replaced_probability"]) > 0.1


def test_sentence_scorer_serves_the_generators_pseudo_log_likelihood(models, served):
    pretrainer, _, tokenizer, _ = models
    scorer = SentenceScorer(
        pretrainer.generator, tokenizer, SEQUENCE_LENGTH, method="mlm"
    )
    np.testing.assert_allclose(
        served["scorer_score"], scorer.score(SENTENCES), atol=1e-4
    )
    x = _packed(tokenizer, SENTENCES)
    np.testing.assert_array_equal(
        served["scorer_token_count"], x["padding_mask"].sum(1) - 2
    )
    assert np.ptp(served["scorer_score"]) > 1.0


def test_electric_with_uniform_noise_serves_its_constant_correction(
    tiny_configs, vocabulary
):
    """No cloze model ran: q is uniform, so the correction is -log V + log odds."""
    model_config, pretraining_config = tiny_configs
    electric = make_pretrainer(
        model_config.override(initializer_range=0.2),
        pretraining_config.override(objective="electric", uniform_generator=True),
    )
    serving = DiscriminatorServing(
        electric.discriminator,
        vocabulary.tokenizer(),
        SEQUENCE_LENGTH,
        electric_mask_prob=0.2,
    )
    batch = random_batch(batch_size=2, length=16)
    served = serving.detect_replaced_tokens_ids(batch)["replaced_probability"]
    vocabulary_size = model_config.vocabulary_size
    logits = electric.discriminator(batch).numpy().astype("float64")
    expected = 1 / (1 + np.exp(-(logits - math.log(vocabulary_size) + math.log(0.25))))
    np.testing.assert_allclose(served, expected, atol=1e-5)


def test_classifier_text_signatures_match_keras(models, served):
    _, classifiers, _, _ = models
    expected = keras.ops.softmax(
        classifiers["pair_classifier"].predict(
            (np.array(SENTENCES), np.array(SECOND)), verbose=0
        )
    )
    probabilities = served["pair_probabilities"]
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)
    assert probabilities.max() > 0.6  # not all near 1/3
    assert set(served["pair_label"]) <= {"yes", "maybe", "no"}
    score = classifiers["regression"].predict(np.array(SENTENCES), verbose=0)[:, 0]
    np.testing.assert_allclose(served["regression_score"], 5.0 * score, atol=1e-4)
    assert np.ptp(served["regression_score"]) > 0.1


def test_hub_encoder_and_preprocessing_compose_like_keras(models, served):
    pretrainer, _, tokenizer, _ = models
    x = _packed(tokenizer, SENTENCES)
    np.testing.assert_array_equal(served["hub_input_word_ids"], x["token_ids"])
    outputs = pretrainer.discriminator_encoder(x)
    np.testing.assert_allclose(
        served["hub_pooled_output"], outputs["pooled_output"], atol=1e-5
    )
    np.testing.assert_allclose(
        served["hub_last_block"], outputs["sequence_output"], atol=1e-5
    )
    x = _packed(tokenizer, SENTENCES, SECOND, sequence_length=20)
    np.testing.assert_array_equal(served["hub_pair_input_word_ids"], x["token_ids"])
    np.testing.assert_allclose(
        served["hub_pair_sequence_output"],
        pretrainer.discriminator_encoder(x)["sequence_output"],
        atol=1e-5,
    )


def _signatures(text):
    """`{signature: {"inputs"/"outputs": {name: (dtype, shape)}}}` from
    `saved_model_cli show --all`."""
    signatures, current, side, tensor = {}, None, None, None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("signature_def["):
            current = line.split("'")[1]
            signatures[current] = {"inputs": {}, "outputs": {}}
        elif line.startswith(("inputs[", "outputs[")) and current:
            side = line.split("[")[0]
            tensor = line.split("'")[1]
        elif line.startswith("dtype:") and tensor:
            dtype = line.split()[1]
        elif line.startswith("shape:") and tensor:
            signatures[current][side][tensor] = (dtype, line.split(":", 1)[1].strip())
            tensor = None
    return signatures


def test_saved_model_cli_lists_signatures_shapes_and_dtypes(models):
    _, _, _, paths = models
    names = (
        "saved_model",
        "sentence_scorer",
        "pair_classifier",
        "hub_encoder",
        "hub_preprocessing",
    )
    processes = {
        name: subprocess.Popen(
            [str(BIN / "saved_model_cli"), "show", "--dir", str(paths[name]), "--all"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for name in names
    }
    listed = {
        name: _signatures(p.communicate(timeout=SUBPROCESS_TIMEOUT)[0])
        for name, p in processes.items()
    }

    discriminator = listed["saved_model"]
    assert {
        "serving_default",
        "detect_replaced_tokens_ids",
        "detect_replaced_tokens_text",
        "detect_replaced_tokens_text_pair",
    } <= set(discriminator)
    pair = discriminator["detect_replaced_tokens_text_pair"]
    assert pair["inputs"] == {
        "text": ("DT_STRING", "(-1)"),
        "text_pair": ("DT_STRING", "(-1)"),
    }
    assert pair["outputs"]["replaced_probability"] == (
        "DT_FLOAT",
        f"(-1, {SEQUENCE_LENGTH})",
    )
    assert pair["outputs"]["sequence_output"] == (
        "DT_FLOAT",
        f"(-1, {SEQUENCE_LENGTH}, 32)",
    )
    assert pair["outputs"]["token_ids"] == ("DT_INT32", f"(-1, {SEQUENCE_LENGTH})")
    ids = discriminator["detect_replaced_tokens_ids"]
    assert ids["inputs"]["padding_mask"] == ("DT_INT32", "(-1, -1)")
    assert ids["outputs"]["pooled_output"] == ("DT_FLOAT", "(-1, 32)")

    scorer = listed["sentence_scorer"]["score_sentences"]
    assert scorer["inputs"] == {"text": ("DT_STRING", "(-1)")}
    assert scorer["outputs"]["score"] == ("DT_FLOAT", "(-1)")
    assert scorer["outputs"]["token_scores"] == ("DT_FLOAT", "(-1, -1)")

    classifier = listed["pair_classifier"]
    assert classifier["serving_default"]["inputs"] == {
        "premise": ("DT_STRING", "(-1)"),
        "hypothesis": ("DT_STRING", "(-1)"),
    }
    assert classifier["predict_text"]["outputs"]["probabilities"] == (
        "DT_FLOAT",
        "(-1, 3)",
    )
    assert classifier["predict_text"]["outputs"]["label"] == ("DT_STRING", "(-1)")
    assert classifier["predict_token_ids"]["inputs"]["token_ids"] == (
        "DT_INT32",
        "(-1, -1)",
    )

    encoder = listed["hub_encoder"]["serving_default"]
    assert set(encoder["inputs"]) == {"input_word_ids", "input_mask", "input_type_ids"}
    assert encoder["outputs"]["sequence_output"] == ("DT_FLOAT", "(-1, -1, 32)")
    assert encoder["outputs"]["encoder_outputs_0"] == ("DT_FLOAT", "(-1, -1, 32)")
    assert encoder["outputs"]["default"] == ("DT_FLOAT", "(-1, 32)")
    preprocessing = listed["hub_preprocessing"]
    assert preprocessing["serving_default"]["outputs"]["input_word_ids"] == (
        "DT_INT32",
        f"(-1, {SEQUENCE_LENGTH})",
    )
    assert set(preprocessing["preprocess_text_pair"]["inputs"]) == {"text", "text_pair"}
