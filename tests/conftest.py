"""Shared test set-up: quiet TensorFlow, tiny models."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

# Ids of the special tokens in every tiny test vocabulary (BERT's are 0, 100-103).
PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
TINY_VOCABULARY_SIZE = 200
SPECIAL_TOKEN_IDS = dict(
    pad_token_id=PAD, cls_token_id=CLS, sep_token_id=SEP, mask_token_id=MASK
)


def random_batch(batch_size=8, length=32, seed=0, vocabulary_size=TINY_VOCABULARY_SIZE):
    """`[CLS] A [SEP] B [SEP] [PAD]...` batches with varied real lengths."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, vocabulary_size, (batch_size, length)).astype("int32")
    segment_ids = np.zeros_like(token_ids)
    padding_mask = np.zeros_like(token_ids)
    for row in range(batch_size):
        real = int(rng.integers(length // 2, length + 1))
        split = real // 2
        token_ids[row, 0] = CLS
        token_ids[row, split] = SEP
        token_ids[row, real - 1] = SEP
        token_ids[row, real:] = PAD
        segment_ids[row, split + 1 : real] = 1
        padding_mask[row, :real] = 1
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
    }


@pytest.fixture(scope="session")
def tiny_configs():
    from electra_tf.presets import get_preset

    preset = get_preset("tiny")
    model = preset.model.override(vocabulary_size=TINY_VOCABULARY_SIZE)
    pretraining = preset.pretraining.override(max_seq_length=32)
    return model, pretraining


def make_pretrainer(model_config, pretraining_config):
    from electra_tf.pretrainer import ElectraPretrainer

    return ElectraPretrainer(model_config, pretraining_config, **SPECIAL_TOKEN_IDS)


def randomize_weights(model, seed=0):
    """Random weights of a visible scale (LayerNorm gains around 1).

    At the 0.02-stddev initialisation outputs hardly depend on the inputs,
    so a wrong mapping or a tokenisation difference could hide in them.
    """
    rng = np.random.default_rng(seed)
    for variable in model.trainable_weights:
        is_gain = variable.path.endswith("gamma")
        noise = rng.standard_normal(tuple(variable.shape))
        variable.assign((1.0 if is_gain else 0.0) + (0.2 if is_gain else 0.3) * noise)
