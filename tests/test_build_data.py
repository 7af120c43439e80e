"""Raw text -> TFRecords: features, layout, no token lost, determinism, bad input."""

import gzip
import json
import pathlib
import string

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from electra_tf.data.corpus import CorpusError
from electra_tf.data.tfrecord_writer import BuildError, build_pretraining_data
from electra_tf.vocabulary import SPECIAL_TOKENS, Vocabulary

FIXTURES = pathlib.Path(__file__).parent / "fixtures"
CORPUS = FIXTURES / "brown_excerpt.txt"
L = 64


@pytest.fixture(scope="module")
def vocabulary():
    # Characters and their continuations: every word tokenises, and fast.
    chars = string.ascii_lowercase + string.digits + string.punctuation
    tokens = SPECIAL_TOKENS + tuple(chars) + tuple("##" + c for c in chars)
    return Vocabulary(tokens, "char-vocab")


def _records(directory, split="train"):
    out = []
    for path in sorted(pathlib.Path(directory).glob(f"{split}-*.tfrecord")):
        for record in tf.data.TFRecordDataset(str(path)):
            example = tf.train.Example.FromString(record.numpy())
            out.append(
                {
                    name: np.array(example.features.feature[name].int64_list.value)
                    for name in ("input_ids", "input_mask", "segment_ids")
                }
            )
    return out


def _build(vocabulary, directory, **kwargs):
    options = dict(max_seq_length=L, num_shards=1, eval_fraction=0.0, progress=False)
    options.update(kwargs)
    return build_pretraining_data([str(CORPUS)], vocabulary, directory, **options)


def test_features_layout_and_no_token_lost(vocabulary, tmp_path):
    stats = _build(vocabulary, tmp_path)
    records = _records(tmp_path)
    assert len(records) == stats["train_examples"] > 10
    tokens = []
    for record in records:
        for values in record.values():
            assert values.shape == (L,) and values.dtype == np.int64
        real = int(record["input_mask"].sum())
        ids = record["input_ids"][:real]
        assert ids[0] == vocabulary.cls_id and ids[-1] == vocabulary.sep_id
        first_sep = int(np.flatnonzero(ids == vocabulary.sep_id)[0])
        assert (record["segment_ids"][: first_sep + 1] == 0).all()
        assert (record["segment_ids"][first_sep + 1 : real] == 1).all()
        assert (record["input_ids"][real:] == vocabulary.pad_id).all()
        tokens += [t for t in ids if t not in (vocabulary.cls_id, vocabulary.sep_id)]
    # Every token of the corpus, in order, exactly once.
    tokenizer = vocabulary.tokenizer()
    lines = [line.strip() for line in CORPUS.read_text().splitlines() if line.strip()]
    expected = tf.concat([tokenizer.tokenize(tf.constant([x]))[0] for x in lines], 0)
    np.testing.assert_array_equal(tokens, expected.numpy())
    assert stats["tokens"] == len(tokens)
    saved = json.loads((tmp_path / "stats.json").read_text())
    assert saved["max_seq_length"] == L and saved["documents"] == 3
    assert Vocabulary.from_file(tmp_path / "vocab.txt").tokens == vocabulary.tokens


def test_deterministic_for_a_seed_and_shards_round_robin(vocabulary, tmp_path):
    _build(vocabulary, tmp_path / "a", seed=3, num_shards=2)
    _build(vocabulary, tmp_path / "b", seed=3, num_shards=2)
    _build(vocabulary, tmp_path / "c", seed=4, num_shards=2)
    for name in ("train-00000-of-00002.tfrecord", "train-00001-of-00002.tfrecord"):
        assert (tmp_path / "a" / name).read_bytes() == (
            tmp_path / "b" / name
        ).read_bytes()
    assert (tmp_path / "a" / "train-00000-of-00002.tfrecord").read_bytes() != (
        tmp_path / "c" / "train-00000-of-00002.tfrecord"
    ).read_bytes()


def test_eval_holds_out_whole_documents(vocabulary, tmp_path):
    stats = _build(vocabulary, tmp_path, eval_fraction=0.5, seed=1)
    assert stats["eval_examples"] > 0 and stats["train_examples"] > 0
    assert len(_records(tmp_path, "eval")) == stats["eval_examples"]


def test_refuses_a_non_empty_directory_and_overwrites_only_its_files(
    vocabulary, tmp_path
):
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(BuildError, match="not empty"):
        _build(vocabulary, tmp_path)
    _build(vocabulary, tmp_path, overwrite=True)
    assert (tmp_path / "notes.txt").read_text() == "keep me"
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\n\n   \n", "has no text"),
        (b"PK\x03\x04\x00\x00binary", "NUL byte at offset 4"),
        (
            "caf\xe9 au lait\n".encode("latin-1"),
            "not UTF-8 text \\(invalid byte at offset 3\\)",
        ),
    ],
)
def test_bad_corpora_name_the_file(vocabulary, tmp_path, content, message):
    path = tmp_path / "corpus.txt"
    path.write_bytes(content)
    with pytest.raises(CorpusError, match=message) as error:
        build_pretraining_data(
            [str(path)], vocabulary, tmp_path / "out", progress=False
        )
    if "no text" not in message:
        assert str(path) in str(error.value)


def test_missing_path_and_gzip(vocabulary, tmp_path):
    with pytest.raises(CorpusError, match="no input files match"):
        build_pretraining_data(
            [str(tmp_path / "nope*.txt")], vocabulary, tmp_path / "o"
        )
    gz = tmp_path / "corpus.txt.gz"
    gz.write_bytes(gzip.compress(CORPUS.read_bytes()))
    stats = build_pretraining_data(
        [str(gz)], vocabulary, tmp_path / "gz", max_seq_length=L, progress=False
    )
    assert stats["documents"] == 3


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.one_of(
        st.text(max_size=300).map(lambda t: t.encode("utf-8")), st.binary(max_size=300)
    )
)
def test_fuzz_any_input_builds_or_fails_cleanly(vocabulary, tmp_path_factory, data):
    directory = tmp_path_factory.mktemp("fuzz")
    path = directory / "corpus.txt"
    path.write_bytes(data)
    try:
        stats = build_pretraining_data(
            [str(path)],
            vocabulary,
            directory / "out",
            max_seq_length=16,
            progress=False,
        )
    except CorpusError:
        return
    assert stats["train_examples"] + stats["eval_examples"] >= 1
