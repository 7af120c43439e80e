"""Nothing unsafe is loaded: no pickle, no evaluated config, no Keras lambdas."""

import pathlib
import re

import keras
import numpy as np
import pytest

from electra_tf.export.pretrained import load_generator

REPO = pathlib.Path(__file__).parents[1]
# Ways Python code can run what a file says. `eval(`/`exec(` are matched as
# calls, not as substrings of names such as `evaluate(`.
UNSAFE = re.compile(
    r"\bimport pickle\b|\bpickle\.|\bcloudpickle\b|\bdill\b|torch\.load\(|"
    r"allow_pickle\s*=\s*True|yaml\.load\(|(?<![\w.])eval\(|(?<![\w.])exec\(|"
    r"safe_mode\s*=\s*False"
)


def test_no_unsafe_loading_in_the_code():
    sources = [
        path
        for folder in ("electra_tf", "pretrain", "finetune", "scripts", "bench")
        for path in (REPO / folder).rglob("*.py")
    ]
    assert len(sources) > 20
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sources
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if UNSAFE.search(line)
    ]
    assert offenders == []


def test_the_pattern_catches_what_it_should():
    for line in ("import pickle", "x = eval(text)", "np.load(f, allow_pickle=True)"):
        assert UNSAFE.search(line), line
    for line in ("model.evaluate(x)", "self.eval_data", "safe_mode=True"):
        assert not UNSAFE.search(line), line


def test_a_keras_file_with_a_lambda_is_refused(tmp_path):
    inputs = keras.Input((3,))
    outputs = keras.layers.Lambda(lambda x: x * 2.0)(inputs)
    path = tmp_path / "lambda.keras"
    keras.Model(inputs, outputs).save(path)
    with pytest.raises(ValueError, match="(?i)lambda.*unsafe|safe_mode"):
        load_generator(path)
    # The same file loads when the user explicitly trusts it: the refusal is
    # the safe mode, not a broken file.
    trusted = keras.models.load_model(path, safe_mode=False)
    np.testing.assert_allclose(trusted(np.ones((1, 3))), 2.0 * np.ones((1, 3)))
