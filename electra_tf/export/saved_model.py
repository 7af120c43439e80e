"""`save_saved_model`: `tf.saved_model.save` without TensorFlow's rename notices.

Saving a signature whose function captures resources (the WordPiece model,
variables) makes TensorFlow log, for each such function, "Function `...`
contains input name(s) wp_model, resource with unsupported characters which
will be renamed to electra_text_classifier_preprocessor_1_..." (absl INFO;
some versions log it through `tensorflow`'s logger). The renaming is internal
to the SavedModel: the signature's input keys are the `TensorSpec` names we
chose. Every export printed several such lines of 300 characters; they told
a user nothing they could act on. Only those records are dropped, and only
while saving; every other message is kept.
"""

from __future__ import annotations

import contextlib
import logging

import tensorflow as tf

# The fixed part of TensorFlow's message
# (tensorflow/python/saved_model/signature_serialization.py).
RENAMED_INPUTS_NOTICE = "which will be renamed to"
# The loggers TensorFlow has logged it through.
_LOGGERS = ("absl", "tensorflow")


class _DropRenamedInputs(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return RENAMED_INPUTS_NOTICE not in str(record.msg)


@contextlib.contextmanager
def _without_renamed_input_notices():
    drop = _DropRenamedInputs()
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    for logger in loggers:
        logger.addFilter(drop)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(drop)


def save_saved_model(module: tf.Module, export_dir: str, signatures) -> str:
    """`tf.saved_model.save(module, export_dir, signatures=signatures)`,
    without the rename notices (see the module docstring); returns
    `export_dir`."""
    with _without_renamed_input_notices():
        tf.saved_model.save(module, export_dir, signatures=signatures)
    return export_dir
