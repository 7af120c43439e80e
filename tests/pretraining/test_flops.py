"""FLOPs accounting against the totals of the paper's own script."""

import pytest

from electra_tf.presets import get_preset
from electra_tf.pretraining.flops import executed_pretraining_flops, pretraining_flops

# Totals printed by google-research/electra `flops_computation.py` (its
# MODEL_FLOPS entries), whose default output fraction is 20/128 = 0.15625 of
# positions. Our fraction is max_predictions_per_seq / length, which a
# mask_prob of 0.152 makes 20/128 at length 128 and 80/512 at length 512.
PAPER_SCRIPT_TOTALS = {
    # get_electra_train_flops(256, 12, 64, 12, 128, 1e6, True, s=128, e=128)
    ("small", "electra", 128, 1e6): 1.293743798272e18,
    # get_electra_train_flops(768, 12, 256, 12, 256, 766000, True)
    ("base", "electra", 256, 766_000): 6.424541834277683e19,
    # bert_small: TransformerHparams(256, 12, e=128, s=128).get_train_flops(128, 1.45e6)
    ("small", "mlm", 128, 1.45e6): 1.4187399146496e18,
}


@pytest.mark.parametrize("key", list(PAPER_SCRIPT_TOTALS))
def test_totals_match_the_papers_script(key):
    name, objective, batch_size, steps = key
    preset = get_preset(name)
    pretraining = preset.pretraining.override(objective=objective, mask_prob=0.152)
    total = pretraining_flops(preset.model, pretraining) * batch_size * steps
    assert total == pytest.approx(PAPER_SCRIPT_TOTALS[key], rel=1e-9)


def test_executed_count_drops_dense_lookups_and_counts_backward_twice():
    preset = get_preset("small")
    model, pretraining = preset.model, preset.pretraining
    dense_lookups = 2 * 2 * model.embedding_dim * model.vocabulary_size * 128
    # Both towers look up the shared embedding table once per token.
    expected = 1.5 * (pretraining_flops(model, pretraining) - 2 * dense_lookups)
    assert executed_pretraining_flops(model, pretraining) == pytest.approx(expected)


def _small(**changes):
    preset = get_preset("small")
    return preset.model, preset.pretraining.override(**changes)


# Per-token forward FLOPs of the small discriminator's heads, written out from
# the paper's accounting (H=256, E=128, V=30,522; GELU 8, LayerNorm 5,
# softmax 5 per element). Length 128 and 19 masked slots per sequence.
_H, _E, _V, _L, _N = 256, 128, 30522, 128, 19
_MLM_HEAD = 2 * _E * _V + 2 * _H * _E + _E + (8 + 5) * _E + 5 * _V + 2 * _V
_RTD_HEAD = 2 * _H * _H + _H + 8 * _H + 2 * _H
_COPY_HEAD = 2 * _H + 4


def test_electra_15_costs_what_electra_costs():
    model, electra = _small(objective="electra")
    _, electra_15 = _small(objective="electra_15")
    assert pretraining_flops(model, electra_15) == pretraining_flops(model, electra)


def test_replace_mlm_swaps_the_rtd_head_for_an_mlm_head_at_masked_positions():
    model, electra = _small(objective="electra")
    _, replace_mlm = _small(objective="replace_mlm")
    difference = pretraining_flops(model, replace_mlm) - pretraining_flops(
        model, electra
    )
    # Training = 2 x forward; the MLM head runs at N of L positions.
    assert difference == pytest.approx(2 * (_N * _MLM_HEAD - _L * _RTD_HEAD))


def test_all_tokens_mlm_pays_the_vocabulary_softmax_at_every_position():
    model, replace_mlm = _small(objective="replace_mlm")
    _, all_tokens = _small(objective="all_tokens_mlm")
    difference = pretraining_flops(model, all_tokens) - pretraining_flops(
        model, replace_mlm
    )
    assert difference == pytest.approx(2 * ((_L - _N) * _MLM_HEAD + _L * _COPY_HEAD))


@pytest.mark.parametrize("objective", ["electra", "replace_mlm", "all_tokens_mlm"])
def test_a_uniform_generator_costs_nothing(objective):
    model, pretraining = _small(objective=objective)
    uniform = pretraining.override(uniform_generator=True)
    # The generator (1/4 width: H=64, one head) costs what the MLM baseline
    # of that width costs: an encoder and an MLM head at the masked positions.
    generator_as_mlm = model.override(hidden_dim=64, num_heads=0)
    generator = pretraining_flops(
        generator_as_mlm, pretraining.override(objective="mlm")
    )
    assert pretraining_flops(model, pretraining) - pretraining_flops(
        model, uniform
    ) == pytest.approx(generator)
