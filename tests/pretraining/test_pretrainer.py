"""The pre-training step: gradients, loss, sharing, fit, XLA and saving."""

import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.optimization.optimizer import ElectraAdam
from electra_tf.optimization.schedule import WarmupPolynomialDecay
from tests.helpers import make_pretrainer, random_batch

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures"
VOCAB = pathlib.Path(__file__).parents[2] / "electra_tf" / "assets" / "vocab.txt"


@pytest.fixture(scope="module")
def pretrainer(tiny_configs):
    model_config, pretraining_config = tiny_configs
    return make_pretrainer(model_config.override(dropout=0.0), pretraining_config)


def _generator_only(pretrainer):
    shared = {id(v) for v in pretrainer.discriminator.trainable_variables}
    return [v for v in pretrainer.generator.trainable_variables if id(v) not in shared]


def test_embedding_block_is_shared_not_copied(pretrainer):
    generator = pretrainer.generator.encoder
    discriminator = pretrainer.discriminator_encoder
    for name in (
        "token_embedding",
        "position_embedding",
        "segment_embedding",
        "embeddings_layer_norm",
    ):
        assert getattr(generator, name) is getattr(discriminator, name)
    shared = {id(v) for v in discriminator.weights} & {id(v) for v in generator.weights}
    assert len(shared) == 5  # token, position, segment tables, LayerNorm gamma, beta
    assert generator.transformer_layers[0] is not discriminator.transformer_layers[0]
    # Shared variables are trained once, not twice.
    ids = [id(v) for v in pretrainer.trainable_variables]
    assert len(ids) == len(set(ids))


def test_rtd_gradient_stops_at_sampling(pretrainer):
    batch = random_batch(batch_size=4, length=32)
    with tf.GradientTape(persistent=True) as tape:
        outputs = pretrainer(batch, training=True, step=3)
        rtd, mlm = outputs["rtd_loss"], outputs["mlm_loss"]
    generator_only = _generator_only(pretrainer)
    assert generator_only
    for variable, gradient in zip(generator_only, tape.gradient(rtd, generator_only)):
        assert gradient is None or not np.any(gradient.numpy()), variable.path
    # Sanity: the MLM loss does reach those weights.
    assert any(
        g is not None and np.any(g.numpy()) for g in tape.gradient(mlm, generator_only)
    )
    table = pretrainer.discriminator_encoder.token_embedding.embeddings
    for loss in (rtd, mlm):
        gradient = tf.convert_to_tensor(tape.gradient(loss, table))
        assert np.abs(gradient.numpy()).sum() > 0


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_loss_equals_direct_computation(pretrainer, tiny_configs):
    batch = random_batch(batch_size=4, length=32, seed=5)
    out = pretrainer(batch, training=False, step=9)
    batch = {k: tf.constant(v) for k, v in batch.items()}
    masked = out["masked"]
    # Re-run both towers by hand on what the step fed them.
    logits = pretrainer.generator(
        {
            "token_ids": masked.masked_ids,
            "segment_ids": batch["segment_ids"],
            "padding_mask": batch["padding_mask"],
            "mask_positions": masked.positions,
        }
    ).numpy()
    weights = masked.weights.numpy()
    targets = masked.target_ids.numpy()
    nll = -np.take_along_axis(_log_softmax(logits), targets[..., None], -1)[..., 0]
    mlm = (nll * weights).sum() / (weights.sum() + 1e-6)

    rtd_logits = pretrainer.discriminator(
        {
            "token_ids": out["corrupted_ids"],
            "segment_ids": batch["segment_ids"],
            "padding_mask": batch["padding_mask"],
        }
    ).numpy()
    labels = out["is_replaced"].numpy().astype("float64")
    real = batch["padding_mask"].numpy().astype("float64")
    z = rtd_logits.astype("float64")
    bce = np.maximum(z, 0) - z * labels + np.log1p(np.exp(-np.abs(z)))
    rtd = (bce * real).sum() / (real.sum() + 1e-6)

    np.testing.assert_allclose(out["mlm_loss"].numpy(), mlm, rtol=1e-5)
    np.testing.assert_allclose(out["rtd_loss"].numpy(), rtd, rtol=1e-5)
    np.testing.assert_allclose(out["loss"].numpy(), mlm + 50.0 * rtd, rtol=1e-5)
    # Labels: replaced exactly where the corrupted id differs from the input.
    np.testing.assert_array_equal(
        labels.astype(bool), out["corrupted_ids"].numpy() != batch["token_ids"].numpy()
    )
    assert labels.sum() > 0


def _real_text_batches(max_seq_length=32, batch_size=8):
    import keras_hub

    tokenizer = keras_hub.tokenizers.WordPieceTokenizer(
        vocabulary=str(VOCAB), lowercase=True, strip_accents=True
    )
    packer = keras_hub.layers.StartEndPacker(
        sequence_length=max_seq_length, start_value=101, end_value=102, pad_value=0
    )
    lines = FIXTURES.joinpath("pydoc_sentences.txt").read_text().splitlines()
    token_ids = packer(tokenizer(lines)).numpy().astype("int32")
    return {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": (token_ids != 0).astype("int32"),
    }


def test_fit_with_xla_lowers_the_loss_on_real_text(tiny_configs):
    model_config, pretraining_config = tiny_configs
    from electra_tf.pretraining.pretrainer import ElectraPretrainer

    pretrainer = ElectraPretrainer(
        model_config.override(vocabulary_size=30522), pretraining_config
    )
    data = _real_text_batches()
    dataset = tf.data.Dataset.from_tensor_slices(data).batch(16, drop_remainder=True)
    pretrainer.compile(
        optimizer=ElectraAdam(
            WarmupPolynomialDecay(2e-3, warmup_steps=5, total_steps=200),
            global_clipnorm=1.0,
        ),
        jit_compile=True,
    )
    first = pretrainer.evaluate(dataset, verbose=0, return_dict=True)
    pretrainer.fit(dataset.repeat(), steps_per_epoch=60, epochs=1, verbose=0)
    last = pretrainer.evaluate(dataset, verbose=0, return_dict=True)
    assert last["loss"] < 0.9 * first["loss"], (first, last)
    assert last["mlm_loss"] < first["mlm_loss"]
    assert pretrainer.optimizer.iterations.numpy() == 60
    # The step really ran under XLA.
    assert pretrainer.jit_compile is True
    for name in (
        "mlm_accuracy",
        "sampled_accuracy",
        "rtd_accuracy",
        "rtd_balanced_accuracy",
        "rtd_precision",
        "rtd_recall",
        "rtd_auc",
    ):
        assert 0.0 <= last[name] <= 1.0


def test_keras_file_round_trip_keeps_weights_and_sharing(pretrainer, tmp_path):
    path = tmp_path / "pretrainer.keras"
    pretrainer.save(path)
    loaded = keras.models.load_model(path)
    assert (
        loaded.generator.encoder.token_embedding
        is loaded.discriminator_encoder.token_embedding
    )
    for a, b in zip(pretrainer.weights, loaded.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    batch = random_batch(batch_size=2, length=32)
    np.testing.assert_allclose(
        pretrainer(batch, step=1)["loss"], loaded(batch, step=1)["loss"], rtol=1e-6
    )


def test_mlm_objective_trains_the_discriminator_encoder(tiny_configs):
    model_config, pretraining_config = tiny_configs
    pretrainer = make_pretrainer(
        model_config, pretraining_config.override(objective="mlm")
    )
    assert pretrainer.discriminator is None
    assert pretrainer.generator.encoder is pretrainer.discriminator_encoder
    out = pretrainer(random_batch(batch_size=2, length=32), step=0)
    np.testing.assert_allclose(out["loss"], out["mlm_loss"], rtol=1e-6)


def test_untied_generator_owns_its_embeddings(tiny_configs):
    model_config, pretraining_config = tiny_configs
    pretrainer = make_pretrainer(
        model_config.override(tie_embeddings=False), pretraining_config
    )
    generator = pretrainer.generator.encoder
    discriminator = pretrainer.discriminator_encoder
    assert generator.token_embedding is not discriminator.token_embedding
    shared = {id(v) for v in generator.weights} & {id(v) for v in discriminator.weights}
    assert not shared
    # The MLM output is tied to the generator's own token embedding.
    assert pretrainer.generator.mlm_head.token_embedding is generator.token_embedding
