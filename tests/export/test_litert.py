"""LiteRT exports (`electra_tf.export.litert`), run with `ai_edge_litert`'s
interpreter, against the Keras models they come from.

Tiny `tiny`-preset encoders (2 layers, H=64) on the bundled 30,522-token
vocabulary, so the embedding and dense kernels are large enough for the
converter to quantize them. float32: outputs within 1e-4 of Keras', with
weights of a visible scale (`randomize_weights`). dynamic_int8: with the
initialisation's scale (0.02, the scale of fine-tuned weights; at
`randomize_weights`' 0.3 the int8 error grows through the layers to a third
of a probability), probabilities within INT8_BOUND, the same label for every
classifier fixture, and the same tag at every token whose best two float32
tags are more than 2 * INT8_BOUND apart (a near tie may flip).
"""

import pathlib

import keras
import keras_hub
import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter

from electra_tf.cli.export_litert import main as export_litert_main
from electra_tf.export.litert import (
    SIGNATURE,
    LiteRTExportError,
    calibration_batches,
    export_litert,
    litert_model,
    read_calibration_file,
)
from electra_tf.models.discriminator import ElectraDiscriminator
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.text_classifier_preprocessor import (
    ElectraTextClassifierPreprocessor,
)
from electra_tf.models.token_classifier import ElectraTokenClassifier
from electra_tf.presets import get_preset
from tests.helpers import random_batch, randomize_weights

REPO = pathlib.Path(__file__).parents[2]
VOCAB = REPO / "electra_tf" / "assets" / "vocab.txt"
SEQUENCE_LENGTH = 32
VOCABULARY_SIZE = 30522
# Largest change of a class or tag probability from float32 to dynamic_int8
# on these fixtures (measured: 0.0002 classifier, 0.0005 tagger).
INT8_BOUND = 0.005


def make_encoder(seed):
    keras.utils.set_random_seed(seed)
    config = get_preset("tiny").model.override(
        vocabulary_size=VOCABULARY_SIZE, max_sequence_length=SEQUENCE_LENGTH
    )
    return ElectraEncoder.discriminator_from_config(config)


def batch():
    return random_batch(batch_size=6, length=20, seed=3, vocabulary_size=2000)


def run(flatbuffer, inputs):
    runner = Interpreter(model_content=flatbuffer).get_signature_runner(SIGNATURE)
    return runner(**inputs)


def softmax(x):
    x = np.exp(x - x.max(-1, keepdims=True))
    return x / x.sum(-1, keepdims=True)


@pytest.fixture(scope="module")
def classifier():
    """At the initialisation's scale (see the module docstring)."""
    return ElectraTextClassifier(make_encoder(0), num_classes=3, dropout=0.0)


def randomized(model, seed):
    randomize_weights(model, seed=seed)
    return model


def test_classifier_float32_and_int8(classifier):
    x = batch()
    model = ElectraTextClassifier(
        make_encoder(4), num_classes=3, dropout=0.0, pooling="mean"
    )
    model = randomized(model, 4)
    float32 = run(litert_model(model, "float32"), x)["logits"]
    expected = np.asarray(model(x, training=False))
    np.testing.assert_allclose(float32, expected, atol=1e-4, rtol=0)
    expected = np.asarray(classifier(x, training=False))
    flatbuffer = litert_model(classifier, "dynamic_int8")
    int8 = run(flatbuffer, x)["logits"]
    assert not np.allclose(int8, expected, atol=1e-6)  # quantized, not a copy
    np.testing.assert_array_equal(int8.argmax(-1), expected.argmax(-1))
    assert np.abs(softmax(int8) - softmax(expected)).max() <= INT8_BOUND
    # Another batch size and length: the interpreter resizes its inputs.
    x = random_batch(batch_size=1, length=9, seed=5, vocabulary_size=2000)
    np.testing.assert_allclose(
        run(flatbuffer, x)["logits"],
        np.asarray(classifier(x, training=False)),
        atol=1e-2,
    )


def test_tagger_float32_and_int8():
    x = batch()
    real = x["padding_mask"].astype(bool)
    model = randomized(
        ElectraTokenClassifier(make_encoder(1), num_classes=5, dropout=0.0), 1
    )
    expected = np.asarray(model(x, training=False))
    float32 = run(litert_model(model, "float32"), x)["logits"]
    np.testing.assert_allclose(float32[real], expected[real], atol=1e-4, rtol=0)
    tagger = ElectraTokenClassifier(make_encoder(1), num_classes=5, dropout=0.0)
    expected = softmax(np.asarray(tagger(x, training=False))[real])
    int8 = softmax(run(litert_model(tagger, "dynamic_int8"), x)["logits"][real])
    assert np.abs(int8 - expected).max() <= INT8_BOUND
    # The same tag wherever float32's best two tags are not a near tie.
    top2 = np.sort(expected, -1)[:, -2:]
    clear = top2[:, 1] - top2[:, 0] > 2 * INT8_BOUND
    assert clear.mean() > 0.5
    np.testing.assert_array_equal(int8[clear].argmax(-1), expected[clear].argmax(-1))


def test_full_int8_needs_calibration_and_keeps_labels(classifier):
    x = batch()
    with pytest.raises(ValueError, match="calibration"):
        litert_model(classifier, "full_int8")
    calibration = [
        random_batch(batch_size=1, length=20, seed=seed, vocabulary_size=2000)
        for seed in range(8)
    ]
    flatbuffer = litert_model(classifier, "full_int8", calibration=calibration)
    expected = np.asarray(classifier(x, training=False))
    np.testing.assert_array_equal(
        run(flatbuffer, x)["logits"].argmax(-1), expected.argmax(-1)
    )


# About a minute on a loaded 2-core machine (two conversions and a save).
@pytest.mark.slow
def test_question_answerer_and_discriminator_float32():
    x = batch()
    answerer = randomized(
        ElectraQuestionAnswerer(make_encoder(2), head_hidden_dim=16), 2
    )
    expected = answerer({**x, "start_positions": None}, training=False)
    outputs = run(litert_model(answerer, "float32"), x)
    np.testing.assert_array_equal(outputs["start_index"], expected["start_index"])
    for name in ("start_logits", "end_logits", "no_answer_logit"):
        # Masked positions hold -10000 + logit: compare relative there.
        np.testing.assert_allclose(
            outputs[name], np.asarray(expected[name]), atol=1e-4, rtol=1e-6
        )
    discriminator = randomized(ElectraDiscriminator(make_encoder(3)), 3)
    real = x["padding_mask"].astype(bool)
    expected = np.asarray(discriminator(x, training=False))
    logits = run(litert_model(discriminator, "float32"), x)["logits"]
    np.testing.assert_allclose(logits[real], expected[real], atol=1e-4, rtol=0)


# The serving snippet of the docs, as written there (it runs in `litert_dir`).
SNIPPET = """
import json

import numpy as np
import keras_hub
from ai_edge_litert.interpreter import Interpreter

with open("litert/tokenizer_config.json") as f:
    lowercase = json.load(f)["lowercase"]
tokenizer = keras_hub.models.ElectraTokenizer(
    vocabulary="litert/vocab.txt", lowercase=lowercase
)
model = Interpreter(model_path="litert/model_dynamic_int8.tflite")
predict = model.get_signature_runner("predict_token_ids")

sentences = ["A gripping, beautifully acted film", "Dull and far too long"]
max_length = 128  # the --max-seq-length the model was fine-tuned with
rows = [
    [tokenizer.cls_token_id] + ids[: max_length - 2] + [tokenizer.sep_token_id]
    for ids in tokenizer(sentences)
]
token_ids = np.full((len(rows), max(map(len, rows))), tokenizer.pad_token_id)
for i, row in enumerate(rows):
    token_ids[i, : len(row)] = row
token_ids = token_ids.astype(np.int32)
logits = predict(
    token_ids=token_ids,
    segment_ids=np.zeros_like(token_ids),
    padding_mask=(token_ids != tokenizer.pad_token_id).astype(np.int32),
)["logits"]
print(logits.argmax(-1))  # the label ids
"""


# About a minute on a loaded 2-core machine (two conversions and a save).
@pytest.mark.slow
def test_cli_export_and_serving_snippet(tmp_path, monkeypatch, classifier, capsys):
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=str(VOCAB), lowercase=True)
    preprocessor = ElectraTextClassifierPreprocessor(
        tokenizer, sequence_length=SEQUENCE_LENGTH
    )
    model = ElectraTextClassifier(
        classifier.backbone, num_classes=3, preprocessor=preprocessor, dropout=0.0
    )
    model.output_dense.set_weights(classifier.output_dense.get_weights())
    model.save(tmp_path / "classifier.keras")
    sentences_file = tmp_path / "sentences.txt"
    sentences_file.write_text("a fine film\nboring\n", encoding="utf-8")
    assert (
        export_litert_main(
            [
                str(tmp_path / "classifier.keras"),
                "--output-dir",
                str(tmp_path / "litert"),
                "--quantization",
                "dynamic_int8",
            ]
        )
        == 0
    )
    assert (tmp_path / "litert" / "vocab.txt").read_text().splitlines()[101] == "[CLS]"
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    scope = {}
    exec(SNIPPET, scope)
    expected = model.predict(
        ["A gripping, beautifully acted film", "Dull and far too long"], verbose=0
    )
    np.testing.assert_array_equal(
        scope["logits"].argmax(-1), np.asarray(expected).argmax(-1)
    )
    np.testing.assert_allclose(
        softmax(scope["logits"]), softmax(np.asarray(expected)), atol=INT8_BOUND
    )


def test_cli_refuses_full_int8_without_calibration(tmp_path, classifier, capsys):
    classifier.save(tmp_path / "bare.keras")
    code = export_litert_main(
        [
            str(tmp_path / "bare.keras"),
            "--output-dir",
            str(tmp_path / "out"),
            "--quantization",
            "full_int8",
            "--vocab",
            str(VOCAB),
        ]
    )
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "error: full_int8 needs --calibration-file"
    )
    code = export_litert_main(
        [str(tmp_path / "missing.keras"), "--output-dir", str(tmp_path / "out")]
    )
    assert code == 2
    assert "missing.keras: no such model file" in capsys.readouterr().err


def test_full_int8_of_a_question_answerer_is_refused_before_anything_is_written(
    tmp_path,
):
    """On main it converted, and its span logits were off by ~500 (the -1000
    mask outside the context stretches the int8 range); refused with one
    line, before a file of any quantization is written."""
    answerer = ElectraQuestionAnswerer(make_encoder(2), head_hidden_dim=16)
    calibration = [random_batch(batch_size=1, length=20, seed=0, vocabulary_size=2000)]
    with pytest.raises(LiteRTExportError) as error:
        litert_model(answerer, "full_int8", calibration=calibration)
    assert str(error.value).startswith(
        "full_int8 does not fit a question answerer: its span logits carry a "
        "-1000 mask outside the context"
    )
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=str(VOCAB))
    with pytest.raises(LiteRTExportError, match="full_int8 does not fit"):
        export_litert(
            answerer,
            str(tmp_path / "out"),
            tokenizer,
            ["float32", "full_int8"],
            calibration=calibration,
        )
    assert not (tmp_path / "out").exists()


def test_a_calibration_file_of_pairs_feeds_a_pair_preprocessor(tmp_path):
    """On main every line was one text, which a model of text pairs (premise
    and hypothesis) cannot take as its inputs; two tab-separated texts a line
    are the pair, packed into both segments."""
    path = tmp_path / "pairs.txt"
    path.write_text("a man sleeps\tsomeone rests\nit rains\tthe sun shines\n")
    pairs = read_calibration_file(str(path))
    assert pairs == (["a man sleeps", "it rains"], ["someone rests", "the sun shines"])
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=str(VOCAB))
    preprocessor = ElectraTextClassifierPreprocessor(
        tokenizer, sequence_length=SEQUENCE_LENGTH
    )
    batches = calibration_batches(preprocessor, pairs)
    assert len(batches) == 2
    assert batches[0]["segment_ids"].max() == 1  # the second text, segment B
    (tmp_path / "mixed.txt").write_text("one\ttwo\nthree\n")
    with pytest.raises(LiteRTExportError) as error:
        read_calibration_file(str(tmp_path / "mixed.txt"))
    assert str(error.value).startswith(
        f"{tmp_path / 'mixed.txt'}, line 2: 1 tab-separated texts; a calibration "
    )
