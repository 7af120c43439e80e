"""Parity with Hugging Face transformers, in both conversion directions.

Without torch: the checked-in fixture (`tests/fixtures/hf_reference/`, made
by transformers with `make_fixture.py`) converts to ours and gives
transformers' recorded outputs; ours written back is the fixture, tensor for
tensor. With torch and transformers installed (requirements-test.txt pins
them): transformers loads what we write, and we load what it writes, live.
"""

import json
import pathlib
import shutil

import keras
import numpy as np
import pytest
import safetensors.numpy

from electra_tf.conversion.hf import (
    load_hf_discriminator,
    load_hf_encoder,
    load_hf_generator,
    load_hf_pretrainer,
    save_hf_encoder,
    save_hf_pretrainer,
)
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.errors import ConversionError
from tests.helpers import (
    SPECIAL_TOKEN_IDS,
    make_pretrainer,
    random_batch,
    randomize_weights,
)

FIXTURE = pathlib.Path(__file__).parents[1] / "fixtures" / "hf_reference"
# Both sides compute exact-erf GELU in float32; measured differences are ~5e-6.
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def expected():
    return safetensors.numpy.load_file(FIXTURE / "expected.safetensors")


@pytest.fixture(scope="module")
def pretrainer():
    return load_hf_pretrainer(
        FIXTURE / "discriminator",
        FIXTURE / "generator",
        **SPECIAL_TOKEN_IDS,
    )


def _batch(expected):
    return {k: expected[k] for k in ("token_ids", "segment_ids", "padding_mask")}


def hidden_states(encoder, batch):
    """The embedding output (after projection) and every block's output,
    as transformers' `hidden_states`: [layers + 1, B, L, H]."""
    first = encoder.embeddings_projection or encoder.embeddings_dropout
    taps = [first.output] + [layer.output for layer in encoder.transformer_layers]
    return np.stack(keras.Model(encoder.input, taps)(batch))


def all_positions(batch):
    length = batch["token_ids"].shape[1]
    positions = np.tile(np.arange(length, dtype="int32"), (len(batch["token_ids"]), 1))
    return {**batch, "mask_positions": positions}


def _max_diff(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())


def test_fixture_converts_to_transformers_outputs(pretrainer, expected):
    batch = _batch(expected)
    assert pretrainer.model_config.embedding_sharing == "tied"
    assert pretrainer.model_config.generator_hidden_size == 0.5
    diffs = {
        "discriminator_logits": _max_diff(
            pretrainer.discriminator(batch), expected["discriminator_logits"]
        ),
        "discriminator_hidden_states": _max_diff(
            hidden_states(pretrainer.discriminator_encoder, batch),
            expected["discriminator_hidden_states"],
        ),
        "generator_logits": _max_diff(
            pretrainer.generator(all_positions(batch)), expected["generator_logits"]
        ),
        "generator_hidden_states": _max_diff(
            hidden_states(pretrainer.generator.encoder, batch),
            expected["generator_hidden_states"],
        ),
    }
    assert max(diffs.values()) < TOLERANCE, diffs
    # The fixture's outputs are not trivially small: a mapping error shows.
    assert np.abs(expected["discriminator_logits"]).max() > 1.0


def test_single_towers_convert_too(expected):
    batch = _batch(expected)
    discriminator = load_hf_discriminator(FIXTURE / "discriminator")
    assert _max_diff(discriminator(batch), expected["discriminator_logits"]) < TOLERANCE
    generator = load_hf_generator(FIXTURE / "generator")
    assert not generator.encoder.shares_embeddings
    assert (
        _max_diff(generator(all_positions(batch)), expected["generator_logits"])
        < TOLERANCE
    )
    encoder = load_hf_encoder(FIXTURE / "discriminator")
    assert (
        _max_diff(
            encoder(batch)["sequence_output"],
            expected["discriminator_hidden_states"][-1],
        )
        < TOLERANCE
    )


def test_ours_written_back_is_the_fixture(pretrainer, tmp_path):
    vocabulary = Vocabulary.from_file(FIXTURE / "discriminator" / "vocab.txt")
    paths = save_hf_pretrainer(pretrainer, tmp_path, vocabulary)
    for tower in ("discriminator", "generator"):
        theirs = safetensors.numpy.load_file(FIXTURE / tower / "model.safetensors")
        ours = safetensors.numpy.load_file(
            pathlib.Path(paths[tower]) / "model.safetensors"
        )
        assert sorted(ours) == sorted(theirs)
        for name, value in theirs.items():
            np.testing.assert_array_equal(ours[name], value, err_msg=name)
        their_config = json.loads((FIXTURE / tower / "config.json").read_text())
        our_config = json.loads(
            (pathlib.Path(paths[tower]) / "config.json").read_text()
        )
        for key, value in our_config.items():
            if key in their_config and key != "dtype":
                assert their_config[key] == value, key


def _copy(tower, tmp_path):
    target = tmp_path / tower
    shutil.copytree(FIXTURE / tower, target)
    return target


def test_mismatches_are_listed_tensor_by_tensor(tmp_path):
    # A generator of another vocabulary, with one tensor missing.
    generator = _copy("generator", tmp_path)
    tensors = safetensors.numpy.load_file(generator / "model.safetensors")
    tensors["electra.embeddings.word_embeddings.weight"] = np.zeros(
        (120, 24), "float32"
    )
    del tensors["electra.encoder.layer.1.output.dense.bias"]
    tensors["electra.pooler.dense.weight"] = np.zeros((4, 4), "float32")
    safetensors.numpy.save_file(tensors, generator / "model.safetensors")
    with pytest.raises(ConversionError) as error:
        load_hf_generator(generator)
    text = str(error.value)
    assert "pooler.dense.weight: in " in text and "but not in the model" in text
    assert "generator/embeddings/word_embeddings: shape [120, 24]" in text
    assert "[100, 24] in the model" in text
    assert "generator/encoder/layer_1/output/dense/bias: missing" in text
    assert len(error.value.problems) == 3
    # The pair: untied (the embeddings differ), but an untied generator's
    # embeddings are as wide as its hidden size (the original's layout), and
    # these are the discriminator's width.
    with pytest.raises(ConversionError) as error:
        load_hf_pretrainer(FIXTURE / "discriminator", generator)
    assert (
        "generator/embeddings/word_embeddings: width 24, but an untied "
        "generator's embeddings are as wide as its hidden size 16"
    ) in str(error.value)


def test_pickle_and_wrong_architectures_are_refused(tmp_path):
    pickled = _copy("generator", tmp_path)
    (pickled / "model.safetensors").rename(pickled / "pytorch_model.bin")
    with pytest.raises(ConversionError, match="pytorch_model.bin, a pickle"):
        load_hf_generator(pickled)
    with pytest.raises(ConversionError, match="holds ElectraForMaskedLM, not"):
        load_hf_discriminator(FIXTURE / "generator")
    with pytest.raises(ConversionError, match="nowhere is not a directory"):
        load_hf_discriminator(tmp_path / "nowhere")
    approximate = _copy("discriminator", tmp_path)
    config = json.loads((approximate / "config.json").read_text())
    config["hidden_act"] = "gelu_new"
    (approximate / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConversionError, match="hidden_act 'gelu_new'"):
        load_hf_discriminator(approximate)


# --- Live: transformers (PyTorch, CPU) on both sides -------------------------


@pytest.fixture(scope="module")
def transformers():
    pytest.importorskip("torch")
    return pytest.importorskip("transformers")


def test_transformers_loads_our_pretrainer(transformers, tiny_configs, tmp_path):
    import torch

    model_config, pretraining_config = tiny_configs
    ours = make_pretrainer(model_config, pretraining_config)
    randomize_weights(ours, seed=1)
    paths = save_hf_pretrainer(ours, tmp_path)
    batch = random_batch(batch_size=3, length=20)
    feed = dict(
        input_ids=torch.tensor(batch["token_ids"], dtype=torch.long),
        token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
        attention_mask=torch.tensor(batch["padding_mask"], dtype=torch.long),
        output_hidden_states=True,
    )
    discriminator = transformers.ElectraForPreTraining.from_pretrained(
        paths["discriminator"]
    ).eval()
    generator = transformers.ElectraForMaskedLM.from_pretrained(
        paths["generator"]
    ).eval()
    encoder = transformers.ElectraModel.from_pretrained(paths["discriminator"]).eval()
    # The encoder alone, as an ElectraModel checkpoint (no heads).
    alone = transformers.ElectraModel.from_pretrained(
        save_hf_encoder(ours.discriminator_encoder, tmp_path / "encoder")
    ).eval()
    with torch.no_grad():
        d, g, e = discriminator(**feed), generator(**feed), encoder(**feed)
        a = alone(**feed)
    diffs = {
        "discriminator_logits": _max_diff(d.logits, ours.discriminator(batch)),
        "discriminator_hidden_states": _max_diff(
            torch.stack(d.hidden_states),
            hidden_states(ours.discriminator_encoder, batch),
        ),
        "encoder": _max_diff(
            e.last_hidden_state, ours.discriminator_encoder(batch)["sequence_output"]
        ),
        "encoder_alone": _max_diff(
            a.last_hidden_state, ours.discriminator_encoder(batch)["sequence_output"]
        ),
        "generator_logits": _max_diff(g.logits, ours.generator(all_positions(batch))),
        "generator_hidden_states": _max_diff(
            torch.stack(g.hidden_states), hidden_states(ours.generator.encoder, batch)
        ),
    }
    assert max(diffs.values()) < TOLERANCE, diffs
    assert float(d.logits.abs().max()) > 1.0


def test_we_load_what_transformers_writes(transformers, tmp_path):
    import torch

    torch.manual_seed(3)
    common = dict(
        vocab_size=60,
        embedding_size=16,
        num_hidden_layers=1,
        max_position_embeddings=24,
        layer_norm_eps=1e-12,
    )
    discriminator = transformers.ElectraForPreTraining(
        transformers.ElectraConfig(
            hidden_size=32, num_attention_heads=4, intermediate_size=48, **common
        )
    ).eval()
    with torch.no_grad():
        for parameter in discriminator.parameters():
            parameter.normal_(0.0, 0.3)
    discriminator.save_pretrained(tmp_path / "discriminator")
    ours = load_hf_discriminator(tmp_path / "discriminator")
    token_ids = np.random.default_rng(0).integers(0, 60, (2, 10)).astype("int32")
    mask = np.ones_like(token_ids)
    mask[1, 6:] = 0
    batch = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": mask,
    }
    with torch.no_grad():
        theirs = discriminator(
            input_ids=torch.tensor(token_ids, dtype=torch.long),
            attention_mask=torch.tensor(mask, dtype=torch.long),
        ).logits
    assert _max_diff(theirs, ours(batch)) < TOLERANCE
