"""The files fine-tuning reads and writes, each problem one error naming the line.

Readers take the exception class to raise (each data module has its own):
`read_text`, `table_rows` and `read_columns` (CSV, TSV, JSON Lines),
`read_lines` (one line at a time, for files too large to hold whole) and
`load_tfds`; `write_json` writes a whole file (text files:
`electra_tf.atomic_write.write_text_atomically`). A name ending
`.gz` is read decompressed (`read_lines` also knows gzip by its first bytes).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import logging
import os
import re
from collections.abc import Sequence

import tensorflow as tf

from electra_tf.atomic_write import write_text_atomically
from electra_tf.config import ConfigError
from electra_tf.network import NetworkUnreachableError, check_reachable

logger = logging.getLogger(__name__)


def shorten(value, limit: int = 80) -> str:
    """`repr(value)`, cut to `limit` characters for a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_text(path: str, error: type[Exception]) -> str:
    """The text of `path` (any `tf.io.gfile` path) decoded as UTF-8."""
    if not tf.io.gfile.exists(path):
        raise error(f"{path}: file not found")
    with tf.io.gfile.GFile(path, "rb") as f:
        data = f.read()
    if os.fspath(path).lower().endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as problem:
            raise error(f"{path}: not a readable gzip file ({problem})") from None
    return _decode(path, data, 1, error)


def _decode(path: str, data: bytes, first_line: int, error: type[Exception]) -> str:
    """`data`, which starts at line `first_line` of `path`, as UTF-8 text
    (a byte-order mark dropped); else `error` naming the line and bytes."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as problem:
        line = first_line + data[: problem.start].count(b"\n")
        bad = data[problem.start : problem.end]
        raise error(
            f"{path}, line {line}: not UTF-8 (byte(s) {bad!r}); save the file as UTF-8"
        ) from None


def read_lines(path: str, error: type[Exception]):
    """Yields `(line_number, line)` of `path` (any `tf.io.gfile` path), each
    line decoded as UTF-8 without its line break, reading one line at a time.

    Content that starts with gzip's magic bytes, or a name ending `.gz`, is
    decompressed as it is read; a damaged or truncated gzip stream is `error`
    naming the line it stopped at.
    """
    if not tf.io.gfile.exists(path):
        raise error(f"{path}: file not found")
    with tf.io.gfile.GFile(path, "rb") as raw:
        compressed = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        compressed = compressed or os.fspath(path).lower().endswith(".gz")
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        number = 0
        try:
            for number, data in enumerate(stream, 1):
                yield number, _decode(path, data, number, error).rstrip("\r\n")
        except (OSError, EOFError) as problem:
            raise error(
                f"{path}, line {number + 1}: not a readable gzip file ({problem})"
            ) from None


def json_object(path: str, number: int, line: str, error: type[Exception]) -> dict:
    """Line `number` of `path`, `line`, parsed as one JSON object; else
    `error` naming the line and showing its start."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as problem:
        raise error(
            f"{path}, line {number}: not valid JSON ({problem.msg}): {line[:80]!r}"
        ) from None
    if not isinstance(row, dict):
        raise error(f"{path}, line {number}: expected a JSON object, got {line[:80]!r}")
    return row


def table_rows(path: str, kind: str, error: type[Exception], header=None):
    """Yields `(line_number, row)` of a "csv", "tsv" or "jsonl" file: CSV and
    TSV files first `(line, header list)` (`header`, if given, is the columns
    of a file without a header row, yielded at line 0), then `{column: value}`
    dicts. Blank lines are skipped; TSV is read unquoted (a quote is text, as
    in GLUE)."""
    text = read_text(path, error)
    if kind == "jsonl" and text.lstrip().startswith("["):
        yield from _json_array_rows(path, text, error)
        return
    if kind == "jsonl":
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            yield number, json_object(path, number, line, error)
        return
    dialect = {} if kind == "csv" else {"delimiter": "\t", "quoting": csv.QUOTE_NONE}
    # A cell may hold a whole document: lift the csv module's 128 KiB limit
    # (its error named neither file nor line).
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))
    reader = csv.reader(io.StringIO(text, newline=""), **dialect)
    if header is not None:
        yield 0, header
    end = 0  # the last line of the previous record
    for fields in reader:
        start, end = end + 1, reader.line_num
        if not fields or fields == [""]:
            continue
        if header is None:
            header = fields
            twice = sorted({name for name in header if header.count(name) > 1})
            if twice:
                raise error(
                    f"{path}, line {end}: the header names column {twice[0]!r} "
                    f"{header.count(twice[0])} times ({header}); each column needs "
                    "its own name"
                )
            yield end, header
            continue
        if len(fields) != len(header):
            raise error(_field_count_problem(path, kind, fields, header, start, end))
        yield end, dict(zip(header, fields))


def _field_count_problem(path, kind, fields, header, start, end) -> str:
    """The message for a record of `len(fields)` fields where the header has
    another count. A CSV record that runs over several lines (a quoted field
    holding line breaks) and has the wrong count is most likely a quote left
    open on its first line: that line is named, not the record's last."""
    separator = "comma" if kind == "csv" else "tab"
    count = f"{len(fields)} {separator}-separated fields where the header has"
    if end > start and kind == "csv" and any("\n" in field for field in fields):
        return (
            f"{path}, line {start}: a quoted field opened on line {start} runs to "
            f"line {end} ({count} {len(header)}); is a closing quote missing? "
            f"{shorten(fields)}"
        )
    return f"{path}, line {end}: {count} {len(header)}: {shorten(fields)}"


def _json_array_rows(path: str, text: str, error: type[Exception]):
    """Yields `(line_number, object)` of a file holding one JSON array of
    objects, each with the line its object starts on."""
    decoder = json.JSONDecoder()
    whitespace = re.compile(r"[ \t\n\r]*")

    def skip(position):
        return whitespace.match(text, position).end()

    def fail(position, message):
        line = text.count("\n", 0, position) + 1
        raise error(f"{path}, line {line}: {message} (a JSON array of objects)")

    position = skip(skip(0) + 1)  # past "["
    if text.startswith("]", position):
        return
    while True:
        try:
            row, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as problem:
            fail(problem.pos, f"not valid JSON ({problem.msg})")
        if not isinstance(row, dict):
            fail(position, f"expected a JSON object, got {text[position:end][:80]!r}")
        yield text.count("\n", 0, position) + 1, row
        position = skip(end)
        if text.startswith("]", position):
            break
        if not text.startswith(",", position):
            fail(position, "expected ',' or ']' after an object")
        position = skip(position + 1)
    if text[skip(position + 1) :]:
        fail(skip(position + 1), "text after the array's closing ']'")


def read_columns(
    path: str,
    kind: str,
    error: type[Exception],
    text_columns: Sequence[str],
    label_column: str | None,
    header: list[str] | None = None,
) -> tuple[tuple[tuple[str, ...], ...], list, list[int]]:
    """Texts, raw labels and line numbers of every row of a `table_rows` file.

    Args:
        text_columns: one or two column names.
        label_column: the label's column, or None (an unlabelled test file;
            a label column there is ignored).
        header: the columns of a file without a header row.

    Returns:
        `(texts, labels, lines)`: `texts[s][i]` is text column `s` of row
        `i`; `labels[i]` the label as read (a string, or a JSON value); `lines`
        the 1-based line of each row.
    """
    wanted = list(text_columns) + ([label_column] if label_column else [])
    texts = [[] for _ in text_columns]
    labels, lines = [], []
    for line, row in table_rows(path, kind, error, header):
        missing = [c for c in wanted if c not in row]
        if missing and isinstance(row, list):  # the CSV/TSV header
            raise error(
                f"{path}, line {line}: no column {missing[0]!r}; the header has {row}"
            )
        if missing:
            raise error(
                f"{path}, line {line}: no {missing[0]!r} field; the row has "
                f"{sorted(row)}"
            )
        if isinstance(row, list):
            continue
        for segment, column in zip(texts, text_columns):
            value = row[column]
            if not isinstance(value, str):
                raise error(
                    f"{path}, line {line}: {column} {shorten(value)} is not a string"
                )
            segment.append(value)
        if label_column:
            labels.append(row[label_column])
        lines.append(line)
    if not lines:
        raise error(f"{path}: no examples (the split is empty)")
    return tuple(tuple(s) for s in texts), labels, lines


def load_tfds(name: str, split: str, data_dir: str | None, error: type[Exception]):
    """`(examples as numpy, dataset info)` of `split` of the tfds dataset `name`,
    downloaded and prepared on first use (into `data_dir`, or tfds' default
    `~/tensorflow_datasets`); `error` if it cannot be loaded."""
    import tensorflow_datasets as tfds

    try:
        prepared = tfds.builder(name, data_dir=data_dir).is_prepared()
    except Exception:  # an unknown name: tfds.load below says so
        prepared = True
    if not prepared:
        try:
            check_reachable(f"tfds {name}")
        except NetworkUnreachableError as problem:
            raise error(str(problem)) from problem
    try:
        dataset, info = tfds.load(name, split=split, data_dir=data_dir, with_info=True)
    except Exception as problem:  # tfds raises many kinds; report any of them
        first = (str(problem).strip().splitlines() or [type(problem).__name__])[0]
        raise error(f"tfds {name}:{split} could not be loaded: {first}") from problem
    return tfds.as_numpy(dataset), info


def write_json(path: str, values) -> str:
    """Writes `values` to `path` as indented JSON (keys sorted, non-ASCII
    kept), creating its folder; returns `path`.

    Whole or not at all (`electra_tf.atomic_write.write_text_atomically`): an
    interrupted run never leaves half a file, and `metrics.json`, rewritten
    after every seed, keeps the last whole one.
    """
    return write_text_atomically(
        path, json.dumps(values, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    )


def check_output_dir(output_dir: str, overwrite: bool) -> None:
    """Refuses an `output_dir` holding a previous run (its `metrics.json`)
    unless `overwrite`; then that run's TensorBoard logs are deleted, so
    that the new run's events are not mixed with them (its other files are
    overwritten as the run writes its own)."""
    if not tf.io.gfile.exists(os.path.join(output_dir, "metrics.json")):
        return
    if not overwrite:
        raise ConfigError(
            f"--output-dir {output_dir} holds a previous run (metrics.json); pass "
            "--overwrite to replace it, or choose another directory"
        )
    logs = os.path.join(output_dir, "logs")
    if tf.io.gfile.exists(logs):
        tf.io.gfile.rmtree(logs)
    logger.info("--overwrite: replacing the previous run in %s", output_dir)
