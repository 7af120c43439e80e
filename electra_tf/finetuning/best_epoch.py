"""Best-epoch selection on dev, shared by every fine-tuning kind: whatever is
predicted, exported or scored on a test split after training is the epoch
chosen on dev alone; with a patience, training stops early on dev."""

from __future__ import annotations

import logging
import math

import keras

logger = logging.getLogger(__name__)


class BestEpochSelection(keras.callbacks.Callback):
    """Scores dev after each epoch with `evaluate`; restores the best epoch's
    weights at the end. With `patience`, stops once the dev score has not
    improved for that many epochs.

    `evaluate(model, logs) -> (dev, score)` (a task's `evaluate`): `dev` maps
    a split name to its metrics and `score` (higher is better) selects the
    epoch. It may add `val_*` entries to `logs`, so callbacks after this one
    (TensorBoard, `History`) see them.

    Attributes:
        epochs: per epoch, `{"epoch", "train": {...}, "dev": {split: {...}},
            "score"}`.
        best_epoch: 1-based epoch with the best dev score.
        best_score: its score.
        stopped_early: whether the patience ran out before the last epoch.
    """

    def __init__(self, evaluate, patience: int = 0):
        super().__init__()
        self.evaluate = evaluate
        if patience < 0:
            raise ValueError(f"patience must be >= 0, got {patience}")
        self.patience = patience
        self.epochs: list[dict] = []
        self.best_epoch = 0
        self.best_score = -math.inf
        self.stopped_early = False
        self._best_weights = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs if logs is not None else {}
        train = {key: float(value) for key, value in logs.items()}
        dev, score = self.evaluate(self.model, logs)
        self.epochs.append(
            {"epoch": epoch + 1, "train": train, "dev": dev, "score": score}
        )
        logger.info("epoch %d: dev %s (score %.4f)", epoch + 1, dev, score)
        if score > self.best_score:
            self.best_score, self.best_epoch = score, epoch + 1
            self._best_weights = self.model.get_weights()
        elif self.patience and epoch + 1 - self.best_epoch >= self.patience:
            logger.info(
                "no dev improvement for %d epochs: stopping (best epoch %d)",
                self.patience,
                self.best_epoch,
            )
            self.stopped_early = True
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self._best_weights is not None:
            self.model.set_weights(self._best_weights)

    def results(self, seed: int) -> dict:
        """What a seed's run reports: every epoch, the chosen one and its dev."""
        best = self.epochs[self.best_epoch - 1]
        return {
            "seed": seed,
            "epochs": self.epochs,
            "best_epoch": self.best_epoch,
            "stopped_early": self.stopped_early,
            "dev": best["dev"],
            "score": best["score"],
        }
