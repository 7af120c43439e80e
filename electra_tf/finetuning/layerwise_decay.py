"""Layer-wise learning-rate decay for fine-tuning: lower layers learn more slowly.

ELECTRA assigns each variable a depth: 0 for the embedding block (token,
position and segment embeddings, their LayerNorm, and `embeddings_projection`),
`i + 1` for `transformer_layer_i`, and the task head above the encoder. Its
learning rate is multiplied by `decay ** (top - depth)`.

The original puts the head at depth `L + 2` (the depth a removed pooler layer
used to take), so the head gets 1 and the top encoder layer `decay ** 2`; one
factor of `decay` is never used. `corrected=True` puts the head at `L + 1`, so
the top encoder layer gets `decay ** 1` as intended. Both are offered because
published ELECTRA numbers were obtained with the original form.

The multipliers scale LEARNING RATES (`ElectraAdam(learning_rate_multipliers=
...)`); scaling gradients instead would be undone by Adam's normalisation.

Example: with L = 2 layers and decay 0.5, the original form gives the
embedding block 0.5**4, layer 0 0.5**3, layer 1 (the top) 0.5**2, the head 1.
>>> for pattern, multiplier in layerwise_learning_rate_multipliers(2, 0.5)[1:]:
...     print(pattern, multiplier)
(^|/)transformer_layer_0/ 0.125
(^|/)transformer_layer_1/ 0.25
>>> layerwise_learning_rate_multipliers(2, 0.5)[0][1]  # the embedding block
0.0625
>>> [m for _, m in layerwise_learning_rate_multipliers(2, 0.5, corrected=True)]
[0.125, 0.25, 0.5]
"""

from __future__ import annotations

# Layers of `ElectraEncoder` (and keras-hub's `ElectraBackbone`) at depth 0.
EMBEDDING_LAYERS = (
    "token_embedding",
    "position_embedding",
    "segment_embedding",
    "embeddings_layer_norm",
    "embeddings_projection",
)

# A variable's layer is a path component: "transformer_layer_1/" must not
# match "transformer_layer_10/...", and a prefix (a nesting model's name)
# is allowed.
_EMBEDDINGS_PATTERN = r"(^|/)(" + "|".join(EMBEDDING_LAYERS) + r")/"


def layerwise_learning_rate_multipliers(
    num_layers: int, decay: float, corrected: bool = False
) -> list[tuple[str, float]]:
    """`(regex, multiplier)` pairs for `ElectraAdam(learning_rate_multipliers=)`.

    One pair for the embedding block, then one per transformer layer of the
    `num_layers` (bottom to top); the task head matches none and keeps
    `ElectraAdam`'s multiplier 1. `decay` is ELECTRA's 0.8 (small, base) or
    0.9 (large); 1.0 disables it. `corrected`: see the module docstring.
    """
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"layer-wise decay must be in (0, 1], got {decay}")
    top = num_layers + (1 if corrected else 2)
    multipliers = [(_EMBEDDINGS_PATTERN, float(decay**top))]
    multipliers += [
        (rf"(^|/)transformer_layer_{index}/", float(decay ** (top - (index + 1))))
        for index in range(num_layers)
    ]
    return multipliers
