"""The fine-tuning heads against transformers, and a fine-tuning step against the
original's formulas.

Our `ElectraTextClassifier` and `ElectraTokenClassifier` with the weights of
transformers' `ElectraForSequenceClassification` and
`ElectraForTokenClassification` (the encoder written by our converter, the
head copied), on one batch with padding and two segments, dropout off: the
logits, the loss each side computes itself (ours: the loss `compile` gives
by default, as fine-tuning uses it) and the gradient of that loss for every
weight through the name map.

What differs, and how it is compared:
- transformers' sequence head is dense -> GELU -> dropout -> out_proj on
  `[CLS]`; ours is the original's, `[CLS]` -> dropout -> dense (no hidden
  layer; `pooling="cls"`, the default). The comparison replaces transformers'
  `dense` and GELU with identities, so its `out_proj` is our `output_dense`.
- Losses: both sides average (cross-entropy over the batch; squared error for
  regression, `num_classes=1`; the tagger's over labelled tokens, ours with
  `sample_weight` 0 and transformers' with label -100 elsewhere). The
  original sums over the batch (its `FinetuningModel.loss` is a
  `reduce_sum`, and tagging's per-example loss a sum over labelled tokens):
  after its global-norm clipping the two agree whenever our averaged
  gradient's norm is above the clip norm (`test_finetuning_step_...`
  checks it); with `loss_reduction="sum"` ours is the original's below it
  too (`test_a_summed_finetuning_step_...`), see docs/faithfulness.md.

Tolerances, float32 on both sides: logits and losses within 1e-5 of the
largest magnitude, gradients within 2e-5 of each tensor's largest entry
(`tests/step_reference.py`'s `assert_gradients_match`; the limit is float32
summation order in the two frameworks' matmuls and softmaxes), weights after
each optimizer step within 1e-5 absolute (measured 1.1e-6 after the third).
"""

import tempfile

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import FinetuningConfig, ModelConfig
from electra_tf.conversion.hf import hf_name, save_hf_encoder
from electra_tf.conversion.original_layout import (
    DISCRIMINATOR_SCOPE,
    tower_variables,
)
from electra_tf.finetuning.trainer import make_optimizer
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.token_classifier import ElectraTokenClassifier
from tests.helpers import labelled_tokens, random_batch, randomize_weights

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from tests.step_reference import (  # noqa: E402
    AdamWeightDecay,
    assert_close,
    assert_gradients_match,
    keras_layout,
    layer_learning_rates,
)

LENGTH = 16
BATCH = 4
LOSS_RTOL = 1e-5
GRADIENT_RTOL = 2e-5
# Three Adam steps: gradients a few 1e-6 apart, divided by sqrt(v) (measured:
# 1.1e-6 after step 3, weights of magnitude ~1).
WEIGHT_ATOL = 1e-5
# Embeddings narrower than the hidden size: `embeddings_project` is there
# too (depth 0 in layer-wise decay).
MODEL = ModelConfig(
    vocabulary_size=200,
    num_layers=2,
    hidden_dim=32,
    embedding_dim=16,
    num_heads=2,
    dropout=0.0,
    max_sequence_length=LENGTH,
)
# The original's name of the head (`task_specific/<task>/dense`), where its
# layer-wise decay looks for the head.
HEAD = "task_specific/task/dense"


def _pair(kind, num_classes, seed=0):
    """Ours (random weights of a visible scale) and transformers' copy."""
    encoder = ElectraEncoder.discriminator_from_config(MODEL)
    if kind == "token":
        ours = ElectraTokenClassifier(encoder, num_classes=num_classes, dropout=0.0)
        architecture = "ElectraForTokenClassification"
    else:
        ours = ElectraTextClassifier(encoder, num_classes=num_classes, dropout=0.0)
        architecture = "ElectraForSequenceClassification"
    randomize_weights(ours, seed=seed)
    directory = save_hf_encoder(encoder, tempfile.mkdtemp(prefix="head_parity_"))
    theirs = getattr(transformers, architecture).from_pretrained(
        directory, num_labels=num_classes, attn_implementation="eager"
    )
    theirs = theirs.float().eval()
    if kind == "token":
        head = theirs.classifier
    else:
        # Our head is the original's: no hidden layer before the output.
        theirs.classifier.dense = torch.nn.Identity()
        theirs.classifier.activation = torch.nn.Identity()
        head = theirs.classifier.out_proj
    with torch.no_grad():
        head.weight.copy_(torch.tensor(ours.output_dense.kernel.numpy().T))
        head.bias.copy_(torch.tensor(ours.output_dense.bias.numpy()))

    variables = tower_variables(encoder, DISCRIMINATOR_SCOPE, "electra/embeddings")
    by_name = dict(theirs.named_parameters())
    parameters = {}
    for original in variables:
        name, transposed = hf_name(original, DISCRIMINATOR_SCOPE)
        parameters[original] = (by_name["electra." + name], transposed)
    variables[f"{HEAD}/kernel"] = ours.output_dense.kernel
    variables[f"{HEAD}/bias"] = ours.output_dense.bias
    parameters[f"{HEAD}/kernel"] = (head.weight, True)
    parameters[f"{HEAD}/bias"] = (head.bias, False)
    # Every weight we train has its counterpart.
    assert {id(v) for v in variables.values()} == {
        id(v) for v in ours.trainable_variables
    }
    return ours, theirs, variables, parameters


def _inputs(seed):
    batch = random_batch(batch_size=BATCH, length=LENGTH, seed=seed)
    rng = np.random.default_rng(seed)
    return batch, labelled_tokens(batch, rng), rng


def _torch_inputs(batch):
    return {
        "input_ids": torch.tensor(batch["token_ids"], dtype=torch.long),
        "token_type_ids": torch.tensor(batch["segment_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(batch["padding_mask"], dtype=torch.long),
    }


CASES = [
    ("sequence", 3),  # cross-entropy
    ("sequence", 1),  # regression: squared error
    ("token", 5),  # cross-entropy over labelled tokens
]


@pytest.mark.parametrize("kind,num_classes", CASES)
def test_head_matches_transformers(kind, num_classes):
    ours, theirs, variables, parameters = _pair(kind, num_classes)
    batch, weights, rng = _inputs(seed=1)
    sample_weight = None
    if kind == "token":
        labels = rng.integers(0, num_classes, (BATCH, LENGTH))
        torch_labels = torch.tensor(np.where(weights > 0, labels, -100))
        sample_weight = weights
    elif num_classes == 1:
        labels = rng.random(BATCH).astype("float32")
        torch_labels = torch.tensor(labels)
    else:
        labels = rng.integers(0, num_classes, BATCH)
        torch_labels = torch.tensor(labels)

    names = list(variables)
    with tf.GradientTape() as tape:
        logits = ours(batch, training=True)
        loss = ours.compute_loss(
            x=batch, y=labels, y_pred=logits, sample_weight=sample_weight
        )
    gradients = tape.gradient(loss, [variables[n] for n in names])
    output = theirs(**_torch_inputs(batch), labels=torch_labels)
    output.loss.backward()

    expected = output.logits.detach().numpy()
    logits = np.asarray(logits)
    if kind == "token":
        # Padding's logits are read by no loss and no prediction.
        real = batch["padding_mask"].astype(bool)
        logits, expected = logits[real], expected[real]
    assert_close(logits, expected, "logits", LOSS_RTOL)
    assert_close(loss, output.loss.item(), "loss", LOSS_RTOL)
    assert_gradients_match(
        {n: tf.convert_to_tensor(g) for n, g in zip(names, gradients)},
        variables,
        parameters,
        GRADIENT_RTOL,
    )


# Layer-wise decay 0.5, so that each depth's rate differs visibly; warm-up
# over the first 2 of 6 steps (the first step's rate is 0, the second's
# half the peak times the decay).
FINETUNING = FinetuningConfig(
    learning_rate=1e-3, layerwise_decay=0.5, warmup_fraction=1 / 3, weight_decay=0.5
)
TOTAL_STEPS = 6
STEPS = 3


def _steps_against_the_original(config, loss_reduction, seed=3):
    """Our fine-tuning optimizer (`make_optimizer`, as `finetune_seed` builds
    it) and the original's `create_optimizer` with layer-wise decay
    (`_get_layer_lrs`: rate x decay^(L + 2 - depth), matched on the
    original's variable names), `STEPS` classifier steps each on the same
    batches, the original's loss summed over the batch, ours compiled with
    `loss_reduction`. Returns each step's largest weight difference, the
    original's gradient norm (of the sum) before clipping, and how far every
    weight moved."""
    ours, theirs, variables, parameters = _pair("sequence", 3, seed=seed)
    ours.compile(
        optimizer=make_optimizer(config, MODEL.num_layers, TOTAL_STEPS),
        loss_reduction=loss_reduction,
        # Keras' train step as fit() runs it, without tracing it.
        run_eagerly=True,
    )
    adam = AdamWeightDecay(
        {name: parameter for name, (parameter, _) in parameters.items()},
        peak=config.learning_rate,
        warmup_steps=config.warmup_fraction * TOTAL_STEPS,
        total_steps=TOTAL_STEPS,
        weight_decay=config.weight_decay,
        clip_norm=config.clip_norm,
        rate_of=lambda name, rate: layer_learning_rates(
            name, rate, config.layerwise_decay, MODEL.num_layers
        ),
    )
    initial = {name: variable.numpy().copy() for name, variable in variables.items()}
    errors, norms = [], []
    for step in range(STEPS):
        batch, _, rng = _inputs(seed=10 + step)
        labels = rng.integers(0, 3, BATCH)
        ours.train_on_batch(batch, labels)
        for parameter, _ in parameters.values():
            parameter.grad = None
        logits = theirs(**_torch_inputs(batch)).logits
        # The original's classification loss, summed over the batch.
        torch.nn.functional.cross_entropy(
            logits, torch.tensor(labels), reduction="sum"
        ).backward()
        adam.step()
        norms.append(adam.last_global_norm)
        errors.append(
            {
                name: float(
                    np.abs(
                        variable.numpy() - keras_layout(*parameters[name], variable)
                    ).max()
                )
                for name, variable in variables.items()
            }
        )
    moved = {
        name: float(np.abs(variable.numpy() - initial[name]).max())
        for name, variable in variables.items()
    }
    return errors, norms, moved


def _assert_every_step_matches(errors, moved):
    for step, step_errors in enumerate(errors):
        for name, error in step_errors.items():
            assert error <= WEIGHT_ATOL, f"{name} after step {step + 1}: {error:.3g}"
    # Every weight moved by far more than the tolerance (but the attention
    # key biases, whose gradient is 0).
    for name, distance in moved.items():
        if not name.endswith("/key/bias"):
            assert distance > 10 * WEIGHT_ATOL, f"{name} moved {distance:.3g}"


def test_finetuning_step_matches_the_original_formulas():
    """Ours with the default mean loss against the original's sum, both
    clipping: the clipped gradients are the same."""
    errors, norms, moved = _steps_against_the_original(FINETUNING, "mean")
    # Our mean's norm (the sum's / BATCH) is above the clip norm too.
    assert min(norms) / BATCH > 2 * FINETUNING.clip_norm
    _assert_every_step_matches(errors, moved)


# Between the mean's gradient norm and the sum's on every step (asserted), so
# the original clips and a mean does not.
BETWEEN_NORMS = FINETUNING.override(clip_norm=25.0)


def test_a_summed_finetuning_step_matches_the_original_below_the_clip_norm():
    """`loss_reduction="sum"` is the original's loss: its steps are the
    original's where our mean's norm is below the clip norm, and the mean's
    steps there are not (docs/faithfulness.md)."""
    errors, norms, moved = _steps_against_the_original(BETWEEN_NORMS, "sum")
    assert max(norms) / BATCH < BETWEEN_NORMS.clip_norm < min(norms), norms
    _assert_every_step_matches(errors, moved)
    mean_errors, _, _ = _steps_against_the_original(BETWEEN_NORMS, "mean")
    largest = max(max(step.values()) for step in mean_errors)
    assert largest > 10 * WEIGHT_ATOL, largest
