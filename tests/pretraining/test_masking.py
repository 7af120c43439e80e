"""Dynamic masking follows the original's rules (google-research/electra
`pretrain/pretrain_helpers.py` `mask`)."""

import numpy as np
import tensorflow as tf

from electra_tf import random_streams
from electra_tf.pretraining.masking import mask_tokens
from tests.helpers import CLS, MASK, PAD, SEP, random_batch

MASK_PROB = 0.15
LENGTH = 64
N = int((MASK_PROB + 0.005) * LENGTH)


def _mask(batch, step):
    key = random_streams.step_key(0, step)
    index = tf.range(batch["token_ids"].shape[0])
    return mask_tokens(
        batch["token_ids"],
        batch["padding_mask"],
        key=key,
        example_index=index,
        mask_prob=MASK_PROB,
        max_predictions=N,
        mask_token_prob=0.85,
        mask_token_id=MASK,
        special_token_ids=(PAD, CLS, SEP, MASK),
    )


def _draws(steps=20):
    batch = random_batch(batch_size=64, length=LENGTH, seed=1)
    return batch, [_mask(batch, step) for step in range(steps)]


def test_specials_and_padding_never_chosen_and_counts_exact():
    batch, draws = _draws()
    ids = batch["token_ids"]
    special = np.isin(ids, [PAD, CLS, SEP, MASK]) | (batch["padding_mask"] == 0)
    real = batch["padding_mask"].sum(-1)
    expected = np.maximum(1, np.minimum(N, np.round(real * MASK_PROB))).astype(int)
    for masked in draws:
        chosen = masked.chosen.numpy()
        assert not (chosen & special).any()
        np.testing.assert_array_equal(chosen.sum(-1), expected)
        np.testing.assert_array_equal(masked.weights.numpy().sum(-1), expected)
        # Chosen positions are distinct and the weighted slots point at them.
        positions = masked.positions.numpy()
        live = masked.weights.numpy() > 0
        for row in range(ids.shape[0]):
            picked = positions[row][live[row]]
            assert len(set(picked)) == len(picked)
            assert chosen[row, picked].all()
        np.testing.assert_array_equal(
            masked.target_ids.numpy(), np.take_along_axis(ids, positions, axis=1)
        )


def test_mask_token_split_is_85_15_and_no_random_tokens():
    batch, draws = _draws()
    ids = batch["token_ids"]
    to_mask, kept = 0, 0
    for masked in draws:
        out = masked.masked_ids.numpy()
        chosen = masked.chosen.numpy()
        # Unchosen positions are untouched; chosen ones are [MASK] or original.
        np.testing.assert_array_equal(out[~chosen], ids[~chosen])
        assert np.all((out[chosen] == MASK) | (out[chosen] == ids[chosen]))
        to_mask += int((out[chosen] == MASK).sum())
        kept += int((out[chosen] == ids[chosen]).sum())
    total = to_mask + kept
    fraction = to_mask / total
    # Binomial standard error at p=0.85 over `total` draws; 4 sigma.
    assert abs(fraction - 0.85) < 4 * np.sqrt(0.85 * 0.15 / total), fraction


def test_positions_uniform_over_candidates():
    batch = random_batch(batch_size=1, length=LENGTH, seed=3)
    batch = {k: np.repeat(v, 400, axis=0) for k, v in batch.items()}
    masked = _mask(batch, 7)
    counts = masked.chosen.numpy().sum(0)
    ids = batch["token_ids"][0]
    candidates = (batch["padding_mask"][0] == 1) & ~np.isin(ids, [CLS, SEP])
    observed = counts[candidates]
    from scipy.stats import chisquare

    assert chisquare(observed).pvalue > 1e-3
    assert counts[~candidates].sum() == 0


def test_too_few_candidates_leaves_slots_unused():
    # [CLS] x [SEP]: one candidate but N slots.
    ids = np.array([[CLS, 50, SEP] + [PAD] * (LENGTH - 3)], "int32")
    batch = {"token_ids": ids, "padding_mask": (ids != PAD).astype("int32")}
    masked = _mask(batch, 0)
    assert masked.weights.numpy().sum() == 1
    assert masked.chosen.numpy().sum() == 1 and masked.chosen.numpy()[0, 1]


def test_shapes_are_static_in_graph():
    spec = tf.TensorSpec([16, LENGTH], tf.int32)

    @tf.function(input_signature=[spec, spec])
    def fn(token_ids, padding_mask):
        masked = _mask({"token_ids": token_ids, "padding_mask": padding_mask}, 0)
        return masked

    concrete = fn.get_concrete_function()
    for output in tf.nest.flatten(concrete.structured_outputs):
        assert output.shape.is_fully_defined(), output


def test_max_predictions_per_seq_as_original():
    from electra_tf.config import PretrainingConfig

    assert PretrainingConfig(max_seq_length=128).max_predictions_per_seq == 19
    assert PretrainingConfig(max_seq_length=512).max_predictions_per_seq == 79
