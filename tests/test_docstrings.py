"""Docstring examples run (keras-hub's habit of examples that do not is avoided)."""

import doctest

import pytest

import electra_tf.conversion.convert
import electra_tf.conversion.hf
import electra_tf.errors
import electra_tf.models.encoder
import electra_tf.optimization.schedule


@pytest.mark.parametrize(
    "module",
    [
        electra_tf.errors,
        electra_tf.models.encoder,
        electra_tf.conversion.hf,
        electra_tf.conversion.convert,
        electra_tf.optimization.schedule,
    ],
)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
