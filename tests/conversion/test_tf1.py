"""Original TF1 checkpoints (google-research/electra variable names) to ours.

The checkpoints here are written the way the original wrote them
(`conftest.write_tf1_checkpoint`: TF1 variables saved by
`tf.compat.v1.train.Saver`, with Adam slots and `global_step`). The weights
are the Hugging Face fixture's, renamed by the tests' own table (not the
library's), so the converted model must reproduce transformers' recorded
outputs.
"""

import pathlib

import numpy as np
import pytest
import safetensors.numpy
import tensorflow as tf

from electra_tf.config import ModelConfig
from electra_tf.conversion.convert import run_flags, write_pretraining_checkpoint
from electra_tf.conversion.original_layout import (
    model_config_from_tensors,
    pretrainer_variables,
    read_tensors,
)
from electra_tf.conversion.tf1 import (
    load_tf1_discriminator,
    load_tf1_pretrainer,
    read_tf1_checkpoint,
)
from electra_tf.errors import ConversionError
from electra_tf.pretraining.checkpoint import (
    checkpoint_step,
    load_pretraining_checkpoint,
    restore_weights,
)
from tests.conversion.test_hf import TOLERANCE, all_positions
from tests.helpers import (
    HF_FIXTURE,
    SPECIAL_TOKEN_IDS,
    TF1_STEP,
    make_pretrainer,
    tf1_name,
    write_tf1_checkpoint,
)

FIXTURE = HF_FIXTURE
STEP = TF1_STEP


@pytest.fixture(scope="module")
def expected():
    return safetensors.numpy.load_file(FIXTURE / "expected.safetensors")


@pytest.fixture(scope="module")
def converted(tf1_checkpoint):
    return load_tf1_pretrainer(
        pathlib.Path(tf1_checkpoint).parent,  # the directory: newest checkpoint
        num_heads=2,
        **SPECIAL_TOKEN_IDS,
    )


def _batch(expected):
    return {k: expected[k] for k in ("token_ids", "segment_ids", "padding_mask")}


def test_the_checkpoint_has_the_original_names(tf1_checkpoint):
    names = set(tf.train.load_checkpoint(tf1_checkpoint).get_variable_to_shape_map())
    for name in (
        "electra/embeddings/word_embeddings",
        "electra/embeddings_project/kernel",
        "electra/encoder/layer_1/attention/output/LayerNorm/gamma",
        "generator/embeddings_project/kernel",
        "generator/encoder/layer_0/intermediate/dense/kernel",
        "generator_predictions/output_bias",
        "discriminator_predictions/dense_1/kernel",
        "electra/encoder/layer_0/attention/self/query/kernel/adam_m",
        "global_step",
    ):
        assert name in names, name
    assert not any(name.startswith("generator/embeddings/") for name in names)


def test_converts_with_the_same_outputs_and_step(converted, expected):
    pretrainer, checkpoint = converted
    assert checkpoint.step == STEP
    assert checkpoint.ignored == []
    config = pretrainer.model_config
    assert (config.hidden_dim, config.embedding_dim, config.generator_hidden_size) == (
        32,
        24,
        0.5,
    )
    batch = _batch(expected)
    diffs = [
        np.abs(
            pretrainer.discriminator(batch) - expected["discriminator_logits"]
        ).max(),
        np.abs(
            pretrainer.generator(all_positions(batch)) - expected["generator_logits"]
        ).max(),
    ]
    assert max(diffs) < TOLERANCE, diffs
    discriminator = load_tf1_discriminator(checkpoint.path, num_heads=2)
    np.testing.assert_allclose(
        discriminator(batch), pretrainer.discriminator(batch), atol=1e-6
    )


def test_writes_what_init_checkpoint_takes(converted, expected, tmp_path):
    """The checkpoint alone (the exports beside it: tests/cli/test_convert_cli.py)."""
    pretrainer, checkpoint = converted
    paths = write_pretraining_checkpoint(
        pretrainer, tmp_path, step=checkpoint.step, source=checkpoint.path
    )
    # pretrain/run.py --init-checkpoint: the step offsets the schedule, and a
    # pretrainer of the config's architecture restores every weight.
    assert checkpoint_step(paths["checkpoint"]) == STEP
    fresh = make_pretrainer(pretrainer.model_config, pretrainer.pretraining_config)
    restore_weights(fresh, paths["checkpoint"])
    batch = _batch(expected)
    np.testing.assert_array_equal(
        fresh.discriminator(batch), pretrainer.discriminator(batch)
    )
    loaded = load_pretraining_checkpoint(tmp_path)  # the directory: newest step
    assert loaded.step == STEP and loaded.vocabulary is None
    np.testing.assert_array_equal(
        loaded.pretrainer.generator(all_positions(batch)),
        pretrainer.generator(all_positions(batch)),
    )


@pytest.fixture(scope="module")
def full_width_generator(tiny_configs, tmp_path_factory):
    """A tiny analogue of the released small++: generator as wide as the
    discriminator."""
    model_config, pretraining_config = tiny_configs
    plus_plus = model_config.override(generator_hidden_size=1.0)
    tensors = read_tensors(
        pretrainer_variables(make_pretrainer(plus_plus, pretraining_config))
    )
    directory = tmp_path_factory.mktemp("plusplus")
    return write_tf1_checkpoint(tensors, directory / "model.ckpt", 10), plus_plus


def test_full_width_generator_fits_small_plus_plus_not_small(
    full_width_generator, tiny_configs
):
    path, plus_plus = full_width_generator
    pretrainer, _ = load_tf1_pretrainer(path, num_heads=plus_plus.num_heads)
    assert pretrainer.model_config.generator_hidden_size == 1.0
    assert pretrainer.model_config == plus_plus
    quarter = tiny_configs[0].override(generator_hidden_size=0.25)
    with pytest.raises(ConversionError) as error:
        load_tf1_pretrainer(path, model_config=quarter)
    problems = error.value.problems
    assert (
        "generator/encoder/layer_0/attention/self/query/kernel: shape [64, 64] in "
        f"{path}, [16, 16] in the model" in problems
    ), problems
    assert "generator_predictions/dense/kernel: shape [64, 32] in" in str(error.value)
    # Every generator tensor whose width differs is named; nothing else is.
    assert all(p.startswith("generator") for p in problems)
    # The projection (2), both blocks (2 x 16) and the head's dense kernel.
    assert len(problems) == 2 + 16 * 2 + 1


def test_run_flags_name_the_preset(full_width_generator):
    _, plus_plus = full_width_generator
    flags = run_flags(plus_plus)
    assert flags.startswith("--preset tiny --hparams")
    assert '"generator_hidden_size": 1.0' in flags
    assert run_flags(
        ModelConfig(generator_hidden_size=1.0, max_sequence_length=512)
    ) == ("--preset small++")


def test_unreadable_and_foreign_checkpoints_are_named(tmp_path):
    with pytest.raises(ConversionError, match="cannot read checkpoint .*nothing"):
        read_tf1_checkpoint(tmp_path / "nothing")
    with pytest.raises(ConversionError, match="directory without a checkpoint"):
        read_tf1_checkpoint(tmp_path)
    bert = write_tf1_checkpoint(
        {"bert/embeddings/word_embeddings": np.zeros((4, 2), "float32")},
        tmp_path / "bert.ckpt",
        1,
    )
    with pytest.raises(ConversionError, match="has no electra/embeddings/word_embed"):
        load_tf1_discriminator(bert)


@pytest.fixture(scope="module")
def untied_small(tmp_path_factory):
    """The paper's untied small shape (embeddings 128, discriminator 256,
    generator 64 with embeddings of its own width and no projection), one
    layer each, from transformers' random models, as an original checkpoint
    trained with `untied_generator_embeddings` holds it."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    common = dict(
        vocab_size=120,
        num_hidden_layers=1,
        max_position_embeddings=16,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    towers = {
        "discriminator": transformers.ElectraForPreTraining(
            transformers.ElectraConfig(
                embedding_size=128,
                hidden_size=256,
                num_attention_heads=4,
                intermediate_size=1024,
                **common,
            )
        ),
        "generator": transformers.ElectraForMaskedLM(
            transformers.ElectraConfig(
                embedding_size=64,
                hidden_size=64,
                num_attention_heads=1,
                intermediate_size=256,
                **common,
            )
        ),
    }
    tensors = {}
    with torch.no_grad():
        for tower, model in towers.items():
            model.eval()
            for name, parameter in model.named_parameters():
                # Weights of a visible scale (LayerNorm gains around 1).
                gain = name.endswith("LayerNorm.weight")
                parameter.copy_(gain + 0.1 * torch.randn_like(parameter))
                original, transpose = tf1_name(name, tower, untied=True)
                value = parameter.numpy()
                tensors[original] = value.T if transpose else value
    directory = tmp_path_factory.mktemp("untied")
    return write_tf1_checkpoint(tensors, directory / "model.ckpt", 5), towers, tensors


def test_untied_small_converts_with_transformers_outputs(untied_small):
    import torch

    path, towers, tensors = untied_small
    assert "generator/embeddings_project/kernel" not in tensors
    pretrainer, checkpoint = load_tf1_pretrainer(path, **SPECIAL_TOKEN_IDS)
    config = pretrainer.model_config
    assert config.embedding_sharing == "none"
    assert (config.embedding_dim, config.generator_embedding_dim) == (128, 64)
    assert pretrainer.generator.encoder.embeddings_projection is None
    # Every tensor found its place, and written back is the checkpoint.
    written = read_tensors(pretrainer_variables(pretrainer))
    assert sorted(written) == sorted(tensors)
    for name, value in tensors.items():
        np.testing.assert_array_equal(written[name], value, err_msg=name)
    rng = np.random.default_rng(0)
    batch = {
        "token_ids": rng.integers(5, 120, (2, 16)).astype("int32"),
        "segment_ids": np.repeat([[0] * 8 + [1] * 8], 2, axis=0).astype("int32"),
        "padding_mask": np.array([[1] * 16, [1] * 11 + [0] * 5], "int32"),
    }
    with torch.no_grad():
        kwargs = {
            "input_ids": torch.tensor(batch["token_ids"], dtype=torch.long),
            "token_type_ids": torch.tensor(batch["segment_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(batch["padding_mask"], dtype=torch.long),
        }
        expected_rtd = towers["discriminator"](**kwargs).logits.numpy()
        expected_mlm = towers["generator"](**kwargs).logits.numpy()
    real = batch["padding_mask"].astype(bool)
    np.testing.assert_allclose(
        np.asarray(pretrainer.discriminator(batch))[real],
        expected_rtd[real],
        atol=TOLERANCE,
    )
    np.testing.assert_allclose(
        np.asarray(pretrainer.generator(all_positions(batch)))[real],
        expected_mlm[real],
        atol=TOLERANCE,
    )


def test_untied_generator_embeddings_wider_than_it_are_refused(untied_small):
    _, _, tensors = untied_small
    wide = dict(tensors)
    wide["generator/embeddings/word_embeddings"] = np.zeros((120, 128), "float32")
    with pytest.raises(ConversionError) as error:
        model_config_from_tensors(wide, "wide")
    assert (
        "generator/embeddings/word_embeddings: width 128, but an untied "
        "generator's embeddings are as wide as its hidden size 64"
    ) in str(error.value.problems)
