"""`loss_reduction`: the fine-tuning loss averaged (ours, transformers') or summed
(the original's), from `--hparams` to every kind's "auto" loss.

On one fixed batch per kind the summed loss is the mean times the number of
terms it averages: the examples (classification, regression), the labelled
tokens (tagging; not the windows, nor the tokens). Question answering refuses
the key (`QuestionAnsweringTask.settings_not_read`; the refusal's line is in
`test_finetune_flags.py`). Across replicas, `mirrored_loss_check` (slow). The
original's step, summed, against ours: `test_head_parity.py`.
"""

import json
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from electra_tf.config import ConfigError, FinetuningConfig
from electra_tf.finetuning.classification import ClassificationTask, load_task_data
from electra_tf.finetuning.glue_tasks import get_task
from electra_tf.finetuning.settings import FinetuningFlags, resolve_finetuning_config
from electra_tf.finetuning.tagging import TaggingTask
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.token_classifier import ElectraTokenClassifier
from tests.helpers import (
    SUBPROCESS_TIMEOUT,
    TINY_ENCODER,
    labelled_tokens,
    random_batch,
    randomize_weights,
)

BATCH = 6
LENGTH = 8
GLUE_FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "glue"


def _encoder():
    return ElectraEncoder(**{**TINY_ENCODER, "vocabulary_size": 200})


def _loss(model, loss_reduction, x, y, sample_weight=None):
    model.compile(optimizer="sgd", loss_reduction=loss_reduction)
    y_pred = model(x, training=False)
    return float(model.compute_loss(x, y, y_pred, sample_weight=sample_weight))


def _classification_batch(num_classes, seed=0):
    rng = np.random.default_rng(seed)
    x = random_batch(batch_size=BATCH, length=LENGTH, seed=seed)
    if num_classes == 1:
        return x, rng.random(BATCH).astype("float32"), None
    return x, rng.integers(0, num_classes, BATCH), None


def _tagging_batch(num_classes, seed=0):
    rng = np.random.default_rng(seed)
    x = random_batch(batch_size=BATCH, length=LENGTH, seed=seed)
    weights = labelled_tokens(x, rng)
    return x, rng.integers(0, num_classes, weights.shape), weights


@pytest.mark.parametrize(
    "model_class, num_classes, terms",
    [
        (ElectraTextClassifier, 3, "examples"),
        (ElectraTextClassifier, 1, "examples"),  # regression
        (ElectraTokenClassifier, 5, "labelled tokens"),
    ],
    ids=["classification", "regression", "tagging"],
)
def test_the_summed_loss_is_the_mean_times_its_terms(model_class, num_classes, terms):
    model = model_class(_encoder(), num_classes=num_classes, dropout=0.0)
    randomize_weights(model, seed=1)
    if terms == "examples":
        x, y, weights = _classification_batch(num_classes)
        count = BATCH
    else:
        x, y, weights = _tagging_batch(num_classes)
        count = float(weights.sum())
        # Neither the windows nor the real tokens: the labelled ones.
        assert count not in (BATCH, float(x["padding_mask"].sum()))
    mean = _loss(model, "mean", x, y, weights)
    summed = _loss(model, "sum", x, y, weights)
    assert mean > 0.01
    np.testing.assert_allclose(summed, count * mean, rtol=1e-6)


def test_a_bad_loss_reduction_is_refused():
    with pytest.raises(ConfigError) as raised:
        FinetuningConfig(loss_reduction="total")
    assert str(raised.value) == (
        "loss_reduction must be one of ('mean', 'sum'), got 'total'"
    )
    model = ElectraTextClassifier(_encoder(), num_classes=2)
    with pytest.raises(ValueError, match="loss_reduction must be one of"):
        model.compile(loss_reduction="average")
    # An explicit loss reduces as it was built to: "sum" would be ignored.
    with pytest.raises(ValueError, match='loss_reduction="sum" is for loss="auto"'):
        model.compile(loss="mse", loss_reduction="sum")


@pytest.mark.parametrize("kind", [ClassificationTask, TaggingTask])
def test_hparams_loss_reduction_reaches_the_compile_arguments(kind):
    """`--hparams '{"loss_reduction": "sum"}'` -> the config -> the arguments
    `finetune_seed` compiles the model with; "mean" without it."""
    encoder = {"hidden_dim": 64, "max_sequence_length": 128, "num_segments": 2}
    # Classification's metrics are its GLUE task's.
    data = None
    if kind is ClassificationTask:
        data = load_task_data(get_task("sst2"), str(GLUE_FIXTURE))
    for hparams, expected in (('{"loss_reduction": "sum"}', "sum"), ("{}", "mean")):
        flags = FinetuningFlags(hparams=hparams)
        _, config = resolve_finetuning_config(flags, kind, encoder, jit_compile=False)
        assert config.loss_reduction == expected
        arguments = kind(data, config, None).compile_arguments()
        assert arguments["loss_reduction"] == expected


@pytest.mark.slow
def test_the_sum_is_over_the_global_batch_on_two_replicas():
    result = subprocess.run(
        [sys.executable, "-m", "tests.finetuning.mirrored_loss_check"],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    for kind in ("classification", "tagging"):
        # The step moved the weights, and 2 replicas moved them as 1 device.
        assert figures[kind]["update"] > 1e-3, figures
        assert figures[kind]["difference"] < 1e-6, figures
