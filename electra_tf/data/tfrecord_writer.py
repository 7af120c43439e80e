"""Raw text -> sharded TFRecords of pre-training examples (the original features)."""

from __future__ import annotations

import json
import multiprocessing
import os
import zlib

import numpy as np
import tensorflow as tf

from electra_tf.data.corpus import CorpusError, expand_paths, read_documents
from electra_tf.data.example_builder import ExampleBuilder

# Documents per unit of work. Work units, not processes, carry the seeds, so
# the output does not depend on how many processes build it.
DOCUMENTS_PER_CHUNK = 500
# Lines per tokenizer call: large batches keep the tensorflow-text op busy.
TOKENIZE_BATCH = 4096
SHARD_NAME = "{split}-{index:05d}-of-{count:05d}.tfrecord"


class BuildError(ValueError):
    """The output directory cannot be written as asked."""


def _is_eval_document(seed: int, index: int, eval_fraction: float) -> bool:
    # A hash, not a random stream: a document's split depends only on its index.
    return zlib.crc32(f"{seed}:{index}".encode()) % 100_000 < eval_fraction * 100_000


def _serialize(example) -> bytes:
    features = {
        name: tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        for name, values in zip(example._fields, example)
    }
    return tf.train.Example(
        features=tf.train.Features(feature=features)
    ).SerializeToString()


def _tokenize_documents(documents, tokenizer):
    """Token-id arrays per sentence per document, tokenised in large batches."""
    lines = [sentence for document in documents for sentence in document]
    # Eagerly keras-hub returns Python lists; in a graph, a RaggedTensor.
    tokenize = tf.function(
        tokenizer.tokenize,
        input_signature=[tf.TensorSpec([None], tf.string)],
        reduce_retracing=True,
    )
    ids = []
    for start in range(0, len(lines), TOKENIZE_BATCH):
        ragged = tokenize(tf.constant(lines[start : start + TOKENIZE_BATCH]))
        values = ragged.flat_values.numpy()
        splits = ragged.row_splits.numpy()
        ids.extend(values[splits[i] : splits[i + 1]] for i in range(len(splits) - 1))
    out, cursor = [], 0
    for document in documents:
        out.append(ids[cursor : cursor + len(document)])
        cursor += len(document)
    return out


def _build_chunk(job):
    """Worker: one chunk of documents -> serialized train and eval examples."""
    chunk_index, first_document, documents, options = job
    vocabulary = options["vocabulary"]
    tokenizer = vocabulary.tokenizer(options["lowercase"], options["strip_accents"])
    seed = options["seed"]
    builders = {
        split: ExampleBuilder(
            options["max_seq_length"],
            vocabulary.cls_id,
            vocabulary.sep_id,
            vocabulary.pad_id,
            seed=zlib.crc32(f"{seed}:{chunk_index}:{split}".encode()),
        )
        for split in ("train", "eval")
    }
    out = {"train": [], "eval": []}
    stats = {"tokens": 0, "unknown": 0, "real": 0, "slots": 0, "documents": 0}
    for offset, sentences in enumerate(_tokenize_documents(documents, tokenizer)):
        split = (
            "eval"
            if _is_eval_document(
                seed, first_document + offset, options["eval_fraction"]
            )
            else "train"
        )
        stats["documents"] += 1
        for sentence in sentences:
            stats["tokens"] += len(sentence)
            stats["unknown"] += int(np.sum(sentence == vocabulary.unk_id))
        for example in builders[split].add_document(sentences):
            stats["real"] += int(example.input_mask.sum())
            stats["slots"] += len(example.input_mask)
            out[split].append(_serialize(example))
    return out, stats


def _chunks(files, options):
    """(chunk_index, first_document_index, documents, options) in corpus order."""
    chunk, first, index, chunk_index = [], 0, 0, 0
    for path in files:
        for document in read_documents(path):
            if not chunk:
                first = index
            chunk.append(document)
            index += 1
            if len(chunk) == DOCUMENTS_PER_CHUNK:
                yield (chunk_index, first, chunk, options)
                chunk, chunk_index = [], chunk_index + 1
    if chunk:
        yield (chunk_index, first, chunk, options)


def _prepare_output_dir(output_dir: str, overwrite: bool) -> None:
    if tf.io.gfile.exists(output_dir):
        existing = tf.io.gfile.listdir(output_dir)
        if existing and not overwrite:
            raise BuildError(
                f"output directory {output_dir} is not empty; pass overwrite=True "
                "(--overwrite) to replace its shards (nothing else is deleted)"
            )
        for name in existing:
            if name.startswith(("train-", "eval-")) or name in ("stats.json",):
                tf.io.gfile.remove(os.path.join(output_dir, name))
    tf.io.gfile.makedirs(output_dir)


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
    """Builds `train-*` and `eval-*` TFRecord shards plus `stats.json` and `vocab.txt`.

    Each record has int64 features `input_ids`, `input_mask`, `segment_ids` of
    length `max_seq_length` (the original's names). Whole documents are held
    out for evaluation (`eval_fraction`, chosen by a hash of the document
    index). Examples are dealt round-robin to shards in corpus order. Shards
    are written under temporary names and renamed when complete, so a killed
    build never leaves a partial shard with a final name.

    The output is identical for identical inputs and arguments, whatever
    `num_processes` is (each chunk of documents carries its own seed).

    Returns the statistics written to `stats.json`.
    """
    files = expand_paths(input_files)
    if not 0.0 <= eval_fraction < 1.0:
        raise BuildError(f"eval_fraction must be in [0, 1), got {eval_fraction}")
    if num_shards < 1 or (eval_fraction > 0 and num_eval_shards < 1):
        raise BuildError("num_shards and num_eval_shards must be at least 1")
    output_dir = str(output_dir)
    _prepare_output_dir(output_dir, overwrite)
    options = {
        "vocabulary": vocabulary,
        "max_seq_length": max_seq_length,
        "lowercase": lowercase,
        "strip_accents": strip_accents,
        "seed": seed,
        "eval_fraction": eval_fraction,
    }
    counts = {"train": num_shards, "eval": num_eval_shards}
    final = {
        split: [
            os.path.join(output_dir, SHARD_NAME.format(split=split, index=i, count=n))
            for i in range(n)
        ]
        for split, n in counts.items()
    }
    writers = {
        split: [tf.io.TFRecordWriter(path + ".tmp") for path in paths]
        for split, paths in final.items()
    }
    written = {"train": 0, "eval": 0}
    totals = {"tokens": 0, "unknown": 0, "real": 0, "slots": 0, "documents": 0}

    jobs = _chunks(files, options)
    pool = None
    if num_processes > 1:
        # "spawn": forking a process that has started TensorFlow is unsafe.
        pool = multiprocessing.get_context("spawn").Pool(num_processes)
        results = pool.imap(_build_chunk, jobs)
    else:
        results = map(_build_chunk, jobs)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(desc="documents", unit="doc")
    try:
        for out, stats in results:
            for split, records in out.items():
                for record in records:
                    shard = written[split] % counts[split]
                    writers[split][shard].write(record)
                    written[split] += 1
            for key in totals:
                totals[key] += stats[key]
            if bar is not None:
                bar.update(stats["documents"])
    finally:
        if pool is not None:
            pool.terminate()
        if bar is not None:
            bar.close()
        for split_writers in writers.values():
            for writer in split_writers:
                writer.close()

    if totals["tokens"] == 0:
        for paths in final.values():
            for path in paths:
                tf.io.gfile.remove(path + ".tmp")
        raise CorpusError(f"the corpus has no text: {', '.join(files)}")
    for paths in final.values():
        for path in paths:
            tf.io.gfile.rename(path + ".tmp", path, overwrite=True)
    stats = {
        "input_files": files,
        "documents": totals["documents"],
        "train_examples": written["train"],
        "eval_examples": written["eval"],
        "tokens": totals["tokens"],
        "padding_fraction": 1.0 - totals["real"] / max(1, totals["slots"]),
        "unknown_token_rate": totals["unknown"] / max(1, totals["tokens"]),
        "max_seq_length": max_seq_length,
        "vocabulary_size": vocabulary.size,
        "vocabulary_md5": vocabulary.md5(),
        "lowercase": lowercase,
        "strip_accents": strip_accents,
        "seed": seed,
        "num_shards": num_shards,
        "num_eval_shards": num_eval_shards if written["eval"] else 0,
    }
    if not written["eval"]:
        # No document was held out (eval_fraction 0, or a corpus too small).
        for path in final["eval"]:
            tf.io.gfile.remove(path)
    vocabulary.save(os.path.join(output_dir, "vocab.txt"))
    with tf.io.gfile.GFile(os.path.join(output_dir, "stats.json"), "w") as f:
        json.dump(stats, f, indent=2)
    return stats
