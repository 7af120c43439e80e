"""A whole pre-training run: data, model, fit, checkpoints, evaluation, export."""

from __future__ import annotations

import json
import logging
import os

import keras
import tensorflow as tf

from electra_tf.callbacks import CheckpointCallback, TrainingSummaries
from electra_tf.config import (
    ConfigError,
    ModelConfig,
    OptimizerConfig,
    PretrainingConfig,
    TrainingConfig,
)
from electra_tf.data.pretraining_dataset import (
    data_check_failure,
    explain_data_loss,
    make_pretraining_dataset,
)
from electra_tf.distribution import set_precision
from electra_tf.export import export_pretrained
from electra_tf.optimizer import ElectraAdam
from electra_tf.pretrainer import ElectraPretrainer
from electra_tf.schedule import WarmupPolynomialDecay

logger = logging.getLogger(__name__)

# Where a checkpoint written by this project keeps the optimizer step.
_STEP_KEY = "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE"


def checkpoint_step(path: str) -> int:
    """The optimizer step stored in a checkpoint of ours (0 if it has none)."""
    try:
        reader = tf.train.load_checkpoint(path)
    except (ValueError, tf.errors.OpError) as error:
        raise ConfigError(f"cannot read checkpoint {path}: {error}") from error
    if reader.has_tensor(_STEP_KEY):
        return int(reader.get_tensor(_STEP_KEY))
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
        for name in ("discriminator_encoder", "discriminator", "generator")
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
):
    """Train and eval datasets, split per host when the strategy has several."""
    per_host = isinstance(
        strategy,
        (tf.distribute.MultiWorkerMirroredStrategy, tf.distribute.TPUStrategy),
    )

    def make(pattern, is_training, input_context=None):
        return make_pretraining_dataset(
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
    pretrainer.compile(
        optimizer=ElectraAdam(
            learning_rate=schedule,
            weight_decay=optimizer.weight_decay,
            beta_1=optimizer.beta_1,
            beta_2=optimizer.beta_2,
            epsilon=optimizer.epsilon,
            global_clipnorm=optimizer.clip_norm or None,
            gradient_accumulation_steps=accumulation if accumulation > 1 else None,
        ),
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

    Returns the final evaluation metrics (empty without eval data).
    """
    if training.batch_size % strategy.num_replicas_in_sync:
        raise ConfigError(
            f"batch_size {training.batch_size} is not divisible by the "
            f"{strategy.num_replicas_in_sync} replicas of the strategy"
        )
    set_precision(training.precision)
    model_dir = training.model_dir
    tf.io.gfile.makedirs(model_dir)
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

    checkpoint_dir = os.path.join(model_dir, "checkpoints")
    resuming = tf.train.latest_checkpoint(checkpoint_dir) is not None
    step_offset = 0
    if init_checkpoint and not resuming:
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
            checkpoint, checkpoint_dir, max_to_keep=training.keep_checkpoints
        )
        if resuming:
            checkpoint.restore(
                manager.latest_checkpoint
            ).assert_existing_objects_matched()
            logger.info("Resumed from %s", manager.latest_checkpoint)
        elif init_checkpoint:
            restore_weights(pretrainer, init_checkpoint)
            logger.info(
                "Initialised from %s (schedule offset %d)", init_checkpoint, step_offset
            )

    start_step = int(pretrainer.optimizer.iterations.numpy())
    accumulation = optimizer.gradient_accumulation_steps
    # The optimizer counts micro-batches; the run counts updates.
    done_updates = start_step // accumulation
    train_data, eval_data = _datasets(strategy, training, pretraining, vocabulary.size)
    if start_step and isinstance(train_data, tf.data.Dataset):
        # Continue at the same data position as an uninterrupted run.
        train_data = train_data.skip(start_step)

    callbacks = [
        CheckpointCallback(manager, pretrainer.optimizer),
        keras.callbacks.TensorBoard(
            os.path.join(model_dir, "logs"), update_freq=training.checkpoint_every
        ),
    ]
    sample = None
    if isinstance(eval_data, tf.data.Dataset):
        sample = next(iter(eval_data.take(1)))
    callbacks.append(
        TrainingSummaries(
            os.path.join(model_dir, "logs", "extra"),
            global_batch_size=training.batch_size * accumulation,
            sample_batch=sample,
            vocabulary_tokens=vocabulary.tokens,
        )
    )
    steps_per_epoch = training.checkpoint_every * accumulation
    epochs = training.train_steps // training.checkpoint_every
    initial_epoch = done_updates // training.checkpoint_every
    if initial_epoch < epochs:
        try:
            pretrainer.fit(
                train_data,
                epochs=epochs,
                initial_epoch=initial_epoch,
                steps_per_epoch=steps_per_epoch,
                validation_data=eval_data if training.eval_every_checkpoints else None,
                validation_steps=training.eval_steps,
                validation_freq=max(1, training.eval_every_checkpoints),
                callbacks=callbacks,
                shuffle=False,  # the input pipeline shuffles
                verbose=verbose,
            )
        except tf.errors.DataLossError as error:
            patterns = [training.train_data, training.eval_data]
            raise explain_data_loss(",".join(p for p in patterns if p)) from error
        except tf.errors.InvalidArgumentError as error:
            failure = data_check_failure(error)
            if failure is None:
                raise
            raise failure from error

    results = {}
    if eval_data is not None:
        results = pretrainer.evaluate(
            eval_data, steps=training.eval_steps, return_dict=True, verbose=0
        )
        results = {name: float(value) for name, value in results.items()}
        results["step"] = int(pretrainer.optimizer.iterations.numpy()) // accumulation
        with tf.io.gfile.GFile(os.path.join(model_dir, "eval_results.json"), "w") as f:
            json.dump(results, f, indent=2)
    if _is_chief(strategy):
        export_pretrained(
            pretrainer,
            vocabulary.tokens,
            os.path.join(model_dir, "export"),
            lowercase=lowercase,
        )
    return results


def _is_chief(strategy) -> bool:
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.task_type:
        return True
    return resolver.task_type == "chief" or (
        resolver.task_type == "worker" and resolver.task_id == 0
    )
