"""Token classification: CoNLL reader, span metrics against seqeval, the
preprocessor's word-to-piece alignment and windows, and a tiny tagger trained
with `run_finetuning` on the tiny Brown POS fixture, reloaded from
`tagger.keras` and served as a raw-text SavedModel in a fresh process that
cannot import electra_tf.
"""

import collections
import doctest
import json
import os
import pathlib
import random
import subprocess
import sys

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import electra_tf.finetuning.tagging_data
import electra_tf.finetuning.tagging_metrics
import electra_tf.models.token_classifier
import electra_tf.models.token_classifier_preprocessor
from electra_tf.config import ConfigError
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.finetuning.settings import FinetuningFlags, resolve_finetuning_config
from electra_tf.finetuning.starting_point import StartingPoint
from electra_tf.finetuning.tagging import (
    TaggingConfig,
    TaggingTask,
    build_token_classifier,
    load_tagging_data,
)
from electra_tf.finetuning.tagging_data import TaggingDataError, read_conll
from electra_tf.finetuning.tagging_metrics import (
    is_span_tag_set,
    span_scores,
    spans,
    tagging_scores,
    token_accuracy,
)
from electra_tf.finetuning.trainer import run_finetuning
from electra_tf.models.token_classifier_preprocessor import (
    ElectraTokenClassifierPreprocessor,
    split_words,
)
from electra_tf.presets import get_preset
from tests.helpers import SUBPROCESS_TIMEOUT, TINY_VOCABULARY_SIZE

REPO = pathlib.Path(__file__).resolve().parents[2]
BROWN = REPO / "tests" / "fixtures" / "brown_pos"  # 15 / 8 / 5 sentences
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
SEQUENCE_LENGTH = 16  # short: the fixture's long sentences need several windows


def write(path, text):
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


# === Reader ===


def test_reads_two_column_and_conll2003_layouts(tmp_path):
    two = write(tmp_path / "a.conll", "The\tDET\ncat\tNOUN\n\n\nsat\tVERB\n")
    sentences = read_conll(two)
    assert sentences.words == (("The", "cat"), ("sat",))
    assert sentences.tags == (("DET", "NOUN"), ("VERB",)) and sentences.lines == (1, 5)
    four = write(
        tmp_path / "b.txt",
        "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\n"
        "-DOCSTART- -X- -X- O\n\nPeter NNP B-NP B-PER\nBlackburn NNP I-NP I-PER\n",
    )
    sentences = read_conll(four)
    assert sentences.words == (("EU", "rejects"), ("Peter", "Blackburn"))
    assert sentences.tags == (("B-ORG", "O"), ("B-PER", "I-PER"))
    brown = read_conll(BROWN / "train.conll")
    assert len(brown) == 15 and {"NOUN", "VERB", "."} <= {
        t for s in brown.tags for t in s
    }


def test_each_reader_has_its_own_error_on_one_fine_tuning_base():
    # A CoNLL file is not GLUE data: `except GlueDataError` must not catch it.
    from electra_tf.errors import FinetuningDataError
    from electra_tf.finetuning.custom_data import DataFileError
    from electra_tf.finetuning.glue_readers import GlueDataError
    from electra_tf.finetuning.squad_data import SquadDataError

    for error in (GlueDataError, DataFileError, TaggingDataError, SquadDataError):
        assert issubclass(error, FinetuningDataError)
    for error in (DataFileError, TaggingDataError, SquadDataError):
        assert not issubclass(error, GlueDataError)


@pytest.mark.parametrize(
    "train, dev, message",
    [
        ("a\tX\nb\tY\n", "a\tX\nb\tX\tZ\n", r"dev.conll, line 2: 3 columns where"),
        (
            "a\tX\nb\tY\n",
            "a\tX\n\nb\tZ\n",
            r"dev.conll, line 3: tag 'Z' does not occur",
        ),
        ("a\tX\nb\tY\n", b"a\tX\n\xff\tY\n", r"dev.conll, line 2: not UTF-8"),
        ("a\tX\nb\tY\n", "\n\n", r"dev.conll: no sentences"),
        ("a\tX\nb\tY\n", "a\nb\n", r"dev.conll, line 1: one column"),
        ("a\tX\nb\tX\n", "a\tX\n", r"train.conll: one tag only"),
        (
            "a\tX\nb\t\nc\tY\n",
            "a\tX\n",
            r"train.conll, line 2: word 'b' has an empty tag$",
        ),
        ("a\tX\nb\tY\n", "\tX\n", r"dev.conll, line 1: no word before the tab"),
    ],
    ids=[
        "columns",
        "unseen",
        "utf8",
        "empty",
        "one-column",
        "one-tag",
        "no-tag",
        "no-word",
    ],
)
def test_bad_files_get_one_line_naming_file_line_and_value(
    tmp_path, train, dev, message
):
    train_file = write(tmp_path / "train.conll", train)
    dev_file = write(tmp_path / "dev.conll", dev)
    with pytest.raises(TaggingDataError, match=message) as error:
        load_tagging_data(train_file, dev_file)
    assert "\n" not in str(error.value)


def test_a_test_file_is_read_labelled_if_it_has_tags_and_its_tags_are_checked(
    tmp_path,
):
    train = write(tmp_path / "train.conll", "a\tX\nb\tY\n")
    dev = write(tmp_path / "dev.conll", "a\tX\n")
    words_only = write(tmp_path / "words.conll", "a\nb\n")
    assert load_tagging_data(train, dev, words_only).test.tags is None
    tagged = write(tmp_path / "tagged.conll", "b\tY\n\na\tX\n")
    assert load_tagging_data(train, dev, tagged).test.tags == (("Y",), ("X",))
    unseen = write(tmp_path / "test.conll", "a\tX\n\nb\tZ\n")
    with pytest.raises(TaggingDataError, match=r"test.conll, line 3: tag 'Z' does not"):
        load_tagging_data(train, dev, unseen)


# === Metrics ===


def test_span_metrics_by_hand():
    assert spans(["B-PER", "I-PER", "O", "B-LOC", "I-LOC"]) == [
        ("PER", 0, 1),
        ("LOC", 3, 4),
    ]
    assert spans(["O", "I-PER", "I-PER", "B-PER"]) == [("PER", 1, 2), ("PER", 3, 3)]
    assert spans(["B-PER", "I-LOC"]) == [("PER", 0, 0), ("LOC", 1, 1)]
    assert spans(["S-PER", "B-LOC", "E-LOC"]) == [("PER", 0, 0), ("LOC", 1, 2)]
    gold = [["B-PER", "I-PER", "O"], ["B-LOC"]]
    assert span_scores(gold, [["B-PER", "O", "O"], ["B-LOC"]]) == {
        "precision": 0.5,
        "recall": 0.5,
        "f1": 0.5,
    }
    assert span_scores(gold, [["O", "O", "O"], ["O"]])["f1"] == 0.0
    assert token_accuracy(gold, [["B-PER", "O", "O"], ["O"]]) == 0.5
    assert is_span_tag_set(["O", "B-PER", "I-PER"])
    assert not is_span_tag_set(["NOUN", "VERB", "."]) and not is_span_tag_set(["O"])


def _random_tags(rng, length):
    choices = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "E-LOC", "S-PER", "B-MISC"]
    return [rng.choice(choices) for _ in range(length)]


def test_span_metrics_match_seqeval():
    seqeval = pytest.importorskip("seqeval.metrics")
    rng = random.Random(0)
    for _ in range(200):
        lengths = [rng.randint(1, 8) for _ in range(rng.randint(1, 5))]
        gold = [_random_tags(rng, n) for n in lengths]
        predicted = [_random_tags(rng, n) for n in lengths]
        ours = span_scores(gold, predicted)
        assert ours["precision"] == pytest.approx(
            seqeval.precision_score(gold, predicted, zero_division=0)
        )
        assert ours["recall"] == pytest.approx(
            seqeval.recall_score(gold, predicted, zero_division=0)
        )
        assert ours["f1"] == pytest.approx(
            seqeval.f1_score(gold, predicted, zero_division=0)
        )


# === Preprocessor ===


@pytest.fixture(scope="module")
def vocabulary():
    counts = collections.Counter(
        word.lower()
        for sentence in read_conll(BROWN / "train.conll").words
        for word in sentence
    )
    words = sorted(counts, key=lambda w: (-counts[w], w))
    tokens = (
        SPECIAL + words[: TINY_VOCABULARY_SIZE - len(SPECIAL) - 2] + ["un", "##der"]
    )
    assert len(tokens) == TINY_VOCABULARY_SIZE
    return tokens


@pytest.fixture(scope="module")
def tokenizer(vocabulary):
    return keras_hub.models.ElectraTokenizer(vocabulary=vocabulary, lowercase=True)


def test_first_piece_carries_the_label_and_long_sentences_get_windows(tokenizer):
    preprocessor = ElectraTokenClassifierPreprocessor(
        tokenizer, tags=["A", "B"], sequence_length=6
    )
    words = [["under", "the", "the", "under", "the"], [], ["\u200b"]]
    tags = [["A", "B", "A", "B", "A"], [], ["B"]]
    windows = preprocessor.windows(tf.ragged.constant(words))
    x, y, weight = preprocessor(tf.ragged.constant(words), tf.ragged.constant(tags))
    ids = {t: tokenizer.token_to_id(t) for t in ("un", "##der", "the", "[UNK]")}
    cls, sep, pad = 2, 3, 0
    # 7 pieces in windows of 4: [under the the] (4 pieces), [under the] (3).
    assert x["token_ids"].numpy().tolist() == [
        [cls, ids["un"], ids["##der"], ids["the"], ids["the"], sep],
        [cls, ids["un"], ids["##der"], ids["the"], sep, pad],
        [cls, ids["[UNK]"], sep, pad, pad, pad],  # a word of no piece
    ]
    assert windows["word_window"].to_list() == [[0, 0, 0, 1, 1], [], [2]]
    assert windows["word_position"].to_list() == [[1, 3, 4, 1, 3], [], [1]]
    assert weight.numpy().tolist() == [
        [0, 1, 0, 1, 1, 0],
        [0, 1, 0, 1, 0, 0],
        [0, 1, 0, 0, 0, 0],
    ]
    assert y.numpy()[0, [1, 3, 4]].tolist() == [0, 1, 0]
    assert y.numpy()[2, 1] == 1
    assert x["padding_mask"].numpy().sum(1).tolist() == [6, 5, 3]
    assert not x["segment_ids"].numpy().any()


def test_segment_id_1_is_the_originals_tagging_input(vocabulary):
    """`--hparams '{"segment_id": 1}'`: every real token (specials too) in
    segment 1, padding in 0, as the original's tagging features; the encoder
    reads it, and a saved tagger keeps it."""
    flags = FinetuningFlags(task="tagging", hparams='{"segment_id": 1}')
    encoder = {"hidden_dim": 64, "max_sequence_length": 128, "num_segments": 2}
    _, config = resolve_finetuning_config(
        flags, TaggingTask, encoder, jit_compile=False
    )
    assert config.segment_id == 1
    model_config = get_preset("tiny").model.override(
        vocabulary_size=TINY_VOCABULARY_SIZE, max_sequence_length=SEQUENCE_LENGTH
    )
    start = StartingPoint(None, model_config, Vocabulary(tuple(vocabulary)))
    words = tf.ragged.constant([["under", "the"], ["the"]])
    logits, weights = {}, {}
    for segment_id in (0, 1):
        keras.utils.set_random_seed(0)
        tagger = build_token_classifier(
            ["A", "B"], config.override(segment_id=segment_id), start
        )
        logits[segment_id] = np.concatenate(tagger.predict(words, verbose=0))
        weights[segment_id] = tagger.get_weights()
    x = tagger.preprocessor(words)
    real = x["padding_mask"].numpy().astype(int)
    assert x["segment_ids"].numpy().tolist() == real.tolist()
    # The same weights, other logits: the segment reaches the encoder.
    for first, second in zip(weights[0], weights[1]):
        np.testing.assert_array_equal(first, second)
    assert np.abs(logits[1] - logits[0]).max() > 1e-3
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(tagger.preprocessor)
    )
    assert restored.segment_id == 1
    with pytest.raises(ConfigError, match=r"^segment_id is 2, but the encoder has 2 "):
        resolve_finetuning_config(
            FinetuningFlags(task="tagging", hparams='{"segment_id": 2}'),
            TaggingTask,
            encoder,
            jit_compile=False,
        )


def test_raw_text_words_and_character_offsets():
    text = ["Peter's caf\u00e9, \u6f22\u5b57!", "", "  two  words "]
    words, start, end = split_words(tf.constant(text))
    assert words.to_list()[0] == [
        b"Peter",
        b"'",
        b"s",
        "caf\u00e9".encode(),
        b",",
        "\u6f22".encode(),
        "\u5b57".encode(),
        b"!",
    ]
    for row, sentence in enumerate(text):
        for word, s, e in zip(
            words.to_list()[row], start.to_list()[row], end.to_list()[row]
        ):
            assert sentence[s:e] == word.decode()
    assert words.to_list()[1] == []


# === A tiny tagger: run, reload, serve ===


@pytest.fixture(scope="module")
def tagging_run(vocabulary, tmp_path_factory):
    output_dir = tmp_path_factory.mktemp("tagging")
    data = load_tagging_data(
        BROWN / "train.conll", BROWN / "dev.conll", BROWN / "test.conll"
    )
    config = TaggingConfig(
        learning_rate=3e-3,
        epochs=1,
        batch_size=4,
        max_seq_length=SEQUENCE_LENGTH,
        layerwise_decay=1.0,
    )
    model_config = get_preset("tiny").model.override(
        vocabulary_size=TINY_VOCABULARY_SIZE, max_sequence_length=SEQUENCE_LENGTH
    )
    start = StartingPoint(None, model_config, Vocabulary(tuple(vocabulary)))
    summary = run_finetuning(
        TaggingTask(data, config, start), str(output_dir), seeds=(1,), verbose=0
    )
    return output_dir, summary, data


def test_run_writes_metrics_predictions_and_exports(tagging_run):
    output_dir, summary, data = tagging_run
    on_disk = json.loads((output_dir / "metrics.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    assert on_disk["span_metrics"] is False and "." in on_disk["tags"]
    assert on_disk["score_definition"] == "dev token accuracy"
    # Only the settings tagging reads (no classification head's pooling).
    assert "pooling" not in on_disk["config"] and "swap_pairs" not in on_disk["config"]
    assert on_disk["config"]["max_seq_length"] == SEQUENCE_LENGTH
    epochs = on_disk["seeds"]["1"]["epochs"]
    assert [e["epoch"] for e in epochs] == [1]
    assert 0.0 < epochs[-1]["dev"]["dev"]["accuracy"] <= 1.0
    assert "loss" in epochs[0]["train"] and "accuracy" in epochs[0]["train"]
    predicted = read_conll(output_dir / "predictions" / "test.conll")
    assert predicted.words == data.test.words  # every word of every sentence
    assert set(t for s in predicted.tags for t in s) <= set(data.tags)
    # The fixture's test file is labelled: scored once, from these predictions.
    scores = tagging_scores(data.test.tags, predicted.tags, False)
    assert on_disk["test"] == json.loads(json.dumps(scores))
    (events,) = (output_dir / "logs" / "seed_1" / "validation").iterdir()
    tags = {
        value.tag
        for event in tf.compat.v1.train.summary_iterator(str(events))
        for value in event.summary.value
    }
    assert "epoch_accuracy" in tags


@pytest.fixture(scope="module")
def reloaded(tagging_run):
    output_dir, _, _ = tagging_run
    return keras.models.load_model(output_dir / "tagger.keras")


def test_a_saved_tagger_loads_compiled_with_its_optimizers_state(reloaded):
    # The trainer's ElectraAdam, at the step training ended on (CompileOnLoad).
    assert reloaded.compiled and type(reloaded.optimizer).__name__ == "ElectraAdam"
    assert int(reloaded.optimizer.iterations) > 0


def test_every_word_is_tagged_however_long_the_sentence(reloaded, tagging_run):
    _, _, data = tagging_run
    sentences = [list(w) for w in data.dev.words]
    assert max(len(s) for s in sentences) > 2 * SEQUENCE_LENGTH
    tags = reloaded.predict_tags(sentences, batch_size=3)
    assert [len(t) for t in tags] == [len(s) for s in sentences]
    logits = reloaded.predict([["The", "jury"], []], verbose=0)
    assert [row.shape for row in logits] == [(2, len(data.tags)), (0, len(data.tags))]


def test_predictions_run_shortest_first_and_come_back_in_the_order_given(
    reloaded, tagging_run
):
    _, _, data = tagging_run
    # Longest first, so that the order predict runs them in is not this one.
    sentences = sorted(data.dev.words[:8], key=lambda s: -sum(map(len, s)))
    together = reloaded.predict([list(s) for s in sentences], batch_size=3, verbose=0)
    for sentence, logits in zip(sentences, together):
        alone = reloaded.predict([list(sentence)], verbose=0)[0]
        np.testing.assert_allclose(logits, alone, atol=1e-5)


FRESH_PROCESS = r"""
import importlib.abc, json, sys

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("electra_tf", "keras_hub", "keras_nlp"):
            raise ImportError(f"{name} must not be needed to serve")

sys.meta_path.insert(0, Refuse())
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401

path, texts, out = json.loads(sys.argv[1])
tag = tf.saved_model.load(path).signatures["serving_default"]
outputs = tag(text=tf.constant(texts))
def plain(value):
    value = value.numpy()
    if value.dtype == object:  # tf.string: bytes -> str (non-ASCII included)
        decoded = [w.decode("utf-8") for w in value.reshape(-1)]
        return np.array(decoded, dtype=str).reshape(value.shape)
    return value

np.savez(out, **{key: plain(value) for key, value in outputs.items()})
print("served")
"""


def test_saved_model_serves_raw_text_in_a_fresh_process(
    reloaded, tagging_run, tmp_path
):
    output_dir, _, data = tagging_run
    texts = [
        " ".join(data.dev.words[0]),
        "",
        "The jury said, \u00abcaf\u00e9\u00bb \u6f22\u5b57 " * 12,  # several windows
    ]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            FRESH_PROCESS,
            json.dumps(
                [str(output_dir / "saved_model"), texts, str(tmp_path / "o.npz")]
            ),
        ],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0 and "served" in result.stdout, result.stderr[-3000:]
    served = dict(np.load(tmp_path / "o.npz"))
    expected = reloaded.predict(texts, verbose=0)
    words, _, _ = split_words(tf.constant(texts))
    for row, text in enumerate(texts):
        count = served["word_count"][row]
        assert count == len(expected[row]) == len(words.to_list()[row])
        np.testing.assert_allclose(
            served["probabilities"][row, :count],
            tf.nn.softmax(expected[row]).numpy(),
            atol=1e-5,
        )
        served_tags = list(served["tags"][row, :count])
        assert served_tags == [
            reloaded.preprocessor.tags[i] for i in expected[row].argmax(-1)
        ]
        for word, start, end in zip(
            served["words"][row, :count], served["start"][row], served["end"][row]
        ):
            assert text[start:end] == word
    assert (
        served["word_count"][1] == 0 and served["word_count"][2] > 3 * SEQUENCE_LENGTH
    )


@pytest.mark.parametrize(
    "module",
    [
        electra_tf.models.token_classifier_preprocessor,
        electra_tf.models.token_classifier,
        electra_tf.finetuning.tagging_data,
        electra_tf.finetuning.tagging_metrics,
    ],
)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_in_memory_sentences_are_shuffled_every_epoch():
    """What `ElectraTokenClassifier.fit` feeds Keras for lists of words."""
    from electra_tf.models.in_memory import in_memory_dataset

    words = tf.ragged.constant([[f"w{i}"] * (i % 3 + 1) for i in range(16)])
    tags = tf.ragged.constant([[i] * (i % 3 + 1) for i in range(16)])
    dataset = in_memory_dataset(words, tags, batch_size=4, shuffle=True, seed=7)

    def epoch():
        return [int(y[0]) for _, ys in dataset for y in ys]

    first, second = epoch(), epoch()
    assert sorted(first) == sorted(second) == list(range(16))
    assert first != list(range(16)) and first != second
    again = in_memory_dataset(words, tags, batch_size=4, shuffle=True, seed=7)
    assert [int(y[0]) for _, ys in again for y in ys] == first
