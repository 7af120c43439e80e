"""Raw text -> sharded TFRecords of pre-training examples, with `stats.json`.

>>> import shutil, tempfile
>>> from electra_tf.data.corpus import DEMO_CORPUS
>>> from electra_tf.data.vocabulary import BUNDLED_VOCABULARY, Vocabulary
>>> output_dir = tempfile.mkdtemp()
>>> stats = build_pretraining_data(
...     [os.path.join(DEMO_CORPUS, "pydoc.txt.gz")],
...     Vocabulary.from_file(BUNDLED_VOCABULARY),
...     output_dir,
...     max_seq_length=128,
...     num_shards=2,
...     progress=False,
... )
>>> for name in sorted(os.listdir(output_dir)):
...     print(name)
eval-00000-of-00001.tfrecord
stats.json
train-00000-of-00002.tfrecord
train-00001-of-00002.tfrecord
vocab.txt
>>> stats["documents"], stats["train_examples"], stats["eval_examples"]
(120, 1146, 6)
>>> shutil.rmtree(output_dir)

* `train-*` and `eval-*` shards: one `tf.train.Example` per record, int64 features
  `input_ids`, `input_mask`, `segment_ids` [max_seq_length] (see
  `tfrecord_format`); whole documents are held out for `eval`;
* `vocab.txt`: the vocabulary the ids refer to;
* `stats.json`: what was built, from what and how (see `build_pretraining_data`).

How: documents are read in corpus order and cut into chunks of whole documents;
each chunk is tokenised (keras-hub's WordPiece, tensorflow-text ops, thousands of
sentences per call), packed (`example_builder`) and serialized
(`tfrecord_format`), in this process or in worker processes; the main process
deals the examples round-robin to the shards, in chunk order.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import json
import logging
import multiprocessing
import os
import re
import sys
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import tensorflow as tf

from electra_tf.atomic_write import TEMPORARY_PREFIX, write_text_atomically
from electra_tf.data.corpus import CorpusError, expand_paths, iter_documents
from electra_tf.data.example_builder import ExampleBuilder, pairs_to_features
from electra_tf.data.tfrecord_format import (
    FEATURE_NAMES,
    SHARD_NAME,
    STATS_FILE,
    VOCABULARY_FILE,
    serialize_examples,
)
from electra_tf.errors import ElectraError
from electra_tf.presets import PRESETS

logger = logging.getLogger(__name__)

SPLITS = ("train", "eval")
# A build whose share of [UNK] tokens is above this warns: the vocabulary
# does not fit the text (BERT's uncased vocabulary gives ~0.1% on English).
UNKNOWN_TOKEN_WARNING = 0.05
# The files a build owns in its output directory (and may replace on overwrite),
# also as left half-written by a killed build: a shard being written is
# `TEMPORARY_PREFIX` + its name (hidden, and never matched by `train-*`, so no
# reader picks up a partial shard), `stats.json` and `vocab.txt` are
# `TEMPORARY_PREFIX` + pid + "-" + their name (`write_text_atomically`).
_OWN_FILE = re.compile(
    rf"({re.escape(TEMPORARY_PREFIX)}(\d+-)?)?"
    rf"((train|eval)-\d{{5}}-of-\d{{5}}\.tfrecord|{STATS_FILE}|{VOCABULARY_FILE})"
)
# Sentences per unit of work (whole documents, so a chunk may hold more). Chunks,
# not processes, carry the random seeds: the output is the same whatever the
# number of processes.
CHUNK_SENTENCES = 16384
# Sentences per tokenizer call. Measured on the project's 2-core CPU: one
# tf.function call on 4096 sentences tokenises ~2-3M word pieces/s, faster than
# a tf.data pipeline over the same batches (slicing and batching the strings cost
# more than the overlap gains).
_TOKENIZE_BATCH = 4096
# Chunks queued per worker process: keeps the workers busy without reading the
# corpus far ahead of them.
_CHUNKS_IN_FLIGHT_PER_PROCESS = 2


class BuildError(ElectraError, ValueError):
    """The build's arguments or output directory do not allow it to run."""


def check_output_dir(output_dir, overwrite: bool = False) -> None:
    """Raises `BuildError` unless `output_dir` may receive a build.

    It may if it does not exist, is empty, or `overwrite` is set. Call it before
    slow preparations (learning a vocabulary) to fail fast.
    """
    output_dir = os.fspath(output_dir)
    if not tf.io.gfile.exists(output_dir):
        return
    if not tf.io.gfile.isdir(output_dir):
        raise BuildError(f"output path {output_dir} exists and is not a directory")
    existing = sorted(tf.io.gfile.listdir(output_dir))
    if existing and not overwrite:
        shown = ", ".join(existing[:3]) + (", ..." if len(existing) > 3 else "")
        raise BuildError(
            f"output directory {output_dir} is not empty ({shown}); pass "
            "--overwrite to replace the files of a previous build (nothing else "
            "in it is deleted), or choose another --output-dir"
        )


def build_pretraining_data(
    input_files,
    vocabulary,
    output_dir,
    max_seq_length: int = 128,
    num_shards: int = 8,
    num_eval_shards: int = 1,
    eval_fraction: float = 0.02,
    lowercase: bool = True,
    strip_accents: bool = True,
    seed: int = 0,
    num_processes: int = 1,
    overwrite: bool = False,
    progress: bool = True,
) -> dict:
    """Builds sharded pre-training TFRecords from raw text.

    Args:
        input_files: corpus files, directories or glob patterns (see
            `corpus.expand_paths`: one sentence per line, blank line between
            documents; plain or .gz; local or gs://), or `tfds:` sources (see
            `tfds_corpus`).
        vocabulary: an `electra_tf.data.vocabulary.Vocabulary`.
        output_dir: where the shards, `vocab.txt` and `stats.json` go; created
            if missing; must be empty unless `overwrite`.
        max_seq_length: L, the length of every example.
        num_shards: number of `train-*` files. Use a multiple of the number of
            hosts that will read them (each host reads a disjoint subset).
        num_eval_shards: number of `eval-*` files (if any document is held out).
        eval_fraction: share of DOCUMENTS held out for evaluation, chosen by a
            hash of (seed, document index); see `is_held_out`.
        lowercase, strip_accents: text normalisation before WordPiece (True for
            uncased vocabularies).
        seed: seeds the packing randomness and the hold-out. The same inputs
            and arguments give byte-identical files.
        num_processes: processes that tokenise, pack and serialize (each loads
            TensorFlow, a few seconds). The output does not depend on it.
        overwrite: allow a non-empty `output_dir`. Only the files a build writes
            (`train-*`/`eval-*` shards, `vocab.txt`, `stats.json`, leftovers of a
            killed build) are replaced or removed; the directory itself and any
            other file are never deleted.
        progress: show a tqdm progress bar on stderr.

    Returns:
        The statistics also written to `stats.json`: counts of `documents`,
        `examples` and `tokens` (word pieces of the corpus, special tokens
        excluded), each also split into train and eval; `padding_fraction`
        (padding / all positions); `unknown_token_rate` ([UNK] / tokens);
        `max_seq_length`; `vocabulary_size` and `vocabulary_md5` (md5 of the
        `vocab.txt` written); and the arguments that shaped the data.

    Raises:
        CorpusError: an input is missing, binary or not UTF-8 (naming it), or
            the corpus holds no text.
        BuildError: bad arguments, or `output_dir` is not empty.

    Shards are written under temporary hidden names and renamed only once the
    whole build has succeeded: a failed or killed build leaves no shard under a
    final name, and a failed overwrite leaves the previous build in place.
    """
    _check_arguments(
        max_seq_length, num_shards, num_eval_shards, eval_fraction, num_processes
    )
    config = _BuildConfig(
        vocabulary=vocabulary,
        max_seq_length=max_seq_length,
        lowercase=lowercase,
        strip_accents=strip_accents,
        seed=seed,
        eval_fraction=eval_fraction,
    )
    files = expand_paths(input_files)
    output_dir = os.fspath(output_dir)
    check_output_dir(output_dir, overwrite)
    tf.io.gfile.makedirs(output_dir)

    shard_counts = {"train": num_shards}
    if eval_fraction > 0:
        shard_counts["eval"] = num_eval_shards
    writers: dict[str, _ShardedWriter] = {}
    totals = _Counts()
    try:
        for split, count in shard_counts.items():
            writers[split] = _ShardedWriter(output_dir, split, count)
        from tqdm.auto import tqdm

        with tqdm(
            desc="Building TFRecords",
            unit=" documents",
            disable=not progress,
            file=sys.stderr,
        ) as bar:
            for result in _encode_chunks(_read_chunks(files), config, num_processes):
                for split, records in result.records.items():
                    if records:
                        writers[split].write(records)
                totals += result.counts
                bar.update(result.counts.documents)
                bar.set_postfix_str(f"{totals.tokens:,} tokens", refresh=False)
        for writer in writers.values():
            writer.close()
        if not totals.tokens:
            shown = ", ".join(map(str, files[:5])) + (", ..." if len(files) > 5 else "")
            raise CorpusError(f"the corpus has no text: {shown}")
        if not totals.train_examples:
            raise BuildError(
                "no training examples: every document with text was held out "
                f"(eval_fraction={eval_fraction})"
            )
        if "eval" in writers and not totals.eval_examples:
            # No document was drawn for evaluation (a small corpus): no eval shards.
            writers.pop("eval").discard()
            logger.warning(
                "no document was held out for evaluation (%d documents at "
                "eval_fraction %g): runs on these data will have no held-out "
                "evaluation and no eval_results.json; give a larger corpus (more "
                "documents, separated by blank lines) or a larger eval_fraction",
                totals.documents,
                eval_fraction,
            )
        examples = {"train": totals.train_examples, "eval": totals.eval_examples}
        for split, writer in writers.items():
            _warn_if_shards_are_empty(split, examples[split], len(writer.final))
        for writer in writers.values():
            writer.commit()
    except BaseException:
        for writer in writers.values():
            writer.discard()
        raise

    stats = {
        "input_files": [str(path) for path in files],
        "documents": totals.documents,
        "train_documents": totals.train_documents,
        "eval_documents": totals.eval_documents,
        "examples": totals.train_examples + totals.eval_examples,
        "train_examples": totals.train_examples,
        "eval_examples": totals.eval_examples,
        "tokens": totals.tokens,
        "train_tokens": totals.train_tokens,
        "eval_tokens": totals.tokens - totals.train_tokens,
        "padding_fraction": 1.0 - totals.real_positions / max(1, totals.positions),
        "unknown_token_rate": totals.unknown_tokens / max(1, totals.tokens),
        "max_seq_length": max_seq_length,
        "features": list(FEATURE_NAMES),
        "vocabulary_size": vocabulary.size,
        "vocabulary_md5": vocabulary.md5(),
        "lowercase": lowercase,
        "strip_accents": strip_accents,
        "seed": seed,
        "eval_fraction": eval_fraction,
        "num_shards": num_shards,
        "num_eval_shards": len(writers["eval"].final) if "eval" in writers else 0,
    }
    if stats["unknown_token_rate"] > UNKNOWN_TOKEN_WARNING:
        logger.warning(
            "%.1f%% of the corpus' tokens are [UNK] (above %.0f%%): the "
            "vocabulary (%d tokens, %s) does not fit this text; learn a larger "
            "one (--learn-vocab-size) or give one of its language and casing",
            100 * stats["unknown_token_rate"],
            100 * UNKNOWN_TOKEN_WARNING,
            vocabulary.size,
            os.path.join(output_dir, VOCABULARY_FILE),
        )
    vocabulary.save(os.path.join(output_dir, VOCABULARY_FILE))
    stats_text = json.dumps(stats, indent=2) + "\n"
    write_text_atomically(os.path.join(output_dir, STATS_FILE), stats_text)
    keep = {os.path.basename(path) for w in writers.values() for path in w.final}
    _remove_stale_files(output_dir, keep | {VOCABULARY_FILE, STATS_FILE})
    return stats


def _warn_if_shards_are_empty(split: str, examples: int, shards: int) -> None:
    """Examples are dealt round-robin: fewer of them than shards leave the last
    shards empty, and a host (or worker) reading only those gets no data."""
    if examples < shards:
        flag = "--num-shards" if split == "train" else "--num-eval-shards"
        logger.warning(
            "%d %s examples for %d %s shards: the last %d shards are written empty; "
            "pass %s %d or fewer, or give more text",
            examples,
            split,
            shards,
            split,
            shards - examples,
            flag,
            examples,
        )


def _check_arguments(
    max_seq_length, num_shards, num_eval_shards, eval_fraction, num_processes
):
    if max_seq_length < 8:
        raise BuildError(f"max_seq_length must be at least 8, got {max_seq_length}")
    longest = max(preset.model.max_sequence_length for preset in PRESETS.values())
    if max_seq_length > longest:
        # Not refused: a model given more positions (--hparams) reads them.
        logger.warning(
            "max_seq_length %d is longer than any preset's position table (at "
            "most %d): only a model given --hparams "
            "'{\"max_sequence_length\": %d}' or more can train on these shards",
            max_seq_length,
            longest,
            max_seq_length,
        )
    if not 0.0 <= eval_fraction < 1.0:
        raise BuildError(f"eval_fraction must be in [0, 1), got {eval_fraction}")
    if num_shards < 1:
        raise BuildError(f"num_shards must be at least 1, got {num_shards}")
    if eval_fraction > 0 and num_eval_shards < 1:
        raise BuildError(f"num_eval_shards must be at least 1, got {num_eval_shards}")
    if max(num_shards, num_eval_shards) >= 100_000:
        raise BuildError("at most 99999 shards (shard numbers have five digits)")
    if num_processes < 1:
        raise BuildError(f"num_processes must be at least 1, got {num_processes}")


def is_held_out(document_index: int, seed: int, eval_fraction: float) -> bool:
    """Whether document `document_index` (0-based, corpus order) goes to eval.

    A hash rather than a random stream, so that a document's split depends on
    nothing but its index and the seed. Document 0 always trains, so that any
    corpus with text yields training examples.
    """
    if document_index == 0 or eval_fraction <= 0:
        return False
    key = f"{seed}:{document_index}".encode()
    draw = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")
    return draw < eval_fraction * 2**64


@dataclasses.dataclass
class _Chunk:
    index: int
    first_document: int  # index of its first document in the corpus
    documents: list[list[str]]


def _read_chunks(files: list[str]) -> Iterator[_Chunk]:
    """The corpus as chunks of whole documents, in order, read lazily."""
    documents: list[list[str]] = []
    sentences = first = index = 0
    for path in files:
        for document in iter_documents(path):
            documents.append(document)
            sentences += len(document)
            if sentences >= CHUNK_SENTENCES:
                yield _Chunk(index, first, documents)
                first += len(documents)
                index += 1
                documents, sentences = [], 0
    if documents:
        yield _Chunk(index, first, documents)


@dataclasses.dataclass
class _Counts:
    train_documents: int = 0
    eval_documents: int = 0
    train_examples: int = 0
    eval_examples: int = 0
    tokens: int = 0
    train_tokens: int = 0
    unknown_tokens: int = 0
    real_positions: int = 0  # non-padding positions of all examples
    positions: int = 0

    @property
    def documents(self) -> int:
        return self.train_documents + self.eval_documents

    def __iadd__(self, other: _Counts) -> _Counts:
        for field in dataclasses.fields(self):
            name = field.name
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self


@dataclasses.dataclass
class _ChunkResult:
    records: dict[str, list[bytes]]  # split -> serialized examples, in order
    counts: _Counts


@dataclasses.dataclass(frozen=True)
class _BuildConfig:
    vocabulary: object
    max_seq_length: int
    lowercase: bool
    strip_accents: bool
    seed: int
    eval_fraction: float


@functools.lru_cache(maxsize=4)
def tokenize_function(vocabulary, lowercase: bool, strip_accents: bool):
    """A traced tokenizer: strings [batch] -> ids, int32 ragged [batch, None].

    Cached: building the WordPiece model and tracing cost ~0.3 s, once per
    process and vocabulary rather than once per build.
    """
    tokenizer = vocabulary.tokenizer(lowercase, strip_accents)
    # A graph with a fixed signature, so every batch runs the tensorflow-text ops
    # without Python overhead. No autograph: there is no tensor-dependent Python
    # control flow, and converting keras-hub's code costs seconds.
    return tf.function(
        tokenizer.tokenize,
        input_signature=[tf.TensorSpec([None], tf.string)],
        autograph=False,
    )


class _ChunkEncoder:
    """A chunk of text documents -> serialized examples."""

    def __init__(self, config: _BuildConfig):
        self.config = config
        self._tokenize = tokenize_function(
            config.vocabulary, config.lowercase, config.strip_accents
        )

    def __call__(self, chunk: _Chunk) -> _ChunkResult:
        return self.pack(chunk, *self.tokenize(chunk))

    def tokenize(self, chunk: _Chunk) -> tuple[list[list[int]], int]:
        """Token ids of each sentence of `chunk`, and how many are [UNK]."""
        lines = [sentence for document in chunk.documents for sentence in document]
        unk_id = self.config.vocabulary.unk_id
        token_ids: list[list[int]] = []
        unknown = 0
        for start in range(0, len(lines), _TOKENIZE_BATCH):
            batch = tf.constant(lines[start : start + _TOKENIZE_BATCH])
            ragged = self._tokenize(batch)
            values = ragged.flat_values.numpy()
            unknown += int(np.count_nonzero(values == unk_id))
            # One tolist() then list slices: far cheaper than a numpy slice per line.
            flat = values.tolist()
            splits = ragged.row_splits.numpy().tolist()
            token_ids.extend(flat[a:b] for a, b in zip(splits[:-1], splits[1:]))
        return token_ids, unknown

    def pack(
        self, chunk: _Chunk, token_ids: list[list[int]], unknown: int
    ) -> _ChunkResult:
        """The serialized examples of `chunk`, given its sentences' token ids."""
        config = self.config
        vocabulary = config.vocabulary
        counts = _Counts(tokens=sum(map(len, token_ids)), unknown_tokens=unknown)
        builders = {
            split: ExampleBuilder(
                config.max_seq_length, seed=f"{config.seed}:{chunk.index}:{split}"
            )
            for split in SPLITS
        }
        pairs = {split: [] for split in SPLITS}
        cursor = 0
        for offset, document in enumerate(chunk.documents):
            sentences = token_ids[cursor : cursor + len(document)]
            cursor += len(document)
            index = chunk.first_document + offset
            held_out = is_held_out(index, config.seed, config.eval_fraction)
            split = "eval" if held_out else "train"
            pairs[split] += builders[split].add_document(sentences)
            if held_out:
                counts.eval_documents += 1
            else:
                counts.train_documents += 1
                counts.train_tokens += sum(map(len, sentences))
        records = {}
        for split in SPLITS:
            features = pairs_to_features(
                pairs[split],
                config.max_seq_length,
                vocabulary.cls_id,
                vocabulary.sep_id,
                vocabulary.pad_id,
            )
            records[split] = serialize_examples(features)
            counts.real_positions += int(features["input_mask"].sum())
            counts.positions += features["input_mask"].size
        counts.train_examples = len(records["train"])
        counts.eval_examples = len(records["eval"])
        return _ChunkResult(records, counts)


# Each worker process's encoder, set by `_start_worker`.
_worker_encoder: _ChunkEncoder | None = None


def _start_worker(config: _BuildConfig) -> None:
    global _worker_encoder
    _worker_encoder = _ChunkEncoder(config)


def _encode_in_worker(chunk: _Chunk) -> _ChunkResult:
    return _worker_encoder(chunk)


def _encode_chunks(
    chunks: Iterable[_Chunk], config: _BuildConfig, num_processes: int
) -> Iterator[_ChunkResult]:
    """The encoded chunks, in chunk order, from this process or from workers."""
    if num_processes == 1:
        yield from map(_ChunkEncoder(config), chunks)
        return
    # "spawn": forking a process in which TensorFlow has started threads is unsafe.
    pool = ProcessPoolExecutor(
        num_processes,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(config,),
    )
    in_flight = collections.deque()
    try:
        for chunk in chunks:
            in_flight.append(pool.submit(_encode_in_worker, chunk))
            if len(in_flight) >= _CHUNKS_IN_FLIGHT_PER_PROCESS * num_processes:
                yield in_flight.popleft().result()
        while in_flight:
            yield in_flight.popleft().result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class _ShardedWriter:
    """Deals records round-robin to the `count` shards of one split.

    Writes hidden temporary files; `commit()` renames them to their final names,
    `discard()` deletes them.
    """

    def __init__(self, output_dir: str, split: str, count: int):
        names = [
            SHARD_NAME.format(split=split, index=i, count=count) for i in range(count)
        ]
        self.final = [os.path.join(output_dir, name) for name in names]
        self.temporary = [
            os.path.join(output_dir, TEMPORARY_PREFIX + name) for name in names
        ]
        self._writers = []
        for path in self.temporary:
            self._writers.append(tf.io.TFRecordWriter(path))
        self._written = 0

    def write(self, records: list[bytes]) -> None:
        count = len(self._writers)
        for record in records:
            self._writers[self._written % count].write(record)
            self._written += 1

    def close(self) -> None:
        for writer in self._writers:
            writer.close()

    def commit(self) -> None:
        for temporary, final in zip(self.temporary, self.final):
            tf.io.gfile.rename(temporary, final, overwrite=True)

    def discard(self) -> None:
        self.close()
        for path in self.temporary:
            if tf.io.gfile.exists(path):
                tf.io.gfile.remove(path)


def _remove_stale_files(output_dir: str, keep: set[str]) -> None:
    """Removes the files of an earlier build (other shard counts, leftovers)."""
    for name in tf.io.gfile.listdir(output_dir):
        if _OWN_FILE.fullmatch(name) and name not in keep:
            tf.io.gfile.remove(os.path.join(output_dir, name))
