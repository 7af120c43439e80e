"""A whole pre-training run: data, model, fit, checkpoints, evaluation, export."""

from __future__ import annotations

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
)
from electra_tf.distribution import (
    check_global_batch,
    is_chief,
    set_precision,
    worker_temp_dir,
)
from electra_tf.export.pretrained import export_pretrained
from electra_tf.optimization.optimizer import ElectraAdam, ElectraLossScaleOptimizer
from electra_tf.optimization.schedule import WarmupPolynomialDecay
from electra_tf.pretraining.callbacks import CheckpointCallback, TrainingSummaries
from electra_tf.pretraining.distributed_loop import DistributedLoop
from electra_tf.pretraining.pretrainer import ElectraPretrainer

logger = logging.getLogger(__name__)

# Where a checkpoint written by this project keeps the optimizer step (the
# second under mixed_float16, whose loss-scale optimizer wraps ours).
_STEP_KEYS = (
    "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE",
    "optimizer/inner_optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE",
)


def checkpoint_step(path: str) -> int:
    """The optimizer step stored in a checkpoint of ours (0 if it has none)."""
    try:
        reader = tf.train.load_checkpoint(path)
    except (ValueError, tf.errors.OpError) as error:
        raise ConfigError(f"cannot read checkpoint {path}: {error}") from error
    for key in _STEP_KEYS:
        if reader.has_tensor(key):
            return int(reader.get_tensor(key))
    return 0


def restore_weights(pretrainer, path: str) -> None:
    """Loads the generator's and discriminator's weights from a checkpoint.

    Only the weights: a compiled Keras model tracks its optimizer as a child,
    so restoring `model=pretrainer` would also bring back the other run's step
    counter and Adam moments. Matching is by the object graph, so any
    checkpoint written by `run_pretraining` works; every weight must be found.
    """
    towers = {
        name: getattr(pretrainer, name)
        for name in (
            "discriminator_encoder",
            "discriminator",
            "discriminator_mlm",
            "generator",
        )
        if getattr(pretrainer, name, None) is not None
    }
    root = tf.train.Checkpoint(model=tf.train.Checkpoint(**towers))
    try:
        root.read(path).expect_partial().assert_existing_objects_matched()
    except (AssertionError, ValueError, tf.errors.NotFoundError) as error:
        raise ConfigError(
            f"--init-checkpoint {path} does not hold this model's weights: {error}"
        ) from error


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
    if model.vocabulary_size != vocabulary.size:
        raise ConfigError(
            f"vocabulary {vocabulary.path} has {vocabulary.size} tokens but the "
            f"model's vocabulary_size is {model.vocabulary_size}"
        )
    pretrainer = ElectraPretrainer(
        model,
        pretraining,
        pad_token_id=vocabulary.pad_id,
        cls_token_id=vocabulary.cls_id,
        sep_token_id=vocabulary.sep_id,
        mask_token_id=vocabulary.mask_id,
    )
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


def run_pretraining(
    model: ModelConfig,
    pretraining: PretrainingConfig,
    optimizer: OptimizerConfig,
    training: TrainingConfig,
    vocabulary,
    strategy: tf.distribute.Strategy,
    *,
    init_checkpoint: str | None = None,
    lowercase: bool = True,
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
    set_precision(training.precision)
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
                    f"model (another preset or --hparams in {model_dir}?): {error}"
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
            json.dump(
                {
                    "model": model.to_dict(),
                    "pretraining": pretraining.to_dict(),
                    "optimizer": optimizer.to_dict(),
                    "training": training.to_dict(),
                    "vocabulary": vocabulary.path,
                },
                f,
                indent=2,
            )

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
            keras.callbacks.TensorBoard(
                os.path.join(model_dir, "logs"), update_freq=training.checkpoint_every
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
            with tf.io.gfile.GFile(path, "w") as f:
                json.dump(results, f, indent=2)
    if chief:
        export_pretrained(
            pretrainer,
            vocabulary.tokens,
            os.path.join(model_dir, "export"),
            lowercase=lowercase,
        )
    elif tf.io.gfile.exists(temp_dir):
        tf.io.gfile.rmtree(temp_dir)
    return results


class _RemoveDirectory(keras.callbacks.Callback):
    """Deletes a non-chief worker's private checkpoints after each save."""

    def __init__(self, path):
        super().__init__()
        self.path = path

    def on_epoch_end(self, epoch, logs=None):
        if tf.io.gfile.exists(self.path):
            tf.io.gfile.rmtree(self.path)
