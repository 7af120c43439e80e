"""The one fine-tuning loop every task kind runs: seeds, best epoch, medians, outputs.

`run_finetuning(task, output_dir, seeds)` fine-tunes once per seed
(`finetune_seed`: the model built after the seed is set, `model.fit` with
ELECTRA's optimizer, dev scored after every epoch and the best epoch restored)
and writes to `output_dir` `metrics.json` (settings, per seed and epoch the
train and dev metrics, best epochs, medians over seeds as ELECTRA reports;
rewritten after every seed), TensorBoard logs (`logs/seed_<n>/`) and the best
seed's outputs (`FinetuningTask.write_outputs`) and Keras file. The Keras
file and the SavedModel compute in float32 whatever `config.precision` trained
(`electra_tf.export.float32`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import keras
import numpy as np
import tensorflow as tf

from electra_tf.config import ConfigError, FinetuningConfig
from electra_tf.distribution import precision_policy
from electra_tf.export.float32 import float32_model
from electra_tf.finetuning.best_epoch import BestEpochSelection
from electra_tf.finetuning.files import write_json
from electra_tf.finetuning.layerwise_decay import layerwise_learning_rate_multipliers
from electra_tf.finetuning.task import FinetuningTask
from electra_tf.optimization.optimizer import ElectraAdam
from electra_tf.optimization.schedule import WarmupPolynomialDecay

logger = logging.getLogger(__name__)


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


def finetune_seed(
    task: FinetuningTask,
    seed: int,
    log_dir: str | None = None,
    verbose: int | str = 2,
) -> tuple[keras.Model, dict]:
    """Fine-tunes one model with `seed`; returns it (best epoch) and its results.

    The seed fixes the head's initialisation, dropout and the order of the
    training data.
    """
    config = task.config
    keras.utils.set_random_seed(seed)
    with precision_policy(config.precision):
        model = task.build_model()
    dataset = task.training_data(model, seed)
    steps_per_epoch = int(dataset.cardinality())
    if steps_per_epoch < 1:
        raise ValueError(
            f"{task.name}: the training data has {steps_per_epoch} batches an "
            "epoch (its cardinality must be known and positive)"
        )
    total_steps = task.epochs * steps_per_epoch
    model.compile(
        optimizer=make_optimizer(config, model.backbone.num_layers, total_steps),
        jit_compile=config.jit_compile,
        **task.compile_arguments(),
    )
    evaluation = BestEpochSelection(
        task.evaluate, patience=config.early_stopping_patience
    )
    callbacks = [evaluation]
    if log_dir:
        callbacks.append(keras.callbacks.TensorBoard(log_dir))
    model.fit(
        dataset,
        shuffle=False,  # the dataset shuffles itself, seeded
        epochs=task.epochs,
        callbacks=callbacks,
        verbose=verbose,
    )
    return model, evaluation.results(seed)


def median_over_seeds(values: list):
    """The median of numbers, or of each entry of (nested) dicts of numbers."""
    if isinstance(values[0], dict):
        return {key: median_over_seeds([v[key] for v in values]) for key in values[0]}
    return float(np.median(values))


def run_finetuning(
    task: FinetuningTask,
    output_dir: str,
    seeds: Sequence[int] = (1,),
    run_info: dict | None = None,
    verbose: int | str = 2,
) -> dict:
    """Fine-tunes with every seed, then predicts and exports with the best.

    `run_info`: extra facts recorded in `metrics.json` (e.g. the pre-trained
    model's path); `verbose`: Keras' `fit` verbosity. Returns the contents of
    `metrics.json`.
    """
    if not seeds:
        raise ConfigError("at least one seed is needed")
    tf.io.gfile.makedirs(output_dir)
    metrics_file = os.path.join(output_dir, "metrics.json")
    summary = {
        "task": task.name,
        **(run_info or {}),
        "config": task.settings(),
        # As resolved from --precision and --jit (also in "config").
        "precision": task.config.precision,
        "jit_compile": task.config.jit_compile,
        "epochs": task.epochs,
        **task.facts(),
        "score_definition": task.score_definition(),
        "seeds": {},
    }
    # A mean of metrics is not a number a user can guess: say what it is.
    logger.info(
        "%s: score = %s; it picks each seed's best epoch and the best seed",
        task.name,
        summary["score_definition"],
    )
    best_model, best = None, None
    for seed in seeds:
        logger.info("%s: fine-tuning with seed %d", task.name, seed)
        log_dir = os.path.join(output_dir, "logs", f"seed_{seed}")
        model, results = finetune_seed(task, seed, log_dir, verbose)
        summary["seeds"][str(seed)] = results
        summary["median"] = median_over_seeds(
            [{"dev": r["dev"], "score": r["score"]} for r in summary["seeds"].values()]
        )
        if best is None or results["score"] > best["score"]:
            best_model, best = model, results
        write_json(metrics_file, summary)
    summary["best_seed"] = best["seed"]
    summary.update(task.write_outputs(best_model, output_dir))
    if "test" in summary:  # a labelled test split, scored once
        logger.info(
            "%s test, scored once with seed %d's model: %s",
            task.name,
            best["seed"],
            summary["test"],
        )
    summary["keras_model"] = os.path.join(output_dir, task.model_file)
    # Computing in float32 whatever the run's precision (exports do); a
    # float32 run's model is saved as it is.
    reduced = task.config.precision != "float32"
    (float32_model(best_model) if reduced else best_model).save(summary["keras_model"])
    write_json(metrics_file, summary)
    return summary
