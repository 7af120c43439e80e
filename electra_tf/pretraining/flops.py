"""Training FLOPs of every pre-training objective, counted as the paper counts.

The paper compares objectives and models at equal pre-training compute and
reports that compute with its own accounting (google-research/electra,
`flops_computation.py`): a matrix multiply is 2*m*n*k, every element-wise op
one FLOP (with fixed costs for LayerNorm, GELU, softmax and dropout), the input
embedding lookup is a dense one-hot multiply, the MLM output softmax is paid
only at the masked fraction of positions, and the backward pass costs what
the forward pass costs (so training = 2 x forward).

Per objective (`PretrainingConfig.objective`), one sequence costs:

* "electra", "electra_15": generator (with its MLM head at the masked
  positions) + discriminator (with the RTD head at every position); electra_15
  computes the same, it only averages the loss over fewer positions;
* "mlm": the discriminator-sized encoder with an MLM head at the masked
  positions;
* "replace_mlm": generator + discriminator-sized encoder with an MLM head at
  the masked positions;
* "all_tokens_mlm": generator + discriminator-sized encoder with an MLM head
  (softmax over the vocabulary) at EVERY position and a copy head;
* "electric": two generator-sized towers (left-to-right and right-to-left,
  each with its own embedding lookup) and a cloze head at EVERY position
  reading both towers (its first dense twice as wide) + the discriminator
  with the RTD head; the noise correction reuses the cloze softmax;
* with `uniform_generator`, no generator (it is not run).

`pretraining_flops` reproduces that accounting from our configs, so the
throughput benchmark's MFU and the compute-matched experiments use the
figures a reader of the paper expects. `executed_pretraining_flops` is the
count a profiler would see for the same step: sparse embedding lookups and a
backward pass of twice the forward matmuls (training = 3 x forward), which is
what model-FLOPs-utilisation against a measured matmul peak should use.
"""

from __future__ import annotations

import dataclasses

from electra_tf.config import ModelConfig, PretrainingConfig

# The paper's per-element costs of the non-matmul ops.
_DROPOUT = 4  # random number, compare, mask, rescale
_LAYER_NORM = 5  # mean, variance, bias, scale
_GELU = 8
_SOFTMAX = 5  # max-subtract, exp, sum, divide


@dataclasses.dataclass(frozen=True)
class _Tower:
    """One transformer stack and its sizes (one tower of ELECTRA)."""

    hidden: int
    layers: int
    embedding: int
    intermediate: int
    heads: int
    length: int
    vocabulary: int

    def block(self) -> float:
        """Forward FLOPs of one transformer block over the whole sequence."""
        h, s, i = self.hidden, self.length, self.intermediate
        per_token = (
            3 * 2 * h * h  # query, key, value projections
            + 3 * h  # their biases
            + 2 * h * s  # attention scores
            + (_SOFTMAX + _DROPOUT + 1) * s * self.heads  # softmax, dropout, scale
            + 2 * h * s  # attention-weighted values
            + 2 * h * h  # attention output projection
            + h
            + _DROPOUT * h
            + h  # its bias, dropout, residual
            # The paper's script counts this LayerNorm once per token, not per
            # element; kept so its totals are reproduced exactly.
            + _LAYER_NORM
            + 2 * h * i
            + _GELU * i
            + i  # intermediate dense, GELU, bias
            + 2 * h * i
            + h
            + _DROPOUT * h
            + h
            + _LAYER_NORM * h  # output
        )
        return per_token * s

    def embeddings(self, dense_lookup: bool) -> float:
        """Forward FLOPs of the input embeddings (and projection to H)."""
        e, h, s = self.embedding, self.hidden, self.length
        per_token = (
            2 * e * (s + 2)  # one-hot position and segment lookups
            + 2 * e  # adding them
            + (_LAYER_NORM + _DROPOUT) * e
        )
        if dense_lookup:
            per_token += 2 * e * self.vocabulary
        if e != h:
            per_token += 2 * h * e + h
        return per_token * s

    def mlm_head(self, output_fraction: float) -> float:
        """Forward FLOPs of the generator's MLM head at the masked positions."""
        e, h, v = self.embedding, self.hidden, self.vocabulary
        per_token = (
            2 * e * v  # logits against the tied embedding matrix
            + 2 * h * e
            + e  # dense to E and its bias
            + (_GELU + _LAYER_NORM) * e
            + _SOFTMAX * v
            + 2 * v  # softmax and picking the target
        )
        return output_fraction * per_token * self.length

    def copy_head(self) -> float:
        """Forward FLOPs of All-Tokens MLM's copy gate and output mixture.

        One logit per token (a dense layer to one unit, whose bias the paper's
        accounting leaves out, as for the RTD output), then
        `D * copy + (1 - D) * p`: four element-wise operations.
        """
        return (2 * self.hidden + 4) * self.length

    def rtd_head(self) -> float:
        """Forward FLOPs of the discriminator's per-token binary head."""
        h = self.hidden
        return (2 * h * h + h + _GELU * h + 2 * h) * self.length


def _towers(model: ModelConfig, length: int) -> tuple[_Tower, _Tower]:
    discriminator = _Tower(
        hidden=model.hidden_dim,
        layers=model.num_layers,
        embedding=model.embedding_dim,
        intermediate=model.resolved_intermediate_dim,
        heads=model.resolved_num_heads,
        length=length,
        vocabulary=model.vocabulary_size,
    )
    generator = _Tower(
        hidden=model.generator_hidden_dim,
        layers=model.generator_num_layers,
        # An untied generator ("none") has embeddings as wide as its hidden
        # size. Under "gdes" its table is the discriminator's width E (the
        # discriminator adds to it), so it costs what a tied one does; the
        # per-step sum of the two tables does not scale with the batch and is
        # left out.
        embedding=model.generator_embedding_dim,
        intermediate=model.generator_intermediate_dim,
        heads=model.generator_num_heads,
        length=length,
        vocabulary=model.vocabulary_size,
    )
    return discriminator, generator


def _forward(model: ModelConfig, pretraining: PretrainingConfig, dense_lookup: bool):
    """(generator, discriminator-sized model) forward FLOPs of one sequence."""
    length = pretraining.max_seq_length
    fraction = pretraining.max_predictions_per_seq / length
    objective = pretraining.objective
    discriminator, generator = _towers(model, length)
    encoder = discriminator.layers * discriminator.block() + discriminator.embeddings(
        dense_lookup
    )
    if objective == "mlm":
        # The BERT baseline: the discriminator-sized encoder with an MLM head.
        return encoder + discriminator.mlm_head(fraction), 0.0
    if objective in ("electra", "electra_15", "electric"):
        head = discriminator.rtd_head()
    elif objective == "replace_mlm":
        head = discriminator.mlm_head(fraction)
    elif objective == "all_tokens_mlm":
        head = discriminator.mlm_head(1.0) + discriminator.copy_head()
    else:
        raise ValueError(f"no FLOPs count for objective {objective!r}")
    generator_flops = 0.0
    tower = generator.layers * generator.block() + generator.embeddings(dense_lookup)
    if pretraining.uniform_generator:
        pass
    elif objective == "electric":
        # The cloze head's dense reads 2 x hidden: one extra h x e multiply.
        cloze_head = generator.mlm_head(1.0) + (
            2 * generator.hidden * generator.embedding * length
        )
        generator_flops = 2 * tower + cloze_head
    else:
        generator_flops = tower + generator.mlm_head(fraction)
    return generator_flops, encoder + head


def pretraining_flops(model: ModelConfig, pretraining: PretrainingConfig) -> float:
    """Training FLOPs per sequence (forward + backward) in the paper's accounting.

    With the paper's sizes this gives its Table 1/8 compute, e.g. ELECTRA-Small
    (batch 128, 1M steps, length 128) 1.4e18.
    """
    generator, discriminator = _forward(model, pretraining, dense_lookup=True)
    return 2.0 * (generator + discriminator)


def executed_pretraining_flops(
    model: ModelConfig, pretraining: PretrainingConfig
) -> float:
    """Training FLOPs per sequence that the hardware actually executes.

    Sparse embedding lookups (no one-hot multiply) and a backward pass of twice
    the forward (gradients for activations and for weights): the count that
    model-FLOPs utilisation against a measured matmul peak should use.
    """
    generator, discriminator = _forward(model, pretraining, dense_lookup=False)
    return 3.0 * (generator + discriminator)


def executed_encoder_training_flops(model: ModelConfig, length: int) -> float:
    """Training FLOPs per sequence of `length` of the discriminator-sized encoder.

    What a fine-tuning step executes, heads left out (a classifier's is one
    H x H layer per sequence, a tagger's or span head's a few per token: at
    `small` under 3% of the encoder's): sparse embedding lookups, and a
    backward pass of twice the forward (training = 3 x forward), as
    `executed_pretraining_flops` counts.
    """
    encoder, _ = _towers(model, length)
    forward = encoder.layers * encoder.block() + encoder.embeddings(dense_lookup=False)
    return 3.0 * forward
