"""GLUE examples from the official TSV files (`read_glue_tsv`) or
tensorflow-datasets (`load_tfds_split`), as `GlueExamples` (one split, in
memory), of which `TaskData` holds a run's; and back out (`write_submission`,
a GLUE-server TSV). Problems with the data raise `GlueDataError`, naming the
file, the line and the value.
"""

from __future__ import annotations

import dataclasses
import os
import random

import numpy as np
import tensorflow as tf

from electra_tf.atomic_write import write_text_atomically
from electra_tf.errors import FinetuningDataError
from electra_tf.finetuning import length_grouping
from electra_tf.finetuning.files import load_tfds, read_columns
from electra_tf.finetuning.glue_tasks import GlueTask


class GlueDataError(FinetuningDataError):
    """GLUE data is missing, malformed or does not fit its task."""


@dataclasses.dataclass(frozen=True)
class GlueExamples:
    """One split of one task, in memory.

    `texts[s][i]` is text segment `s` of example `i` (one segment for
    single-sentence tasks, two for pairs). `labels` is int32 class ids, or
    float32 regression targets already divided by `task.label_scale`, with
    shape [num_examples]; None for an unlabelled (test) split.
    """

    task: GlueTask
    split: str
    texts: tuple[tuple[str, ...], ...]
    labels: np.ndarray | None
    # Where the examples came from, for messages.
    source: str = ""

    def __len__(self) -> int:
        return len(self.texts[0])

    def with_swapped_pairs(self) -> GlueExamples:
        """The examples followed by a copy with the two segments swapped.

        ELECTRA's augmentation for symmetric pair tasks (MRPC, STS-B):
        `(a, b, y)` is also trained on as `(b, a, y)`.
        """
        if len(self.texts) != 2:
            raise ValueError(f"{self.task.name} is not a sentence-pair task")
        first, second = self.texts
        labels = None
        if self.labels is not None:
            labels = np.concatenate([self.labels, self.labels])
        return dataclasses.replace(
            self, texts=(first + second, second + first), labels=labels
        )

    def sample(self, count: int, seed: int = 0) -> GlueExamples:
        """`count` of the examples, drawn at random with `seed`, in drawn order.

        For learning curves and few-example comparisons: the same `count` and
        `seed` give the same examples on any machine (Python's `random`, not
        TensorFlow's), and a larger `count` with the same seed keeps the
        smaller draw as its prefix.
        """
        if not 0 < count <= len(self):
            raise ValueError(f"cannot draw {count} of {len(self)} examples")
        order = list(range(len(self)))
        random.Random(seed).shuffle(order)
        chosen = order[:count]
        return dataclasses.replace(
            self,
            texts=tuple(tuple(segment[i] for i in chosen) for segment in self.texts),
            labels=None if self.labels is None else self.labels[chosen],
        )

    @property
    def elements(self) -> tuple:
        """The examples as in-memory tensors, one a row: `(x, labels)`, or
        `(x,)` unlabelled; `x` is the texts (a tuple of two for pairs), which
        the classifier's preprocessor tokenizes inside `fit`/`predict`."""
        texts = tuple(np.array(segment, dtype=object) for segment in self.texts)
        x = texts[0] if len(texts) == 1 else texts
        # `(x,)`, not `x`, when unlabelled: Keras and tf.data take an element
        # that is a pair of tensors for `(x, y)`, so a bare sentence pair
        # would be read as (first sentence, label).
        return (x,) if self.labels is None else (x, self.labels)

    def to_dataset(self, batch_size: int) -> tf.data.Dataset:
        """The `elements` in batches, in order, the last one smaller: for
        evaluation and prediction (training batches: `FinetuningTask.training_data`)."""
        return length_grouping.batches(self.elements, batch_size)


@dataclasses.dataclass
class TaskData:
    """The splits of one run: train, labelled dev splits, unlabelled test splits."""

    train: GlueExamples
    dev: dict[str, GlueExamples]
    # (task, split) -> examples: the task's test splits, plus those of the
    # prediction-only tasks its model predicts (MNLI: AX).
    test: dict[tuple[str, str], GlueExamples]


def task_directory(task: GlueTask, data_dir: str) -> str:
    """`<data_dir>/<task.directory>` if it exists, else `data_dir` itself.

    So `--data-dir` may be the GLUE root (`glue_data/`, holding `CoLA/`,
    `SST-2/`, ...) or one task's directory.
    """
    nested = os.path.join(data_dir, task.directory)
    return nested if tf.io.gfile.isdir(nested) else data_dir


def glue_split_path(task: GlueTask, split: str, data_dir: str) -> str:
    """The TSV file of `split` of `task` under `data_dir` (see `task_directory`)."""
    return os.path.join(task_directory(task, data_dir), task.file_name(split))


def read_glue_tsv(task: GlueTask, split: str, data_dir: str) -> GlueExamples:
    """Reads `split` ("train", "dev", "dev_matched", "test", ...) of `task`.

    Files are expected in the layout of the official GLUE download (see
    `GlueTask`): a header row naming the columns (except CoLA's train and dev
    files, which have none), tab-separated, no quoting. Test files have no
    label column. Empty lines are skipped.

    Raises:
        GlueDataError: the file is missing, lacks a column, has a row with
            another number of fields than the header, a label outside the
            task's set (or a non-numeric regression score), or no examples.
    """
    path = glue_split_path(task, split, data_dir)
    if not tf.io.gfile.exists(path):
        raise GlueDataError(
            f"{task.directory} {split} file not found: {path} (expected the "
            f"official GLUE layout, <data-dir>/{task.directory}/"
            f"{task.file_name(split)})"
        )
    labelled = split not in task.test_splits
    texts, values, lines = read_columns(
        path,
        "tsv",
        GlueDataError,
        task.text_columns,
        task.label_column if labelled else None,
        header=list(task.headerless_columns) or None if labelled else None,
    )
    if not labelled:
        return _examples(task, split, texts, None, path)
    label_ids = {value: i for i, value in enumerate(task.labels)}
    labels = []
    for value, line in zip(values, lines):
        if task.is_regression:
            try:
                labels.append(float(value) / task.label_scale)
            except ValueError:
                raise GlueDataError(
                    f"{path}, line {line}: {task.label_column} {value!r} is not "
                    "a number"
                ) from None
        elif value in label_ids:
            labels.append(label_ids[value])
        else:
            raise GlueDataError(
                f"{path}, line {line}: label {value!r} is not one of "
                f"{', '.join(task.labels)}"
            )
    return _examples(task, split, texts, labels, path)


def _examples(task: GlueTask, split: str, texts, labels, source: str) -> GlueExamples:
    """The split as read (`labels` None: unlabelled), labels as an array."""
    if labels is not None:
        dtype = "float32" if task.is_regression else "int32"
        labels = np.asarray(labels, dtype=dtype)
    texts = tuple(tuple(segment) for segment in texts)
    return GlueExamples(task, split, texts, labels, source=source)


def load_tfds_split(
    task: GlueTask, split: str, data_dir: str | None = None
) -> GlueExamples:
    """Reads `split` of `glue/<task>` from tensorflow-datasets (`load_tfds`),
    as `read_glue_tsv` does the TSV: its label ids are ours (`glue_tasks`),
    test splits unlabelled, STS-B scores divided by `task.label_scale`."""
    records, _ = load_tfds(
        task.tfds_name, task.tfds_split(split), data_dir, GlueDataError
    )
    source = f"tfds {task.tfds_name}:{task.tfds_split(split)}"
    texts = [[] for _ in task.text_features]
    labels = []
    for example in records:
        for segment, feature in zip(texts, task.text_features):
            segment.append(example[feature].decode("utf-8"))
        labels.append(example["label"])
    if not texts[0]:
        raise GlueDataError(f"{source}: the split has no examples")
    labelled = split not in task.test_splits
    if labelled and not task.is_regression:
        bad = [label for label in labels if not 0 <= label < task.num_classes]
        if bad:
            raise GlueDataError(
                f"{source}: label id {bad[0]} outside [0, {task.num_classes})"
            )
    if labelled and task.is_regression:
        labels = [label / task.label_scale for label in labels]
    return _examples(task, split, texts, labels if labelled else None, source)


def predictions_to_glue(task: GlueTask, outputs: np.ndarray) -> list[str]:
    """Model outputs -> the prediction strings the GLUE server expects.

    Args:
        task: the task whose labels are predicted (AX uses MNLI's).
        outputs: logits [num_examples, num_classes], or regression outputs
            [num_examples, 1] or [num_examples] on the training scale.

    Returns:
        Label values as written in GLUE files ("entailment", "1", ...), or
        scores multiplied back by `task.label_scale`, formatted to 3 decimals.
    """
    outputs = np.asarray(outputs)
    if task.is_regression:
        scores = outputs.reshape(-1) * task.label_scale
        return [f"{score:.3f}" for score in scores]
    return [task.labels[i] for i in np.argmax(outputs, axis=-1)]


def write_submission(task: GlueTask, split: str, outputs, output_dir: str) -> str:
    """Writes `output_dir/<task's submission file>`; returns its path.

    The format of the GLUE server: a header `index<TAB>prediction`, then one
    row per test example in file order, the index counting from 0.
    """
    rows = ["index\tprediction"]
    rows += [f"{i}\t{p}" for i, p in enumerate(predictions_to_glue(task, outputs))]
    path = os.path.join(output_dir, task.submission_file(split))
    return write_text_atomically(path, "\n".join(rows) + "\n")
