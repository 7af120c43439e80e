"""The efficiency-analysis objectives: each loss against a direct computation.

One tiny model per objective (built once for the module); every loss is
recomputed in numpy (float64) from what the step fed each model, and the
gradient paths the paper's semantics fix are checked.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import ConfigError, PretrainingConfig
from electra_tf.models.all_tokens_mlm import copy_mixture_prediction
from tests.helpers import MASK, TINY_VOCABULARY_SIZE, make_pretrainer, random_batch

STEP = 9


def _pretrainer(tiny_configs, **changes):
    model_config, pretraining_config = tiny_configs
    return make_pretrainer(
        model_config.override(dropout=0.0), pretraining_config.override(**changes)
    )


@pytest.fixture(scope="module")
def electra_15(tiny_configs):
    return _pretrainer(tiny_configs, objective="electra_15")


@pytest.fixture(scope="module")
def replace_mlm(tiny_configs):
    return _pretrainer(tiny_configs, objective="replace_mlm")


@pytest.fixture(scope="module")
def all_tokens_mlm(tiny_configs):
    return _pretrainer(tiny_configs, objective="all_tokens_mlm")


@pytest.fixture(scope="module")
def batch():
    return random_batch(batch_size=4, length=32, seed=5)


def _log_softmax(x):
    x = x.astype("float64")
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def _direct_mlm_loss(logits, masked):
    """Weighted mean cross-entropy of the original tokens at the masked slots."""
    weights = masked.weights.numpy()
    targets = masked.target_ids.numpy()
    nll = -np.take_along_axis(_log_softmax(logits), targets[..., None], -1)[..., 0]
    return (nll * weights).sum() / (weights.sum() + 1e-6)


def _direct_generator_loss(pretrainer, batch, masked):
    logits = pretrainer.generator(
        {
            "token_ids": masked.masked_ids,
            "segment_ids": tf.constant(batch["segment_ids"]),
            "padding_mask": tf.constant(batch["padding_mask"]),
            "mask_positions": masked.positions,
        }
    ).numpy()
    return _direct_mlm_loss(logits, masked)


def _corrupted(out, batch):
    return {
        "token_ids": out["corrupted_ids"],
        "segment_ids": tf.constant(batch["segment_ids"]),
        "padding_mask": tf.constant(batch["padding_mask"]),
    }


def _chosen(masked, length):
    """[B, L] 1.0 at every position a live masked slot points to (numpy)."""
    chosen = np.zeros((masked.positions.shape[0], length))
    for row, (positions, weights) in enumerate(
        zip(masked.positions.numpy(), masked.weights.numpy())
    ):
        chosen[row, positions[weights > 0]] = 1.0
    return chosen


def _generator_only(pretrainer):
    shared = {id(v) for v in pretrainer.discriminator_encoder.trainable_variables}
    return [v for v in pretrainer.generator.trainable_variables if id(v) not in shared]


def _assert_disc_loss_spares_the_generator(pretrainer, batch, disc_loss, head):
    """No gradient of the disc loss on generator-only weights; some on the rest."""
    with tf.GradientTape(persistent=True) as tape:
        out = pretrainer(batch, training=True, step=STEP)
    generator_only = _generator_only(pretrainer)
    assert generator_only
    for variable, gradient in zip(
        generator_only, tape.gradient(out[disc_loss], generator_only)
    ):
        assert gradient is None or not np.any(gradient.numpy()), variable.path
    assert any(
        g is not None and np.any(g.numpy())
        for g in tape.gradient(out["mlm_loss"], generator_only)
    )
    # The disc loss trains the discriminator-sized model: its head, its
    # encoder and (through its input and tied output) the shared embeddings.
    table = pretrainer.discriminator_encoder.token_embedding.embeddings
    top = pretrainer.discriminator_encoder.transformer_layers[-1].trainable_variables
    for variable in [table, top[0], *head]:
        gradient = tape.gradient(out[disc_loss], variable)
        assert gradient is not None, variable.path
        assert np.abs(tf.convert_to_tensor(gradient).numpy()).sum() > 0, variable.path


# === electra_15 ===
def test_electra_15_loss_covers_only_the_masked_positions(electra_15, batch):
    out = electra_15(batch, step=STEP)
    masked = out["masked"]
    mlm = _direct_generator_loss(electra_15, batch, masked)
    rtd_logits = electra_15.discriminator(_corrupted(out, batch)).numpy()
    z = rtd_logits.astype("float64")
    labels = out["is_replaced"].numpy().astype("float64")
    bce = np.maximum(z, 0) - z * labels + np.log1p(np.exp(-np.abs(z)))
    chosen = _chosen(masked, batch["token_ids"].shape[1])
    assert 0 < chosen.sum() < batch["padding_mask"].sum()
    rtd = (bce * chosen).sum() / (chosen.sum() + 1e-6)

    np.testing.assert_allclose(out["rtd_weights"].numpy(), chosen)
    np.testing.assert_allclose(out["mlm_loss"].numpy(), mlm, rtol=1e-5)
    np.testing.assert_allclose(out["rtd_loss"].numpy(), rtd, rtol=1e-5)
    np.testing.assert_allclose(out["loss"].numpy(), mlm + 50.0 * rtd, rtol=1e-5)
    # Every replaced token is a masked one, so the labels lose nothing.
    assert np.all(chosen[labels > 0] == 1.0)


# === replace_mlm ===
def test_replace_mlm_predicts_originals_from_generator_samples(replace_mlm, batch):
    out = replace_mlm(batch, step=STEP)
    masked = out["masked"]
    corrupted = out["corrupted_ids"].numpy()
    chosen = _chosen(masked, corrupted.shape[1]).astype(bool)
    # The discriminator-sized MLM reads samples, not [MASK], at masked
    # positions, and the original tokens everywhere else.
    assert not np.any(corrupted == MASK)
    np.testing.assert_array_equal(corrupted[~chosen], batch["token_ids"][~chosen])
    sampled = out["sampled_ids"].numpy()
    rows, slots = np.nonzero(masked.weights.numpy())
    positions = masked.positions.numpy()[rows, slots]
    np.testing.assert_array_equal(corrupted[rows, positions], sampled[rows, slots])

    mlm = _direct_generator_loss(replace_mlm, batch, masked)
    replace_logits = replace_mlm.discriminator_mlm(
        {**_corrupted(out, batch), "mask_positions": masked.positions}
    ).numpy()
    replace = _direct_mlm_loss(replace_logits, masked)
    np.testing.assert_allclose(out["mlm_loss"].numpy(), mlm, rtol=1e-5)
    np.testing.assert_allclose(out["replace_mlm_loss"].numpy(), replace, rtol=1e-5)
    # disc_weight 0 resolves to 1 for the MLM-type objectives.
    np.testing.assert_allclose(out["loss"].numpy(), mlm + replace, rtol=1e-5)


def test_replace_mlm_loss_reaches_the_generator_only_through_embeddings(
    replace_mlm, batch
):
    head = replace_mlm.discriminator_mlm.mlm_head.trainable_variables
    _assert_disc_loss_spares_the_generator(replace_mlm, batch, "replace_mlm_loss", head)
    # Two MLM heads, one tied output table, each with its own dense and bias.
    assert (
        replace_mlm.discriminator_mlm.mlm_head.token_embedding
        is replace_mlm.generator.mlm_head.token_embedding
    )
    assert replace_mlm.discriminator_mlm.encoder is replace_mlm.discriminator_encoder
    assert replace_mlm.discriminator is None


def test_text_summary_shows_replacements_without_verdicts(replace_mlm, tmp_path):
    from electra_tf.pretraining.callbacks import TrainingSummaries

    summaries = TrainingSummaries(
        str(tmp_path),
        global_batch_size=1,
        sample_batch=random_batch(batch_size=1, length=32, seed=3),
        vocabulary_tokens=[f"t{i}" for i in range(TINY_VOCABULARY_SIZE)],
    )
    summaries.set_model(replace_mlm)
    text = summaries.render_sample()
    assert "→" in text
    assert "✓" not in text and "✗" not in text


# === all_tokens_mlm ===
def test_all_tokens_mlm_loss_is_the_copy_mixture_over_every_token(
    all_tokens_mlm, batch
):
    out = all_tokens_mlm(batch, step=STEP)
    masked = out["masked"]
    mlm = _direct_generator_loss(all_tokens_mlm, batch, masked)
    predicted = all_tokens_mlm.discriminator_mlm(_corrupted(out, batch))
    logits = predicted["mlm_logits"].numpy()
    assert logits.shape == (*batch["token_ids"].shape, TINY_VOCABULARY_SIZE)
    copy = 1.0 / (1.0 + np.exp(-predicted["copy_logits"].numpy().astype("float64")))
    probabilities = np.exp(_log_softmax(logits))
    original = batch["token_ids"]
    corrupted = out["corrupted_ids"].numpy()
    # The full mixture distribution, built as the paper states it.
    one_hot = np.eye(TINY_VOCABULARY_SIZE)[corrupted]
    mixture = copy[..., None] * one_hot + (1.0 - copy[..., None]) * probabilities
    likelihood = np.take_along_axis(mixture, original[..., None], -1)[..., 0]
    real = batch["padding_mask"].astype("float64")
    all_tokens = (-np.log(likelihood) * real).sum() / (real.sum() + 1e-6)

    np.testing.assert_allclose(out["mlm_loss"].numpy(), mlm, rtol=1e-5)
    np.testing.assert_allclose(
        out["all_tokens_mlm_loss"].numpy(), all_tokens, rtol=1e-5
    )
    np.testing.assert_allclose(out["loss"].numpy(), mlm + all_tokens, rtol=1e-5)
    assert (corrupted != original).any()
    # The accuracy metric's prediction is the mixture's argmax.
    np.testing.assert_array_equal(
        copy_mixture_prediction(
            predicted["mlm_logits"], predicted["copy_logits"], corrupted
        ).numpy(),
        mixture.argmax(-1),
    )


def test_copy_mixture_prediction_prefers_a_confident_prediction():
    # V=3: the input is token 0; the softmax strongly prefers token 2.
    logits = tf.constant([[[0.0, 0.0, 8.0], [0.0, 0.0, 8.0]]])
    copy_logits = tf.constant([[3.0, -3.0]])  # D = 0.95, then 0.05
    inputs = tf.constant([[0, 0]])
    predicted = copy_mixture_prediction(logits, copy_logits, inputs).numpy()
    np.testing.assert_array_equal(predicted, [[0, 2]])


def test_all_tokens_mlm_loss_trains_the_copy_gate_not_the_generator(
    all_tokens_mlm, batch
):
    head = all_tokens_mlm.discriminator_mlm.copy_output.trainable_variables
    head += all_tokens_mlm.discriminator_mlm.mlm_head.trainable_variables
    _assert_disc_loss_spares_the_generator(
        all_tokens_mlm, batch, "all_tokens_mlm_loss", head
    )


def test_all_tokens_mlm_trains_and_round_trips_through_a_keras_file(
    all_tokens_mlm, batch, tmp_path
):
    all_tokens_mlm.compile(optimizer=keras.optimizers.Adam(1e-3))
    # Eager steps: the same code as fit's, without tracing a graph.
    for _ in range(2):
        logs = all_tokens_mlm.train_step(batch)
    for name in (
        "all_tokens_mlm_loss",
        "all_tokens_mlm_accuracy",
        "all_tokens_mlm_replaced_accuracy",
        "replaced_fraction",
    ):
        assert np.isfinite(logs[name].numpy()), name
    path = tmp_path / "all_tokens_mlm.keras"
    all_tokens_mlm.save(path)
    loaded = keras.models.load_model(path)
    assert loaded.discriminator_mlm.encoder is loaded.discriminator_encoder
    np.testing.assert_allclose(
        all_tokens_mlm(batch, step=1)["loss"], loaded(batch, step=1)["loss"], rtol=1e-6
    )


# === mlm (BERT) ===
def test_mlm_loss_is_the_cross_entropy_of_the_masked_input(tiny_configs, batch):
    pretrainer = _pretrainer(tiny_configs, objective="mlm")
    out = pretrainer(batch, training=False, step=STEP)
    masked = out["masked"]
    # The MLM model is the discriminator-sized encoder reading [MASK] at most
    # masked positions (the rest keep their token or hold a random one).
    assert pretrainer.generator.encoder is pretrainer.discriminator_encoder
    live = masked.weights.numpy() > 0
    at_masked = np.take_along_axis(
        masked.masked_ids.numpy(), masked.positions.numpy(), axis=1
    )[live]
    assert (at_masked == MASK).mean() > 0.5
    chosen = _chosen(masked, batch["token_ids"].shape[1]).astype(bool)
    assert not np.any((masked.masked_ids.numpy() == MASK) & ~chosen)
    expected = _direct_generator_loss(pretrainer, batch, masked)
    np.testing.assert_allclose(out["mlm_loss"].numpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(out["loss"].numpy(), expected, rtol=1e-5)
    assert "rtd_loss" not in out and "corrupted_ids" not in out


# === generator sizes (the paper's sweep: 1/8, 1/4, 1/2, 1 of the width) ===
@pytest.mark.parametrize("fraction", [0.125, 0.25, 0.5, 1.0])
def test_every_generator_size_of_the_sweep_builds_and_has_its_loss(
    tiny_configs, batch, fraction
):
    model_config, pretraining_config = tiny_configs
    pretrainer = make_pretrainer(
        model_config.override(dropout=0.0, generator_hidden_size=fraction),
        pretraining_config,
    )
    width = int(model_config.hidden_dim * fraction)
    assert pretrainer.generator.encoder.hidden_dim == width
    assert pretrainer.discriminator_encoder.hidden_dim == model_config.hidden_dim
    out = pretrainer(batch, training=False, step=STEP)
    expected = _direct_generator_loss(pretrainer, batch, out["masked"])
    np.testing.assert_allclose(out["mlm_loss"].numpy(), expected, rtol=1e-5)
    assert np.isfinite(out["rtd_loss"].numpy()) and out["is_replaced"].numpy().any()


# === uniform_generator ===
def test_a_uniform_generator_is_neither_run_nor_trained(tiny_configs, batch):
    pretrainer = _pretrainer(tiny_configs, uniform_generator=True)
    with tf.GradientTape() as tape:
        out = pretrainer(batch, training=True, step=STEP)
    generator_only = _generator_only(pretrainer)
    assert all(g is None for g in tape.gradient(out["loss"], generator_only))
    # Uniform logits, as the original's ablation: MLM loss log V, no gradient.
    np.testing.assert_allclose(
        out["mlm_loss"].numpy(), np.log(TINY_VOCABULARY_SIZE), rtol=1e-5
    )
    before = [v.numpy() for v in generator_only]
    discriminator_before = pretrainer.discriminator.get_weights()
    pretrainer.compile(optimizer=keras.optimizers.Adam(1e-3))
    pretrainer.train_step(batch)  # eager: fit's step without tracing
    for variable, value in zip(generator_only, before):
        np.testing.assert_array_equal(variable.numpy(), value, err_msg=variable.path)
    assert any(
        np.any(a != b)
        for a, b in zip(pretrainer.discriminator.get_weights(), discriminator_before)
    )


# === config ===
def test_disc_weight_defaults_per_objective_and_can_be_set():
    assert PretrainingConfig().resolved_disc_weight == 50.0
    assert PretrainingConfig(objective="electra_15").resolved_disc_weight == 50.0
    assert PretrainingConfig(objective="replace_mlm").resolved_disc_weight == 1.0
    assert PretrainingConfig(objective="all_tokens_mlm").resolved_disc_weight == 1.0
    config = PretrainingConfig(objective="replace_mlm", disc_weight=3.0)
    assert config.resolved_disc_weight == 3.0


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"objective": "mlm", "uniform_generator": True}, "uniform_generator"),
        ({"disc_weight": -1.0}, "disc_weight"),
        ({"objective": "all_tokens"}, "objective must be one of"),
    ],
)
def test_bad_objective_settings_are_refused(changes, message):
    with pytest.raises(ConfigError, match=message):
        PretrainingConfig().override(**changes)
