"""`embedding_sharing`: ELECTRA's tying, DeBERTaV3's GDES and none.

One tiny GDES pretrainer for the module; "tied" is what every other test
already builds (the default), and "none" is `test_pretrainer.py`'s untied test.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import (
    ConfigError,
    ModelConfig,
    PretrainingConfig,
    check_model_and_objective,
)
from electra_tf.export.pretrained import exported_discriminator
from electra_tf.models.disentangled_embedding import DisentangledEmbedding
from electra_tf.pretraining.flops import pretraining_flops
from tests.helpers import make_pretrainer, random_batch

STEP = 4


@pytest.fixture(scope="module")
def gdes(tiny_configs):
    model_config, pretraining_config = tiny_configs
    pretrainer = make_pretrainer(
        model_config.override(dropout=0.0, embedding_sharing="gdes"),
        pretraining_config,
    )
    # A residual away from its zero start, so sums and folds are visible.
    residual = pretrainer.discriminator_encoder.token_embedding.residual
    rng = np.random.default_rng(0)
    residual.assign(0.05 * rng.standard_normal(tuple(residual.shape)))
    return pretrainer


@pytest.fixture(scope="module")
def batch():
    return random_batch(batch_size=4, length=32, seed=2)


@pytest.fixture(scope="module")
def gradients(gdes, batch):
    """d(mlm_loss) and d(rtd_loss) on the generator's table and the residual."""
    tables = {
        "generator": gdes.generator.encoder.token_embedding.embeddings,
        "residual": gdes.discriminator_encoder.token_embedding.residual,
    }
    with tf.GradientTape(persistent=True) as tape:
        out = gdes(batch, training=True, step=STEP)
    return {
        (loss, table): tape.gradient(out[loss], variable)
        for loss in ("mlm_loss", "rtd_loss")
        for table, variable in tables.items()
    }


def _nonzero(gradient):
    return gradient is not None and np.abs(tf.convert_to_tensor(gradient)).sum() > 0


def test_gdes_mlm_gradient_never_reaches_the_residual_table(gradients):
    assert gradients["mlm_loss", "residual"] is None
    assert _nonzero(gradients["mlm_loss", "generator"])


def test_gdes_rtd_gradient_never_reaches_the_generator_table(gradients):
    assert gradients["rtd_loss", "generator"] is None
    assert _nonzero(gradients["rtd_loss", "residual"])


def test_gdes_discriminator_reads_generator_table_plus_residual(gdes, batch):
    token_embedding = gdes.discriminator_encoder.token_embedding
    assert isinstance(token_embedding, DisentangledEmbedding)
    generator_table = gdes.generator.encoder.token_embedding.embeddings.numpy()
    # The generator owns its whole embedding block; the discriminator only
    # adds to its token table.
    assert token_embedding.base is gdes.generator.encoder.token_embedding
    assert not gdes.generator.encoder.shares_embeddings
    expected = (generator_table + token_embedding.residual.numpy())[batch["token_ids"]]
    np.testing.assert_allclose(
        token_embedding(batch["token_ids"]).numpy(), expected, rtol=1e-6
    )
    # The generator's MLM output is its own table.
    generator = gdes.generator
    assert generator.mlm_head.token_embedding is generator.encoder.token_embedding


def test_gdes_exported_discriminator_has_the_folded_table(gdes, batch, tmp_path):
    discriminator, encoder = exported_discriminator(gdes)
    assert discriminator.encoder is encoder
    assert not encoder.disentangles_embeddings
    assert type(encoder.token_embedding) is keras.layers.ReversibleEmbedding
    folded = (
        gdes.generator.encoder.token_embedding.embeddings.numpy()
        + gdes.discriminator_encoder.token_embedding.residual.numpy()
    )
    np.testing.assert_allclose(encoder.token_embedding.embeddings.numpy(), folded)
    np.testing.assert_allclose(
        discriminator(batch).numpy(), gdes.discriminator(batch).numpy(), atol=1e-5
    )
    # An ordinary discriminator: it saves and loads on its own.
    path = tmp_path / "discriminator.keras"
    discriminator.save(path)
    loaded = keras.models.load_model(path)
    np.testing.assert_allclose(
        loaded.encoder.token_embedding.embeddings.numpy(), folded, rtol=1e-6
    )


def test_gdes_trains_both_tables_and_round_trips_through_a_keras_file(
    gdes, batch, tmp_path
):
    generator_table = gdes.generator.encoder.token_embedding.embeddings
    residual = gdes.discriminator_encoder.token_embedding.residual
    before = generator_table.numpy(), residual.numpy()
    gdes.compile(optimizer=keras.optimizers.Adam(1e-3))
    logs = gdes.train_step(batch)  # eager: fit's step without tracing
    assert np.isfinite(logs["loss"].numpy())
    assert np.any(generator_table.numpy() != before[0])
    assert np.any(residual.numpy() != before[1])
    path = tmp_path / "gdes.keras"
    gdes.save(path)
    loaded = keras.models.load_model(path)
    # The residual is saved as itself, not as the sum.
    np.testing.assert_array_equal(
        loaded.discriminator_encoder.token_embedding.residual.numpy(),
        residual.numpy(),
    )
    np.testing.assert_allclose(
        gdes(batch, step=1)["loss"], loaded(batch, step=1)["loss"], rtol=1e-6
    )


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"objective": "mlm"}, "embedding_sharing='gdes'.*objective 'mlm'"),
        (
            {"uniform_generator": True},
            "embedding_sharing='gdes'.*uniform_generator=True",
        ),
    ],
)
def test_gdes_without_a_trained_generator_is_refused(tiny_configs, changes, message):
    model_config, pretraining_config = tiny_configs
    model_config = model_config.override(embedding_sharing="gdes")
    pretraining_config = pretraining_config.override(**changes)
    with pytest.raises(ConfigError, match=message):
        check_model_and_objective(model_config, pretraining_config)
    with pytest.raises(ConfigError, match=message):
        make_pretrainer(model_config, pretraining_config)


def test_unknown_embedding_sharing_is_refused():
    with pytest.raises(ConfigError, match="embedding_sharing must be one of"):
        ModelConfig(embedding_sharing="es")


def test_stored_tie_embeddings_boolean_loads_as_embedding_sharing():
    assert ModelConfig.from_dict({"tie_embeddings": True}).embedding_sharing == "tied"
    assert ModelConfig.from_dict({"tie_embeddings": False}).embedding_sharing == "none"
    assert "tie_embeddings" not in ModelConfig().to_dict()


def test_gdes_costs_what_tied_costs_and_none_counts_as_untied():
    model = ModelConfig(vocabulary_size=30522)
    pretraining = PretrainingConfig()
    tied = pretraining_flops(model, pretraining)
    gdes = pretraining_flops(model.override(embedding_sharing="gdes"), pretraining)
    untied = pretraining_flops(model.override(embedding_sharing="none"), pretraining)
    assert gdes == tied
    # small: generator hidden 64 < embedding width 128, so untied is cheaper.
    assert untied < tied
