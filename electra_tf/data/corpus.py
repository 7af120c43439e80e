"""Reading raw pre-training text.

The format: one sentence per line, a blank line between documents.
"""

from __future__ import annotations

import gzip
import os
import zlib

import tensorflow as tf


class CorpusError(ValueError):
    """A corpus path is missing, empty, binary or not UTF-8."""


def expand_paths(patterns) -> list[str]:
    """Files named by `patterns` (files, directories or globs; local or gs://).

    Directories expand to the files directly inside them, sorted. A pattern
    that matches nothing raises `CorpusError` naming it.
    """
    if isinstance(patterns, (str, os.PathLike)):
        patterns = [patterns]
    files = []
    for pattern in patterns:
        pattern = str(pattern)
        if tf.io.gfile.isdir(pattern):
            found = sorted(
                os.path.join(pattern, name)
                for name in tf.io.gfile.listdir(pattern)
                if not tf.io.gfile.isdir(os.path.join(pattern, name))
                and not name.startswith(".")
                and not name.lower().endswith(".md")
            )
        else:
            found = sorted(tf.io.gfile.glob(pattern))
        if not found:
            raise CorpusError(f"no input files match {pattern!r}")
        files.extend(found)
    return files


def read_documents(path) -> list[list[str]]:
    """The documents of one file, each a list of non-empty, stripped lines.

    `.gz` files are decompressed. Binary data (a NUL byte) and invalid UTF-8
    raise `CorpusError` naming the file and the byte offset.
    """
    path = str(path)
    try:
        with tf.io.gfile.GFile(path, "rb") as f:
            raw = f.read()
    except tf.errors.NotFoundError as error:
        raise CorpusError(f"corpus file not found: {path}") from error
    if path.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as error:
            raise CorpusError(f"{path} is not a valid gzip file: {error}") from error
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise CorpusError(f"{path} looks binary (NUL byte at offset {nul}), not text")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorpusError(
            f"{path} is not UTF-8 text (invalid byte at offset {error.start})"
        ) from error
    documents, current = [], []
    for line in text.splitlines():
        line = line.strip()
        if line:
            current.append(line)
        elif current:
            documents.append(current)
            current = []
    if current:
        documents.append(current)
    return documents
