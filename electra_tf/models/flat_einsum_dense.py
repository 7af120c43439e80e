"""Attention projections as one 2-D matmul each, for a faster backward pass on CPUs."""

from __future__ import annotations

import keras
import tensorflow as tf

# Keras' `MultiHeadAttention` projections of [batch, length, ...] inputs:
# the equation, and how many trailing input axes it contracts.
FLAT_EQUATIONS = {
    "abc,cde->abde": 1,  # query, key, value: hidden -> heads x head size
    "abcd,cde->abe": 2,  # output: heads x head size -> hidden
}
# The attention layer's projections.
PROJECTIONS = ("_query_dense", "_key_dense", "_value_dense", "_output_dense")


@keras.saving.register_keras_serializable(package="electra_tf")
class FlatEinsumDense(keras.layers.EinsumDense):
    """`keras.layers.EinsumDense` computing `FLAT_EQUATIONS` as one 2-D matmul.

    When the length is known at tracing, Keras' TensorFlow backend computes
    `abc,cde->abde` as a matmul of the [batch, length, hidden] input with
    the kernel broadcast over the batch, whose kernel gradient is then a
    batch of small [hidden, length] x [length, heads * size] products summed
    over the batch: in graph mode at the `cpu` preset's size (32 x 48, one
    thread) a tagger's forward and backward took 0.26 CPU-s that way against
    0.21 flat, or through `tf.einsum`, which Keras uses when the length is
    unknown (fine-tuning's batches cut to their longest). Here the input is
    flattened to [batch * length, hidden] first, so the forward and both
    gradients are one matmul each whatever is known: fixed-length batches
    (question-answering windows, padded benchmarks, prediction) get the
    fast path too. XLA compiles either form to about the same code.

    The result is the same product: per output element the same dot product
    over the contracted axes; the kernel gradient sums the same terms over
    batch and length in one reduction instead of two, so it may differ in
    the last bits (`tests/models/test_flat_einsum_dense.py`). Other
    equations, LoRA and quantized kernels take `EinsumDense`'s own path.
    """

    def call(self, inputs, training=None):
        contracted = FLAT_EQUATIONS.get(self.equation.replace(" ", ""))
        if contracted is None or self.lora_enabled or self.quantization_mode:
            return super().call(inputs, training=training)
        kernel = tf.convert_to_tensor(self.kernel)
        inner = kernel.shape[:contracted].num_elements()
        tail = kernel.shape[contracted:]
        flat = tf.reshape(inputs, [-1, inner])
        x = tf.matmul(flat, tf.reshape(kernel, [inner, tail.num_elements()]))
        lead = tf.shape(inputs)[: inputs.shape.rank - contracted]
        x = tf.reshape(x, tf.concat([lead, tail.as_list()], 0))
        x.set_shape(inputs.shape[: inputs.shape.rank - contracted].concatenate(tail))
        if self.bias is not None:
            x = tf.add(x, self.bias)
        if self.activation is not None:
            x = self.activation(x)
        return x


def use_flat_projections(attention: keras.layers.MultiHeadAttention) -> None:
    """Makes the built `attention` layer's projections `FlatEinsumDense`s.

    The layers stay where they are, with their weights, names and config:
    only the class of each (a subclass that changes `call` alone) is
    swapped, as `use_hashed_dropout` swaps dropouts after keras-hub's build.
    """
    for name in PROJECTIONS:
        layer = getattr(attention, name, None)
        if type(layer) is keras.layers.EinsumDense:
            layer.__class__ = FlatEinsumDense
