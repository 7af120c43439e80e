"""`write_json`: every JSON file fine-tuning writes (metrics, SQuAD predictions)."""

from __future__ import annotations

import json
import os

import tensorflow as tf


def write_json(path: str, values) -> str:
    """Writes `values` as indented JSON (keys sorted, non-ASCII kept) to `path`,
    any tf.io.gfile path, creating its folder; returns `path`.

    Written to `path.tmp`, then renamed: an interrupted run never leaves half
    a file, and `metrics.json`, rewritten after every seed, keeps the last
    whole one.
    """
    directory = os.path.dirname(path)
    if directory:
        tf.io.gfile.makedirs(directory)
    with tf.io.gfile.GFile(path + ".tmp", "w") as f:
        f.write(json.dumps(values, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    tf.io.gfile.rename(path + ".tmp", path, overwrite=True)
    return path
