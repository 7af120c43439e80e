"""Classification and regression: a GLUE task, or your own files, as a task kind.

`ClassificationTask` fine-tunes an `ElectraTextClassifier` on raw text (the
classifier's preprocessor tokenizes inside `fit`): one or two text segments and
a class or a score. Its data is a `TaskData`: a GLUE task's splits
(`load_task_data`: the official TSV files or tensorflow-datasets) or your own
CSV, TSV or JSON Lines files (`custom_data.load_custom_data`). Every dev split
is evaluated after each epoch; the first selects the epoch by the task's score,
the mean of its metrics (as the GLUE leaderboard). The best seed writes:

* `submission/<Task>.tsv`: GLUE-server predictions of the test splits (MNLI:
  `MNLI-m.tsv`, `MNLI-mm.tsv`, and `AX.tsv` for the diagnostic set), as
  `index<TAB>prediction`, all the server takes; your own `--test-file` has no
  server and is read by you: `predictions/test.<csv|tsv|jsonl>` instead, its
  rows (every column) with their predictions (`custom_data.write_test_predictions`),
  and, if it has the label column, its metrics (`metrics.json`'s `test`: scored
  once, with the best seed's model, after dev chose its epoch and the seed);
* `saved_model/`: the classifier as a raw-text SavedModel
  (`electra_tf.export.classifier`) and `classifier.keras`.
"""

from __future__ import annotations

import dataclasses
import logging
import os

import tensorflow as tf

from electra_tf.config import ConfigError, FinetuningConfig
from electra_tf.export.classifier import export_text_classifier
from electra_tf.finetuning.custom_data import load_custom_data, write_test_predictions
from electra_tf.finetuning.glue_metrics import (
    task_metrics,
    task_score,
    task_score_definition,
)
from electra_tf.finetuning.glue_readers import (
    GlueDataError,
    GlueExamples,
    TaskData,
    glue_split_path,
    load_tfds_split,
    predictions_to_glue,
    read_glue_tsv,
    write_submission,
)
from electra_tf.finetuning.glue_tasks import (
    GlueTask,
    get_task,
    is_glue_task,
    tasks_predicted_by,
)
from electra_tf.finetuning.settings import (
    DEMO_DATA,
    OWN_FILE_FLAGS,
    FinetuningFlags,
    refuse_flags,
    refuse_unpaired_files,
)
from electra_tf.finetuning.starting_point import StartingPoint
from electra_tf.finetuning.task import FinetuningTask
from electra_tf.models.text_classifier import ElectraTextClassifier

logger = logging.getLogger(__name__)


class ClassificationTask(FinetuningTask):
    """A GLUE task or your own files (`data`: a `TaskData`, whose examples
    name their `GlueTask`: columns, labels, metrics, epochs)."""

    model_file = "classifier.keras"

    @classmethod
    def load_data(cls, flags: FinetuningFlags) -> tuple[TaskData, dict]:
        """A GLUE task (`--task`, default sst2: `--data-dir`, `--tfds`, or the
        demo excerpt as SST-2), or your own `--train-file` and `--dev-file`
        (`--test-file`, `--text-columns`, `--label-column`, `--label-type`);
        `--train-examples` of the training examples, drawn with `--sample-seed`."""
        custom = bool(flags.train_file)
        if custom and flags.task:
            raise ConfigError(
                f"--task {flags.task} reads GLUE data (--data-dir, --tfds); your own "
                "--train-file needs no --task (or --task tagging for CoNLL files)"
            )
        refuse_unpaired_files(flags)
        if custom and (flags.data_dir or flags.tfds):
            raise ConfigError("--train-file and --data-dir/--tfds: choose one")
        if custom:
            _, data = load_custom_data(
                flags.train_file,
                flags.dev_file,
                flags.test_file,
                text_columns=[
                    c.strip() for c in (flags.text_columns or "text").split(",")
                ],
                label_column=flags.label_column or "label",
                label_type=flags.label_type or "auto",
            )
            source = flags.train_file
        else:
            refuse_flags(
                flags,
                (*OWN_FILE_FLAGS, "test_file"),
                f"GLUE task {flags.task or 'sst2'} (it is for your own --train-file)",
            )
            task = get_task(flags.task or "sst2")
            data_dir = flags.data_dir
            if not data_dir and not flags.tfds:
                if task.name != "sst2":
                    raise ConfigError(
                        f"no --data-dir or --tfds for {task.name}: the built-in "
                        "demo data is for sst2 only"
                    )
                data_dir = DEMO_DATA
            data = load_task_data(task, data_dir, use_tfds=flags.tfds)
            source = "tfds" if flags.tfds else data_dir
        if flags.train_examples is None:
            return data, {"data": source}
        train = draw(data.train, flags.train_examples, flags.sample_seed)
        info = {"data": source, "sample_seed": flags.sample_seed}
        return dataclasses.replace(data, train=train), info

    @property
    def glue_task(self) -> GlueTask:
        return self.data.train.task

    @property
    def name(self) -> str:
        return self.glue_task.name

    @property
    def default_epochs(self) -> int:
        return self.glue_task.epochs

    def score_definition(self) -> str:
        return task_score_definition(self.glue_task)

    def facts(self) -> dict:
        return {"train_examples": len(self.data.train)}

    def build_model(self) -> ElectraTextClassifier:
        return build_classifier(self.glue_task, self.config, self.starting_point)

    def training_examples(self, model):
        train = self.data.train
        if self.glue_task.swap_pairs and self.config.swap_pairs:
            train = train.with_swapped_pairs()
        x = train.elements[0]
        return train.elements, model.preprocessor.sequence_lengths(x)

    def compile_arguments(self) -> dict:
        # Cross-entropy on logits, or squared error for STS-B and scores.
        return {
            **super().compile_arguments(),
            "loss": "auto",
            "metrics": task_metrics(self.glue_task),
        }

    def evaluate(self, model, logs):
        """Every dev split; the first selects the epoch. Its results go into
        `logs` as `val_<metric>`, the others' as `val_<split>_<metric>` (MNLI:
        `val_dev_mismatched_accuracy`)."""
        dev = {}
        for i, (split, examples) in enumerate(self.data.dev.items()):
            dataset = examples.to_dataset(self.config.eval_batch_size)
            results = model.evaluate(dataset, verbose=0, return_dict=True)
            dev[split] = {key: float(value) for key, value in results.items()}
            prefix = "val_" if i == 0 else f"val_{split}_"
            logs.update({prefix + key: value for key, value in dev[split].items()})
        return dev, task_score(self.glue_task, dev[next(iter(dev))])

    def write_outputs(self, model, output_dir):
        """Every test split's predictions (see the module docstring), and the
        SavedModel."""
        outputs = {}
        glue = is_glue_task(self.glue_task)
        if glue:
            outputs["submissions"] = []
        for (_, split), examples in self.data.test.items():
            dataset = examples.to_dataset(self.config.eval_batch_size)
            predicted = model.predict(dataset, verbose=0)
            if glue:
                folder = os.path.join(output_dir, "submission")
                path = write_submission(examples.task, split, predicted, folder)
                outputs["submissions"].append(path)
            else:  # your own --test-file
                folder = os.path.join(output_dir, "predictions")
                predictions = predictions_to_glue(examples.task, predicted)
                path = write_test_predictions(examples, predictions, folder)
                outputs["predictions"] = path
                if examples.labels is not None:
                    results = model.evaluate(dataset, verbose=0, return_dict=True)
                    outputs["test"] = {k: float(v) for k, v in results.items()}
        outputs["saved_model"] = export_text_classifier(
            model,
            os.path.join(output_dir, "saved_model"),
            text_features=self.glue_task.text_features,
            label_names=self.glue_task.label_names,
            label_scale=self.glue_task.label_scale,
        )
        return outputs


def build_classifier(
    task: GlueTask, config: FinetuningConfig, start: StartingPoint
) -> ElectraTextClassifier:
    """A classifier for `task` (its number of outputs) on `start`'s encoder
    (`StartingPoint.build`), its head's dropout and pooling the config's."""
    return start.build(
        ElectraTextClassifier,
        config,
        num_classes=task.num_classes,
        dropout=config.head_dropout,
        pooling=config.pooling,
    )


def load_task_data(
    task: GlueTask, data_dir: str | None = None, use_tfds: bool = False
) -> TaskData:
    """Loads a task's splits from a GLUE directory or tensorflow-datasets.

    Train and dev splits are required. A test file that is not there (or
    AX's, for MNLI) is skipped with a warning: only GLUE-server submissions
    need them.
    """
    if not task.has_train:
        raise GlueDataError(
            f"{task.name} has no training data; it is predicted by the "
            f"{task.predicted_by} model (fine-tune {task.predicted_by})"
        )

    def load(which, split):
        if use_tfds:
            return load_tfds_split(which, split, data_dir)
        return read_glue_tsv(which, split, data_dir)

    train = load(task, "train")
    dev = {split: load(task, split) for split in task.dev_splits}
    test = {}
    for which in [task, *tasks_predicted_by(task.name)]:
        for split in which.test_splits:
            if not use_tfds:
                path = glue_split_path(which, split, data_dir)
                if not tf.io.gfile.exists(path):
                    logger.warning("%s not found: no %s predictions", path, split)
                    continue
            test[which.name, split] = load(which, split)
    return TaskData(train=train, dev=dev, test=test)


def draw(train: GlueExamples, count: int, seed: int) -> GlueExamples:
    """`--train-examples` of `train`, or `ConfigError` naming the flag."""
    if not 0 < count <= len(train):
        raise ConfigError(
            f"--train-examples must be between 1 and the {len(train)} training "
            f"examples of {train.source or train.task.name}, got {count}"
        )
    return train.sample(count, seed)
