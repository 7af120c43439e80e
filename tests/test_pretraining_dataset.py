"""The input pipeline: static shapes, per-host sharding, clear errors."""

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.data.pretraining_dataset import DataError, make_pretraining_dataset

L = 16


def _write(path, count, length=L, start=0):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for i in range(start, start + count):
            ids = np.full(length, i, np.int64)
            feature = {
                name: tf.train.Feature(int64_list=tf.train.Int64List(value=ids))
                for name in ("input_ids", "input_mask", "segment_ids")
            }
            writer.write(
                tf.train.Example(
                    features=tf.train.Features(feature=feature)
                ).SerializeToString()
            )


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    directory = tmp_path_factory.mktemp("shards")
    for shard in range(4):
        _write(directory / f"train-{shard}.tfrecord", 10, start=100 * shard)
    return directory


def test_static_shapes_names_and_dtypes(shards):
    dataset = make_pretraining_dataset(str(shards / "train-*"), 8, L)
    for name, spec in dataset.element_spec.items():
        assert spec.shape == (8, L) and spec.dtype == tf.int32, name
    assert set(dataset.element_spec) == {"token_ids", "segment_ids", "padding_mask"}
    batch = next(iter(dataset))
    assert batch["token_ids"].shape == (8, L)


def test_per_host_sharding_reads_disjoint_files(shards):
    seen = []
    for host in range(2):
        context = tf.distribute.InputContext(
            num_input_pipelines=2, input_pipeline_id=host, num_replicas_in_sync=2
        )
        dataset = make_pretraining_dataset(
            str(shards / "train-*"), 4, L, training=False, input_context=context
        )
        batch = next(iter(dataset))
        assert batch["token_ids"].shape == (2, L)  # per-replica batch
        values = set()
        for batch in dataset.take(10):
            values |= set(batch["token_ids"][:, 0].numpy() // 100)
        seen.append(values)
    assert seen[0] and seen[1] and not seen[0] & seen[1]


def test_errors_name_the_culprit(tmp_path, shards):
    with pytest.raises(DataError, match="no TFRecord files match"):
        make_pretraining_dataset(str(tmp_path / "nothing-*"), 8, L)
    _write(tmp_path / "long.tfrecord", 2, length=32)
    with pytest.raises(DataError, match="long.tfrecord holds sequences of length 32"):
        make_pretraining_dataset(str(tmp_path / "long.tfrecord"), 8, L)
    (tmp_path / "junk.tfrecord").write_bytes(b"this is not a tfrecord file at all")
    with pytest.raises(DataError, match="junk.tfrecord"):
        make_pretraining_dataset(str(tmp_path / "junk.tfrecord"), 8, L)
