"""A GLUE fine-tuning run: ELECTRA's recipe, several seeds, dev metrics, exports.

`finetune(flags)` (`electra_tf.finetuning.finetune`) is what `finetune/run.py`
calls: the task, its data, the model's width, then every setting
(`settings.resolve_finetuning_config`), then `run_finetuning`.

`run_finetuning` trains one `ElectraTextClassifier` per seed with
`model.fit` on raw text (the classifier's preprocessor tokenizes inside
`fit`), evaluates every dev split after each epoch (`DevEvaluation`), keeps
each seed's best epoch, and writes to `output_dir`:

* `metrics.json`: per seed and epoch, the best epoch, and the median over
  seeds (ELECTRA reports medians);
* `logs/seed_<n>/`: TensorBoard event files (train and dev metrics);
* `submission/<Task>.tsv`: GLUE-server predictions of the test splits (MNLI:
  `MNLI-m.tsv`, `MNLI-mm.tsv`, and `AX.tsv` for the diagnostic set); for your
  own `--test-file`, `predictions/test.<csv|tsv|jsonl>` instead: its rows
  with their predictions (`predict_test_splits`);
* `saved_model/`: the classifier as a raw-text SavedModel
  (`electra_tf.export.classifier`) and `classifier.keras`.
Predictions and exports come from the seed with the best dev score.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable, Sequence

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from electra_tf.config import ConfigError, ModelConfig
from electra_tf.data.vocabulary import Vocabulary, check_vocabulary_fits
from electra_tf.export.classifier import export_text_classifier
from electra_tf.finetuning.best_epoch import BestEpochSelection, explain_score
from electra_tf.finetuning.custom_data import write_test_predictions
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
    load_glue_split,
    predictions_to_glue,
    write_submission,
)
from electra_tf.finetuning.glue_tasks import GlueTask, is_glue_task, tasks_predicted_by
from electra_tf.finetuning.json_file import write_json
from electra_tf.finetuning.layerwise_decay import layerwise_learning_rate_multipliers
from electra_tf.finetuning.settings import (
    FinetuningConfig,
)
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.text_classifier_preprocessor import (
    ElectraTextClassifierPreprocessor,
)
from electra_tf.optimization.optimizer import ElectraAdam
from electra_tf.optimization.schedule import WarmupPolynomialDecay

logger = logging.getLogger(__name__)


def epochs_for(task: GlueTask, config: FinetuningConfig) -> int:
    return config.epochs or task.epochs


def make_optimizer(
    config: FinetuningConfig, num_layers: int, total_steps: int
) -> ElectraAdam:
    """`ElectraAdam` with warm-up x linear decay and layer-wise LR multipliers."""
    schedule = WarmupPolynomialDecay(
        config.learning_rate,
        warmup_steps=int(config.warmup_fraction * total_steps),
        total_steps=total_steps,
    )
    return ElectraAdam(
        learning_rate=schedule,
        weight_decay=config.weight_decay,
        epsilon=config.adam_epsilon,
        learning_rate_multipliers=layerwise_learning_rate_multipliers(
            num_layers,
            config.layerwise_decay,
            corrected=config.corrected_layerwise_decay,
        ),
        global_clipnorm=config.clip_norm or None,
    )


def random_encoder(
    model_config: ModelConfig | None,
    vocabulary: Vocabulary | None,
    model: str,
    dropout: float,
) -> tuple[ElectraEncoder, keras_hub.models.ElectraTokenizer]:
    """A randomly initialised encoder and its tokenizer (no-pre-training runs).

    Every task's builder needs the same: the architecture and the vocabulary,
    which must fit each other. `model` names the model in the error; `dropout`
    is the fine-tuning rate inside the encoder, as a pre-trained one gets.
    """
    if model_config is None or vocabulary is None:
        raise ValueError(f"a randomly initialised {model} needs a model config")
    check_vocabulary_fits(
        vocabulary.size, model_config.vocabulary_size, error=ConfigError
    )
    tokenizer = keras_hub.models.ElectraTokenizer(
        vocabulary=list(vocabulary.tokens), lowercase=vocabulary.lowercase
    )
    encoder = ElectraEncoder.discriminator_from_config(
        model_config.override(dropout=dropout)
    )
    return encoder, tokenizer


def build_classifier(
    task: GlueTask,
    config: FinetuningConfig,
    pretrained: str | None = None,
    model_config: ModelConfig | None = None,
    vocabulary: Vocabulary | None = None,
) -> ElectraTextClassifier:
    """A classifier for `task`: from a keras-hub preset, or randomly initialised.

    Args:
        task: gives the number of outputs.
        config: gives sequence length and head dropout.
        pretrained: a keras-hub ELECTRA preset (directory or name), or None
            for a randomly initialised encoder (the no-pre-training baseline),
            which then needs `model_config` and `vocabulary`.
        model_config: the encoder's architecture (random init only).
        vocabulary: the WordPiece `Vocabulary`, with its casing (random init
            only; a preset records its own).
    """
    if pretrained is not None:
        classifier = ElectraTextClassifier.from_preset(
            pretrained,
            num_classes=task.num_classes,
            sequence_length=config.max_seq_length,
            dropout=config.head_dropout,
            pooling=config.pooling,
            encoder_dropout=config.encoder_dropout,
        )
        classifier.backbone.reinitialize_top_layers(
            config.reinit_layers, ModelConfig.initializer_range
        )
        return classifier
    encoder, tokenizer = random_encoder(
        model_config, vocabulary, "classifier", config.encoder_dropout
    )
    return ElectraTextClassifier(
        backbone=encoder,
        num_classes=task.num_classes,
        preprocessor=ElectraTextClassifierPreprocessor(
            tokenizer, sequence_length=config.max_seq_length
        ),
        dropout=config.head_dropout,
        pooling=config.pooling,
    )


class DevEvaluation(BestEpochSelection):
    """Evaluates every dev split after each epoch; restores the best epoch.

    The first dev split selects the epoch (by the task's score, the mean of
    its metrics). Results go into the epoch's `logs`: the first split as
    `val_<metric>`, others as `val_<split>_<metric>` (MNLI:
    `val_dev_mismatched_accuracy`).
    """

    def __init__(
        self,
        task: GlueTask,
        dev_datasets: dict[str, tf.data.Dataset],
        patience: int = 0,
    ):
        super().__init__(patience)
        if not dev_datasets:
            raise ValueError(f"{task.name}: no dev split to evaluate on")
        self.task = task
        self.dev_datasets = dev_datasets

    def evaluate(self, logs):
        dev = {}
        for i, (split, dataset) in enumerate(self.dev_datasets.items()):
            results = self.model.evaluate(dataset, verbose=0, return_dict=True)
            dev[split] = {key: float(value) for key, value in results.items()}
            prefix = "val_" if i == 0 else f"val_{split}_"
            logs.update({prefix + key: value for key, value in dev[split].items()})
        return dev, task_score(self.task, dev[next(iter(dev))])


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
        return load_glue_split(which, split, data_dir, use_tfds=use_tfds)

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


def _median_results(per_seed: list[dict]) -> dict:
    """Median over seeds of every dev metric and of the score."""
    dev = {}
    for split, results in per_seed[0]["dev"].items():
        dev[split] = {
            key: float(np.median([seed["dev"][split][key] for seed in per_seed]))
            for key in results
        }
    return {"dev": dev, "score": float(np.median([s["score"] for s in per_seed]))}


def finetune_seed(
    make_classifier: Callable[[], ElectraTextClassifier],
    task: GlueTask,
    data: TaskData,
    config: FinetuningConfig,
    seed: int,
    log_dir: str | None = None,
    verbose: int | str = 2,
) -> tuple[ElectraTextClassifier, dict]:
    """Fine-tunes one classifier with `seed`; returns it (best epoch) and results.

    The seed fixes the head's initialisation, dropout and the order of the
    training data.
    """
    keras.utils.set_random_seed(seed)
    classifier = make_classifier()
    train = data.train
    if task.swap_pairs and config.swap_pairs:
        train = train.with_swapped_pairs()
    epochs = epochs_for(task, config)
    steps_per_epoch = math.ceil(len(train) / config.batch_size)
    classifier.compile(
        optimizer=make_optimizer(
            config, classifier.backbone.num_layers, epochs * steps_per_epoch
        ),
        loss="auto",  # cross-entropy on logits, or squared error for STS-B
        metrics=task_metrics(task),
        jit_compile=config.jit_compile,
    )
    evaluation = DevEvaluation(
        task,
        {
            split: examples.to_dataset(config.eval_batch_size)
            for split, examples in data.dev.items()
        },
        patience=config.early_stopping_patience,
    )
    callbacks = [evaluation]
    if log_dir:
        callbacks.append(keras.callbacks.TensorBoard(log_dir))
    classifier.fit(
        train.to_dataset(
            config.batch_size,
            shuffle=True,
            seed=seed,
            group_by_length=config.group_by_length,
            max_words=config.max_seq_length,
        ),
        shuffle=False,  # the dataset shuffles itself, seeded
        epochs=epochs,
        callbacks=callbacks,
        verbose=verbose,
    )
    return classifier, evaluation.results(seed)


def predict_test_splits(
    classifier: ElectraTextClassifier,
    test: dict[tuple[str, str], GlueExamples],
    output_dir: str,
    batch_size: int = 128,
) -> list[str]:
    """Predicts every test split; returns the paths written.

    A GLUE task's go to `output_dir/submission/` in the GLUE server's format,
    `index<TAB>prediction`, which is all the server takes. Your own test
    file has no server to go to and is read by you: it goes to
    `output_dir/predictions/`, its rows (texts and every other column) with
    a `prediction` column added (`custom_data.write_test_predictions`).
    """
    paths = []
    for (_, split), examples in test.items():
        outputs = classifier.predict(examples.to_dataset(batch_size), verbose=0)
        if is_glue_task(examples.task):
            folder = os.path.join(output_dir, "submission")
            paths.append(write_submission(examples.task, split, outputs, folder))
        else:
            folder = os.path.join(output_dir, "predictions")
            predictions = predictions_to_glue(examples.task, outputs)
            paths.append(write_test_predictions(examples, predictions, folder))
    return paths


def run_seeds(
    name: str,
    seeds: Sequence[int],
    train_seed: Callable[[int, str], tuple[keras.Model, dict]],
    output_dir: str,
    summary: dict,
) -> keras.Model:
    """Fine-tunes once per seed; returns the model of the best-scoring seed.

    `train_seed(seed, log_dir)` returns the model and its results (with
    `seed` and `score`). After every seed, `summary` gets its results and the
    median so far and is written to `output_dir/metrics.json`, so a run cut
    short keeps what it finished; at the end it gets `best_seed`.
    """
    best_model, best_results = None, None
    per_seed = []
    for seed in seeds:
        logger.info("%s: fine-tuning with seed %d", name, seed)
        model, results = train_seed(
            seed, os.path.join(output_dir, "logs", f"seed_{seed}")
        )
        per_seed.append(results)
        summary["seeds"][str(seed)] = results
        summary["median"] = _median_results(per_seed)
        if best_results is None or results["score"] > best_results["score"]:
            best_model, best_results = model, results
        write_json(os.path.join(output_dir, "metrics.json"), summary)
    summary["best_seed"] = best_results["seed"]
    return best_model


def run_finetuning(
    task: GlueTask,
    data: TaskData,
    make_classifier: Callable[[], ElectraTextClassifier],
    config: FinetuningConfig,
    output_dir: str,
    seeds: Sequence[int] = (1,),
    run_info: dict | None = None,
    verbose: int | str = 2,
) -> dict:
    """Fine-tunes with every seed, then predicts and exports with the best.

    Args:
        task: the GLUE task.
        data: its splits (`load_task_data`).
        make_classifier: builds a fresh classifier (called once per seed,
            after the seed is set).
        config: the recipe.
        output_dir: where metrics, logs, submissions and exports go.
        seeds: one run per seed; the dev metrics' median is reported.
        run_info: extra facts recorded in `metrics.json` (e.g. the
            pre-trained model's path).
        verbose: Keras' `fit` verbosity.

    Returns:
        The contents of `metrics.json`.
    """
    if not seeds:
        raise ConfigError("at least one seed is needed")
    tf.io.gfile.makedirs(output_dir)
    summary = {
        "task": task.name,
        **(run_info or {}),
        "config": config.to_dict(),
        "epochs": epochs_for(task, config),
        "train_examples": len(data.train),
        "score_definition": task_score_definition(task),
        "seeds": {},
    }
    explain_score(task.name, summary["score_definition"])
    best_classifier = run_seeds(
        task.name,
        seeds,
        lambda seed, log_dir: finetune_seed(
            make_classifier, task, data, config, seed, log_dir=log_dir, verbose=verbose
        ),
        output_dir,
        summary,
    )
    written = predict_test_splits(
        best_classifier, data.test, output_dir, batch_size=config.eval_batch_size
    )
    if is_glue_task(task):
        summary["submissions"] = written
    elif written:  # your own --test-file
        (summary["predictions"],) = written
    summary["saved_model"] = export_text_classifier(
        best_classifier,
        os.path.join(output_dir, "saved_model"),
        text_features=task.text_features,
        label_names=task.label_names,
        label_scale=task.label_scale,
    )
    summary["keras_model"] = os.path.join(output_dir, "classifier.keras")
    best_classifier.save(summary["keras_model"])
    write_json(os.path.join(output_dir, "metrics.json"), summary)
    return summary
