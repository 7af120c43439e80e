"""GLUE, tagging, SQuAD and MRQA read from tensorflow-datasets, offline.

`tfds.testing.mock_data` runs tfds' own `builder`/`download_and_prepare`/
`as_dataset` path without downloading. Its random examples (USE_CODE: from
the features each dataset's code declares) serve GLUE; tagging and SQuAD need
consistent examples (one tag per word, answers found in their context), which
`as_dataset_fn` gives in the datasets' own feature layout; MRQA too (its
random examples' spans are off their text, which is refused).
"""

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

from electra_tf.finetuning.glue_readers import load_tfds_split
from electra_tf.finetuning.glue_tasks import get_task
from electra_tf.finetuning.mrqa_data import (
    TFDS_TEST_CONFIGS,
    MrqaDataError,
    load_tfds_mrqa,
)
from electra_tf.finetuning.question_answering import read_mrqa_test
from electra_tf.finetuning.squad_data import load_tfds_squad
from electra_tf.finetuning.tagging import load_tfds_tagging_data
from electra_tf.finetuning.tagging_data import TaggingDataError, load_tfds_tagging

NER = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
CONLL = [
    # ner ids index NER; pos and chunks, unused, are zeros.
    {"tokens": tokens, "ner": ner, "pos": [0] * len(ner), "chunks": [0] * len(ner)}
    for tokens, ner in [
        (["-DOCSTART-"], [0]),
        (["EU", "rejects", "German", "call"], [3, 0, 7, 0]),
        (["Peter", "Blackburn"], [1, 2]),
    ]
]
CONTEXT = "The Normans were the people who gave their name to Normandy."
SQUAD = [
    {
        "id": f"q{i}",
        "title": "Normans",
        "context": CONTEXT,
        "question": "Who gave their name to Normandy?",
        "answers": {"text": ["The Normans"], "answer_start": [0]},
        "is_impossible": False,
        "plausible_answers": {"text": [], "answer_start": []},
    }
    for i in range(3)
]
# As tfds' `mrqa` builder yields them: one question a record; char_spans
# [answers, (spans)], ends inclusive. "normans" is found as "Normans".
MRQA = [
    {
        "subset": "NewsQA",
        "context": CONTEXT,
        "context_tokens": {"tokens": ["The"], "offsets": [0]},
        "qid": f"m{i}",
        "question": "Who gave their name to Normandy?",
        "question_tokens": {"tokens": ["Who"], "offsets": [0]},
        "detected_answers": {
            "text": ["normans", "The Normans"],
            "char_spans": {
                "start": tf.ragged.constant([[4], [0]], tf.int32),
                "end": tf.ragged.constant([[10], [10]], tf.int32),
            },
            "token_spans": {
                "start": tf.ragged.constant([[1], [0]], tf.int32),
                "end": tf.ragged.constant([[1], [1]], tf.int32),
            },
        },
        "answers": ["normans", "The Normans"],
    }
    for i in range(2)
]


def _records_as_dataset(records_by_dataset):
    """An `as_dataset_fn` serving `records_by_dataset[dataset name]` (any split),
    each record cut to the builder's features and typed as they declare."""

    def as_dataset(self, *args, **kwargs):
        features = self.info.features
        signature = features.get_tensor_spec()
        records = [
            {key: record[key] for key in signature}
            for record in records_by_dataset[self.name]
        ]
        return tf.data.Dataset.from_generator(
            lambda: iter(records), output_signature=signature
        )

    return as_dataset


@pytest.fixture
def consistent_tfds():
    records = {"conll2003": CONLL, "squad": SQUAD, "mrqa": MRQA}
    with tfds.testing.mock_data(as_dataset_fn=_records_as_dataset(records)):
        yield


def test_glue_sst2_from_mock_tfds():
    with tfds.testing.mock_data(num_examples=4):
        sst2 = get_task("sst2")
        train = load_tfds_split(sst2, "train")
        assert len(train) == 4 and len(train.texts) == 1
        assert isinstance(train.texts[0][0], str)
        assert set(train.labels.tolist()) <= {0, 1}
        assert train.labels.dtype == np.int32
        assert train.source == "tfds glue/sst2:train"
        assert load_tfds_split(sst2, "test").labels is None


def test_conll2003_tags_come_from_its_class_label(consistent_tfds):
    data = load_tfds_tagging_data()
    assert data.tags == NER and data.span_tags
    # The -DOCSTART- sentence is skipped, as in CoNLL files.
    assert data.train.words == (
        ("EU", "rejects", "German", "call"),
        ("Peter", "Blackburn"),
    )
    assert data.train.tags == (("B-ORG", "O", "B-MISC", "O"), ("B-PER", "I-PER"))
    assert data.train.source == "tfds conll2003:train"
    assert data.dev.tags == data.train.tags
    # CoNLL-2003's test tags are public: read, to be scored after training.
    assert data.test.words == data.train.words and data.test.tags == data.train.tags


def test_tfds_tagging_refuses_a_sentence_without_one_tag_per_word():
    # tfds' random examples draw each sequence's length on its own.
    with tfds.testing.mock_data(num_examples=3):
        with pytest.raises(TaggingDataError, match=r"conll2003:train, sentence 1: "):
            load_tfds_tagging("train")
    with tfds.testing.mock_data(num_examples=3):
        with pytest.raises(
            TaggingDataError, match="has no features 'tokens' and 'tags'"
        ):
            load_tfds_tagging("train", tags_feature="tags")


@pytest.mark.parametrize("version", [1, 2])
def test_squad_from_mock_tfds(consistent_tfds, version):
    examples = load_tfds_squad(version, "dev")
    assert [example.qid for example in examples] == ["q0", "q1", "q2"]
    assert examples[0].answers == (("The Normans", 0),)
    assert examples[0].context == CONTEXT and not examples[0].is_impossible


def test_mrqa_from_mock_tfds(consistent_tfds):
    examples = load_tfds_mrqa("news_qa", "train")
    assert [e.qid for e in examples] == ["m0", "m1"]
    first = examples[0]
    # Every span, the context's own text; the first is the training target.
    assert first.answers == (("Normans", 4), ("The Normans", 0))
    assert first.answer_texts == ["normans", "The Normans"]  # the official golds
    assert first.title == "NewsQA" and not first.is_impossible


def test_mrqa_from_random_mock_tfds_is_refused_in_one_line():
    # tfds' random examples: spans off their (random) text.
    with tfds.testing.mock_data(num_examples=3):
        with pytest.raises(MrqaDataError) as error:
            load_tfds_mrqa("search_qa", "dev")
    message = str(error.value)
    assert message.startswith("tfds mrqa/search_qa:validation")
    assert "\n" not in message and "record 0, question" in message
    with pytest.raises(MrqaDataError, match="those are: squad, news_qa"):
        load_tfds_mrqa("drop", "train")


@pytest.mark.parametrize("config", [*TFDS_TEST_CONFIGS, "news_qa"])
def test_mrqa_test_only_configs_are_read_as_a_test_file(
    consistent_tfds, monkeypatch, config
):
    """`--test-file tfds:mrqa/<config>` (on main: unreachable; the test-only
    configs were refused as having no training split): a test-only config's
    test split, a training config's validation split, read unlabelled for
    training purposes (every answer kept as a gold)."""
    import electra_tf.finetuning.mrqa_data as mrqa_data

    splits = []
    load_tfds = mrqa_data.load_tfds

    def recording(name, split, *args):
        splits.append((name, split))
        return load_tfds(name, split, *args)

    monkeypatch.setattr(mrqa_data, "load_tfds", recording)
    examples = read_mrqa_test(f"tfds:mrqa/{config}")
    assert [e.qid for e in examples] == ["m0", "m1"]
    assert examples[0].answer_texts == ["normans", "The Normans"]
    expected = "validation" if config == "news_qa" else "test"
    assert splits == [(f"mrqa/{config}", expected)]


def test_a_tfds_test_file_that_is_not_mrqa_is_one_line():
    with pytest.raises(MrqaDataError) as error:
        read_mrqa_test("tfds:squad/v1.1")
    assert str(error.value) == (
        "--test-file tfds:squad/v1.1: tensorflow-datasets test files of --task "
        "mrqa are tfds:mrqa/<config>, e.g. tfds:mrqa/bio_asq"
    )
    with pytest.raises(MrqaDataError, match="mrqa/nope is not a tensorflow-datasets"):
        read_mrqa_test("tfds:mrqa/nope")
