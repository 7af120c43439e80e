"""The pre-training input pipeline: TFRecord shards -> static-shaped batches."""

from __future__ import annotations

import json
import os

import tensorflow as tf

# Feature names in the files (the original's) -> input names of the models
# (keras-hub's).
FEATURE_TO_INPUT = {
    "input_ids": "token_ids",
    "segment_ids": "segment_ids",
    "input_mask": "padding_mask",
}


class DataError(ValueError):
    """TFRecords are missing, corrupt or of another sequence length."""


def list_files(file_pattern: str) -> list[str]:
    """Files matching comma-separated glob patterns, sorted; none is an error."""
    files = []
    for pattern in file_pattern.split(","):
        if pattern.strip():
            files.extend(tf.io.gfile.glob(pattern.strip()))
    if not files:
        raise DataError(f"no TFRecord files match {file_pattern!r}")
    return sorted(set(files))


def check_sequence_length(path: str, max_seq_length: int) -> None:
    """Reads the first record of `path`; raises `DataError` if it does not fit."""
    try:
        record = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
    except tf.errors.OpError as error:
        raise DataError(
            f"{path} is not a readable TFRecord file: {error.message}"
        ) from error
    if record is None:
        raise DataError(f"{path} holds no records")
    try:
        example = tf.train.Example.FromString(record.numpy())
        lengths = {
            name: len(example.features.feature[name].int64_list.value)
            for name in FEATURE_TO_INPUT
        }
    except Exception as error:  # a protobuf decode error has no common base
        raise DataError(
            f"{path} does not hold tf.train.Example records: {error}"
        ) from error
    for name, length in lengths.items():
        if length != max_seq_length:
            raise DataError(
                f"{path} holds sequences of length {length} (feature {name!r}) but "
                f"the run expects max_seq_length {max_seq_length}; rebuild the data "
                "or pass a matching --max-seq-length"
            )


def read_data_stats(data_dir: str) -> dict | None:
    """`stats.json` written by `build_pretraining_data`, or None."""
    path = os.path.join(data_dir, "stats.json")
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        return json.load(f)


def describe_data(file_pattern: str):
    """(directory, `Vocabulary`, max_seq_length) of shards built by this project.

    Reads the `vocab.txt` and `stats.json` that `build_pretraining_data` writes
    next to the shards matching `file_pattern`.
    """
    from electra_tf.vocabulary import Vocabulary

    data_dir = os.path.dirname(list_files(file_pattern)[0])
    stats = read_data_stats(data_dir)
    if stats is None:
        raise DataError(f"{data_dir} has no stats.json; was it built by build_data?")
    vocabulary = Vocabulary.from_file(os.path.join(data_dir, "vocab.txt"))
    return data_dir, vocabulary, stats["max_seq_length"]


def make_pretraining_dataset(
    file_pattern: str,
    batch_size: int,
    max_seq_length: int,
    training: bool = True,
    seed: int = 0,
    input_context: tf.distribute.InputContext | None = None,
    shuffle_buffer: int = 10000,
) -> tf.data.Dataset:
    """Batches of `token_ids`, `segment_ids`, `padding_mask`, int32 [batch, length].

    Training: files shuffled, read interleaved, examples shuffled, repeated.
    Evaluation: files in order, no shuffling, also repeated (evaluation runs a
    fixed number of steps, and each Keras evaluation restarts the iterator, so
    every evaluation sees the same batches). Batches always have the full
    size (`drop_remainder`), which TPUs and XLA need.

    With an `input_context` (from `distribute_datasets_from_function`), each
    input pipeline (host) reads a disjoint subset of the files and batches at
    the per-replica size.
    """
    files = list_files(file_pattern)
    check_sequence_length(files[0], max_seq_length)
    if input_context is not None:
        pipelines = input_context.num_input_pipelines
        if pipelines > 1:
            if len(files) < pipelines:
                raise DataError(
                    f"{len(files)} files for {pipelines} input pipelines: build "
                    "at least one shard per host (--num-shards)"
                )
            files = files[input_context.input_pipeline_id :: pipelines]
        batch_size = input_context.get_per_replica_batch_size(batch_size)

    dataset = tf.data.Dataset.from_tensor_slices(files)
    if training:
        dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.repeat()
    dataset = dataset.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(len(files), 8),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if training:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed)
    dataset = dataset.batch(batch_size, drop_remainder=True)
    spec = {
        name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
        for name in FEATURE_TO_INPUT
    }

    def parse(records):
        features = tf.io.parse_example(records, spec)
        return {
            FEATURE_TO_INPUT[name]: tf.cast(value, tf.int32)
            for name, value in features.items()
        }

    dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    return dataset.prefetch(tf.data.AUTOTUNE)
