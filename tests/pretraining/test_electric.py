"""Electric: the two-tower cloze generator and the noise-corrected discriminator.

One tiny Electric pretrainer for the module; each quantity is recomputed from
what the two models output, and the gradient paths are checked.
"""

import json
import math
import os
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import PretrainingConfig
from electra_tf.models.cloze_generator import ElectraClozeGenerator
from electra_tf.pretraining.flops import pretraining_flops
from tests.helpers import (
    CLS,
    MASK,
    PAD,
    SEP,
    make_pretrainer,
    random_batch,
)

STEP = 7


@pytest.fixture(scope="module")
def electric(tiny_configs):
    model_config, pretraining_config = tiny_configs
    return make_pretrainer(
        # A larger initialiser range: outputs then visibly depend on inputs.
        model_config.override(dropout=0.0, initializer_range=0.2),
        pretraining_config.override(objective="electric"),
    )


@pytest.fixture(scope="module")
def batch():
    return random_batch(batch_size=4, length=32, seed=11)


@pytest.fixture(scope="module")
def out(electric, batch):
    return electric(batch, step=STEP)


def _cloze(electric, batch, token_ids=None):
    inputs = dict(batch)
    if token_ids is not None:
        inputs["token_ids"] = token_ids
    return electric.generator(inputs).numpy().astype("float64")


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_cloze_prediction_ignores_its_own_token_but_not_its_neighbours(electric, batch):
    assert isinstance(electric.generator, ElectraClozeGenerator)
    before = _cloze(electric, batch)
    position = 5  # a real token of every row (real lengths are >= 16)
    changed = batch["token_ids"].copy()
    changed[:, position] = (changed[:, position] + 7 - 5) % 190 + 5
    after = _cloze(electric, batch, changed)
    np.testing.assert_allclose(after[:, position], before[:, position], atol=1e-6)
    # Its neighbours read it: the left tower at position + 1, the right tower
    # at position - 1.
    for neighbour in (position - 1, position + 1):
        assert np.abs(after[:, neighbour] - before[:, neighbour]).max() > 1e-4


def test_corrected_logit_is_the_score_plus_log_q_plus_log_odds_of_masking(
    electric, batch, out
):
    corrupted = {**batch, "token_ids": out["corrupted_ids"].numpy()}
    score = electric.discriminator(corrupted).numpy().astype("float64")
    # q reads the original (unmasked) input; it is evaluated at the token
    # the discriminator read.
    log_q = np.take_along_axis(
        _log_softmax(_cloze(electric, batch)),
        out["corrupted_ids"].numpy()[..., None],
        -1,
    )[..., 0]
    p = electric.pretraining_config.mask_prob
    expected = score + log_q + math.log(p / (1 - p))
    np.testing.assert_allclose(out["rtd_logits"].numpy(), expected, atol=1e-4)


def test_every_sampled_position_is_labelled_noise(out, batch):
    masked = out["masked"]
    chosen = masked.chosen.numpy()
    labels = out["is_replaced"].numpy()
    np.testing.assert_array_equal(labels, chosen)
    # Including samples equal to the original, which ELECTRA labels original.
    same = chosen & (out["corrupted_ids"].numpy() == batch["token_ids"])
    assert np.all(labels[same])
    assert chosen.sum() == masked.weights.numpy().sum()


def test_cloze_loss_covers_every_candidate_position(electric, batch, out):
    log_probabilities = _log_softmax(_cloze(electric, batch))
    token_ids = batch["token_ids"]
    nll = -np.take_along_axis(log_probabilities, token_ids[..., None], -1)[..., 0]
    candidates = (batch["padding_mask"] > 0) & ~np.isin(
        token_ids, [PAD, CLS, SEP, MASK]
    )
    expected = nll[candidates].sum() / (candidates.sum() + 1e-6)
    np.testing.assert_allclose(out["cloze_loss"].numpy(), expected, rtol=1e-5)
    rtd = out["rtd_loss"].numpy()
    np.testing.assert_allclose(out["loss"].numpy(), expected + 50.0 * rtd, rtol=1e-5)


def test_no_rtd_gradient_reaches_the_cloze_generator(electric, batch):
    with tf.GradientTape(persistent=True) as tape:
        out = electric(batch, training=True, step=STEP)
    shared = {id(v) for v in electric.discriminator_encoder.trainable_variables}
    generator_only = [
        v for v in electric.generator.trainable_variables if id(v) not in shared
    ]
    # Both towers and the head.
    assert len(generator_only) > 2 * len(electric.generator.mlm_head.weights)
    for variable, gradient in zip(
        generator_only, tape.gradient(out["rtd_loss"], generator_only)
    ):
        assert gradient is None or not np.any(gradient.numpy()), variable.path
    assert all(
        g is not None and np.any(g.numpy())
        for g in tape.gradient(out["cloze_loss"], generator_only[-3:])
    )


def test_electric_flops_count_two_towers_and_a_cloze_head_everywhere():
    from electra_tf.config import ModelConfig

    model = ModelConfig(vocabulary_size=30522)
    electra = pretraining_flops(model, PretrainingConfig())
    electric = pretraining_flops(model, PretrainingConfig(objective="electric"))
    assert electra < electric < 3 * electra


def test_a_tiny_fit_has_finite_losses_and_round_trips_a_keras_file(
    electric, batch, tmp_path
):
    electric.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    dataset = tf.data.Dataset.from_tensors(batch).repeat(3)
    history = electric.fit(dataset, epochs=1, verbose=0)
    for name in ("loss", "cloze_loss", "mlm_loss", "rtd_loss", "rtd_auc"):
        assert np.isfinite(history.history[name][-1]), name
    path = tmp_path / "electric.keras"
    electric.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(
        electric(batch, step=1)["loss"], loaded(batch, step=1)["loss"], rtol=1e-6
    )


@pytest.mark.slow  # two runs of pretrain/run.py
def test_electric_run_resumes_from_its_checkpoint_and_exports(tmp_path):
    repo = pathlib.Path(__file__).parents[2]
    command = [
        sys.executable,
        str(repo / "pretrain" / "run.py"),
        "--model-dir",
        str(tmp_path),
        "--corpus",
        str(repo / "electra_tf" / "assets" / "corpus" / "brown.txt.gz"),
        "--vocab",
        str(repo / "electra_tf" / "assets" / "vocab.txt"),
        "--preset",
        "tiny",
        "--objective",
        "electric",
        "--batch-size",
        "4",
        "--max-seq-length",
        "32",
        "--checkpoint-every",
        "2",
        "--jit",
        "off",
    ]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    first = subprocess.run(
        [*command, "--steps", "2"], capture_output=True, text=True, env=env
    )
    assert first.returncode == 0, first.stderr[-3000:]
    second = subprocess.run(
        [*command, "--steps", "4"], capture_output=True, text=True, env=env
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert f"Resumed from {tmp_path}/checkpoints/ckpt-2" in second.stderr
    assert tf.train.latest_checkpoint(str(tmp_path / "checkpoints")).endswith("ckpt-4")
    generator = keras.models.load_model(tmp_path / "export" / "generator.keras")
    assert isinstance(generator, ElectraClozeGenerator)
    # The discriminator exports as any other (the keras-hub preset).
    assert (tmp_path / "export" / "discriminator").is_dir()
    # The held-out metrics the health monitor reads, and the generator's.
    results = json.loads((tmp_path / "eval_results.json").read_text())
    for name in ("rtd_loss", "rtd_auc", "replaced_fraction", "cloze_loss"):
        assert np.isfinite(results[name]), name
