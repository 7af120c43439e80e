"""A whole pre-training run: data, model, fit, checkpoints, evaluation, export.

`pretrain(flags)` is what `pretrain/run.py` calls: the strategy first, then every
setting (`settings.resolve_configs`), then the data
(`electra_tf.data.preparation.prepare_pretraining_data`), then `run_pretraining`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os

import keras
import tensorflow as tf

from electra_tf.config import (
    ConfigError,
    ModelConfig,
    OptimizerConfig,
    PretrainingConfig,
    TrainingConfig,
)
from electra_tf.data.input_pipeline import (
    data_check_failure,
    explain_data_loss,
    make_pretraining_dataset,
    read_data_stats,
)
from electra_tf.data.preparation import prepare_pretraining_data
from electra_tf.data.vocabulary import check_vocabulary_fits
from electra_tf.distribution import (
    check_global_batch,
    is_chief,
    make_strategy,
    precision_policy,
    resolve_jit_compile,
    worker_temp_dir,
)
from electra_tf.export.pretrained import export_pretrained
from electra_tf.optimization.optimizer import ElectraAdam, ElectraLossScaleOptimizer
from electra_tf.optimization.schedule import WarmupPolynomialDecay
from electra_tf.precision import (
    check_precision,
    detect_hardware,
    log_resolved,
    resolve_precision,
)
from electra_tf.pretraining.callbacks import (
    CheckpointCallback,
    RunProgress,
    StepTensorBoard,
    TrainingSummaries,
)
from electra_tf.pretraining.checkpoint import checkpoint_step, restore_weights
from electra_tf.pretraining.distributed_loop import DistributedLoop
from electra_tf.pretraining.health import TrainingHealth, TrainingHealthMonitor
from electra_tf.pretraining.pretrainer import ElectraPretrainer
from electra_tf.pretraining.settings import (
    PretrainingFlags,
    resolve_configs,
    resume_changes,
)

logger = logging.getLogger(__name__)


def _datasets(
    strategy,
    training: TrainingConfig,
    pretraining: PretrainingConfig,
    vocabulary_size: int,
    skip_batches: int = 0,
):
    """Train and eval datasets, split per host when the strategy has several.

    The training data start after `skip_batches` batches, the position of an
    uninterrupted run (per host, each host's pipeline being deterministic).
    """
    per_host = isinstance(
        strategy,
        (tf.distribute.MultiWorkerMirroredStrategy, tf.distribute.TPUStrategy),
    )

    def make(pattern, is_training, input_context=None):
        dataset = make_pretraining_dataset(
            pattern,
            batch_size=training.batch_size,
            max_seq_length=pretraining.max_seq_length,
            training=is_training,
            seed=training.data_seed,
            input_context=input_context,
            shuffle_buffer=training.shuffle_buffer,
            vocabulary_size=vocabulary_size,
            skip_corrupt_files=training.skip_corrupt_files,
        )
        if is_training and skip_batches:
            dataset = dataset.skip(skip_batches)
        if not is_training:
            # Every evaluation reads the same first `eval_steps` batches: kept
            # in memory after the first, later evaluations start no file
            # readers. Dropping a fresh reader's iterator after each
            # evaluation stalled Keras' `fit` for ~10 s in every other epoch
            # on 2 CPU cores (BENCHMARKS.md section 1).
            dataset = dataset.take(training.eval_steps).cache()
        return dataset

    def make_for_strategy(pattern, is_training):
        if not per_host:
            return make(pattern, is_training)
        return strategy.distribute_datasets_from_function(
            lambda context: make(pattern, is_training, context)
        )

    train = make_for_strategy(training.train_data, True)
    evaluation = None
    if training.eval_data:
        evaluation = make_for_strategy(training.eval_data, False)
    return train, evaluation


def build_pretrainer(
    model: ModelConfig,
    pretraining: PretrainingConfig,
    optimizer: OptimizerConfig,
    vocabulary,
    *,
    jit_compile: bool = True,
    steps_per_execution: int = 1,
    step_offset: int = 0,
) -> ElectraPretrainer:
    """A compiled `ElectraPretrainer` whose optimizer is built (call in scope)."""
    check_vocabulary_fits(
        vocabulary.size, model.vocabulary_size, vocabulary.path, error=ConfigError
    )
    pretrainer = ElectraPretrainer(model, pretraining, **vocabulary.special_token_ids())
    schedule = WarmupPolynomialDecay(
        optimizer.learning_rate,
        warmup_steps=optimizer.warmup_steps,
        total_steps=optimizer.total_steps,
        power=optimizer.decay_power,
        step_offset=step_offset,
    )
    accumulation = optimizer.gradient_accumulation_steps
    adam = ElectraAdam(
        learning_rate=schedule,
        weight_decay=optimizer.weight_decay,
        beta_1=optimizer.beta_1,
        beta_2=optimizer.beta_2,
        epsilon=optimizer.epsilon,
        global_clipnorm=optimizer.clip_norm or None,
        gradient_accumulation_steps=accumulation if accumulation > 1 else None,
    )
    # Keras would wrap the optimizer in its own LossScaleOptimizer under
    # mixed_float16; ours agrees across replicas on skipping a step.
    if pretrainer.dtype_policy.name == "mixed_float16":
        adam = ElectraLossScaleOptimizer(adam)
    pretrainer.compile(
        optimizer=adam,
        jit_compile=jit_compile,
        steps_per_execution=steps_per_execution,
    )
    pretrainer.optimizer.build(pretrainer.trainable_variables)
    return pretrainer


def pretrain(flags: PretrainingFlags) -> dict:
    """Runs `pretrain/run.py` with `flags`: returns the held-out metrics.

    Raises `ElectraError` subclasses for everything a user can fix.
    """
    if flags.strategy == "multi_worker" and not flags.data:
        raise ConfigError(
            "--strategy multi_worker needs --data: build the TFRecords once with "
            "pretrain/build_data.py, not on every worker"
        )
    if flags.devices and flags.strategy != "mirrored":
        raise ConfigError("--devices goes with --strategy mirrored")
    # First: MultiWorkerMirroredStrategy must exist before any other
    # TensorFlow op runs in this process, and a missing TPU should fail fast.
    strategy = make_strategy(
        flags.strategy,
        tpu=flags.tpu,
        tpu_zone=flags.tpu_zone,
        gcp_project=flags.gcp_project,
        devices=flags.devices.split(",") if flags.devices else None,
    )
    hardware = detect_hardware(strategy)
    # The model's width, which `auto` weighs on a CPU: the configs resolved
    # once at a fixed precision (nothing else in them depends on it).
    width = resolve_configs(
        dataclasses.replace(flags, precision="float32"), jit_compile=False
    ).model.hidden_dim
    # `auto` resuming a run keeps the precision its config.json records: a
    # run started elsewhere, or before `auto` was the default, would
    # otherwise be refused as a different run.
    requested = flags.precision
    if requested == "auto":
        requested = _recorded_precision(flags.model_dir) or requested
    resolved = resolve_precision(
        requested,
        flags.jit,
        hardware,
        jit_when_float32=resolve_jit_compile("auto", strategy),
        width=width,
    )
    log_resolved(resolved, requested, flags.jit, hardware)
    configs = resolve_configs(
        dataclasses.replace(flags, precision=resolved.precision),
        jit_compile=resolved.jit_compile,
    )
    # Before any data or vocabulary is built.
    check_global_batch(configs.training.batch_size, strategy)
    data = prepare_pretraining_data(
        flags.model_dir,
        configs.pretraining.max_seq_length,
        data=flags.data,
        eval_data=flags.eval_data,
        corpus=flags.corpus,
        tfds_text_field=flags.tfds_text_field,
        vocab=flags.vocab,
        learn_vocab_size=flags.learn_vocab_size,
        lowercase=flags.lowercase,
    )
    _warn_if_smaller_than_a_batch(data.data_dir, configs.training.batch_size)
    configs = configs.for_data(data.vocabulary.size, data.train_data, data.eval_data)
    return run_pretraining(
        configs.model,
        configs.pretraining,
        configs.optimizer,
        configs.training,
        data.vocabulary,
        strategy,
        init_checkpoint=flags.init_checkpoint,
    )


def _warn_if_smaller_than_a_batch(data_dir: str, batch_size: int) -> None:
    """Warns when the data (by their `stats.json`) hold fewer training
    examples than one batch: every batch repeats them."""
    stats = read_data_stats(data_dir) or {}
    examples = stats.get("train_examples")
    if examples is not None and examples < batch_size:
        logger.warning(
            "%s holds %d training examples, fewer than one batch of %d: every "
            "batch repeats them; give more text or a smaller --batch-size",
            data_dir,
            examples,
            batch_size,
        )


def run_pretraining(
    model: ModelConfig,
    pretraining: PretrainingConfig,
    optimizer: OptimizerConfig,
    training: TrainingConfig,
    vocabulary,
    strategy: tf.distribute.Strategy,
    *,
    init_checkpoint: str | None = None,
    verbose: int | str = "auto",
) -> dict:
    """Trains until `training.train_steps`, resuming from `model_dir` if it can.

    Writes under `training.model_dir`: `checkpoints/`, `logs/` (TensorBoard),
    `config.json`, `eval_results.json` and `export/` (see `export_pretrained`).
    Rerunning the same call after a crash resumes from the newest checkpoint
    at the same step, learning rate, data position and random draws.

    `init_checkpoint` starts a NEW run from another run's (or a converted
    release's) weights; its stored step offsets the learning-rate schedule so
    the warm-up x decay curve continues instead of restarting.

    Under `MultiWorkerMirroredStrategy` every worker makes this same call
    (their steps, metric reads and checkpoint saves are collective); the chief
    writes the files above, the other workers only a `workertemp_*` directory
    that they delete, and all resume from the chief's checkpoints.

    Returns the final evaluation metrics (empty without eval data).
    """
    check_global_batch(training.batch_size, strategy)
    # Before anything is written (issue 49: float16 on a CPU trained nothing).
    check_precision(training.precision, detect_hardware(strategy))
    with precision_policy(training.precision):
        return _train_and_export(
            model,
            pretraining,
            optimizer,
            training,
            vocabulary,
            strategy,
            init_checkpoint=init_checkpoint,
            verbose=verbose,
        )


def _train_and_export(
    model,
    pretraining,
    optimizer,
    training,
    vocabulary,
    strategy,
    *,
    init_checkpoint,
    verbose,
) -> dict:
    """`run_pretraining` under the run's dtype policy."""
    model_dir = training.model_dir
    chief = is_chief(strategy)
    # Keras 3's `fit` and `evaluate` fail under MultiWorkerMirroredStrategy
    # (keras-team/keras#20585): there, and only there, `DistributedLoop` runs
    # the same train/test steps and callbacks with `strategy.run`.
    multi_worker = isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)
    tf.io.gfile.makedirs(model_dir)

    checkpoint_dir = os.path.join(model_dir, "checkpoints")
    # Every worker resumes from the chief's checkpoints (a shared file system
    # or GCS); non-chief workers save to a private directory they delete.
    latest = tf.train.latest_checkpoint(checkpoint_dir)
    temp_dir = None if chief else worker_temp_dir(model_dir, strategy)
    step_offset = 0
    if init_checkpoint and latest is None:
        step_offset = checkpoint_step(init_checkpoint)
    settings = json.loads(
        json.dumps(
            {
                "model": model.to_dict(),
                "pretraining": pretraining.to_dict(),
                "optimizer": optimizer.to_dict(),
                "training": training.to_dict(),
            }
        )
    )
    # Before the model is built (whose restore would log a warning per
    # variable): a resumed run must be the run its config.json records.
    history = _check_resume(model_dir, latest, settings)

    # Seeds weight initialisation and dropout: a run killed before its first
    # checkpoint restarts from the same initial weights, and reruns agree.
    keras.utils.set_random_seed(pretraining.seed)
    with strategy.scope():
        pretrainer = build_pretrainer(
            model,
            pretraining,
            optimizer,
            vocabulary,
            jit_compile=training.jit_compile,
            steps_per_execution=training.steps_per_execution,
            step_offset=step_offset,
        )
        # Keras does not put its dropout SeedGenerators' states in the object
        # graph; saving them lets a resumed run draw the same dropout masks.
        checkpoint = tf.train.Checkpoint(
            model=pretrainer,
            optimizer=pretrainer.optimizer,
            dropout_seeds=list(pretrainer.non_trainable_variables),
        )
        manager = tf.train.CheckpointManager(
            checkpoint,
            checkpoint_dir if chief else os.path.join(temp_dir, "checkpoints"),
            max_to_keep=training.keep_checkpoints,
        )
        if latest is not None:
            try:
                checkpoint.restore(latest).assert_existing_objects_matched()
            except (AssertionError, ValueError, tf.errors.OpError) as error:
                raise ConfigError(
                    f"cannot resume from {latest}: it does not hold this run's "
                    f"model (another preset, --objective or --hparams in "
                    f"{model_dir}?): {error}"
                ) from error
            logger.info("Resumed from %s", latest)
        elif init_checkpoint:
            restore_weights(pretrainer, init_checkpoint)
            logger.info(
                "Initialised from %s (schedule offset %d)", init_checkpoint, step_offset
            )

    # Written once the model is known to fit the directory's checkpoints, so a
    # refused resume leaves the run's config.json as it was.
    if chief:
        with tf.io.gfile.GFile(os.path.join(model_dir, "config.json"), "w") as f:
            record = {**settings, "vocabulary": vocabulary.path}
            if history:
                record["resumed"] = history
            json.dump(record, f, indent=2)

    # With gradient accumulation Keras' `iterations` counts updates; the data
    # advance by one batch per micro-batch.
    done_updates = int(pretrainer.optimizer.iterations.numpy())
    accumulation = optimizer.gradient_accumulation_steps
    train_data, eval_data = _datasets(
        strategy,
        training,
        pretraining,
        vocabulary.size,
        skip_batches=done_updates * accumulation,
    )

    callbacks = [CheckpointCallback(manager, pretrainer.optimizer)]
    if chief:
        sample = None
        if training.precision != "float32":
            # The text summary calls the model eagerly, where keras-hub's
            # MaskedLMHead fails under a mixed policy (bias dtype mismatch).
            logger.warning(
                "No replaced-token text summary under %s", training.precision
            )
        elif isinstance(eval_data, tf.data.Dataset):
            sample = next(iter(eval_data.take(1)))
        elif multi_worker and training.eval_data:
            # A local batch for the text summary, which the chief renders
            # eagerly outside `strategy.run` (no collective operation).
            sample = next(
                iter(
                    make_pretraining_dataset(
                        training.eval_data,
                        batch_size=1,
                        max_seq_length=pretraining.max_seq_length,
                        training=False,
                    )
                )
            )
        callbacks += [
            StepTensorBoard(
                os.path.join(model_dir, "logs"), update_freq=training.checkpoint_every
            ),
            TrainingHealthMonitor(
                os.path.join(model_dir, "logs"),
                TrainingHealth(objective=pretraining.objective),
            ),
            TrainingSummaries(
                os.path.join(model_dir, "logs", "extra"),
                global_batch_size=training.batch_size * accumulation,
                sample_batch=sample,
                vocabulary_tokens=vocabulary.tokens,
            ),
        ]
    else:
        callbacks.append(_RemoveDirectory(temp_dir))
    if chief and not multi_worker and verbose != 0:
        # Steps of the whole run with its time left, not Keras' epochs.
        callbacks.append(RunProgress(training.train_steps))
        verbose = 0
    if multi_worker:
        loop = DistributedLoop(
            pretrainer,
            strategy,
            steps_per_execution=training.steps_per_execution,
            jit_compile=training.jit_compile,
        )
        fit, evaluate = loop.fit, loop.evaluate
    else:
        fit = pretrainer.fit

        def evaluate(data, steps):
            return pretrainer.evaluate(data, steps=steps, return_dict=True, verbose=0)

    steps_per_epoch = training.checkpoint_every * accumulation
    epochs = training.train_steps // training.checkpoint_every
    initial_epoch = done_updates // training.checkpoint_every
    patterns = ",".join(p for p in (training.train_data, training.eval_data) if p)
    if done_updates > training.train_steps:
        # Resuming is idempotent; this is a smaller --train-steps than the
        # directory's run, and what follows evaluates and exports its weights.
        logger.warning(
            "%s is at step %d, past train_steps %d: nothing to train; its "
            "evaluation and export are of step %d",
            model_dir,
            done_updates,
            training.train_steps,
            done_updates,
        )
    if initial_epoch < epochs:
        options = {} if multi_worker else {"shuffle": False}  # the input shuffles
        try:
            fit(
                train_data,
                epochs=epochs,
                initial_epoch=initial_epoch,
                steps_per_epoch=steps_per_epoch,
                validation_data=eval_data if training.eval_every_checkpoints else None,
                validation_steps=training.eval_steps,
                validation_freq=max(1, training.eval_every_checkpoints),
                callbacks=callbacks,
                verbose=verbose,
                **options,
            )
        except tf.errors.DataLossError as error:
            raise explain_data_loss(patterns) from error
        except tf.errors.InvalidArgumentError as error:
            failure = data_check_failure(error)
            if failure is None:
                raise
            raise failure from error

    results = {}
    if eval_data is not None:
        results = evaluate(eval_data, training.eval_steps)
        results = {name: float(value) for name, value in results.items()}
        results["step"] = int(pretrainer.optimizer.iterations.numpy())
        if chief:
            path = os.path.join(model_dir, "eval_results.json")
            recorded = {
                **results,
                "precision": training.precision,
                "jit_compile": training.jit_compile,
            }
            with tf.io.gfile.GFile(path, "w") as f:
                json.dump(recorded, f, indent=2)
    if chief:
        export_pretrained(pretrainer, vocabulary, os.path.join(model_dir, "export"))
    elif tf.io.gfile.exists(temp_dir):
        tf.io.gfile.rmtree(temp_dir)
    return results


def _recorded_precision(model_dir: str) -> str | None:
    """The precision of the run in `model_dir` (its `config.json`), None
    for a new run (a `config.json` that is not JSON is left to
    `_check_resume`, which names it)."""
    path = os.path.join(model_dir, "config.json")
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        try:
            return json.load(f).get("training", {}).get("precision")
        except json.JSONDecodeError:
            return None


def _check_resume(model_dir: str, latest: str | None, settings: dict) -> list:
    """The run's resume history (`config.json`'s `resumed`), with this
    resume's changed settings added; [] for a new run.

    Raises `ConfigError` (`settings.resume_changes`) when `settings` change
    a setting a resumed run must keep.
    """
    path = os.path.join(model_dir, "config.json")
    if latest is None or not tf.io.gfile.exists(path):
        return []
    with tf.io.gfile.GFile(path) as f:
        try:
            run_config = json.load(f)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{path} is not JSON: {error}") from error
    history = list(run_config.get("resumed", []))
    step = int(latest.rsplit("-", 1)[1])
    changes = resume_changes(run_config, settings, latest, path, step)
    if changes:
        shown = ", ".join(f"{k} {old} -> {new}" for k, (old, new) in changes.items())
        logger.info("Resuming %s at step %d with %s", model_dir, step, shown)
        history.append({"step": step, "changes": changes})
    return history


class _RemoveDirectory(keras.callbacks.Callback):
    """Deletes a non-chief worker's private checkpoints after each save."""

    def __init__(self, path):
        super().__init__()
        self.path = path

    def on_epoch_end(self, epoch, logs=None):
        if tf.io.gfile.exists(self.path):
            tf.io.gfile.rmtree(self.path)
