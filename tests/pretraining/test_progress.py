"""Pre-training's progress bar counts the run's steps, with its time left,
not Keras' epochs (checkpoint intervals)."""

import io
from types import SimpleNamespace

import numpy as np

from electra_tf.pretraining.callbacks import RunProgress


class _Iterations:
    """An optimizer's step counter."""

    def __init__(self, value: int):
        self.value = value

    def numpy(self):
        return np.int64(self.value)


def test_the_bar_counts_the_whole_run_from_where_it_resumes():
    iterations = _Iterations(3000)  # a run resumed at step 3,000 of 5,000
    out = io.StringIO()
    progress = RunProgress(total_steps=5000, file=out)
    progress.set_model(
        SimpleNamespace(optimizer=SimpleNamespace(iterations=iterations))
    )
    progress.on_train_begin()
    for _ in range(4):
        iterations.value += 500
        progress.on_train_batch_end(0, {"loss": np.float32(7.25)})
    progress.on_epoch_end(0, {"loss": 7.25, "val_rtd_auc": 0.7141})
    progress.on_train_end()
    text = out.getvalue()
    assert "5000/5000" in text and "step" in text
    assert "Epoch" not in text
    assert "loss=7.2500" in text
    assert "step 5000: held-out rtd_auc 0.7141" in text
    assert "3000/5000" not in text.split("\r")[-1]  # the last update is the end
