"""keras-hub's transformer block with `HashedDropout` in place of Keras' dropout."""

from __future__ import annotations

import keras
from keras import ops
from keras_hub.layers import TransformerEncoder

from electra_tf.models.flat_einsum_dense import use_flat_projections
from electra_tf.models.hashed_dropout import use_hashed_dropout


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTransformerLayer(TransformerEncoder):
    """`keras_hub.layers.TransformerEncoder` whose three dropouts are hashed.

    keras-hub's block creates its dropout layers (after attention, after the
    feed-forward, and on the attention probabilities inside Keras'
    `MultiHeadAttention`) in `build()`. A subclass that swaps them right after
    that build, rather than a rewritten block, keeps everything else keras-hub's
    own: the sublayers, their names and weights (so keras-hub presets convert
    one to one), `call` and `get_config`. See `HashedDropout` for why.

    The attention's four projections likewise become `FlatEinsumDense`s
    (the same layers and weights, each product one 2-D matmul): in graph
    mode on fixed-length batches their backward pass was a batch of small
    matmuls (see `FlatEinsumDense`).

    Under a mixed policy (bfloat16 or float16 compute) the feed-forward's
    activation is computed in float32 and its result cast back
    (`activation_in_float32`), as PyTorch computes a bfloat16 GELU: in graph
    mode TensorFlow's GELU on bfloat16 tensors (erfc and its gradient) costs
    twice the float32 form, casts included (BENCHMARKS.md section 24). A
    float32 block is unchanged.
    """

    def build(self, inputs_shape):
        super().build(inputs_shape)
        use_hashed_dropout(self, "_self_attention_dropout")
        use_hashed_dropout(self, "_feedforward_dropout")
        use_hashed_dropout(self._self_attention_layer, "_dropout_layer")
        use_flat_projections(self._self_attention_layer)
        dense = self._feedforward_intermediate_dense
        if dense.compute_dtype != "float32" and dense.activation is not None:
            dense.activation = activation_in_float32(dense.activation)


def activation_in_float32(activation):
    """`activation` computed on its input cast to float32, its result cast
    back to the input's dtype."""

    def in_float32(x):
        return ops.cast(activation(ops.cast(x, "float32")), x.dtype)

    return in_float32
