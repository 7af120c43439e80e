"""Your own labelled text files as a fine-tuning task: CSV, TSV or JSON Lines.

`load_custom_data(train_file, dev_file, test_file, text_columns, label_column)`
reads the files, decides whether the labels are classes or scores
(`infer_label_type`, unless `label_type` says), and returns a `GlueTask`
describing them and the splits as `TaskData`, which the classification kind
fine-tunes on as on a GLUE task. Classes are kept as the file writes them, so
predictions come back as the user's strings; `write_test_predictions` writes
the test file's rows back in its own format with a `prediction` column; a
test file with the label column is also read labelled, to be scored. The
formats, the inference and the errors (`DataFileError`, one line naming the
file, the line and the value) are the user's to read in docs/finetuning.md,
"Your own classification or regression data".

Example:
>>> import pathlib, tempfile
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> rows = 'text,label\\n"good, really",pos\\nbad,neg\\n'
>>> _ = (folder / "train.csv").write_text(rows)
>>> _ = (folder / "dev.csv").write_text("text,label\\nfine,pos\\n")
>>> task, data = load_custom_data(folder / "train.csv", folder / "dev.csv",
...                               text_columns=["text"], label_column="label")
>>> task.labels, task.metrics, data.train.texts[0]
(('neg', 'pos'), ('accuracy', 'f1', 'mcc'), ('good, really', 'bad'))
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import os
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from electra_tf.atomic_write import write_text_atomically
from electra_tf.errors import FinetuningDataError
from electra_tf.finetuning.files import read_columns, shorten, table_rows
from electra_tf.finetuning.glue_readers import GlueExamples, TaskData
from electra_tf.finetuning.glue_tasks import GlueTask

# Integer labels with at most this many distinct values are classes ("1".."5"
# stars); more, or any fraction, make a regression task.
MAX_INTEGER_CLASSES = 20
# Labels that are numbers but for a few cells (this fraction or more, not
# all): most likely scores with typos ("n/a", "4,5"), so refused rather than
# read as classes; `label_type="classification"` states the other meaning.
MOSTLY_NUMERIC = 0.9
LABEL_TYPES = ("auto", "classification", "regression")
# Classes this many or more, and more than half the training rows: the label
# column holds texts (each row its own class), not labels.
MANY_CLASSES = 20
# The column the test file's predictions are written in (GLUE's name for it).
PREDICTION_COLUMN = "prediction"


logger = logging.getLogger(__name__)


class DataFileError(FinetuningDataError):
    """A user's data file is missing, malformed or does not fit the task."""


def file_format(path: str) -> str:
    """ "csv", "tsv" or "jsonl", from the file name."""
    if tf.io.gfile.isdir(os.fspath(path)):
        raise DataFileError(
            f"{path} is a directory, not a data file; give a .csv, .tsv or .jsonl file"
        )
    name = os.fspath(path).lower().removesuffix(".gz")
    kinds = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl"}
    kind = kinds.get(os.path.splitext(name)[1])
    if kind is None:
        raise DataFileError(
            f"{path}: unknown file type; name it .csv, .tsv or .jsonl (JSON Lines)"
        )
    return kind


def read_labelled_file(
    path: str, text_columns: Sequence[str], label_column: str | None
) -> tuple[tuple[tuple[str, ...], ...], list, list[int]]:
    """`files.read_columns` of a .csv, .tsv or .jsonl file (`file_format`,
    `files.table_rows`): its texts, raw labels (`label_column` None: none, for a test
    file) and line numbers, or `DataFileError`."""
    path = os.fspath(path)
    kind = file_format(path)
    return read_columns(path, kind, DataFileError, text_columns, label_column)


def _as_number(value) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        number = float(str(value).strip())
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def infer_label_type(labels: Sequence) -> str:
    """ "regression" if every label is a number and they are not a small set
    of integers; else "classification".

    >>> infer_label_type(["0", "1", "1"]), infer_label_type(["0.5", "3.2"])
    ('classification', 'regression')
    >>> infer_label_type([str(i) for i in range(50)]), infer_label_type(["pos", "2.5"])
    ('regression', 'classification')
    """
    numbers = [_as_number(label) for label in labels]
    if any(number is None for number in numbers):
        return "classification"
    if all(number.is_integer() for number in numbers):
        if len(set(numbers)) <= MAX_INTEGER_CLASSES:
            return "classification"
    return "regression"


def _refuse_missing_labels(path, labels, lines, label_column) -> None:
    """`DataFileError` at the first empty, null or non-scalar label."""
    for value, line in zip(labels, lines):
        if value is None or (isinstance(value, str) and not value.strip()):
            what = "null" if value is None else "empty"
            raise DataFileError(
                f"{path}, line {line}: the label ({label_column}) is {what}; every "
                "training and dev example needs one"
            )
        if isinstance(value, (list, dict)):
            raise DataFileError(
                f"{path}, line {line}: label {shorten(value)} is not a string or "
                "a number"
            )


def _refuse_mostly_numeric(path, labels, lines, label_column) -> None:
    """`DataFileError` naming the cells that are not numbers, if at least
    `MOSTLY_NUMERIC` of the labels are numbers (and not all)."""
    odd = [
        (line, value) for value, line in zip(labels, lines) if _as_number(value) is None
    ]
    if not odd or len(odd) > (1.0 - MOSTLY_NUMERIC) * len(labels):
        return
    cells = ", ".join(f"line {line} {shorten(value, 30)}" for line, value in odd[:5])
    more = f" and {len(odd) - 5} more" if len(odd) > 5 else ""
    raise DataFileError(
        f"{path}: the labels ({label_column}) are numbers but for {len(odd)} of "
        f"{len(labels)}: {cells}{more}; fix those cells if the labels are scores, "
        "or pass --label-type classification if every value is a class"
    )


def _refuse_text_as_labels(path, classes, labels, label_column) -> None:
    """`DataFileError` if the inferred classes are nearly as many as the rows
    (`MANY_CLASSES` or more, over half the rows): a text column given as the
    label column. `--label-type classification` states otherwise."""
    if len(classes) >= MANY_CLASSES and len(classes) > len(labels) / 2:
        raise DataFileError(
            f"{path}: the labels ({label_column}) are {len(classes)} different "
            f"values in {len(labels)} rows (e.g. {shorten(classes[0], 40)}), too "
            f"many classes to learn: is {label_column!r} a text column? Name the "
            "label's column with --label-column, or pass --label-type "
            "classification if each value is a class (regression if they are scores)"
        )


def _log_labels(path, label_type, inferred, train_labels, classes) -> None:
    how = "inferred; --label-type to force" if inferred else "--label-type"
    if label_type == "regression":
        numbers = np.asarray([_as_number(v) for v in train_labels], dtype="float64")
        logger.info(
            "%s: labels are scores (%s): %d, from %g to %g, mean %.4g",
            path,
            how,
            len(numbers),
            numbers.min(),
            numbers.max(),
            numbers.mean(),
        )
        return
    counts = Counter(_label_string(v) for v in train_labels)
    logger.info(
        "%s: labels are %d classes (%s): %s",
        path,
        len(classes),
        how,
        ", ".join(f"{label!r} {counts[label]}" for label in classes),
    )
    numeric = [label for label in classes if _as_number(label) is not None]
    if numeric and len(numeric) < len(classes):
        words = [label for label in classes if _as_number(label) is None]
        logger.warning(
            "%s: class(es) %s are numbers among word classes (%s); each is a "
            "class of its own: mistakes?",
            path,
            ", ".join(f"{label!r} ({counts[label]} examples)" for label in numeric),
            ", ".join(repr(label) for label in words),
        )
    spaced = sorted({v for v in train_labels if isinstance(v, str) and v != v.strip()})
    if spaced:
        logger.warning(
            "%s: label(s) %s have spaces around them; read without them, as %s",
            path,
            ", ".join(repr(v) for v in spaced[:5]),
            ", ".join(repr(v.strip()) for v in spaced[:5]),
        )


def _label_string(value) -> str:
    # JSON numbers and strings alike: 1 and "1" are the same class; "pos"
    # and " pos" (a space after a CSV comma) too.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value.strip() if isinstance(value, str) else json.dumps(value)


def _sorted_classes(values: set[str]) -> tuple[str, ...]:
    numbers = {value: _as_number(value) for value in values}
    if all(number is not None for number in numbers.values()):
        return tuple(sorted(values, key=lambda v: (numbers[v], v)))
    return tuple(sorted(values))


def _feature_names(columns: Sequence[str]) -> tuple[str, ...]:
    """Column names as SavedModel input names (letters, digits, underscores)."""
    names = []
    for i, column in enumerate(columns):
        name = (
            re.sub(r"[^A-Za-z0-9_]+", "_", column).strip("_").lower() or f"text_{i + 1}"
        )
        if name[0].isdigit():
            name = "text_" + name
        names.append(name)
    if len(set(names)) != len(names):
        names = [f"{name}_{i + 1}" for i, name in enumerate(names)]
    return tuple(names)


def load_custom_data(
    train_file: str,
    dev_file: str,
    test_file: str | None = None,
    text_columns: Sequence[str] = ("text",),
    label_column: str = "label",
    label_type: str = "auto",
) -> tuple[GlueTask, TaskData]:
    """Reads the user's splits; returns their task and data.

    Classes are those of the training file; a dev label train never had is
    an error. Regression targets are used as they are (no scaling). A test
    file whose first row has `label_column` is read labelled (its labels
    checked as dev's), else unlabelled.

    Raises:
        DataFileError: a missing file or column, an empty split, an empty or
            null label, a dev label train never had, a malformed row, a label
            that is not a number in a regression task, text that is not UTF-8,
            a `.gz` file that does not decompress.
    """
    if label_type not in LABEL_TYPES:
        raise DataFileError(
            f"label type {label_type!r}: choose one of {', '.join(LABEL_TYPES)}"
        )
    if not 1 <= len(text_columns) <= 2:
        raise DataFileError(
            f"one or two text columns (a text or a pair), got {list(text_columns)}"
        )
    if label_column in text_columns:
        raise DataFileError(
            f"{label_column!r} is both a text column and the label column: the "
            "model would read its answer; name the text column(s) with "
            "--text-columns and the label's with --label-column"
        )
    labelled = [("train", train_file), ("dev", dev_file)]
    if test_file and _has_column(test_file, label_column):
        labelled.append(("test", test_file))
    read = {
        split: (path, *read_labelled_file(path, text_columns, label_column))
        for split, path in labelled
    }
    for path, _, labels, lines in read.values():
        _refuse_missing_labels(path, labels, lines, label_column)
    _, _, train_labels, train_lines = read["train"]
    inferred = label_type == "auto"
    if inferred:
        label_type = infer_label_type(train_labels)
        if label_type == "classification":
            _refuse_mostly_numeric(train_file, train_labels, train_lines, label_column)
    classes = ()
    if label_type == "classification":
        classes = _sorted_classes({_label_string(v) for v in train_labels})
        if len(classes) < 2:
            raise DataFileError(
                f"{train_file}: every label is {classes[0]!r}; classification "
                "needs at least two classes"
            )
        if inferred:
            _refuse_text_as_labels(train_file, classes, train_labels, label_column)
    metrics = ("accuracy", "f1", "mcc") if len(classes) == 2 else ("accuracy", "mcc")
    task = GlueTask(
        name="custom",
        directory="",
        text_columns=tuple(text_columns),
        text_features=_feature_names(text_columns),
        label_column=label_column,
        labels=classes,
        metrics=metrics if classes else ("pearson", "spearman"),
    )
    ids = {label: i for i, label in enumerate(classes)}

    def examples(split: str) -> GlueExamples:
        """The split's examples, labels as class ids or scores."""
        path, texts, labels, lines = read[split]
        values = []
        for value, line in zip(labels, lines):
            label = ids.get(_label_string(value)) if classes else _as_number(value)
            if label is None and classes:
                raise DataFileError(
                    f"{path}, line {line}: label {_label_string(value)!r} does not "
                    f"occur in the training file {train_file} (its labels: "
                    f"{', '.join(classes)})"
                )
            if label is None:
                raise DataFileError(
                    f"{path}, line {line}: {label_column} {shorten(value)} is "
                    "not a number (a regression task)"
                )
            values.append(label)
        labels = np.asarray(values, dtype="int32" if classes else "float32")
        return GlueExamples(task, split, texts, labels, source=os.fspath(path))

    train = examples("train")
    _log_labels(train_file, label_type, inferred, train_labels, classes)
    dev = examples("dev")
    test = {}
    if test_file:
        _refuse_prediction_column(test_file)
        if "test" in read:
            test[task.name, "test"] = examples("test")
        else:
            test_texts, _, _ = read_labelled_file(test_file, text_columns, None)
            test[task.name, "test"] = GlueExamples(
                task, "test", test_texts, None, source=os.fspath(test_file)
            )
    return task, TaskData(train=train, dev={"dev": dev}, test=test)


def _has_column(path: str, column: str) -> bool:
    """Whether the file's first row (a CSV/TSV header, a JSON object) has
    `column`."""
    for _, row in table_rows(os.fspath(path), file_format(path), DataFileError):
        return column in row
    return False


def _refuse_prediction_column(path: str) -> None:
    """`DataFileError` if the test file has a `PREDICTION_COLUMN`, which its
    predictions file adds (refused before training, not after)."""
    for line, row in table_rows(os.fspath(path), file_format(path), DataFileError):
        if PREDICTION_COLUMN in row:
            raise DataFileError(
                f"{path}, line {line}: a column named {PREDICTION_COLUMN!r}, which "
                "the predictions file adds beside your columns; rename it"
            )


def write_test_predictions(
    examples: GlueExamples, predictions: Sequence[str], output_dir: str
) -> str:
    """Writes `output_dir/test.<csv|tsv|jsonl>`, the test file (`examples.source`)
    in its own format (a JSON array as JSON Lines): every row with all its
    columns as read, in file order, plus `PREDICTION_COLUMN` (scores as
    numbers in JSON). Returns the path.
    """
    source = examples.source
    kind = file_format(source)
    rows = list(table_rows(source, kind, DataFileError))
    header = rows.pop(0)[1] if kind != "jsonl" else None
    if len(rows) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions for {len(rows)} rows")
    out = io.StringIO(newline="")
    if kind == "jsonl":
        regression = examples.task.is_regression
        for (_, row), prediction in zip(rows, predictions):
            value = float(prediction) if regression else prediction
            row = {**row, PREDICTION_COLUMN: value}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    else:
        # CSV as read: standard quoting. TSV as read: no quoting, and no
        # field can hold a tab or a line break (it would have split the row).
        dialect = {"lineterminator": "\n"}
        if kind == "tsv":
            dialect.update(delimiter="\t", quoting=csv.QUOTE_NONE, quotechar=None)
        writer = csv.writer(out, **dialect)
        writer.writerow([*header, PREDICTION_COLUMN])
        for (_, row), prediction in zip(rows, predictions):
            writer.writerow([*(row[column] for column in header), prediction])
    path = os.path.join(output_dir, f"test.{kind}")
    return write_text_atomically(path, out.getvalue())
