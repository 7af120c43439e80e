"""ELECTRA's training step written apart from ours: transformers' networks, the
original's losses and optimizer in torch.

What `tests/pretraining/test_step_parity.py` and `bench/suite/step_parity.py`
compare `ElectraPretrainer`'s step with. The networks are transformers'
(PyTorch) `ElectraForPreTraining` and `ElectraForMaskedLM`, holding an
`ElectraPretrainer`'s weights (written by our converter, read by
transformers) and sharing them in torch as the original shares them.
Everything after the networks is written here from google-research/electra's
formulas (`run_pretraining.py`, `pretrain/pretrain_helpers.py`,
`model/optimization.py`), not from our code: the masked-LM and
discriminator losses, the corruption and its labels, the gradient clipping,
the learning-rate schedule and `AdamWeightDecayOptimizer`, with the
original's weight-decay exclusions and layer-wise rates matched against the
original's variable names.

The random draws (masked positions, which become [MASK], the samples) are
given to both sides (`draws`): what is compared is the step, not the
random number generators.
"""

from __future__ import annotations

import dataclasses
import re
import tempfile

import numpy as np
import torch
import transformers

from electra_tf.conversion.hf import (
    DISCRIMINATOR,
    GENERATOR,
    _prefixed,
    hf_name,
    save_hf_discriminator,
    save_hf_generator,
)
from electra_tf.conversion.original_layout import (
    DISCRIMINATOR_SCOPE,
    GENERATOR_SCOPE,
    tower_variables,
)

# The loss weights, taken from the original (configure_pretraining.py:
# gen_weight 1.0, disc_weight 50.0), not from our config. replace_mlm, the
# paper's ablation, sums two MLM losses of one kind: weight 1.
GEN_WEIGHT = 1.0
DISC_WEIGHTS = {"electra": 50.0, "electra_15": 50.0, "replace_mlm": 1.0}

# The original's `exclude_from_weight_decay` (model/optimization.py): names
# containing any of these get no weight decay.
EXCLUDED_FROM_DECAY = ("LayerNorm", "layer_norm", "bias")


def make_draws(batch, num_slots, vocabulary_size, special_ids, seed=0):
    """Masking and samples as the original draws them, from numpy.

    Per row: `max(1, round(real * 0.15))` distinct candidate positions (at
    most `num_slots`; unused slots have position 0 and weight 0), 85% of them
    [MASK]ed, and a sample per slot, a third of them equal to the original
    token (the label must then say "original").
    """
    rng = np.random.default_rng(seed)
    token_ids = batch["token_ids"]
    real = batch["padding_mask"].astype(bool)
    mask_id = special_ids["mask_token_id"]
    specials = list(special_ids.values())
    batch_size = token_ids.shape[0]
    positions = np.zeros((batch_size, num_slots), "int32")
    weights = np.zeros((batch_size, num_slots), "float32")
    sampled = rng.integers(5, vocabulary_size, (batch_size, num_slots)).astype("int32")
    masked_ids = token_ids.copy()
    for row in range(batch_size):
        candidates = np.flatnonzero(real[row] & ~np.isin(token_ids[row], specials))
        count = min(num_slots, max(1, round(real[row].sum() * 0.15)), len(candidates))
        chosen = rng.choice(candidates, count, replace=False)
        positions[row, :count] = chosen
        weights[row, :count] = 1.0
        for slot, position in enumerate(chosen):
            if rng.random() < 0.85:
                masked_ids[row, position] = mask_id
            if rng.random() < 1 / 3:
                sampled[row, slot] = token_ids[row, position]
    return {
        "masked_ids": masked_ids,
        "mask_positions": positions,
        "mask_weights": weights,
        "sampled_ids": sampled,
    }


@dataclasses.dataclass
class Tower:
    """One network on both sides: our Keras model and transformers' copy."""

    keras_model: object
    torch_model: torch.nn.Module
    scope: str
    embeddings_scope: str
    architecture: str

    # Put before the head's names: replace_mlm's second MLM head has the
    # generator's head's names.
    head_prefix: str = ""

    def _key(self, original):
        if original.startswith("generator_predictions/"):
            return self.head_prefix + original
        return original

    def variables(self) -> dict:
        """`{original name: Keras variable}`."""
        return {
            self._key(name): variable
            for name, variable in tower_variables(
                self.keras_model, self.scope, self.embeddings_scope
            ).items()
        }

    def parameters(self) -> dict:
        """`{original name: (torch parameter, stored transposed)}`."""
        by_name = dict(self.torch_model.named_parameters())
        found = {}
        for original in tower_variables(
            self.keras_model, self.scope, self.embeddings_scope
        ):
            name, transpose = hf_name(original, self.scope)
            found[self._key(original)] = (
                by_name[_prefixed(name, self.architecture)],
                transpose,
            )
        return found


def _load(keras_model, save, architecture, directory):
    path = save(keras_model, directory)
    cls = getattr(transformers, architecture)
    model = cls.from_pretrained(path, attn_implementation="eager")
    return model.float().eval()


class TorchElectra:
    """transformers' towers of an `ElectraPretrainer`, sharing as ours do.

    Objectives: "electra", "electra_15", "mlm", "replace_mlm"; embedding
    sharing "tied" (one embedding module in torch), "none" (each its own)
    and "gdes" (the discriminator reads `generator table.detach() + delta`
    through `inputs_embeds`).
    """

    def __init__(self, pretrainer):
        self.pretrainer = pretrainer
        self.objective = pretrainer.pretraining_config.objective
        self.sharing = pretrainer.model_config.embedding_sharing
        directory = tempfile.mkdtemp(prefix="step_reference_")
        generator_scope = (
            DISCRIMINATOR_SCOPE if self.objective == "mlm" else GENERATOR_SCOPE
        )
        own = generator_scope == GENERATOR_SCOPE and self.sharing != "tied"
        self.generator = Tower(
            pretrainer.generator,
            _load(pretrainer.generator, save_hf_generator, GENERATOR, f"{directory}/g"),
            generator_scope,
            "generator/embeddings" if own else "electra/embeddings",
            GENERATOR,
        )
        if self.objective == "mlm":
            self.discriminator = None
        elif self.objective == "replace_mlm":
            self.discriminator = Tower(
                pretrainer.discriminator_mlm,
                _load(
                    pretrainer.discriminator_mlm,
                    save_hf_generator,
                    GENERATOR,
                    f"{directory}/d",
                ),
                DISCRIMINATOR_SCOPE,
                "electra/embeddings",
                GENERATOR,
                head_prefix="discriminator_mlm/",
            )
        else:
            self.discriminator = Tower(
                pretrainer.discriminator,
                _load(
                    pretrainer.discriminator,
                    save_hf_discriminator,
                    DISCRIMINATOR,
                    f"{directory}/d",
                ),
                DISCRIMINATOR_SCOPE,
                "electra/embeddings",
                DISCRIMINATOR,
            )
        self.delta = None
        if self.discriminator is not None and self.sharing == "tied":
            # One embedding block, as the original's `electra/embeddings`.
            shared = self.discriminator.torch_model.electra.embeddings
            self.generator.torch_model.electra.embeddings = shared
            self.generator.torch_model.generator_lm_head.weight = (
                shared.word_embeddings.weight
            )
        elif self.sharing == "gdes":
            residual = pretrainer.discriminator_encoder.token_embedding.residual
            self.delta = torch.nn.Parameter(torch.tensor(np.asarray(residual)))

    def parameters(self) -> dict:
        """`{original name: (torch parameter, transposed)}` of both towers;
        under GDES the discriminator's word embeddings are the residual."""
        found = self.generator.parameters()
        if self.discriminator is not None:
            found.update(self.discriminator.parameters())
        if self.delta is not None:
            found["electra/embeddings/word_embeddings"] = (self.delta, False)
        return found

    def variables(self) -> dict:
        """`{original name: Keras variable}`, the same names as `parameters`."""
        found = self.generator.variables()
        if self.discriminator is not None:
            found.update(self.discriminator.variables())
        return found

    def _discriminator_outputs(self, corrupted, segment_ids, padding_mask):
        model = self.discriminator.torch_model
        kwargs = {"attention_mask": padding_mask, "token_type_ids": segment_ids}
        if self.delta is not None:
            table = self.generator.torch_model.electra.embeddings.word_embeddings.weight
            # GDES: the discriminator's table, gradient stopped at the base.
            embedded = torch.nn.functional.embedding(
                corrupted, table.detach() + self.delta
            )
            return model(inputs_embeds=embedded, **kwargs).logits
        return model(input_ids=corrupted, **kwargs).logits

    def step(self, batch, draws) -> dict:
        """The original's forward step and losses; call `.backward()` on
        `["loss"]`. Returns torch tensors (float32)."""
        token_ids = torch.tensor(batch["token_ids"], dtype=torch.long)
        segment_ids = torch.tensor(batch["segment_ids"], dtype=torch.long)
        padding_mask = torch.tensor(batch["padding_mask"], dtype=torch.long)
        masked_ids = torch.tensor(draws["masked_ids"], dtype=torch.long)
        positions = torch.tensor(draws["mask_positions"], dtype=torch.long)
        weights = torch.tensor(draws["mask_weights"])
        targets = torch.gather(token_ids, 1, positions)

        all_logits = self.generator.torch_model(
            input_ids=masked_ids,
            attention_mask=padding_mask,
            token_type_ids=segment_ids,
        ).logits
        mlm_logits = _gather(all_logits, positions)
        out = {
            "mlm_logits": mlm_logits,
            "mlm_loss": _softmax_loss(mlm_logits, targets, weights),
        }
        if self.objective == "mlm":
            out["loss"] = out["mlm_loss"]
            return out
        with torch.no_grad():
            # The original's `scatter_update`: the samples written at the
            # live slots; labels: masked and different from the original.
            sampled = torch.tensor(draws["sampled_ids"], dtype=torch.long)
            corrupted = token_ids.clone()
            rows, slots = torch.nonzero(weights > 0, as_tuple=True)
            corrupted[rows, positions[rows, slots]] = sampled[rows, slots]
            is_replaced = (corrupted != token_ids).float()
            chosen = torch.zeros_like(token_ids, dtype=torch.float32)
            chosen[rows, positions[rows, slots]] = 1.0
        out.update(corrupted_ids=corrupted, is_replaced=is_replaced)
        if self.objective == "replace_mlm":
            logits = _gather(
                self._discriminator_outputs(corrupted, segment_ids, padding_mask),
                positions,
            )
            disc_loss = _softmax_loss(logits, targets, weights)
            out["replace_mlm_logits"] = logits
        else:
            logits = self._discriminator_outputs(corrupted, segment_ids, padding_mask)
            # electra_15: only the positions masking chose.
            loss_weights = (
                chosen if self.objective == "electra_15" else padding_mask.float()
            )
            per_token = torch.nn.functional.binary_cross_entropy_with_logits(
                logits, is_replaced, reduction="none"
            )
            disc_loss = (per_token * loss_weights).sum() / (1e-6 + loss_weights.sum())
            out["rtd_logits"] = logits
        out["disc_loss"] = disc_loss
        out["loss"] = GEN_WEIGHT * out["mlm_loss"] + (
            DISC_WEIGHTS[self.objective] * disc_loss
        )
        return out


def _gather(logits, positions):
    """[B, L, ...] at positions [B, N] -> [B, N, ...]."""
    index = positions.reshape(*positions.shape, *([1] * (logits.dim() - 2)))
    return torch.gather(logits, 1, index.expand(-1, -1, *logits.shape[2:]))


def _softmax_loss(logits, targets, weights):
    """The original's `get_softmax_output` loss: weighted mean cross-entropy."""
    log_probs = torch.log_softmax(logits, dim=-1)
    label_log_probs = -torch.gather(log_probs, -1, targets[..., None])[..., 0]
    return (weights * label_log_probs).sum() / (weights.sum() + 1e-6)


def learning_rate(step, peak, warmup_steps, total_steps, power=1.0):
    """The original's `create_optimizer` schedule at `global_step` = `step`:
    polynomial decay to 0, multiplied by the warm-up fraction."""
    rate = peak * (1.0 - min(step, total_steps) / total_steps) ** power
    if warmup_steps:
        rate *= min(1.0, step / warmup_steps)
    return rate


def layer_learning_rates(name, rate, decay, num_layers):
    """The original's `_get_layer_lrs`: the rate of variable `name`.

    Keys are matched as substrings of the name, as the original does; a
    name no key matches is an error there too.
    """
    depths = {
        "/embeddings/": 0,
        "/embeddings_project/": 0,
        "task_specific/": num_layers + 2,
    }
    for layer in range(num_layers):
        depths[f"encoder/layer_{layer}/"] = layer + 1
    for key, depth in depths.items():
        if key in name:
            return rate * decay ** (num_layers + 2 - depth)
    raise ValueError(f"No learning rate specified for variable {name}")


class AdamWeightDecay:
    """The original's `AdamWeightDecayOptimizer` after `clip_by_global_norm`.

    `parameters`: `{original name: torch parameter}`, each distinct parameter
    once. The step uses `global_step` = number of steps applied before it.
    `rate_of(name, rate)` gives a variable's rate (layer-wise decay).
    """

    def __init__(
        self,
        parameters,
        peak,
        warmup_steps,
        total_steps,
        weight_decay=0.01,
        clip_norm=1.0,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        power=1.0,
        rate_of=None,
    ):
        self.parameters = parameters
        self.peak, self.warmup_steps, self.total_steps = peak, warmup_steps, total_steps
        self.weight_decay, self.clip_norm = weight_decay, clip_norm
        self.beta_1, self.beta_2, self.epsilon, self.power = (
            beta_1,
            beta_2,
            epsilon,
            power,
        )
        self.rate_of = rate_of or (lambda name, rate: rate)
        self.m = {n: torch.zeros_like(p) for n, p in parameters.items()}
        self.v = {n: torch.zeros_like(p) for n, p in parameters.items()}
        self.step_count = 0
        self.last_global_norm = None

    def decays(self, name):
        return not any(re.search(e, name) for e in EXCLUDED_FROM_DECAY)

    @torch.no_grad()
    def step(self):
        grads = {
            n: (p.grad if p.grad is not None else torch.zeros_like(p))
            for n, p in self.parameters.items()
        }
        # tf.clip_by_global_norm: t * clip_norm / max(global_norm, clip_norm).
        global_norm = torch.sqrt(sum((g * g).sum() for g in grads.values()))
        self.last_global_norm = float(global_norm)
        if self.clip_norm:
            scale = self.clip_norm / torch.maximum(
                global_norm, torch.tensor(self.clip_norm)
            )
            grads = {n: g * scale for n, g in grads.items()}
        rate = learning_rate(
            self.step_count, self.peak, self.warmup_steps, self.total_steps, self.power
        )
        for name, param in self.parameters.items():
            g = grads[name]
            self.m[name] = self.beta_1 * self.m[name] + (1.0 - self.beta_1) * g
            self.v[name] = self.beta_2 * self.v[name] + (1.0 - self.beta_2) * g * g
            update = self.m[name] / (torch.sqrt(self.v[name]) + self.epsilon)
            if self.weight_decay and self.decays(name):
                update = update + self.weight_decay * param
            param -= self.rate_of(name, rate) * update
        self.step_count += 1


def keras_layout(value, transposed, variable):
    """A torch tensor (gradient or weight) in `variable`'s Keras shape."""
    array = value.detach().numpy()
    if transposed:
        array = array.T
    return np.reshape(array, tuple(variable.shape))


def assert_close(ours, theirs, what, rtol):
    """`|ours - theirs|` within `rtol` of `theirs`' largest magnitude."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    scale = max(float(np.abs(theirs).max()), 1e-30)
    error = float(np.abs(ours - theirs).max())
    assert error <= rtol * scale, (
        f"{what}: max |difference| {error:.3g}, scale {scale:.3g}"
    )


def assert_gradients_match(gradients, variables, parameters, rtol):
    """Every Keras gradient against torch's, through the name map.

    `gradients`, `variables`: `{original name: gradient / Keras variable}`;
    `parameters`: `{original name: (torch parameter, transposed)}` after
    `.backward()`. Each gradient within `rtol` of its tensor's largest entry.
    Attention key biases get an exact gradient of 0 (softmax ignores a shift
    per query), so both sides' are only checked to be below 1e-6 of the
    largest gradient anywhere.
    """
    assert set(gradients) == set(parameters), set(gradients) ^ set(parameters)
    largest = max(float(p.grad.abs().max()) for p, _ in parameters.values())
    for name, gradient in gradients.items():
        parameter, transposed = parameters[name]
        expected = keras_layout(parameter.grad, transposed, variables[name])
        gradient = np.asarray(gradient)
        if name.endswith("/key/bias"):
            assert np.abs(gradient).max() <= 1e-6 * largest, name
            assert np.abs(expected).max() <= 1e-6 * largest, name
            continue
        assert_close(gradient, expected, f"gradient of {name}", rtol)
