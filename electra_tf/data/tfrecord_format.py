"""The on-disk format of pre-training data, and a fast encoder for its records.

A built dataset is a directory of `SHARD_NAME` files
(`train-00000-of-00008.tfrecord` ..., `eval-...`), the `vocab.txt` the ids refer
to, and a `stats.json` describing the build. Each TFRecord holds one serialized
`tf.train.Example` with the original ELECTRA builder's int64 features, each of
length `max_seq_length`:

* `input_ids`: `[CLS] A [SEP] B [SEP]` then `[PAD]`s;
* `input_mask`: 1 on real tokens, 0 on padding;
* `segment_ids`: 0 on `[CLS] A [SEP]`, 1 on `B [SEP]`, 0 on padding.

No masking is stored: ELECTRA masks dynamically, in the training graph.

>>> import tensorflow as tf
>>> features = {name: np.array([[101, 7592, 102]]) for name in FEATURE_NAMES}
>>> (record,) = serialize_examples(features)  # one example of length 3
>>> tf.train.Example.FromString(record).features.feature["input_ids"].int64_list
value: 101
value: 7592
value: 102
<BLANKLINE>

`serialize_examples` writes exactly the bytes of
`tf.train.Example(...).SerializeToString(deterministic=True)` (tested), but encodes
a whole batch with numpy: ~11 us an example of length 128 instead of ~37 us for
building and serializing protobuf objects in Python, which cost the data builder
more time than tokenising.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

SHARD_NAME = "{split}-{index:05d}-of-{count:05d}.tfrecord"
VOCABULARY_FILE = "vocab.txt"
STATS_FILE = "stats.json"

# The feature names in the files, in the order a deterministic protobuf serializer
# writes map entries (sorted by key).
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")

# Field tags (field number << 3 | wire type 2 = length-delimited) of the messages in
# tensorflow/core/example/{example,feature}.proto.
_EXAMPLE_FEATURES = b"\x0a"  # Example.features = 1
_FEATURES_ENTRY = b"\x0a"  # Features.feature = 1 (map<string, Feature>)
_ENTRY_KEY = b"\x0a"  # map entry key = 1
_ENTRY_VALUE = b"\x12"  # map entry value = 2
_FEATURE_INT64_LIST = b"\x1a"  # Feature.int64_list = 3
_INT64_LIST_VALUE = b"\x0a"  # Int64List.value = 1 (packed)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# Record, entry and list lengths are small: look them up instead of encoding.
_SMALL_VARINTS = [_varint(n) for n in range(1 << 14)]


def _length_prefixed(tag: bytes, payload: bytes) -> bytes:
    size = len(payload)
    prefix = _SMALL_VARINTS[size] if size < len(_SMALL_VARINTS) else _varint(size)
    return tag + prefix + payload


def _packed_varints(values: np.ndarray) -> list[bytes]:
    """Each row of `values` ([N, L], non-negative ints) as packed varint bytes."""
    values = values.astype(np.uint64)
    count, length = values.shape
    width = len(_varint(int(values.max(initial=0))))  # bytes of the widest value
    if width == 1:
        # Values below 128 are their own varint: masks, segments, small vocabularies.
        data = values.astype(np.uint8).tobytes()
        return [data[i * length : (i + 1) * length] for i in range(count)]
    shifts = np.arange(width, dtype=np.uint64) * np.uint64(7)
    groups = (values[..., None] >> shifts) & np.uint64(0x7F)  # [N, L, width]
    # Bytes per value: its lowest group, then up to its highest non-zero group.
    sizes = 1 + np.sum(values[..., None] >= (np.uint64(1) << shifts[1:]), axis=-1)
    index = np.arange(width)
    continued = index < sizes[..., None] - 1  # all but a value's last byte
    encoded = groups.astype(np.uint8) | (continued.astype(np.uint8) << 7)
    # Row-major boolean indexing walks rows, then values, then bytes: the
    # concatenation of every row's encoding, in order.
    data = encoded[index < sizes[..., None]].tobytes()
    ends = np.cumsum(sizes.sum(axis=-1)).tolist()
    starts = [0, *ends[:-1]]
    return [data[start:end] for start, end in zip(starts, ends)]


def serialize_examples(features: Mapping[str, np.ndarray]) -> list[bytes]:
    """Serializes N examples as `tf.train.Example` protos with int64 list features.

    Args:
        features: `FEATURE_NAMES` -> non-negative int arrays [N, L] (L may differ
            between features).

    Returns:
        N serialized `tf.train.Example`s, byte for byte what
        `SerializeToString(deterministic=True)` gives.
    """
    if set(features) != set(FEATURE_NAMES):
        raise ValueError(f"features must be {FEATURE_NAMES}, got {sorted(features)}")
    payloads = {}
    for name in FEATURE_NAMES:
        values = np.asarray(features[name])
        if values.ndim != 2:
            raise ValueError(f"{name} must be [N, L], got shape {values.shape}")
        if values.size and values.min() < 0:
            # Negative int64s take 10-byte two's-complement varints; ids never do.
            raise ValueError(f"{name} has negative values")
        payloads[name] = _packed_varints(values)
    keys = {name: _length_prefixed(_ENTRY_KEY, name.encode()) for name in FEATURE_NAMES}
    count = len(payloads[FEATURE_NAMES[0]])
    if any(len(rows) != count for rows in payloads.values()):
        raise ValueError("features hold different numbers of examples")
    records = []
    for i in range(count):
        entries = []
        for name in FEATURE_NAMES:
            payload = payloads[name][i]
            # An empty packed field is omitted, as protobuf does.
            values = _length_prefixed(_INT64_LIST_VALUE, payload) if payload else b""
            feature = _length_prefixed(_FEATURE_INT64_LIST, values)
            entry = keys[name] + _length_prefixed(_ENTRY_VALUE, feature)
            entries.append(_length_prefixed(_FEATURES_ENTRY, entry))
        records.append(_length_prefixed(_EXAMPLE_FEATURES, b"".join(entries)))
    return records
