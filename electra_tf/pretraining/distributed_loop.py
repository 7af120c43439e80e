"""`fit` and `evaluate` for `MultiWorkerMirroredStrategy`, where Keras' own fail.

Keras 3's `fit` stops under `MultiWorkerMirroredStrategy` with "Attempt to
convert a value (PerReplica ...) to a Tensor" (keras-team/keras#20585,
tensorflow/tensorflow#72388), while the model's own `train_step` and
`test_step`, run by `strategy.run` inside a `tf.function`, train correctly.
`DistributedLoop` does exactly that and drives the usual Keras callbacks with
the calls `fit` makes, so checkpoints, TensorBoard and the run's summaries
work unchanged. `run_pretraining` uses it for `multi_worker` only: everywhere
else Keras' loop works and stays the one to trust.

Every worker must issue the same collective operations in the same order:
the steps, the metric reads (metric variables are summed across workers when
read) and checkpoint saves. So every worker runs this loop with the same
arguments; whether a callback's files stay is the caller's business (see
`distribution.is_chief` and `distribution.worker_temp_dir`).
"""

from __future__ import annotations

import keras
import tensorflow as tf


class DistributedLoop:
    """Trains and evaluates a compiled Keras model with `strategy.run`.

    Args:
        model: a compiled `keras.Model` built in `strategy.scope()`, whose
            `train_step`/`test_step` take one batch and update `model.metrics`.
        strategy: the `tf.distribute` strategy the model was built under.
        steps_per_execution: train steps per `tf.function` call (host round trip).
        jit_compile: compile each replica's step with XLA, as Keras does.
    """

    def __init__(self, model, strategy, *, steps_per_execution=1, jit_compile=False):
        self.model = model
        self.strategy = strategy
        self.steps_per_execution = steps_per_execution
        self._train = self._multi_step(
            model.train_step, steps_per_execution, jit_compile
        )
        self._test = self._multi_step(model.test_step, 1, jit_compile)

    def _multi_step(self, step, repeats, jit_compile):
        replica_step = tf.function(step, jit_compile=True) if jit_compile else step
        strategy = self.strategy

        @tf.function
        def run(iterator):
            for _ in tf.range(repeats):
                strategy.run(replica_step, args=(next(iterator),))

        return run

    def _results(self) -> dict:
        # In cross-replica context a metric's variables read as their sum over
        # all replicas of all workers: the global metric, equal on every worker.
        with self.strategy.scope():
            return {
                metric.name: float(metric.result()) for metric in self.model.metrics
            }

    def _reset(self):
        for metric in self.model.metrics:
            metric.reset_state()

    def fit(
        self,
        dataset,
        *,
        epochs,
        steps_per_epoch,
        initial_epoch=0,
        validation_data=None,
        validation_steps=None,
        validation_freq=1,
        callbacks=None,
        verbose=0,
    ):
        """Like `keras.Model.fit` on an endless (distributed) dataset.

        Every `steps_per_execution` steps the metrics are read (global means)
        and passed to `on_train_batch_end`; at the end of each epoch, after
        validation every `validation_freq` epochs (metrics prefixed `val_`),
        to `on_epoch_end`. `steps_per_epoch` must be a multiple of
        `steps_per_execution`. Returns the `History` callback.
        """
        if steps_per_epoch % self.steps_per_execution:
            raise ValueError(
                f"steps_per_epoch {steps_per_epoch} is not a multiple of "
                f"steps_per_execution {self.steps_per_execution}"
            )
        callback_list = keras.callbacks.CallbackList(
            callbacks,
            add_history=True,
            add_progbar=verbose != 0,
            model=self.model,
            verbose=verbose,
            epochs=epochs,
            steps=steps_per_epoch,
        )
        self.model.stop_training = False
        iterator = iter(dataset)
        logs = {}
        callback_list.on_train_begin()
        for epoch in range(initial_epoch, epochs):
            self._reset()
            callback_list.on_epoch_begin(epoch)
            for begin in range(0, steps_per_epoch, self.steps_per_execution):
                end = begin + self.steps_per_execution - 1
                callback_list.on_train_batch_begin(begin)
                self._train(iterator)
                logs = self._results()
                callback_list.on_train_batch_end(end, logs)
                if self.model.stop_training:
                    break
            epoch_logs = dict(logs)
            if validation_data is not None and (epoch + 1) % validation_freq == 0:
                results = self.evaluate(
                    validation_data, validation_steps, callbacks=callback_list
                )
                epoch_logs.update({f"val_{k}": v for k, v in results.items()})
            callback_list.on_epoch_end(epoch, epoch_logs)
            if self.model.stop_training:
                break
        callback_list.on_train_end(logs)
        return self.model.history

    def evaluate(self, dataset, steps, callbacks=None) -> dict:
        """Global metrics after `steps` batches from a fresh iterator of `dataset`."""
        if not isinstance(callbacks, keras.callbacks.CallbackList):
            callbacks = keras.callbacks.CallbackList(
                callbacks, model=self.model, steps=steps
            )
        self._reset()
        iterator = iter(dataset)
        callbacks.on_test_begin()
        for step in range(steps):
            callbacks.on_test_batch_begin(step)
            self._test(iterator)
            # Reading the metrics is a collective operation: once, at the end.
            callbacks.on_test_batch_end(step, {})
        logs = self._results()
        callbacks.on_test_end(logs)
        return logs
