"""The input pipeline: static shapes, names, per-host sharding, determinism,
clear errors, and reading back shards built from real text."""

import doctest
import json
import os
import pathlib
import re

import numpy as np
import pytest
import tensorflow as tf

import electra_tf.data.input_pipeline
from electra_tf.data.input_pipeline import (
    DataError,
    describe_data,
    explain_data_loss,
    find_corrupt_files,
    list_files,
    make_pretraining_dataset,
    read_data_stats,
)
from electra_tf.data.tfrecord_format import FEATURE_NAMES, serialize_examples
from electra_tf.data.tfrecord_writer import build_pretraining_data
from electra_tf.data.vocabulary import Vocabulary
from tests.helpers import write_pretraining_records

REPO = pathlib.Path(__file__).parents[2]
CORPUS = pathlib.Path(__file__).parents[1] / "fixtures" / "corpus_excerpt.txt"
L = 16
INPUTS = {"token_ids", "segment_ids", "padding_mask"}


def _write(path, count, length=L, start=0):
    write_pretraining_records(path, count, length, start)


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Four files of ten records; file k holds the values 100 k ... 100 k + 9."""
    directory = tmp_path_factory.mktemp("shards")
    for shard in range(4):
        _write(directory / f"train-{shard}.tfrecord", 10, start=100 * shard)
    return directory


def _values(dataset, batches):
    return np.concatenate(
        [b["token_ids"][:, 0].numpy() for b in dataset.take(batches)]
    ).tolist()


def test_serialize_examples_is_protobuf_byte_for_byte():
    rng = np.random.default_rng(0)
    features = {name: rng.integers(0, 2, (5, 7)) for name in FEATURE_NAMES}
    # Values whose varints take 1 to 10 bytes.
    features["input_ids"][0] = [0, 127, 128, 16383, 16384, 2**35, 2**63 - 1]
    for i, record in enumerate(serialize_examples(features)):
        reference = tf.train.Example(
            features=tf.train.Features(
                feature={
                    name: tf.train.Feature(
                        int64_list=tf.train.Int64List(value=features[name][i])
                    )
                    for name in FEATURE_NAMES
                }
            )
        )
        assert record == reference.SerializeToString(deterministic=True)


def test_static_shapes_names_and_dtypes(shards):
    dataset = make_pretraining_dataset(str(shards / "train-*"), 8, L)
    assert set(dataset.element_spec) == INPUTS
    for name, spec in dataset.element_spec.items():
        assert spec.shape == (8, L) and spec.dtype == tf.int32, name
    batch = next(iter(dataset))
    assert batch["token_ids"].shape == (8, L)
    # Training repeats (80 examples from 40) and mixes all files.
    values = _values(dataset, 10)
    assert len(values) == 80 and {v // 100 for v in values} == {0, 1, 2, 3}


def test_shuffling_is_deterministic_for_a_seed(shards):
    def first_values(seed, training=True):
        dataset = make_pretraining_dataset(
            str(shards / "train-*"), 8, L, training=training, seed=seed
        )
        return _values(dataset, 5)

    assert first_values(0) == first_values(0)
    assert first_values(0) != first_values(1)
    evaluation = first_values(0, training=False)
    assert evaluation == first_values(1, training=False)
    assert sorted(evaluation[:40]) == sorted(
        100 * shard + i for shard in range(4) for i in range(10)
    )


def test_per_host_sharding_reads_disjoint_files(shards):
    seen = []
    for host in range(2):
        context = tf.distribute.InputContext(
            num_input_pipelines=2, input_pipeline_id=host, num_replicas_in_sync=4
        )
        dataset = make_pretraining_dataset(
            str(shards / "train-*"), 8, L, training=False, input_context=context
        )
        # Per-replica batch: global 8 over 4 replicas.
        assert dataset.element_spec["token_ids"].shape == (2, L)
        seen.append({v // 100 for v in _values(dataset, 20)})
    assert seen == [{0, 2}, {1, 3}]


def test_errors_name_the_culprit(tmp_path, shards):
    with pytest.raises(DataError, match="no TFRecord files match .*nothing-"):
        make_pretraining_dataset(str(tmp_path / "nothing-*"), 8, L)
    _write(tmp_path / "long.tfrecord", 2, length=32)
    with pytest.raises(
        DataError, match="long.tfrecord holds sequences of length 32 .*length 16"
    ):
        make_pretraining_dataset(str(tmp_path / "long.tfrecord"), 8, L)
    (tmp_path / "junk.tfrecord").write_bytes(b"this is not a tfrecord file at all")
    with pytest.raises(DataError, match="junk.tfrecord is not a readable TFRecord"):
        make_pretraining_dataset(str(tmp_path / "junk.tfrecord"), 8, L)
    context = tf.distribute.InputContext(num_input_pipelines=8)
    with pytest.raises(DataError, match="4 files .* 8 input pipelines"):
        make_pretraining_dataset(str(shards / "train-*"), 8, L, input_context=context)


def test_a_later_file_of_another_length_is_named_when_read(tmp_path):
    (tmp_path / "a-empty.tfrecord").write_bytes(b"")  # skipped by the first check
    _write(tmp_path / "b-good.tfrecord", 4)
    _write(tmp_path / "c-long.tfrecord", 4, length=32)
    dataset = make_pretraining_dataset(
        str(tmp_path / "*.tfrecord"), 4, L, training=False
    )
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        for _ in dataset.take(4):
            pass
    message = str(error.value)
    assert "max_seq_length 16" in message and "[32]" in message
    assert "c-long.tfrecord" in message


def test_token_ids_outside_the_vocabulary_name_the_file(tmp_path):
    _write(tmp_path / "a-good.tfrecord", 4)
    _write(tmp_path / "b-big.tfrecord", 4, start=500)
    dataset = make_pretraining_dataset(
        str(tmp_path / "*.tfrecord"), 4, L, training=False, vocabulary_size=400
    )
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        for _ in dataset.take(2):
            pass
    message = str(error.value)
    assert "outside the vocabulary of 400" in message and "b-big.tfrecord" in message
    assert "[500]" in message  # the largest id of the first offending record
    # The same files pass with a vocabulary large enough.
    dataset = make_pretraining_dataset(
        str(tmp_path / "*.tfrecord"), 4, L, training=False, vocabulary_size=600
    )
    assert len(list(dataset.take(2))) == 2


def _damage(shards, tmp_path):
    """Copies of the four shards; shard 1 truncated, shard 2 with a flipped byte."""
    for path in sorted(shards.glob("train-*")):
        data = path.read_bytes()
        if path.name == "train-1.tfrecord":
            data = data[: len(data) // 2 + 20]  # past the next header
        elif path.name == "train-2.tfrecord":
            data = bytearray(data)
            data[len(data) // 2] ^= 0xFF
            data = bytes(data)
        (tmp_path / path.name).write_bytes(data)


def test_corrupt_and_truncated_files_are_named_or_skipped(tmp_path, shards, caplog):
    """A truncated shard and one with a flipped byte: `corrupt or truncated TFRecord
    file(s): ...: truncated record at byte N` (was: TensorFlow's `...at N' failed
    with Read less bytes than requested`); with `skip_corrupt_files` they are left
    out, each logged with its count of readable records."""
    _damage(shards, tmp_path)
    pattern = str(tmp_path / "train-*")
    corrupt = find_corrupt_files(list_files(pattern))
    assert [(os.path.basename(path), good) for path, _, good in corrupt] == [
        ("train-1.tfrecord", 5),
        ("train-2.tfrecord", 5),
    ]
    # TensorFlow's words, without its fragments (was: "truncated record at
    # 630' failed with Read less bytes than requested").
    assert re.fullmatch(r"truncated record at byte \d+", corrupt[0][1]), corrupt
    assert re.fullmatch(r"corrupted record at byte \d+", corrupt[1][1]), corrupt
    error = explain_data_loss(pattern)
    assert "train-1.tfrecord" in str(error) and "train-2.tfrecord" in str(error)
    assert "train-0.tfrecord" not in str(error)

    with pytest.raises(tf.errors.DataLossError):
        for _ in make_pretraining_dataset(pattern, 4, L, training=False).take(20):
            pass
    with caplog.at_level("WARNING"):
        dataset = make_pretraining_dataset(
            pattern, 4, L, training=False, skip_corrupt_files=True
        )
    assert "Skipping" in caplog.text and "train-1.tfrecord" in caplog.text
    values = _values(dataset, 5)  # the two good files, 20 records, then repeated
    assert set(values) == set(range(10)) | set(range(300, 310))


def test_stats_json_is_checked(tmp_path):
    _write(tmp_path / "train-0.tfrecord", 4)
    assert read_data_stats(tmp_path) is None
    (tmp_path / "stats.json").write_text(
        json.dumps({"max_seq_length": L, "vocabulary_md5": "abc"})
    )
    assert read_data_stats(tmp_path)["vocabulary_md5"] == "abc"
    make_pretraining_dataset(str(tmp_path / "train-*"), 2, L, vocabulary_md5="abc")
    with pytest.raises(DataError, match=r"stats.json: .*another vocabulary"):
        make_pretraining_dataset(str(tmp_path / "train-*"), 2, L, vocabulary_md5="x")
    (tmp_path / "stats.json").write_text(json.dumps({"max_seq_length": 32}))
    with pytest.raises(DataError, match=r"stats.json: .*length 32 .*16"):
        make_pretraining_dataset(str(tmp_path / "train-*"), 2, L)
    (tmp_path / "stats.json").write_text("{not json")
    with pytest.raises(DataError, match="stats.json is not valid JSON"):
        read_data_stats(tmp_path)


def test_describe_data_errors(tmp_path):
    _write(tmp_path / "train-0.tfrecord", 4)
    # The command to run, not an internal module (was: "build the shards with
    # pretrain/build_data.py (electra_tf.data.tfrecord_writer)").
    with pytest.raises(DataError, match=r"has no stats.json .*electra-build-data") as e:
        describe_data(str(tmp_path / "train-*"))
    assert "electra_tf." not in str(e.value)
    Vocabulary.from_file(REPO / "electra_tf" / "assets" / "vocab.txt").save(
        tmp_path / "vocab.txt"
    )
    (tmp_path / "stats.json").write_text(
        json.dumps({"max_seq_length": L, "vocabulary_md5": "0" * 32})
    )
    with pytest.raises(DataError, match="vocab.txt is not the vocabulary"):
        describe_data(str(tmp_path / "train-*"))


def test_reads_back_shards_built_from_real_text(tmp_path):
    vocabulary = Vocabulary.from_file(REPO / "electra_tf" / "assets" / "vocab.txt")
    stats = build_pretraining_data(
        [CORPUS], vocabulary, tmp_path, max_seq_length=32, num_shards=2, progress=False
    )
    pattern = str(tmp_path / "train-*")
    data_dir, described, length = describe_data(pattern)
    assert (data_dir, described.tokens, length) == (
        str(tmp_path),
        vocabulary.tokens,
        32,
    )
    dataset = make_pretraining_dataset(
        pattern, 16, 32, training=False, vocabulary_md5=vocabulary.md5()
    )
    rows = 0
    for batch in dataset.take(stats["train_examples"] // 16):
        ids, mask = batch["token_ids"].numpy(), batch["padding_mask"].numpy()
        assert (ids[:, 0] == vocabulary.cls_id).all()
        assert ((ids == vocabulary.pad_id) == (mask == 0)).all()
        assert (batch["segment_ids"].numpy() <= mask).all()
        rows += len(ids)
    assert rows == stats["train_examples"] // 16 * 16 > 0


@pytest.mark.parametrize("module", [electra_tf.data.input_pipeline])
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_shards_of_another_vocabulary_with_the_same_special_ids_are_refused(
    tmp_path,
):
    """Every vocabulary our learner writes puts [PAD], [UNK], [CLS], [SEP],
    [MASK] at ids 0-4: data built with the demo vocabulary (4,691 tokens) read
    with another of the same special ids and more tokens had every id in
    range and every example starting with its [CLS], and passed (on main).
    The same shards pass with their own vocabulary, and so do shards of the
    bundled corpus excerpt built with BERT's."""
    from electra_tf.data.input_pipeline import check_vocabulary_of_records

    demo = Vocabulary.from_file(REPO / "electra_tf" / "assets" / "demo_vocab.txt")
    bert = Vocabulary.from_file(REPO / "electra_tf" / "assets" / "vocab.txt")
    specials = demo.tokens[:5]
    other = Vocabulary(
        specials + tuple(t for t in bert.tokens if t not in specials),
        str(tmp_path / "other_vocab.txt"),
    )
    assert other.special_token_ids() == demo.special_token_ids()
    built = {}
    for name, vocabulary in (("demo", demo), ("bert", bert)):
        built[name] = tmp_path / name
        build_pretraining_data(
            [CORPUS], vocabulary, built[name], max_seq_length=64, num_shards=2,
            eval_fraction=0, progress=False,
        )  # fmt: skip
    demo_files = list_files(str(built["demo"] / "train-*"))
    check_vocabulary_of_records(demo_files, demo)
    check_vocabulary_of_records(list_files(str(built["bert"] / "train-*")), bert)
    with pytest.raises(DataError) as error:
        check_vocabulary_of_records(demo_files, other)
    assert str(error.value).startswith(f"{demo_files[0]}: read with {other.path}, "), (
        str(error.value)
    )
    assert "words are not what WordPiece makes with it (e.g. '[unused" in str(
        error.value
    )
    assert str(error.value).endswith(
        "the data were built with another vocabulary that puts the special "
        "tokens at the same ids; pass theirs with --vocab"
    )


def test_data_without_held_out_shards_warn_that_the_run_will_not_evaluate(
    tmp_path, caplog
):
    """`--data` whose build held no document out: the run trained and exported
    with no held-out evaluation and no eval_results.json, and said nothing (on
    main; the warning came only when the data were built)."""
    from electra_tf.data.preparation import prepare_pretraining_data

    bert = Vocabulary.from_file(REPO / "electra_tf" / "assets" / "vocab.txt")
    build_pretraining_data(
        [CORPUS], bert, tmp_path / "data", max_seq_length=64, num_shards=1,
        eval_fraction=0, progress=False,
    )  # fmt: skip
    with caplog.at_level("WARNING"):
        data = prepare_pretraining_data(
            str(tmp_path / "run"), 64, data=str(tmp_path / "data" / "train-*")
        )
    assert data.eval_data == ""
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        f"{tmp_path / 'data'} has no held-out data (no eval-* shards beside the "
        "--data files): this run trains and exports without a held-out "
        "evaluation and writes no eval_results.json; pass --eval-data, or "
        "rebuild the data from more documents or with a larger --eval-fraction"
    ]
