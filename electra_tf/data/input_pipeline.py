"""The pre-training input pipeline: TFRecord shards -> static-shaped batches.

>>> import shutil, tempfile
>>> from electra_tf.data.corpus import DEMO_CORPUS
>>> from electra_tf.data.tfrecord_writer import build_pretraining_data
>>> from electra_tf.data.vocabulary import BUNDLED_VOCABULARY, Vocabulary
>>> data_dir = tempfile.mkdtemp()
>>> _ = build_pretraining_data(
...     [os.path.join(DEMO_CORPUS, "pydoc.txt.gz")],
...     Vocabulary.from_file(BUNDLED_VOCABULARY),
...     data_dir,
...     max_seq_length=128,
...     progress=False,
... )
>>> dataset = make_pretraining_dataset(
...     os.path.join(data_dir, "train-*"), batch_size=32, max_seq_length=128
... )
>>> for name, spec in dataset.element_spec.items():
...     print(name, spec.shape, spec.dtype.name)
token_ids (32, 128) int32
segment_ids (32, 128) int32
padding_mask (32, 128) int32
>>> shutil.rmtree(data_dir)

Under a `tf.distribute` strategy with several hosts, build it per host, so that
each host reads its own files and batches at the per-replica size:

    strategy.distribute_datasets_from_function(
        lambda context: make_pretraining_dataset(
            pattern, global_batch_size, 128, input_context=context
        )
    )
"""

from __future__ import annotations

import json
import logging
import os
import re
import unicodedata

import tensorflow as tf

from electra_tf.data.tfrecord_format import FEATURE_NAMES, STATS_FILE, VOCABULARY_FILE
from electra_tf.data.vocabulary import SPECIAL_TOKENS, Vocabulary
from electra_tf.errors import ElectraError

# Feature names in the files (the original builder's) -> model input names
# (keras-hub's).
FEATURE_TO_INPUT = {
    "input_ids": "token_ids",
    "segment_ids": "segment_ids",
    "input_mask": "padding_mask",
}
# Files read concurrently. More mixes examples from more shards but holds a read
# buffer per file.
_MAX_CYCLE_LENGTH = 16

logger = logging.getLogger(__name__)


class DataError(ElectraError, ValueError):
    """TFRecords are missing, unreadable, or do not match the run."""


def list_files(file_pattern: str) -> list[str]:
    """Files matching `file_pattern` (comma-separated globs), sorted.

    Raises:
        DataError: naming the pattern, if nothing matches.
    """
    files = set()
    for pattern in file_pattern.split(","):
        if pattern.strip():
            files.update(tf.io.gfile.glob(pattern.strip()))
    if not files:
        raise DataError(f"no TFRecord files match {file_pattern!r}")
    return sorted(files)


def read_data_stats(data_dir: str) -> dict | None:
    """The `stats.json` that `build_pretraining_data` wrote in `data_dir`, or None.

    Raises:
        DataError: the file exists but is not a JSON object.
    """
    path = os.path.join(os.fspath(data_dir), STATS_FILE)
    if not tf.io.gfile.exists(path):
        return None
    try:
        with tf.io.gfile.GFile(path) as f:
            stats = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise DataError(f"{path} is not valid JSON: {error}") from error
    if not isinstance(stats, dict):
        raise DataError(f"{path} does not hold a JSON object")
    return stats


def check_data_stats(
    data_dir: str, max_seq_length: int, vocabulary_md5: str | None = None
) -> dict | None:
    """Checks `data_dir/stats.json` (if any) against the run; returns it.

    Raises:
        DataError: the data were built with another `max_seq_length`, or with
            another vocabulary than the one whose md5 is `vocabulary_md5`.
    """
    stats = read_data_stats(data_dir)
    if stats is None:
        return None
    path = os.path.join(data_dir, STATS_FILE)
    built = stats.get("max_seq_length")
    if built is not None and built != max_seq_length:
        raise DataError(
            f"{path}: the TFRecords hold sequences of length {built} but the run "
            f"expects max_seq_length {max_seq_length}; rebuild the data or pass "
            "a matching max_seq_length"
        )
    built_md5 = stats.get("vocabulary_md5")
    if vocabulary_md5 and built_md5 and built_md5 != vocabulary_md5:
        raise DataError(
            f"{path}: the TFRecords were built with another vocabulary "
            f"(md5 {built_md5}) than the run's (md5 {vocabulary_md5})"
        )
    return stats


def check_sequence_length(files: list[str], max_seq_length: int) -> None:
    """Reads the first record of the first non-empty file of `files` and checks
    that its features have length `max_seq_length`.

    A cheap, early check of the common mistake (data built for another length);
    the pipeline itself also checks every record, see `make_pretraining_dataset`.

    Raises:
        DataError: naming the file, if it is not a TFRecord file of
            `tf.train.Example`s with our features, or holds another length; or if
            every file is empty.
    """
    path, example = first_example(files)
    features = example.features.feature
    for name in FEATURE_NAMES:
        length = len(features[name].int64_list.value)
        if length != max_seq_length:
            raise DataError(
                f"{path} holds sequences of length {length} (feature {name!r}) but "
                f"the run expects max_seq_length {max_seq_length}; rebuild the data "
                "or pass a matching max_seq_length"
            )


def first_example(files: list[str]) -> tuple[str, tf.train.Example]:
    """The first record of the first non-empty file of `files`, with its file.

    Raises:
        DataError: naming the file, if it is a directory, not a TFRecord file
            of `tf.train.Example`s with our features; or if every file is empty.
    """
    for path in files:
        if tf.io.gfile.isdir(path):
            raise DataError(f"{path} is a directory, not a TFRecord file")
        try:
            record = next(iter(tf.data.TFRecordDataset(path).take(1)), None)
        except tf.errors.OpError as error:
            reason = _read_error(error)
            raise DataError(
                f"{path} is not a readable TFRecord file: {reason}"
            ) from error
        if record is not None:
            break
    else:
        raise DataError(f"the TFRecord files hold no records: {', '.join(files[:3])}")
    try:
        example = tf.train.Example.FromString(record.numpy())
    except Exception as error:  # protobuf's DecodeError has no stable import path
        raise DataError(
            f"{path} does not hold tf.train.Example records: {error}"
        ) from error
    features = example.features.feature
    for name in FEATURE_NAMES:
        if name not in features:
            raise DataError(
                f"{path} has no feature {name!r} (it has {sorted(features)}); "
                "build the data with electra-build-data (pretrain/build_data.py)"
            )
    return path, example


# Records read per file, and files read, by `check_vocabulary_of_records`.
VOCABULARY_CHECK_RECORDS = 200
VOCABULARY_CHECK_FILES = 4


def check_vocabulary_of_records(files: list[str], vocabulary: Vocabulary) -> None:
    """Checks a sample of the records of `files` against `vocabulary`.

    Reads the first `VOCABULARY_CHECK_RECORDS` records of the first
    `VOCABULARY_CHECK_FILES` files: every id must be inside the vocabulary,
    every example must start with its `[CLS]` id (the builder's examples all
    do), and the words must be ones WordPiece makes with the vocabulary
    (`_WordStarts`): data built with another vocabulary that puts `[CLS]` at
    the same id (as every vocabulary our learner writes does) fail that.
    `stats.json`'s md5, when there is one, is checked besides.

    Raises:
        DataError: naming the file, the record and the id, and the vocabulary.
    """
    cls_id, size = vocabulary.cls_id, vocabulary.size
    word_starts = _WordStarts(vocabulary)
    for path in files[:VOCABULARY_CHECK_FILES]:
        records = tf.data.TFRecordDataset(path).take(VOCABULARY_CHECK_RECORDS)
        try:
            for index, record in enumerate(records):
                features = tf.train.Example.FromString(record.numpy()).features
                ids = features.feature["input_ids"].int64_list.value
                if not ids:
                    continue
                largest = max(ids)
                if largest >= size:
                    raise DataError(
                        f"{path}, record {index}: token id {largest} is outside "
                        f"the vocabulary {vocabulary.path} ({size} tokens): the "
                        "data were built with another vocabulary; pass theirs "
                        "with --vocab"
                    )
                if ids[0] != cls_id:
                    raise DataError(
                        f"{path}, record {index}: starts with token id {ids[0]}, "
                        f"but [CLS] is {cls_id} in {vocabulary.path}: the data "
                        "were built with another vocabulary; pass theirs with "
                        "--vocab"
                    )
                word_starts.add(ids)
        except (tf.errors.OpError, KeyError):
            continue  # damaged files are named by the pipeline's own checks
    if word_starts.misread():
        raise DataError(
            f"{files[0]}: read with {vocabulary.path}, {word_starts.impossible} of "
            f"the first {word_starts.words} words are not what WordPiece makes "
            f"with it (e.g. {word_starts.example}): the data were built with "
            "another vocabulary that puts the special tokens at the same ids; "
            "pass theirs with --vocab"
        )


class _WordStarts:
    """Whether records read with a vocabulary look built with it: the share
    of their words that WordPiece with that vocabulary could not have made.

    A word is a token and the `##` pieces after it. WordPiece splits every
    punctuation mark off as a word of its own and segments each word by
    greedy longest match, so with the vocabulary the data were built with no
    word holds a token of several characters with a punctuation mark in it
    (`[unused5]`), none starts with `##` after a punctuation mark, and every
    word's pieces are its greedy segmentation. Read with another vocabulary,
    every id means an arbitrary token, and many words break one of these.
    Words next to `[CLS]` or `[SEP]` are not counted: an example's end may cut
    a sentence mid-word; nor are words with `[UNK]`.
    """

    # Words read before judging, and the share of them that may break a rule.
    ENOUGH = 50
    SHARE = 0.05
    EXAMPLES_SHOWN = 3

    def __init__(self, vocabulary: Vocabulary):
        self._vocabulary = vocabulary
        self._special = {vocabulary.id(token) for token in SPECIAL_TOKENS}
        self.words = self.impossible = 0
        self._examples: list[str] = []

    def add(self, ids) -> None:
        tokens = self._vocabulary.tokens
        word: list[str] = []
        after_boundary = True  # after [CLS]/[SEP]: a cut word may start here
        for token_id in ids:
            if token_id in self._special:
                word, after_boundary = [], True  # the word before is not counted
                continue
            token = tokens[token_id]
            if token.startswith("##") and word:
                word.append(token)
                continue
            if word and not after_boundary:
                self._judge(word)
            after_boundary = after_boundary and token.startswith("##")
            word = [token]

    def _judge(self, word: list[str]) -> None:
        self.words += 1
        if not self._possible(word):
            self.impossible += 1
            if len(self._examples) < self.EXAMPLES_SHOWN:
                self._examples.append(" ".join(word))

    def _possible(self, word: list[str]) -> bool:
        first = word[0]
        if first.startswith("##"):
            return False  # a continuation after a punctuation mark
        if len(first) > 1 and any(_is_punctuation(c) for c in first):
            return False
        text = first + "".join(piece[2:] for piece in word[1:])
        return _greedy_pieces(text, self._vocabulary) == word

    @property
    def example(self) -> str:
        return ", ".join(repr(e) for e in self._examples)

    def misread(self) -> bool:
        return self.words >= self.ENOUGH and self.impossible > self.SHARE * self.words


def _is_punctuation(character: str) -> bool:
    """As BERT's tokenizer counts punctuation: Unicode P* and ASCII symbols."""
    code = ord(character)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(character).startswith("P")


def _greedy_pieces(text: str, vocabulary: Vocabulary) -> list[str] | None:
    """WordPiece's segmentation of one word: the longest token first, `##`
    pieces after; None if some part matches no token."""
    pieces, start = [], 0
    while start < len(text):
        for end in range(len(text), start, -1):
            piece = text[start:end] if start == 0 else "##" + text[start:end]
            if vocabulary.has(piece):
                pieces.append(piece)
                start = end
                break
        else:
            return None
    return pieces


def find_corrupt_files(files: list[str]) -> list[tuple[str, str, int]]:
    """Reads every record of every file: `(file, reason, good_records)` per bad one.

    TensorFlow's own error for a damaged record ("corrupted record at 83463")
    does not say which file it is in; this does. It reads all the data, so it
    runs once when asked (`skip_corrupt_files`) or after such an error.
    """
    corrupt = []
    for path in files:
        good = 0
        try:
            for _ in tf.data.TFRecordDataset(path):
                good += 1
        except tf.errors.OpError as error:
            corrupt.append((path, _read_error(error), good))
    return corrupt


def _read_error(error: tf.errors.OpError) -> str:
    """What a TFRecord reader's error says, without TensorFlow's fragments:
    `truncated record at byte 630` (was: "truncated record at 630' failed
    with Read less bytes than requested"), `corrupted record at byte 0`."""
    text = error.message.rsplit("}}", 1)[-1].split(" [Op:")[0].strip()
    match = re.search(r"(truncated|corrupted) record at (\d+)", text)
    if match is None:
        return text
    return f"{match[1]} record at byte {match[2]}"


def explain_data_loss(file_pattern: str) -> DataError:
    """A `DataError` naming the damaged file(s) matching `file_pattern`."""
    corrupt = find_corrupt_files(list_files(file_pattern))
    if not corrupt:
        return DataError(f"a record of {file_pattern!r} could not be read")
    named = "; ".join(f"{path}: {reason}" for path, reason, _ in corrupt)
    return DataError(
        f"corrupt or truncated TFRecord file(s): {named}. Rebuild them, or pass "
        "--skip-corrupt-files to train without them"
    )


def data_check_failure(error: tf.errors.InvalidArgumentError) -> DataError | None:
    """The `DataError` for a failed record check of `_parse`, else None.

    Those checks run inside the input pipeline, where they can only fail as
    an `InvalidArgumentError` wrapped in graph details; this keeps their text.
    """
    message = error.message
    if "assertion failed: [" not in message:
        return None
    text = message.split("assertion failed: ", 1)[1].split("\n", 1)[0]
    if "sequence length" not in text and "outside the vocabulary" not in text:
        return None
    return DataError(" ".join(part.strip("[]") for part in text.split("] [")))


def describe_data(file_pattern: str):
    """What a run needs to know about shards built by `build_pretraining_data`.

    Reads the `vocab.txt` and `stats.json` written next to the shards.

    Returns:
        `(data_dir, vocabulary, max_seq_length)`: the shards' directory, their
        `electra_tf.data.vocabulary.Vocabulary` and their sequence length.

    Raises:
        DataError: no file matches, `stats.json` is missing or incomplete, or
            `vocab.txt` is not the vocabulary the shards were built with.
    """
    data_dir = os.path.dirname(list_files(file_pattern)[0])
    stats = read_data_stats(data_dir)
    if stats is None or "max_seq_length" not in stats:
        raise DataError(
            f"{data_dir} has no {STATS_FILE} with max_seq_length: build the shards "
            "with electra-build-data (pretrain/build_data.py)"
        )
    vocabulary = Vocabulary.from_file(os.path.join(data_dir, VOCABULARY_FILE))
    if stats.get("vocabulary_md5") not in (None, vocabulary.md5()):
        raise DataError(
            f"{vocabulary.path} is not the vocabulary the shards in {data_dir} "
            "were built with (its md5 differs from the one in stats.json)"
        )
    return data_dir, vocabulary, stats["max_seq_length"]


def make_pretraining_dataset(
    file_pattern: str,
    batch_size: int,
    max_seq_length: int,
    training: bool = True,
    seed: int = 0,
    input_context: tf.distribute.InputContext | None = None,
    shuffle_buffer: int = 10000,
    vocabulary_md5: str | None = None,
    vocabulary_size: int | None = None,
    skip_corrupt_files: bool = False,
) -> tf.data.Dataset:
    """Batches of pre-training examples from TFRecords of `tfrecord_writer`.

    Training: the file order is shuffled (anew each pass), files are read
    interleaved, examples are shuffled through a `shuffle_buffer`, and the data
    repeat forever. Evaluation (`training=False`): files in order, no shuffling,
    also repeated, so that evaluation can run a fixed number of steps whatever
    the held-out size; each new iterator starts over, so every evaluation sees
    the same batches. With a fixed `seed` the order of examples is reproducible.

    Batches always have the full size (`drop_remainder`): static shapes, as XLA
    and TPUs need.

    Args:
        file_pattern: glob(s) of the shards, comma-separated
            (e.g. "data/train-*").
        batch_size: the GLOBAL batch size. With an `input_context`, each replica
            gets `input_context.get_per_replica_batch_size(batch_size)`.
        max_seq_length: L; must match the files.
        training: shuffle (see above).
        seed: seed of the file and example shuffles.
        input_context: from `distribute_datasets_from_function`: each input
            pipeline (host) reads a disjoint subset of the files, file
            `i::num_input_pipelines`, so build at least one shard per host.
        shuffle_buffer: examples in the shuffle buffer (training).
        vocabulary_md5: if given, the vocabulary recorded in `stats.json`
            (when present beside the files) must have this md5.
        vocabulary_size: if given, every token id must be below it; a record
            with another id stops the iteration with an `InvalidArgumentError`
            naming the file (an out-of-range id would otherwise fail inside
            the embedding lookup on CPU, and read garbage on GPUs and TPUs).
        skip_corrupt_files: read every file once first (see
            `find_corrupt_files`) and leave out those with a damaged or
            truncated record, logging each with its count of good records.
            Without it, such a record stops the iteration with TensorFlow's
            `DataLossError`; `explain_data_loss` then names the file.

    Returns:
        A `tf.data.Dataset` of `{"token_ids", "segment_ids", "padding_mask"}`,
        each int32 [batch, max_seq_length] (the keras-hub input names).

    Raises:
        DataError: no file matches (naming the pattern); the first record or
            `stats.json` shows another sequence length (naming the file and
            both lengths) or vocabulary; fewer files than input pipelines.
            Later records of another length stop the iteration with an
            `InvalidArgumentError` naming the file and both lengths.
    """
    files = list_files(file_pattern)
    if skip_corrupt_files:
        corrupt = find_corrupt_files(files)
        for path, reason, good in corrupt:
            logger.warning(
                "Skipping %s (%s; %d readable records before it)", path, reason, good
            )
        files = [path for path in files if path not in {c[0] for c in corrupt}]
        if not files:
            raise DataError(f"every file matching {file_pattern!r} is corrupt")
    check_sequence_length(files, max_seq_length)
    check_data_stats(os.path.dirname(files[0]), max_seq_length, vocabulary_md5)
    if input_context is not None:
        pipelines = input_context.num_input_pipelines
        if len(files) < pipelines:
            raise DataError(
                f"{len(files)} files match {file_pattern!r} for {pipelines} input "
                "pipelines (hosts): build at least one shard per host"
            )
        # Files, not examples, are split: each host reads only its own files.
        files = files[input_context.input_pipeline_id :: pipelines]
        batch_size = input_context.get_per_replica_batch_size(batch_size)

    names = tf.constant(files)
    dataset = tf.data.Dataset.range(len(files))
    if training:
        dataset = dataset.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.repeat()
    # Each record travels with the index of its file, so that a record of the
    # wrong length can be traced to its file (see `_parse`).
    dataset = dataset.interleave(
        lambda index: tf.data.TFRecordDataset(names[index]).map(
            lambda record: (record, index)
        ),
        cycle_length=min(len(files), _MAX_CYCLE_LENGTH),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if training:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed)
    dataset = dataset.batch(batch_size, drop_remainder=True)
    dataset = dataset.map(
        lambda records, indices: _parse(
            records, indices, names, batch_size, max_seq_length, vocabulary_size
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    return dataset.prefetch(tf.data.AUTOTUNE)


def _parse(
    records, file_indices, file_names, batch_size, max_seq_length, vocabulary_size
):
    """Serialized examples [B] -> model inputs, int32 [B, L].

    Parsed as ragged then checked, rather than as fixed-length (whose error on
    a length mismatch names neither the file nor the lengths).
    """
    spec = {name: tf.io.RaggedFeature(tf.int64) for name in FEATURE_TO_INPUT}
    parsed = tf.io.parse_example(records, spec)
    inputs = {}
    for name, input_name in FEATURE_TO_INPUT.items():
        values = parsed[name]  # ragged [B, None]
        lengths = values.row_lengths()
        wrong = tf.not_equal(lengths, max_seq_length)
        first_wrong = tf.argmax(tf.cast(wrong, tf.int32))
        check = tf.debugging.Assert(
            tf.logical_not(tf.reduce_any(wrong)),
            [
                f"TFRecords of another sequence length than max_seq_length "
                f"{max_seq_length}: feature {name!r} has length",
                tf.gather(lengths, first_wrong),
                "in",
                tf.gather(file_names, tf.gather(file_indices, first_wrong)),
            ],
        )
        checks = [check]
        if vocabulary_size and name == "input_ids":
            out_of_range = tf.reduce_any(
                (values < 0) | (values >= vocabulary_size), axis=1
            )
            first_bad = tf.argmax(tf.cast(out_of_range, tf.int32))
            checks.append(
                tf.debugging.Assert(
                    tf.logical_not(tf.reduce_any(out_of_range)),
                    [
                        f"token ids outside the vocabulary of {vocabulary_size} "
                        "tokens (data built with another vocabulary?): max id",
                        tf.reduce_max(tf.gather(values, first_bad)),
                        "in",
                        tf.gather(file_names, tf.gather(file_indices, first_bad)),
                    ],
                )
            )
        with tf.control_dependencies(checks):
            dense = values.to_tensor(shape=[batch_size, max_seq_length])
        inputs[input_name] = tf.cast(dense, tf.int32)
    return inputs
