"""Docstring examples run (keras-hub's habit of examples that do not is avoided)."""

import doctest

import pytest

import electra_tf.conversion_error
import electra_tf.encoder
import electra_tf.hf_conversion
import electra_tf.pretraining_checkpoint
import electra_tf.schedule


@pytest.mark.parametrize(
    "module",
    [
        electra_tf.conversion_error,
        electra_tf.encoder,
        electra_tf.hf_conversion,
        electra_tf.pretraining_checkpoint,
        electra_tf.schedule,
    ],
)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
