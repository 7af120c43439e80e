"""The pre-training step against an independent ELECTRA, step for step.

The other side (`tests/step_reference.py`) is transformers' networks
(PyTorch) holding the same weights, with the original's losses, labels,
clipping, schedule and AdamWeightDecay written in torch from
google-research/electra's formulas. Both sides get the same batch (padding,
two segments) and the same draws (masked positions, which of them are
[MASK], the samples, a third of them equal to the original token), injected
into `ElectraPretrainer` as batch entries.

Tolerances, float32 on both sides: every gradient within `GRADIENT_RTOL` of
its tensor's largest entry (measured: at most 6e-6; the limit is float32
summation order in the two frameworks' matmuls and softmaxes); attention key
biases, whose exact gradient is 0 (softmax ignores a shift per query), are
compared absolutely (both below 1e-6 of the largest gradient). Losses and
logits within 1e-5 relative (measured ~5e-7). Over 20 Adam steps the two
sides drift apart as float32 differences compound: losses within 1e-4
relative (2.8e-5 measured at step 13) and weights within `WEIGHT_ATOL`
after every step.

Which objectives and sharings have a transformers counterpart: `electra`,
`electra_15`, `mlm`, `replace_mlm` (ElectraForPreTraining and
ElectraForMaskedLM) with `tied`, `none` and `gdes` embeddings (GDES through
`inputs_embeds`). `all_tokens_mlm` (the copy mechanism's head) and
`electric` (the two-tower cloze generator and the noise correction) have
none, so they are not here.
"""

import types

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import ModelConfig, OptimizerConfig, PretrainingConfig
from tests.helpers import (
    SPECIAL_TOKEN_IDS,
    make_pretrainer,
    random_batch,
    randomize_weights,
)

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from tests.step_reference import (  # noqa: E402
    AdamWeightDecay,
    TorchElectra,
    assert_close,
    assert_gradients_match,
    keras_layout,
    make_draws,
)

VOCABULARY = 200
LENGTH = 24
SLOTS = 5
GRADIENT_RTOL = 2e-5
LOSS_RTOL = 1e-5
# Twenty steps: float32 differences compound (a loss 2.8e-5 apart at step 13).
STEPS_LOSS_RTOL = 1e-4
WEIGHT_ATOL = 1e-4
MODEL = ModelConfig(
    vocabulary_size=VOCABULARY,
    num_layers=2,
    hidden_dim=32,
    embedding_dim=16,
    num_heads=2,
    dropout=0.0,
    max_sequence_length=LENGTH,
    generator_hidden_size=0.5,
)
CASES = [
    ("electra", "tied"),
    ("electra", "none"),
    ("electra", "gdes"),
    ("electra_15", "tied"),
    ("mlm", "tied"),
    ("replace_mlm", "tied"),
]


def _batch(seed):
    batch = random_batch(batch_size=4, length=LENGTH, seed=seed)
    return batch, make_draws(batch, SLOTS, VOCABULARY, SPECIAL_TOKEN_IDS, seed=seed)


def _pair(objective, sharing, build=make_pretrainer, **build_args):
    model = MODEL.override(embedding_sharing=sharing)
    pretraining = PretrainingConfig(max_seq_length=LENGTH, objective=objective)
    pretrainer = build(model, pretraining, **build_args)
    batch, draws = _batch(0)
    pretrainer({**batch, **draws})
    randomize_weights(pretrainer, seed=2)
    return pretrainer, TorchElectra(pretrainer)


def _close(ours, theirs, what, rtol=LOSS_RTOL):
    assert_close(ours, theirs, what, rtol)


@pytest.mark.parametrize("objective,sharing", CASES)
def test_step_matches_transformers(objective, sharing):
    pretrainer, reference = _pair(objective, sharing)
    batch, draws = _batch(1)
    variables = reference.variables()
    # Every weight the step trains has a counterpart.
    assert {id(v) for v in variables.values()} == {
        id(v) for v in pretrainer.trainable_variables
    }
    names = list(variables)
    with tf.GradientTape() as tape:
        ours = pretrainer({**batch, **draws}, training=True)
    gradients = tape.gradient(ours["loss"], [variables[n] for n in names])
    theirs = reference.step(batch, draws)
    theirs["loss"].backward()

    _close(ours["mlm_logits"], theirs["mlm_logits"].detach(), "generator logits")
    _close(ours["mlm_loss"], theirs["mlm_loss"].detach(), "generator loss")
    if objective != "mlm":
        real = batch["padding_mask"].astype(bool)
        np.testing.assert_array_equal(ours["corrupted_ids"], theirs["corrupted_ids"])
        # Replaced = sampled and different from the original; the draws
        # include samples equal to the original, labelled original.
        labels = np.asarray(ours["is_replaced"], "float32")
        np.testing.assert_array_equal(labels[real], theirs["is_replaced"][real])
        assert labels.sum() < draws["mask_weights"].sum()
        disc_loss = "replace_mlm_loss" if objective == "replace_mlm" else "rtd_loss"
        logits = "replace_mlm_logits" if objective == "replace_mlm" else "rtd_logits"
        compared = np.asarray(ours[logits])
        expected = theirs[logits].detach().numpy()
        if logits == "rtd_logits":
            compared, expected = compared[real], expected[real]
        _close(compared, expected, "discriminator logits")
        _close(ours[disc_loss], theirs["disc_loss"].detach(), "discriminator loss")
    _close(ours["loss"], theirs["loss"].detach(), "combined loss")

    # Every gradient, through the name map. The sample enters the
    # discriminator as integer ids built under torch.no_grad (and GDES's
    # base table through .detach()), so a gradient leaking through either
    # shows here as a generator gradient torch does not have.
    assert_gradients_match(
        {
            name: tf.convert_to_tensor(gradient)
            for name, gradient in zip(names, gradients)
        },
        variables,
        reference.parameters(),
        GRADIENT_RTOL,
    )


def _vocabulary():
    return types.SimpleNamespace(
        size=VOCABULARY, path="test", special_token_ids=lambda: SPECIAL_TOKEN_IDS
    )


OPTIMIZER = OptimizerConfig(
    learning_rate=2e-3, warmup_steps=4, total_steps=20, weight_decay=0.5
)


def side_by_side_steps():
    """Twenty steps of ours and of the reference, from the same weights on the
    same batches and draws (`bench/suite/step_parity.py` records them too).

    Ours is `train_on_batch` with the optimizer `pretrain/run.py` builds; the
    reference, `AdamWeightDecay` after torch's backward pass. Yields, after
    each step: `step` (1-based), `loss_ours`, `loss_reference`,
    `reference_global_norm` (before clipping), `weight_errors` ({original
    name: largest |ours - reference|}) and `moved` (the largest change of
    any weight since the start).
    """
    from electra_tf.pretraining.run import build_pretrainer

    def build(model, pretraining):
        return build_pretrainer(
            model, pretraining, OPTIMIZER, _vocabulary(), jit_compile=False
        )

    pretrainer, reference = _pair("electra", "tied", build=build)
    variables = reference.variables()
    parameters = reference.parameters()
    adam = AdamWeightDecay(
        {n: p for n, (p, _) in parameters.items()},
        peak=OPTIMIZER.learning_rate,
        warmup_steps=OPTIMIZER.warmup_steps,
        total_steps=OPTIMIZER.total_steps,
        weight_decay=OPTIMIZER.weight_decay,
        clip_norm=OPTIMIZER.clip_norm,
    )
    initial = {name: variable.numpy().copy() for name, variable in variables.items()}
    for step in range(OPTIMIZER.total_steps):
        batch, draws = _batch(10 + step)
        pretrainer.reset_metrics()
        ours = pretrainer.train_on_batch({**batch, **draws}, return_dict=True)
        for parameter, _ in parameters.values():
            parameter.grad = None
        theirs = reference.step(batch, draws)
        theirs["loss"].backward()
        adam.step()
        errors = {}
        for name, variable in variables.items():
            parameter, transposed = parameters[name]
            expected = keras_layout(parameter, transposed, variable)
            errors[name] = float(np.abs(variable.numpy() - expected).max())
        yield {
            "step": step + 1,
            "loss_ours": float(ours["loss"]),
            "loss_reference": theirs["loss"].item(),
            "reference_global_norm": adam.last_global_norm,
            "weight_errors": errors,
            "moved": max(
                float(np.abs(variable.numpy() - initial[name]).max())
                for name, variable in variables.items()
            ),
        }


def test_twenty_adam_steps_match_the_original_formulas():
    for record in side_by_side_steps():
        step = record["step"]
        # Clipping acts at every step (the norm is far above 1).
        assert record["reference_global_norm"] > 2 * OPTIMIZER.clip_norm
        _close(
            record["loss_ours"],
            record["loss_reference"],
            f"loss at step {step}",
            rtol=STEPS_LOSS_RTOL,
        )
        for name, error in record["weight_errors"].items():
            assert error <= WEIGHT_ATOL, f"{name} after step {step}: {error:.3g}"
    # The weights moved by far more than the tolerance.
    assert record["moved"] > 100 * WEIGHT_ATOL, record["moved"]
