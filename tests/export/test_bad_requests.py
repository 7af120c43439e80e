"""Every exported signature answers a bad request with an `InvalidArgumentError`
naming the input, never a crash, and an empty batch with empty outputs.

One tiny set of exports (pre-training: discriminator, sentence scorer,
TF-Hub encoder and preprocessing; a pair classifier, a tagger, a question
answerer) is built per module and called in one subprocess with only
TensorFlow and TF Text loaded, as a model server would: a request that
aborted the process (texts of different batch sizes reached the tokenizer
and packer: `std::length_error`, exit 134, or a segfault) would kill pytest
otherwise. Each case's outcome is recorded as `ok` (with the batch size of
the first output) or the error's type and text.
"""

import json
import pathlib
import re
import subprocess
import sys

import keras_hub
import pytest

from electra_tf.config import PretrainingConfig
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.export.classifier import export_text_classifier
from electra_tf.export.pretrained import export_pretrained
from electra_tf.export.question_answerer import export_question_answerer
from electra_tf.export.token_classifier import export_token_classifier
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.question_answerer_preprocessor import (
    ElectraQuestionAnswererPreprocessor,
)
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.text_classifier_preprocessor import (
    ElectraTextClassifierPreprocessor,
)
from electra_tf.models.token_classifier import ElectraTokenClassifier
from electra_tf.models.token_classifier_preprocessor import (
    ElectraTokenClassifierPreprocessor,
)
from electra_tf.pretraining.pretrainer import ElectraPretrainer
from tests.helpers import SUBPROCESS_TIMEOUT, tiny_serving_config

REPO = pathlib.Path(__file__).parents[2]

# (SavedModel, signature) -> its inputs; "#" marks int32 [batch, length] ids,
# the others are tf.string [batch].
SIGNATURES = {
    ("export/saved_model", "detect_replaced_tokens_text"): ["text"],
    ("export/saved_model", "detect_replaced_tokens_text_pair"): ["text", "text_pair"],
    ("export/saved_model", "detect_replaced_tokens_ids"): [
        "#token_ids",
        "#segment_ids",
        "#padding_mask",
    ],
    ("export/sentence_scorer", "score_sentences"): ["text"],
    ("export/hub/preprocessing", "serving_default"): ["text"],
    ("export/hub/preprocessing", "preprocess_text_pair"): ["text", "text_pair"],
    ("export/hub/encoder", "serving_default"): [
        "#input_word_ids",
        "#input_mask",
        "#input_type_ids",
    ],
    ("pair", "serving_default"): ["premise", "hypothesis"],
    ("pair", "predict_token_ids"): ["#token_ids", "#segment_ids", "#padding_mask"],
    ("tagger", "serving_default"): ["text"],
    ("qa", "serving_default"): ["question", "context"],
}
TWO_INPUTS = [key for key, names in SIGNATURES.items() if len(names) > 1]
# The exports' position table (rows of the position embedding).
MAX_LENGTH = tiny_serving_config(1).max_sequence_length

SERVE = r"""
import json, sys
import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401

root, cases = json.loads(sys.argv[1])
loaded = {}
for case in cases:
    path, signature, inputs = case["path"], case["signature"], case["inputs"]
    if path not in loaded:
        loaded[path] = tf.saved_model.load(f"{root}/{path}")
    function = loaded[path].signatures[signature]
    request = {
        name: tf.constant(np.array(value, dtype=dtype).reshape(shape))
        for name, (dtype, shape, value) in inputs.items()
    }
    try:
        outputs = function(**request)
        first = next(iter(sorted(outputs)))
        case["outcome"] = ["ok", int(outputs[first].shape[0])]
    except Exception as error:
        case["outcome"] = [type(error).__name__, str(error)]
    print(json.dumps(case), flush=True)
print("served")
"""


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("exports")
    vocabulary = Vocabulary.from_file(REPO / "electra_tf/assets/demo_vocab.txt")
    pretrainer = ElectraPretrainer(
        tiny_serving_config(vocabulary.size),
        PretrainingConfig(max_seq_length=16),
        pad_token_id=vocabulary.pad_id,
        cls_token_id=vocabulary.cls_id,
        sep_token_id=vocabulary.sep_id,
        mask_token_id=vocabulary.mask_id,
    )
    export_pretrained(pretrainer, vocabulary, root / "export")
    tokenizer = keras_hub.models.ElectraTokenizer(
        vocabulary=list(vocabulary.tokens), lowercase=True
    )

    def encoder():
        return ElectraEncoder.discriminator_from_config(
            tiny_serving_config(vocabulary.size)
        )

    classifier = ElectraTextClassifier(
        backbone=encoder(),
        num_classes=2,
        preprocessor=ElectraTextClassifierPreprocessor(tokenizer, sequence_length=16),
        dropout=0.0,
    )
    export_text_classifier(
        classifier, str(root / "pair"), ("premise", "hypothesis"), ("no", "yes")
    )
    tagger = ElectraTokenClassifier(
        encoder(),
        num_classes=2,
        preprocessor=ElectraTokenClassifierPreprocessor(
            tokenizer, tags=["A", "B"], sequence_length=16
        ),
        dropout=0.0,
    )
    export_token_classifier(tagger, str(root / "tagger"))
    answerer = ElectraQuestionAnswerer(
        backbone=encoder(),
        preprocessor=ElectraQuestionAnswererPreprocessor(
            tokenizer, sequence_length=32, max_query_length=8, doc_stride=8
        ),
        head_hidden_dim=8,
        beam_size=4,
        max_answer_length=5,
    )
    export_question_answerer(answerer, str(root / "qa"))
    return root, vocabulary.size


# A valid row of each kind of ids input.
_ID_ROWS = {"token": [2, 5, 3], "word": [2, 5, 3], "segment": [0, 0, 0]}


def _request(names, batch_sizes, *, dtype=None, rank=None, token_id=5, length=3):
    """Inputs as (dtype, shape, flat values): texts [batch], ids [batch, 3]
    (or [batch, `length`]: the valid row continued with padding)."""
    inputs = {}
    for name, batch in zip(names, batch_sizes):
        ids = name.startswith("#")
        name = name.lstrip("#")
        if ids:
            kind = "int32"
            row = next((row for key, row in _ID_ROWS.items() if key in name), [1, 1, 1])
            if row[1] == 5:
                row = [2, token_id, 3]
            row = row + [0] * (length - len(row))
            value, shape = row * batch, [batch, length]
        else:
            kind, value, shape = "str", ["the film was good"] * batch, [batch]
        if dtype is not None:  # the other dtype: ints for texts, strings for ids
            kind = "int32" if kind == "str" else "str"
            value = [1] * len(value) if kind == "int32" else ["x"] * len(value)
        if rank == "more":
            shape = [*shape, 1]
        elif rank == "scalar":
            shape, value = [], value[:1]
        inputs[name] = (kind, shape, value)
    return inputs


def _cases():
    cases = []
    for (path, signature), names in SIGNATURES.items():
        n = len(names)
        requests = {
            "fine": _request(names, [2] * n),
            "empty": _request(names, [0] * n),
            "dtype": _request(names, [2] * n, dtype="other"),
            "rank_more": _request(names, [2] * n, rank="more"),
            "rank_scalar": _request(names, [1] * n, rank="scalar"),
        }
        if n > 1:
            # Both orders: one crashed the packer, the other answered silently
            # for the shorter batch; an empty one beside a full one too.
            requests["mismatch_longer_second"] = _request(names, [1] + [4] * (n - 1))
            requests["mismatch_longer_first"] = _request(names, [4] + [1] * (n - 1))
            requests["mismatch_one_empty"] = _request(names, [1] + [0] * (n - 1))
        if names[0].startswith("#"):
            requests["id_out_of_vocabulary"] = _request(names, [2] * n, token_id=10**6)
            requests["longer_than_positions"] = _request(
                names, [2] * n, length=MAX_LENGTH + 1
            )
        cases += [
            {"path": path, "signature": signature, "kind": kind, "inputs": inputs}
            for kind, inputs in requests.items()
        ]
    return cases


@pytest.fixture(scope="module")
def outcomes(exports):
    root, _ = exports
    result = subprocess.run(
        [sys.executable, "-c", SERVE, json.dumps([str(root), _cases()])],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    # The server process survived every request and exited normally.
    assert result.returncode == 0 and "served" in result.stdout, (
        result.returncode,
        result.stdout[-2000:],
        result.stderr[-3000:],
    )
    by_kind = {}
    for line in result.stdout.splitlines():
        if line.startswith("{"):
            case = json.loads(line)
            by_kind.setdefault(case["kind"], {})[(case["path"], case["signature"])] = (
                case["outcome"]
            )
    return by_kind


def test_a_good_request_and_an_empty_batch_are_answered(outcomes):
    assert outcomes["fine"] == {key: ["ok", 2] for key in SIGNATURES}
    assert outcomes["empty"] == {key: ["ok", 0] for key in SIGNATURES}


@pytest.mark.parametrize(
    "kind",
    ["mismatch_longer_second", "mismatch_longer_first", "mismatch_one_empty"],
)
def test_inputs_of_different_batch_sizes_are_refused_naming_them(outcomes, kind):
    """Every pair signature (discriminator, TF-Hub preprocessing, pair classifier,
    question answerer) called with batches of 1 and 4, 4 and 1, 1 and 0, in one
    served subprocess that must exit 0: `InvalidArgumentError` naming the
    signature's inputs, raised in the graph before the tokenizer (was:
    `std::length_error`, exit 134, or a segfault, exit 139; other orders answered
    silently for the shorter batch). Ids, segments and mask of different shapes are
    refused naming them."""
    for (path, signature), outcome in outcomes[kind].items():
        names = [name.lstrip("#") for name in SIGNATURES[path, signature]]
        error, message = outcome
        assert error == "InvalidArgumentError", (signature, outcome)
        if len(names) == 2:
            expected = f"{names[0]} and {names[1]} must have the same batch size"
        else:
            expected = f"{names[0]}, {names[1]} and {names[2]} must have the same shape"
        assert expected in message, (path, signature, message[:500])
    assert set(outcomes[kind]) == set(TWO_INPUTS)


@pytest.mark.parametrize("kind", ["rank_more", "rank_scalar"])
def test_inputs_of_another_rank_are_refused_naming_them(outcomes, kind):
    """A text input of shape `[batch, 1]` or a scalar, to every raw-text signature, and
    ids of another rank: `InvalidArgumentError` naming the input (was: answered as
    if it were a batch)."""
    assert set(outcomes[kind]) == set(SIGNATURES)
    for (path, signature), (error, message) in outcomes[kind].items():
        # Every input has the wrong rank; the first checked is named.
        names = [name.lstrip("#") for name in SIGNATURES[path, signature]]
        assert error == "InvalidArgumentError", (signature, message[:500])
        shape = r"Shape of tensor (\w+) \[[\d,]*\] is not compatible"
        named = re.search(shape, message)
        assert named and named.group(1) in names, (signature, message[-500:])


def test_inputs_of_another_dtype_are_refused(outcomes):
    # TensorFlow refuses them before the graph runs, naming the input's
    # position and both dtypes (TF Serving names the input's key).
    assert set(outcomes["dtype"]) == set(SIGNATURES)
    for (path, signature), (error, message) in outcomes["dtype"].items():
        ids = SIGNATURES[path, signature][0].startswith("#")
        expected = "int32 tensor but is a string" if ids else "string tensor but is a"
        assert error == "InvalidArgumentError", (signature, message[:500])
        assert "input #0(zero-based) was expected to be a " + expected in message


def test_token_ids_outside_the_vocabulary_are_refused_naming_them(outcomes, exports):
    _, vocabulary_size = exports
    cases = outcomes["id_out_of_vocabulary"]
    assert len(cases) == 3
    for (path, signature), (error, message) in cases.items():
        first = SIGNATURES[path, signature][0].lstrip("#")
        assert error == "InvalidArgumentError", (signature, message[:500])
        assert f"{first} must be in [0, {vocabulary_size})" in message


def test_ids_longer_than_the_position_table_are_refused_naming_them(outcomes):
    """Ids one position longer than the model's table, to every ids signature:
    `InvalidArgumentError` naming the ids input and the table's length (was:
    TensorFlow's `Expected size[0] in [0, 32], but got 33` from the position
    embedding's slice, naming no input)."""
    cases = outcomes["longer_than_positions"]
    assert len(cases) == 3
    for (path, signature), (error, message) in cases.items():
        first = SIGNATURES[path, signature][0].lstrip("#")
        assert error == "InvalidArgumentError", (signature, message[:500])
        expected = f"{first} is longer than the {MAX_LENGTH} positions of the model"
        assert expected in message, (signature, message[:500])
