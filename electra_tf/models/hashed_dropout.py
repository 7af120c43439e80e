"""Dropout whose mask is a counter-based hash, cheap under XLA and replica-exact."""

from __future__ import annotations

import keras
import tensorflow as tf

from electra_tf import random_streams

# Each 32-bit hash gives two 16-bit draws (the hash is most of dropout's cost
# on a CPU), compared with round(rate * 2**16): a rate error below 1e-5.
_DRAW_BITS = 16


@keras.saving.register_keras_serializable(package="electra_tf")
class HashedDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` with its mask drawn from `random_streams`.

    Same arguments, config, seed state and scaling as Keras' layer (kept units
    are multiplied by `1 / (1 - rate)`); only where the random bits come from
    differs. Element `i` of example `e` is dropped when a hash of
    (this layer's `SeedGenerator` state, the GLOBAL index of `e`, `i`) falls
    below `rate`. Why not Keras' own draw:

    * Keras' dropout uses TensorFlow's stateless Philox RNG, which XLA lowers
      to slow CPU code: on this project's 2-core CPU a tiny-preset train step
      took 10x longer with XLA than without, which kept XLA (worth ~2x on the
      matmuls) off on CPUs. The hash is a few integer multiplies and shifts
      per element, which XLA vectorises.
    * Keyed by the global example index (`random_streams.global_example_index`),
      a step on N replicas drops exactly the units the same global batch drops
      on one device, so multi-replica runs stay bit-identical to single-device
      ones with dropout on. (Every replica holds the same seed state.)

    The seed state advances by one per training call, as Keras' does, and is
    a variable of the layer (`non_trainable_variables`), so a checkpoint that
    saves it resumes with the same masks. `noise_shape` is not supported.
    """

    def __init__(self, rate, noise_shape=None, seed=None, **kwargs):
        if noise_shape is not None:
            raise ValueError("HashedDropout does not support noise_shape")
        super().__init__(rate, seed=seed, **kwargs)

    def call(self, inputs, training=False):
        if not training or self.rate <= 0:
            return inputs
        if self.rate >= 1:
            return tf.zeros_like(inputs)
        key = random_streams.seed_state_key(self.seed_generator.next())
        shape = tf.shape(inputs)
        per_example = tf.reduce_prod(shape[1:])
        if inputs.shape[1:].is_fully_defined():
            per_example = inputs.shape[1:].num_elements()
        example_index = random_streams.global_example_index(shape[0])
        words = (per_example + 1) // 2
        bits = random_streams.bits(
            key, example_index, random_streams.STREAM_DROPOUT, words
        )
        # Low halves for the first `words` units, high halves for the rest.
        low = tf.bitwise.bitwise_and(bits, tf.cast(0xFFFF, tf.uint32))
        high = tf.bitwise.right_shift(bits, tf.cast(_DRAW_BITS, tf.uint32))
        draws = tf.concat([low, high], axis=-1)[:, :per_example]
        threshold = round(self.rate * 2**_DRAW_BITS)
        keep = tf.cast(draws, tf.int32) >= threshold
        scale = tf.cast(1.0 / (1.0 - self.rate), inputs.dtype)
        mask = tf.reshape(tf.cast(keep, inputs.dtype) * scale, shape)
        return inputs * mask


def use_hashed_dropout(layer, attribute: str) -> None:
    """Replaces the `keras.layers.Dropout` at `layer.<attribute>` by a `HashedDropout`.

    For layers that create their Dropout inside `build()` (keras-hub's
    `TransformerEncoder`, Keras' `MultiHeadAttention`): call it right after
    their build. The replacement has the same name and rate, and takes the
    old layer's place in Keras' tracking, so the layer's weights, their names
    and order, and its variable list are unchanged (Dropout holds no weights,
    only a seed state).
    """
    old = getattr(layer, attribute)
    if isinstance(old, HashedDropout):
        return
    new = HashedDropout(old.rate, dtype=old.dtype_policy, name=old.name)
    # Keras locks a built layer's tracker against NEW sublayers; this swaps
    # one in place, keeping its position in `layer._layers`.
    layer._tracker.replace_tracked_value("layers", old, new)
    setattr(layer, attribute, new)
