"""Counter-based random numbers keyed by (seed, step, example).

Why not `keras.random` with a `SeedGenerator`: a seed generator's state is one
variable per model, so under `tf.distribute` every replica would draw the same
numbers (or the draws would depend on the replica count), and a restarted run
would need the generator's state in its checkpoint. Here every draw is a pure
hash of `(seed, step, global example index, stream, element)`:

* a step on 8 replicas draws exactly what the same global batch draws on one
  device (the example index is global), which the distribution tests rely on;
  likewise k accumulated micro-batches draw what their concatenation draws;
* a run resumed from a checkpoint draws what the uninterrupted run drew, since
  the step comes from the restored optimizer;
* it is static-shaped, host-free and compiles with XLA on CPU, GPU and TPU.

Masking and sampling key their draws by the optimizer step (`step_key`).
Dropout (`HashedDropout`) keys them by its layer's `SeedGenerator` state
(`seed_state_key`), which advances once per call and is checkpointed, and by
the same global example index, so it too is replica-count independent.

The hash is Chris Wellons' "lowbias32" integer mixer applied in layers
(key -> example -> element); its outputs pass the statistical tests in
`tests/pretraining/test_sampling.py`, `tests/pretraining/test_masking.py` and
`tests/models/test_hashed_dropout.py`. It is not cryptographic and needs not be.
"""

from __future__ import annotations

import tensorflow as tf

# Distinct stream ids keep draws for different purposes independent.
STREAM_MASK_POSITIONS = 1
STREAM_MASK_TOKEN = 2
STREAM_SAMPLE = 3
STREAM_DROPOUT = 4

_GOLDEN = 0x9E3779B9


def _u32(value) -> tf.Tensor:
    return tf.cast(value, tf.uint32)


def mix32(x: tf.Tensor) -> tf.Tensor:
    """lowbias32: a bijective avalanche mixer on uint32 tensors (any shape)."""
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u32(16)))
    x = x * _u32(0x21F0AAAD)
    x = tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u32(15)))
    x = x * _u32(0x735A2D97)
    return tf.bitwise.bitwise_xor(x, tf.bitwise.right_shift(x, _u32(15)))


def step_key(seed: int, step: tf.Tensor) -> tf.Tensor:
    """A uint32 scalar key for one training step."""
    return _key(_u32(seed & 0xFFFFFFFF), step)


def seed_state_key(state: tf.Tensor) -> tf.Tensor:
    """A uint32 scalar key from a `keras.random.SeedGenerator` state.

    The state is `(seed, calls so far)`: the key changes with every call, and
    a restored state gives the key of the call it was saved before.
    """
    state = tf.cast(state, tf.int64)
    return _key(_u32(tf.bitwise.bitwise_and(state[0], 0xFFFFFFFF)), state[1])


def _key(seed: tf.Tensor, counter: tf.Tensor) -> tf.Tensor:
    counter = tf.cast(counter, tf.int64)
    low = _u32(tf.bitwise.bitwise_and(counter, 0xFFFFFFFF))
    high = _u32(tf.bitwise.right_shift(counter, 32))
    key = mix32(seed ^ _u32(_GOLDEN))
    key = mix32(key ^ low)
    return mix32(key ^ mix32(high + _u32(_GOLDEN)))


def global_example_index(batch_size: int, micro_batch=0) -> tf.Tensor:
    """Indices of this replica's examples within the global batch, int32 [batch].

    The global batch is the concatenation of the replicas' batches in replica
    order, which is how `tf.distribute` splits a batch. With gradient
    accumulation, the batch of one update is the concatenation of its
    micro-batches: micro-batch `m` (a scalar, possibly a tensor) holds the
    examples after the `m` global micro-batches before it, so k micro-batches
    draw what one batch of k times their size draws.
    """
    context = tf.distribute.get_replica_context()
    replica_id, replicas = 0, 1
    if context is not None:
        replica_id = context.replica_id_in_sync_group
        replicas = context.num_replicas_in_sync
    micro_batch = tf.cast(micro_batch, tf.int32)
    offset = (micro_batch * replicas + tf.cast(replica_id, tf.int32)) * batch_size
    return offset + tf.range(batch_size, dtype=tf.int32)


def bits(key: tf.Tensor, example_index: tf.Tensor, stream: int, count) -> tf.Tensor:
    """Random uint32 [batch, count]: element `i` of example `e` hashes (key, e, i).

    Args:
        key: uint32 scalar from `step_key` or `seed_state_key`.
        example_index: int32 [batch], the global index of each example.
        stream: a `STREAM_*` id separating independent uses.
        count: elements per example (an int, or a scalar tensor for shapes
            known only when the graph runs).
    """
    example_key = mix32(
        key ^ mix32(_u32(example_index) * _u32(_GOLDEN) + _u32(stream))
    )  # [batch]
    counters = _u32(tf.range(count, dtype=tf.int32))  # [count]
    return mix32(mix32(example_key[:, None] ^ mix32(counters)[None, :]))


def uniform(
    key: tf.Tensor, example_index: tf.Tensor, stream: int, shape: tuple[int, ...]
) -> tf.Tensor:
    """Uniform float32 draws in [0, 1), one row per example.

    Args:
        key: uint32 scalar from `step_key`.
        example_index: int32 [batch], the global index of each example.
        stream: a `STREAM_*` id separating independent uses.
        shape: static per-example shape; the result is [batch, *shape].
    """
    per_example = 1
    for dim in shape:
        per_example *= dim
    draws = bits(key, example_index, stream, per_example)
    # 24 high bits give floats exactly representable in float32.
    values = tf.cast(tf.bitwise.right_shift(draws, _u32(8)), tf.float32) * (
        1.0 / (1 << 24)
    )
    return tf.reshape(values, [-1, *shape])


def gumbel(
    key: tf.Tensor, example_index: tf.Tensor, stream: int, shape: tuple[int, ...]
) -> tf.Tensor:
    """Standard Gumbel noise, float32 [batch, *shape], as the original computes it."""
    u = uniform(key, example_index, stream, shape)
    return -tf.math.log(-tf.math.log(u + 1e-9) + 1e-9)
