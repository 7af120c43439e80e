"""Keras callbacks of a pre-training run: checkpoints, progress and TensorBoard
extras."""

from __future__ import annotations

import math
import sys
import time

import keras
import numpy as np
import tensorflow as tf
import tqdm

from electra_tf.errors import ElectraError


class NonFiniteLossError(ElectraError, RuntimeError):
    """The training loss became NaN or infinite; the last checkpoint is kept."""


class CheckpointCallback(keras.callbacks.Callback):
    """Saves model + optimizer with a `tf.train.CheckpointManager` after each epoch.

    A Keras "epoch" of a run is `checkpoint_every` steps. The checkpoint number
    is the optimizer step, so the newest checkpoint says how far training got.
    A non-finite loss stops training with `NonFiniteLossError` BEFORE saving,
    so the last checkpoint on disk is always a good one. The manager writes the
    data files first and the `checkpoint` index file last, so a run killed
    while saving resumes from the previous complete checkpoint.
    """

    def __init__(self, manager: tf.train.CheckpointManager, optimizer):
        super().__init__()
        self.manager = manager
        self.optimizer_ref = optimizer

    def on_epoch_end(self, epoch, logs=None):
        loss = (logs or {}).get("loss")
        step = int(self.optimizer_ref.iterations.numpy())
        if loss is not None and not math.isfinite(float(loss)):
            raise NonFiniteLossError(
                f"loss became {loss} by step {step}; stopped without saving. The "
                f"last good checkpoint is {self.manager.latest_checkpoint}. Try a "
                "lower learning rate or float32 precision."
            )
        self.manager.save(checkpoint_number=step)


class RunProgress(keras.callbacks.Callback):
    """The run's progress bar: the optimizer step out of the run's
    `total_steps`, the rate, the time left and the training loss; after each
    held-out evaluation its metrics on a line above the bar.

    Keras' own bar counts Keras epochs, which in a pre-training run are
    checkpoint intervals ("Epoch 1/50" for a 5,000-step run). A resumed run's
    bar starts at the step it resumes from, so its rate and time left are of
    this session's steps.
    """

    def __init__(self, total_steps: int, file=None):
        super().__init__()
        self.total_steps = total_steps
        self.file = file
        self._bar = None

    def _step(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    def on_train_begin(self, logs=None):
        file = self.file or sys.stderr
        interactive = getattr(file, "isatty", lambda: False)()
        self._bar = tqdm.tqdm(
            total=self.total_steps,
            initial=self._step(),
            unit="step",
            file=file,
            dynamic_ncols=interactive,
            mininterval=1 if interactive else 30,
        )

    def on_train_batch_end(self, batch, logs=None):
        self._bar.update(self._step() - self._bar.n)
        if logs and "loss" in logs:
            self._bar.set_postfix(loss=f"{float(logs['loss']):.4f}", refresh=False)

    def on_epoch_end(self, epoch, logs=None):
        held_out = {
            name.removeprefix("val_"): float(value)
            for name, value in (logs or {}).items()
            if name.startswith("val_")
        }
        if held_out:
            shown = ", ".join(f"{name} {value:.4f}" for name, value in held_out.items())
            self._bar.write(f"step {self._step()}: held-out {shown}", file=self._bar.fp)

    def on_train_end(self, logs=None):
        self._bar.close()


class StepTensorBoard(keras.callbacks.TensorBoard):
    """Keras' `TensorBoard`, with every scalar at the optimizer step.

    Keras logs a Keras epoch's training and held-out metrics at the epoch
    index and restarts its batch counter at 0 when a run resumes; a
    pre-training run's epochs are `checkpoint_every` steps long, so its curves
    would neither line up with each other nor with the learning rate and the
    health monitor's base rate, and would restart on resume.
    """

    def _step(self) -> int:
        return int(self.model.optimizer.iterations.numpy())

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self._global_train_batch = self._step()

    def on_epoch_end(self, epoch, logs=None):
        self._log_epoch_metrics(self._step(), logs)


class TrainingSummaries(keras.callbacks.Callback):
    """Learning rate, examples/s and a replaced-token text summary in TensorBoard.

    Written at the end of every Keras epoch, i.e. every `checkpoint_every` steps.

    Keras' own `TensorBoard` callback writes the metrics; this adds what it
    does not know about. The text summary shows one held-out sentence with the
    generator's replacements and the discriminator's verdicts, e.g.
    `the [cat→dog ✓] sat`: a replacement the discriminator flagged (✓) or
    missed (✗), and `{on}` an original token it wrongly flagged.
    """

    def __init__(
        self,
        log_dir,
        global_batch_size,
        sample_batch=None,
        vocabulary_tokens=None,
    ):
        super().__init__()
        self.writer = tf.summary.create_file_writer(log_dir)
        self.global_batch_size = global_batch_size
        self.sample_batch = sample_batch
        self.vocabulary_tokens = vocabulary_tokens
        self._last_time = None
        self._last_step = None

    def _step(self):
        return int(self.model.optimizer.iterations.numpy())

    def on_train_begin(self, logs=None):
        self._last_time, self._last_step = time.perf_counter(), self._step()

    def on_epoch_end(self, epoch, logs=None):
        step = self._step()
        now = time.perf_counter()
        with self.writer.as_default(step=step):
            rate = float(self.model.optimizer.learning_rate)
            tf.summary.scalar("learning_rate", rate)
            if step > self._last_step:
                examples = (step - self._last_step) * self.global_batch_size
                tf.summary.scalar(
                    "examples_per_second", examples / (now - self._last_time)
                )
            if self.sample_batch is not None and self.vocabulary_tokens is not None:
                tf.summary.text("replaced_tokens", self.render_sample())
        self.writer.flush()
        self._last_time, self._last_step = now, step

    def render_sample(self) -> str:
        outputs = self.model(self.sample_batch, training=False)
        if "corrupted_ids" not in outputs:
            return "(MLM objective: no replacements)"
        original = np.asarray(self.sample_batch["token_ids"][0])
        corrupted = outputs["corrupted_ids"][0].numpy()
        # Objectives without an RTD head give no verdicts to show.
        flagged = np.zeros_like(original, dtype=bool)
        has_verdicts = "rtd_logits" in outputs
        if has_verdicts:
            flagged = outputs["rtd_logits"][0].numpy() > 0
        real = np.asarray(self.sample_batch["padding_mask"][0]).astype(bool)
        words = []
        for orig, new, flag in zip(original[real], corrupted[real], flagged[real]):
            token = self.vocabulary_tokens[orig]
            if orig != new:
                mark = (" ✓" if flag else " ✗") if has_verdicts else ""
                words.append(f"[{token}→{self.vocabulary_tokens[new]}{mark}]")
            elif flag:
                words.append(f"{{{token}}}")
            else:
                words.append(token)
        return " ".join(words)
