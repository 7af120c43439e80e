"""The GLUE tasks: files, columns, labels, metrics and ELECTRA's recipe for each.

One frozen `GlueTask` per task, looked up with `get_task(name)`. Everything a
loader, a metric, a training run or a GLUE-server submission needs to know
about a task is a field here, so no other module special-cases task names.

Label ids follow tensorflow-datasets' `glue/<task>` ClassLabels, so the TSV
and tfds loaders give the same ids: a label's id is its position in `labels`,
which holds the values exactly as the GLUE files (and the GLUE server) write
them, e.g. "0"/"1" for CoLA and "entailment"/"neutral"/"contradiction" for
MNLI. (The original ELECTRA code orders MNLI's labels alphabetically; only
the ids differ, not the predictions.)

Example:
>>> task = get_task("MNLI")
>>> task.dev_splits, task.num_classes, task.labels[2]
(('dev_matched', 'dev_mismatched'), 3, 'contradiction')
>>> get_task("sts-b").is_regression, get_task("sts-b").epochs
(True, 10)
"""

from __future__ import annotations

import dataclasses

from electra_tf.errors import ElectraError


class UnknownTaskError(ElectraError, ValueError):
    """A task name that is not one of GLUE's."""


@dataclasses.dataclass(frozen=True)
class GlueTask:
    # Lower-case name used on the command line and by tensorflow-datasets.
    name: str
    # The task's directory in the official GLUE download ("CoLA", "SST-2", ...).
    directory: str
    # Header names of the TSV columns holding the text segments, in the order
    # they are packed (`[CLS] first [SEP] second [SEP]`).
    text_columns: tuple[str, ...]
    # The same segments' names in tfds (`glue/<task>` features) and in the
    # exported SavedModel's signature; () for `text_columns`.
    text_features: tuple[str, ...] = ()
    # Header name of the label column (test files have none).
    label_column: str = "label"
    # Label values as the TSV files and the GLUE server write them, in id
    # order; empty for a regression task.
    labels: tuple[str, ...] = ()
    # Readable class names, in id order (tfds' names); () for `labels`.
    label_names: tuple[str, ...] = ()
    # Regression targets are divided by this for training (STS-B: 5, so
    # targets are in [0, 1]); predictions are multiplied back for submissions
    # and serving. (Pearson and Spearman do not change with the scale.)
    label_scale: float = 1.0
    # Metrics reported on dev (names from `electra_tf.finetuning.glue_metrics`); the
    # task's score is their mean, as on the GLUE leaderboard.
    metrics: tuple[str, ...] = ("accuracy",)
    # Fine-tuning epochs of ELECTRA's recipe.
    epochs: int = 3
    # Training pairs are also added with their two segments swapped (ELECTRA
    # does this for the symmetric tasks MRPC and STS-B).
    swap_pairs: bool = False
    # Evaluation splits with labels; the first one selects the best epoch.
    dev_splits: tuple[str, ...] = ("dev",)
    # Unlabelled splits predicted for the GLUE server.
    test_splits: tuple[str, ...] = ("test",)
    # Whether the task has a training split (AX has only a test set).
    has_train: bool = True
    # `(split, file name)` where a split's file is not `<split>.tsv`.
    file_names: tuple[tuple[str, str], ...] = ()
    # Column names of files that have no header row (CoLA's train and dev);
    # the test file of such a task has a header.
    headerless_columns: tuple[str, ...] = ()
    # `(split, file name)` of the GLUE-server submission of a test split whose
    # file is not `<directory>.tsv`.
    submission_files: tuple[tuple[str, str], ...] = ()
    # A prediction-only task is predicted by this task's model (AX: MNLI).
    predicted_by: str = ""

    def __post_init__(self):
        if not self.text_features:
            object.__setattr__(self, "text_features", self.text_columns)
        if not self.label_names:
            object.__setattr__(self, "label_names", self.labels)

    @property
    def is_regression(self) -> bool:
        return not self.labels

    @property
    def num_classes(self) -> int:
        """Outputs of the classifier head (1 for regression)."""
        return len(self.labels) or 1

    @property
    def tfds_name(self) -> str:
        return f"glue/{self.name}"

    def file_name(self, split: str) -> str:
        """The TSV file of `split` in the task's GLUE directory."""
        return dict(self.file_names).get(split, f"{split}.tsv")

    def tfds_split(self, split: str) -> str:
        """tfds calls the dev splits "validation" ("validation_matched", ...)."""
        return split.replace("dev", "validation")

    def submission_file(self, split: str) -> str:
        """GLUE's file name for `split`'s predictions."""
        return dict(self.submission_files).get(split, f"{self.directory}.tsv")


_NLI_LABELS = ("entailment", "not_entailment")

GLUE_TASKS: dict[str, GlueTask] = {
    task.name: task
    for task in (
        GlueTask(
            name="cola",
            directory="CoLA",
            text_columns=("sentence",),
            labels=("0", "1"),
            label_names=("unacceptable", "acceptable"),
            metrics=("mcc",),
            headerless_columns=("source", "label", "original_label", "sentence"),
        ),
        GlueTask(
            name="sst2",
            directory="SST-2",
            text_columns=("sentence",),
            labels=("0", "1"),
            label_names=("negative", "positive"),
        ),
        GlueTask(
            name="mrpc",
            directory="MRPC",
            text_columns=("#1 String", "#2 String"),
            text_features=("sentence1", "sentence2"),
            label_column="Quality",
            labels=("0", "1"),
            label_names=("not_equivalent", "equivalent"),
            metrics=("accuracy", "f1"),
            swap_pairs=True,
        ),
        GlueTask(
            name="stsb",
            directory="STS-B",
            text_columns=("sentence1", "sentence2"),
            label_column="score",
            label_scale=5.0,
            metrics=("pearson", "spearman"),
            epochs=10,
            swap_pairs=True,
        ),
        GlueTask(
            name="qqp",
            directory="QQP",
            text_columns=("question1", "question2"),
            label_column="is_duplicate",
            labels=("0", "1"),
            label_names=("not_duplicate", "duplicate"),
            metrics=("accuracy", "f1"),
        ),
        GlueTask(
            name="mnli",
            directory="MNLI",
            text_columns=("sentence1", "sentence2"),
            text_features=("premise", "hypothesis"),
            label_column="gold_label",
            labels=("entailment", "neutral", "contradiction"),
            dev_splits=("dev_matched", "dev_mismatched"),
            test_splits=("test_matched", "test_mismatched"),
            submission_files=(
                ("test_matched", "MNLI-m.tsv"),
                ("test_mismatched", "MNLI-mm.tsv"),
            ),
        ),
        GlueTask(
            name="qnli",
            directory="QNLI",
            text_columns=("question", "sentence"),
            labels=_NLI_LABELS,
        ),
        GlueTask(
            name="rte",
            directory="RTE",
            text_columns=("sentence1", "sentence2"),
            labels=_NLI_LABELS,
            epochs=10,
        ),
        GlueTask(
            name="wnli",
            directory="WNLI",
            text_columns=("sentence1", "sentence2"),
            labels=("0", "1"),
            label_names=("not_entailment", "entailment"),
        ),
        # The diagnostic set: MNLI-style pairs with no public labels, predicted
        # by the MNLI model and submitted as AX.tsv.
        GlueTask(
            name="ax",
            directory="diagnostic",
            text_columns=("sentence1", "sentence2"),
            text_features=("premise", "hypothesis"),
            label_column="",
            labels=("entailment", "neutral", "contradiction"),
            dev_splits=(),
            has_train=False,
            file_names=(("test", "diagnostic.tsv"),),
            submission_files=(("test", "AX.tsv"),),
            predicted_by="mnli",
        ),
    )
}


def get_task(name: str) -> GlueTask:
    """The task called `name`; case, "-" and "_" are ignored ("STS-B" is stsb)."""
    key = name.lower().replace("-", "").replace("_", "")
    if key not in GLUE_TASKS:
        raise UnknownTaskError(
            f"Unknown GLUE task {name!r}; choose one of {', '.join(GLUE_TASKS)}"
        )
    return GLUE_TASKS[key]


def is_glue_task(task: GlueTask) -> bool:
    """Whether `task` is one of GLUE's, whose test predictions go to the GLUE
    server; not a `GlueTask` made for your own files (`custom_data`)."""
    return GLUE_TASKS.get(task.name) == task


def tasks_predicted_by(name: str) -> list[GlueTask]:
    """Prediction-only tasks that use `name`'s model (for "mnli": AX)."""
    return [task for task in GLUE_TASKS.values() if task.predicted_by == name]
