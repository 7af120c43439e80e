"""Reading raw pre-training text, the format of the original ELECTRA builder.

One sentence (or paragraph) per line, a blank line between documents; UTF-8, plain
or gzip-compressed (`.gz`); local or any `tf.io.gfile` path (`gs://...`):

    The cat sat on the mat.
    It was happy.

    A second document starts after a blank line.

Files are streamed a block at a time, so a corpus file may be larger than memory.
Instead of a path, `tfds:<name>[/<config>][:<split>]` names a tensorflow-datasets
dataset, one example a document (see `tfds_corpus`).

>>> files = expand_paths(DEMO_CORPUS)  # files, directories or globs
>>> [os.path.basename(path) for path in files]
['brown.txt.gz', 'pydoc.txt.gz']
>>> document = next(iter_documents(files[0]))  # a list of lines
>>> document[0][:44]
'The Fulton County Grand Jury said Friday an '
"""

from __future__ import annotations

import gzip
import logging
import os
import zlib
from collections.abc import Iterator

import tensorflow as tf

# CorpusError lives in errors.py so that tfds_corpus, which this module reads
# through, need not import this module back; it is re-exported here.
from electra_tf.data.tfds_corpus import TfdsCorpus, is_tfds_source
from electra_tf.errors import CorpusError

# The bundled demo corpus (excerpts of the Brown Corpus and of the Python manual;
# see electra_tf/assets/README.md).
DEMO_CORPUS = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), "assets", "corpus"
)

# Bytes read at a time: large enough that per-block work is negligible, small
# enough that memory stays flat whatever the file size.
_BLOCK_BYTES = 1 << 20
# A line longer than this (in characters) is warned about: corpora hold a
# sentence (or a paragraph) a line; a file without line breaks is one line.
LONG_LINE = 100_000

logger = logging.getLogger(__name__)


def expand_paths(patterns) -> list:
    """The files named by `patterns`: files, directories or glob patterns.

    A directory stands for every file below it (recursively; hidden files and
    directories skipped), sorted; a glob for its matches, sorted. A file named
    twice is kept once, at its first place. A `tfds:...` source is kept, as a
    `TfdsCorpus`, in its place.

    Args:
        patterns: one path, pattern or `tfds:` source, or an iterable of them;
            local or `tf.io.gfile` paths such as `gs://bucket/corpus/*.txt.gz`.

    Returns:
        The file paths (and `TfdsCorpus` sources), in a deterministic order.

    Raises:
        CorpusError: a pattern matches nothing (naming the pattern), or a
            `tfds:` source is malformed.
    """
    if isinstance(patterns, (str, os.PathLike, TfdsCorpus)):
        patterns = [patterns]
    files: list = []
    for pattern in patterns:
        if is_tfds_source(pattern):
            if not isinstance(pattern, TfdsCorpus):
                pattern = TfdsCorpus.parse(pattern)
            files.append(pattern)
            continue
        pattern = os.fspath(pattern)
        if tf.io.gfile.isdir(pattern):
            found = _files_below(pattern)
            if not found:
                raise CorpusError(f"directory {pattern} holds no files")
        else:
            found = sorted(
                path
                for path in tf.io.gfile.glob(pattern)
                if not tf.io.gfile.isdir(path)
            )
            if not found:
                raise CorpusError(f"no input files match {pattern!r}")
        files.extend(found)
    return list(dict.fromkeys(files))


def _files_below(directory: str) -> list[str]:
    found = []
    for root, subdirectories, names in tf.io.gfile.walk(directory):
        # Hidden entries are editor, VCS or temporary files, never corpus text.
        subdirectories[:] = [d for d in subdirectories if not d.startswith(".")]
        found.extend(
            os.path.join(root, name) for name in names if not name.startswith(".")
        )
    return sorted(found)


def iter_documents(path) -> Iterator[list[str]]:
    """Yields the documents of one corpus file, each a list of non-empty lines.

    `path` may also be a `tfds:` source (a string or `TfdsCorpus`): one example
    is one document (see `TfdsCorpus.iter_documents`).

    Lines are stripped of surrounding whitespace; a line empty after stripping
    ends the current document (several blank lines make one boundary). Only
    "\\n" ends a line (with an optional "\\r"), as in the original builder. A
    leading UTF-8 byte-order mark is dropped; `.gz` files are decompressed.

    Raises:
        CorpusError: naming the file: it is missing, a directory, not valid gzip,
            binary (a NUL byte: e.g. UTF-16 text or a compiled file) or not UTF-8;
            the last two give the byte offset (in the decompressed text).
    """
    if is_tfds_source(path):
        if not isinstance(path, TfdsCorpus):
            path = TfdsCorpus.parse(path)
        yield from path.iter_documents()
        return
    document: list[str] = []
    warned = False
    for number, line in enumerate(iter_lines(path), 1):
        if len(line) > LONG_LINE and not warned:
            warned = True
            logger.warning(
                "%s, line %d: a line of %d characters, read as ONE sentence of "
                "one document (a line is a sentence and a blank line ends a "
                "document; text without line breaks is cut to one example); "
                "split it into sentences and documents",
                path,
                number,
                len(line),
            )
        line = line.strip()
        if line:
            document.append(line)
        elif document:
            yield document
            document = []
    if document:
        yield document


def read_documents(path: str | os.PathLike) -> list[list[str]]:
    """All documents of one file (`iter_documents` as a list)."""
    return list(iter_documents(path))


def iter_lines(path, kind: str = "corpus") -> Iterator[str]:
    """The decoded lines of one text file, without their "\\n" (a "\\r" stays).

    UTF-8, plain or `.gz`, local or any `tf.io.gfile` path, streamed; a
    leading byte-order mark is dropped. Only "\\n" ends a line: text may hold
    other Unicode line separators, on which `str.splitlines` would split it.

    Raises:
        CorpusError: naming the file and `kind` (what the file is to the
            caller): it is missing, a directory, not valid gzip, binary or
            not UTF-8 (with the byte offset).
    """
    path = os.fspath(path)
    if not tf.io.gfile.exists(path):
        raise CorpusError(f"{kind} file not found: {path}")
    if tf.io.gfile.isdir(path):
        raise CorpusError(f"{kind} path is a directory, not a file: {path}")
    offset = 0  # of `pending` in the (decompressed) byte stream
    pending = b""
    for block in _iter_blocks(path):
        if offset == 0 and not pending and block.startswith(b"\xef\xbb\xbf"):
            block, offset = block[3:], 3
        nul = block.find(b"\x00")
        if nul >= 0:
            raise CorpusError(
                f"{path} looks binary (a NUL byte at offset "
                f"{offset + len(pending) + nul}), not UTF-8 text"
            )
        data = pending + block
        # Decode whole lines only: a block may end inside a multi-byte character.
        end = data.rfind(b"\n") + 1
        if end:
            yield from _decode(path, data[:end], offset).split("\n")[:-1]
            offset += end
        pending = data[end:]
    if pending:
        yield _decode(path, pending, offset)


def _decode(path: str, data: bytes, offset: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CorpusError(
            f"{path} is not UTF-8 text (invalid byte at offset {offset + error.start})"
        ) from error


def _iter_blocks(path: str) -> Iterator[bytes]:
    with tf.io.gfile.GFile(path, "rb") as raw:
        if not path.endswith(".gz"):
            while block := raw.read(_BLOCK_BYTES):
                yield block
            return
        try:
            with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
                while block := stream.read(_BLOCK_BYTES):
                    yield block
        except (OSError, EOFError, zlib.error) as error:
            raise CorpusError(f"{path} is not a valid gzip file: {error}") from error
