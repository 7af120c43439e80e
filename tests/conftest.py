"""Shared fixtures (helpers: `tests/helpers.py`): quiet TensorFlow, tiny models."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pytest  # noqa: E402

from tests.helpers import (  # noqa: E402
    HF_FIXTURE,
    TF1_STEP,
    TINY_VOCABULARY_SIZE,
    tf1_name,
    write_tf1_checkpoint,
)


@pytest.fixture(scope="session")
def tiny_configs():
    from electra_tf.presets import get_preset

    preset = get_preset("tiny")
    model = preset.model.override(vocabulary_size=TINY_VOCABULARY_SIZE)
    pretraining = preset.pretraining.override(max_seq_length=32)
    return model, pretraining


@pytest.fixture(scope="session")
def tf1_checkpoint(tmp_path_factory):
    """The HF fixture's pair as an original TF1 pre-training checkpoint."""
    import safetensors.numpy

    tensors = {}
    for tower in ("discriminator", "generator"):
        weights = safetensors.numpy.load_file(HF_FIXTURE / tower / "model.safetensors")
        for hf_name, value in weights.items():
            name, transpose = tf1_name(hf_name, tower)
            tensors.setdefault(name, value.T if transpose else value)
    directory = tmp_path_factory.mktemp("tf1")
    return write_tf1_checkpoint(tensors, directory / "model.ckpt", TF1_STEP)


@pytest.fixture(autouse=True)
def _no_network_probe(monkeypatch):
    """Tests never touch the network: the reachability check before a tfds
    download (`electra_tf.network`) answers "reachable" (the mocked tfds
    downloads nothing); a test of the offline case patches it again."""
    import electra_tf.network

    monkeypatch.setattr(electra_tf.network, "unreachable_reason", lambda *a, **k: None)
