"""ElectraQuestionAnswerer, its preprocessor and its raw-text SavedModel.

One tiny answerer (1 layer, H=32, the bundled BERT vocabulary, windows of
48 tokens with a stride of 16, so the fixture's paragraphs span several
overlapping windows) is built per module, trained with `fit()` on the
SQuAD-layout fixture, exported, and served in a fresh process that cannot
import electra_tf.
"""

import json
import os
import pathlib
import subprocess
import sys

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.data.vocabulary import Vocabulary
from electra_tf.export.question_answerer import export_question_answerer
from electra_tf.finetuning.squad_data import read_squad_json, squad_split_path
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.keras_hub_preset import PretrainedModelError
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.question_answerer_preprocessor import (
    ElectraQuestionAnswererPreprocessor,
    QuestionAnsweringInputError,
)
from tests.helpers import SUBPROCESS_TIMEOUT

REPO = pathlib.Path(__file__).parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "squad"
SEQUENCE_LENGTH = 48
MODEL_LENGTH = 64
ODD_TEXTS = [
    "Café naïve, über-cool — 映画 time 😀!",
    "  leading and trailing spaces  ",
    "",
    "Über-naïve Café-Szene, ¿verdad?",
]


@pytest.fixture(scope="module")
def tokenizer():
    vocabulary = Vocabulary.from_file(REPO / "electra_tf/assets/vocab.txt")
    return keras_hub.models.ElectraTokenizer(
        vocabulary=list(vocabulary.tokens), lowercase=True
    )


@pytest.fixture(scope="module")
def preprocessor(tokenizer):
    return ElectraQuestionAnswererPreprocessor(
        tokenizer, sequence_length=SEQUENCE_LENGTH, max_query_length=16, doc_stride=16
    )


@pytest.fixture(scope="module")
def train():
    return read_squad_json(squad_split_path(str(FIXTURE), 2, "train"), 2)


@pytest.fixture(scope="module")
def dev():
    return read_squad_json(squad_split_path(str(FIXTURE), 2, "dev"), 2)


def _xy(examples):
    x = ([e.question for e in examples], [e.context for e in examples])
    y = {
        "answer_start": np.array(
            [e.answers[0][1] if e.answers else -1 for e in examples]
        ),
        "answer_text": np.array(
            [e.answers[0][0] if e.answers else "" for e in examples]
        ),
    }
    return x, y


def test_tokens_match_the_tokenizer_and_offsets_point_at_words(
    preprocessor, tokenizer, train
):
    texts = sorted({e.context for e in train}) + ODD_TEXTS
    ids, _, _, char_start, char_end = preprocessor.tokenize_with_offsets(texts)
    expected = tokenizer(tf.constant(texts))
    for row, text in enumerate(texts):
        assert ids[row].numpy().tolist() == list(expected[row]), text
        for start, end in zip(char_start[row].numpy(), char_end[row].numpy()):
            word = text[start:end]
            assert word and word == word.strip(), (text, start, end)
    # By hand: "Café naïve, über-cool — 映画 time 😀!" (code points, not bytes).
    starts = char_start[len(texts) - 4].numpy().tolist()
    ends = char_end[len(texts) - 4].numpy().tolist()
    words = sorted({(s, e) for s, e in zip(starts, ends)})
    assert [ODD_TEXTS[0][s:e] for s, e in words] == [
        "Café",
        "naïve",
        ",",
        "über",
        "-",
        "cool",
        "—",
        "映",
        "画",
        "time",
        "😀",
        "!",
    ]


def test_windows_overlap_and_each_token_starts_in_one_window(preprocessor, train):
    contexts = sorted({e.context for e in train})
    w = preprocessor.windows(["what is it?"] * len(contexts), contexts)
    example_index = w["example_index"].numpy()
    context_token = w["context_token"].numpy()
    allowed = w["start_allowed"].numpy()
    doc_lengths = preprocessor.tokenize_with_offsets(contexts)[0].row_lengths().numpy()
    assert np.bincount(example_index).min() >= 2  # several windows per context
    room = SEQUENCE_LENGTH - 4 - 3  # "what is it ?" and [CLS] [SEP] [SEP]
    for ex, n in enumerate(doc_lengths):
        rows = np.flatnonzero(example_index == ex)
        # Windows start every 16 tokens and the last reaches the end.
        firsts = [context_token[r][context_token[r] >= 0][0] for r in rows]
        assert firsts == list(range(0, 16 * len(rows), 16))
        assert context_token[rows[-1]].max() == n - 1
        assert (context_token[rows[:-1]] >= 0).sum(axis=1).tolist() == [room] * (
            len(rows) - 1
        )
        # Every context token may start an answer in exactly one window, the
        # one where it is most central.
        starts = np.concatenate([context_token[r][allowed[r]] for r in rows])
        assert sorted(starts.tolist()) == list(range(n))
    token_ids = w["token_ids"].numpy()
    segment = w["segment_ids"].numpy()
    assert (segment[context_token >= 0] == 1).all()
    assert (token_ids[:, 0] == 101).all()  # [CLS] of the BERT vocabulary


def test_labels_point_at_the_answer_text(preprocessor, train):
    (questions, contexts), y = _xy(train)
    x, labels = preprocessor((tf.constant(questions), tf.constant(contexts)), y)
    w = preprocessor.windows(questions, contexts, y["answer_start"], y["answer_text"])
    starts = labels["start_logits"].numpy()
    ends = labels["end_logits"].numpy()[:, 0]
    np.testing.assert_array_equal(x["start_positions"], starts)
    impossible = labels["no_answer_logit"].numpy()
    char_start, char_end = w["char_start"].numpy(), w["char_end"].numpy()
    example_index = w["example_index"].numpy()
    for ex, example in enumerate(train):
        rows = np.flatnonzero(example_index == ex)
        if example.is_impossible:
            assert (starts[rows] == 0).all() and (impossible[rows] == 1).all()
            continue
        assert (impossible[rows] == 0).all()
        found = [r for r in rows if starts[r] > 0]
        assert found, example.qid
        for r in found:
            text = example.context[char_start[r, starts[r]] : char_end[r, ends[r]]]
            assert text == example.answers[0][0]


def test_a_question_too_long_for_the_window_is_refused(tokenizer):
    with pytest.raises(QuestionAnsweringInputError, match="no room for context"):
        ElectraQuestionAnswererPreprocessor(
            tokenizer, sequence_length=16, max_query_length=13
        )


@pytest.fixture(scope="module")
def trained(tokenizer, train):
    """Trained for 3 epochs of one step: 28 questions in ~140 windows of 64."""
    keras.utils.set_random_seed(1)
    encoder = ElectraEncoder(
        vocabulary_size=tokenizer.vocabulary_size(),
        num_layers=1,
        num_heads=2,
        hidden_dim=32,
        embedding_dim=16,
        intermediate_dim=64,
        max_sequence_length=MODEL_LENGTH,
        dropout=0.0,
    )
    preprocessor = ElectraQuestionAnswererPreprocessor(
        tokenizer, sequence_length=MODEL_LENGTH, max_query_length=16, doc_stride=32
    )
    model = ElectraQuestionAnswerer(
        backbone=encoder,
        preprocessor=preprocessor,
        head_hidden_dim=16,
        beam_size=8,
        max_answer_length=10,
    )
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    x, y = _xy(train)
    history = model.fit(x=x, y=y, batch_size=32, epochs=3, verbose=0)
    return model, history.history["loss"]


def test_fit_lowers_the_loss(trained):
    _, losses = trained
    assert np.isfinite(losses).all()
    assert losses[-1] < 0.7 * losses[0], losses


def test_answers_are_spans_of_their_contexts(trained, dev):
    model, _ = trained
    questions = [e.question for e in dev] + ["Who?"]
    contexts = [e.context for e in dev] + [""]
    answers = model.answer(questions, contexts, batch_size=5)
    assert len(answers["text"]) == len(questions)
    for i, context in enumerate(contexts[:-1]):
        start, end = answers["answer_start"][i], answers["answer_end"][i]
        assert 0 <= start < end <= len(context)
        assert answers["text"][i] == context[start:end]
        assert np.isfinite(answers["score"][i]) and answers["score"][i] <= 0
    # An empty context has no span: "" and -1.
    assert answers["text"][-1] == "" and answers["answer_start"][-1] == -1
    assert np.ptp(answers["no_answer_score"][:-1]) > 0


@pytest.mark.slow  # two more graphs to trace
def test_keras_predict_and_evaluate_on_raw_text(trained, dev):
    model, _ = trained
    x, y = _xy(dev)
    outputs = model.predict(x, batch_size=8, verbose=0)
    windows = model.preprocessor.windows(*x)["token_ids"].shape[0]
    assert outputs["start_logits"].shape == (windows, MODEL_LENGTH)
    assert outputs["end_logits"].shape == (windows, 8, MODEL_LENGTH)
    assert outputs["no_answer_logit"].shape == (windows,)
    loss = model.evaluate(x=x, y=y, batch_size=8, verbose=0, return_dict=True)["loss"]
    assert np.isfinite(loss)


@pytest.mark.slow  # a second model to trace
def test_saved_keras_model_gives_the_same_answers(trained, dev, tmp_path):
    model, _ = trained
    path = tmp_path / "qa.keras"
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.compiled  # CompileOnLoad
    questions, contexts = [e.question for e in dev[:4]], [e.context for e in dev[:4]]
    a, b = model.answer(questions, contexts), restored.answer(questions, contexts)
    assert a["text"].tolist() == b["text"].tolist()
    np.testing.assert_allclose(a["score"], b["score"], rtol=1e-5)


FRESH_PROCESS = r"""
import importlib.abc, json, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("electra_tf", "keras_hub", "keras_nlp"):
            raise ImportError(f"{name} must not be needed to serve")

sys.meta_path.insert(0, Refuse())
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers its ops)

path, questions, contexts, out = json.loads(sys.argv[1])
serve = tf.saved_model.load(path).signatures["serving_default"]
outputs = serve(question=tf.constant(questions), context=tf.constant(contexts))
results = {key: value.numpy() for key, value in outputs.items()}
for key in ("answer", "span_text"):
    results[key] = np.array([t.decode("utf-8") for t in results[key]])
leaked = [m for m in ("electra_tf", "keras_hub", "keras_nlp") if m in sys.modules]
assert not leaked, leaked
np.savez(out, **results)
print("served")
"""


def test_saved_model_serves_the_same_answers_without_electra_tf(trained, dev, tmp_path):
    model, _ = trained
    questions = [e.question for e in dev] + ["Who?", "Was ist das?"]
    contexts = [e.context for e in dev] + ["", ODD_TEXTS[0]]
    expected = model.answer(questions, contexts)
    threshold = float(np.median(expected["no_answer_score"]))
    path = export_question_answerer(model, str(tmp_path / "qa"), na_threshold=threshold)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    arguments = json.dumps([path, questions, contexts, str(tmp_path / "served.npz")])
    result = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS, arguments],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0 and "served" in result.stdout, result.stderr[-3000:]
    with np.load(tmp_path / "served.npz", allow_pickle=False) as served:
        served = dict(served)
    assert served["span_text"].tolist() == expected["text"].tolist()
    np.testing.assert_array_equal(served["span_start"], expected["answer_start"])
    np.testing.assert_array_equal(served["span_end"], expected["answer_end"])
    np.testing.assert_allclose(served["score"], expected["score"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        served["no_answer_score"], expected["no_answer_score"], rtol=1e-5, atol=1e-5
    )
    # SQuAD 2.0: above the threshold the answer is empty.
    empty = expected["no_answer_score"] > threshold
    assert empty.any() and (~empty).any()
    assert (served["answer"][empty] == "").all()
    assert (served["answer_start"][empty] == -1).all()
    kept = ~empty & (expected["answer_start"] >= 0)
    assert served["answer"][kept].tolist() == expected["text"][kept].tolist()


@pytest.mark.slow  # fits and answers with a model of its own
def test_docstring_examples_run():
    import doctest

    import electra_tf.models.question_answerer as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_preprocessor_docstring_example_runs():
    import doctest

    import electra_tf.models.question_answerer_preprocessor as module

    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_from_preset_loads_an_exported_discriminator(tokenizer, tmp_path):
    from electra_tf.models.keras_hub_preset import save_keras_hub_preset

    vocabulary = Vocabulary.from_file(REPO / "electra_tf/assets/vocab.txt")
    encoder = ElectraEncoder(
        vocabulary_size=vocabulary.size,
        num_layers=1,
        num_heads=2,
        hidden_dim=32,
        embedding_dim=16,
        intermediate_dim=64,
        max_sequence_length=MODEL_LENGTH,
    )
    preset = tmp_path / "discriminator"
    save_keras_hub_preset(encoder, vocabulary, str(preset))
    model = ElectraQuestionAnswerer.from_preset(
        str(preset),
        sequence_length=32,
        max_query_length=8,
        doc_stride=8,
        answerable=False,
        head_hidden_dim=8,
    )
    assert model.preprocessor.sequence_length == 32
    assert model.preprocessor.doc_stride == 8
    assert "no_answer_logit" not in model.output
    np.testing.assert_array_equal(
        model.backbone.get_layer("token_embedding").get_weights()[0],
        encoder.get_layer("token_embedding").get_weights()[0],
    )
    with pytest.raises(PretrainedModelError, match="exceeds"):
        ElectraQuestionAnswerer.from_preset(str(preset), sequence_length=128)


def test_span_head_trains_under_xla():
    # In training the end is conditioned on the gold start: [B, 1, L] end
    # logits under XLA too (a tf.cond with the beam padded them to K = 8).
    from electra_tf.models.span_head import SpanHead

    head = SpanHead(hidden_dim=8, beam_size=8, answerable=False)
    hidden = tf.random.stateless_normal((2, 12, 16), seed=(0, 1))
    segment_ids = tf.constant([[0] * 4 + [1] * 8] * 2)
    padding_mask = tf.ones((2, 12), "int32")
    starts = tf.constant([0, 5])

    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function(jit_compile=True)
    def step(starts):
        outputs = head(hidden, segment_ids, padding_mask, starts, training=True)
        # The answerer's end loss: labels [B, 1] against [B, K, L] logits.
        return outputs, loss(tf.constant([[0], [7]]), outputs["end_logits"])

    outputs, end_loss = step(starts)
    assert outputs["end_logits"].shape == (2, 1, 12)
    assert outputs["start_index"].numpy().tolist() == [[0], [5]]
    assert np.isfinite(end_loss.numpy())
