"""BestEpochSelection: the epoch chosen on dev, restored, and early stopping."""

import keras
import numpy as np
import pytest

from electra_tf.finetuning.best_epoch import BestEpochSelection


class Scripted(BestEpochSelection):
    """Dev scores given in advance; remembers the weights seen at each epoch."""

    def __init__(self, scores, patience=0):
        super().__init__(self.scripted, patience)
        self.scores = list(scores)
        self.weights_at_epoch = []

    def scripted(self, model, logs):
        self.weights_at_epoch.append(model.get_weights())
        score = self.scores[len(self.epochs)]
        logs["val_accuracy"] = score
        return {"dev": {"accuracy": score}}, score


def _fit(selection, epochs):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
    x = np.random.default_rng(0).normal(size=(16, 3)).astype("float32")
    history = model.fit(x, x.sum(1), epochs=epochs, verbose=0, callbacks=[selection])
    return model, history


def test_the_best_dev_epoch_is_restored_not_the_last():
    selection = Scripted([0.1, 0.6, 0.3, 0.2])
    model, history = _fit(selection, epochs=4)
    assert selection.best_epoch == 2
    for got, want in zip(model.get_weights(), selection.weights_at_epoch[1]):
        np.testing.assert_array_equal(got, want)
    assert history.history["val_accuracy"] == [0.1, 0.6, 0.3, 0.2]
    results = selection.results(seed=7)
    assert results["best_epoch"] == 2 and results["seed"] == 7
    assert results["dev"] == {"dev": {"accuracy": 0.6}} and results["score"] == 0.6
    assert not results["stopped_early"]


def test_patience_stops_after_that_many_epochs_without_improvement():
    selection = Scripted([0.1, 0.6, 0.3, 0.2, 0.9, 0.95], patience=2)
    _, history = _fit(selection, epochs=6)
    # Epochs 3 and 4 do not beat epoch 2: training stops after epoch 4, so
    # the later (better) epochs are never seen.
    assert len(history.history["loss"]) == 4
    assert selection.best_epoch == 2 and selection.stopped_early


def test_without_patience_every_epoch_runs():
    selection = Scripted([0.5, 0.4, 0.3, 0.2, 0.1])
    _, history = _fit(selection, epochs=5)
    assert len(history.history["loss"]) == 5 and selection.best_epoch == 1


def test_a_negative_patience_is_refused():
    with pytest.raises(ValueError, match="patience must be >= 0"):
        Scripted([0.1], patience=-1)
