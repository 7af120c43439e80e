"""`float32_model`, the copy every export is made from (issue 50): a classifier
trained a step under `mixed_bfloat16` is copied with float32 policies, the
same weights bit for bit, its preprocessor and optimizer state, and computes
what a float32 model of those weights computes; its SavedModel and LiteRT
exports compute in float32."""

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.export.classifier import export_text_classifier
from electra_tf.export.float32 import float32_config, float32_model
from electra_tf.export.litert import SIGNATURE, litert_model
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.text_classifier_preprocessor import (
    ElectraTextClassifierPreprocessor,
)
from tests.helpers import (
    TINY_ENCODER,
    random_batch,
    reduced_policies,
    reduced_precision_ops,
)

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "bad", "film"]
TEXTS = ["a good film", "a bad film film"]


def _classifier(policy):
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        keras.utils.set_random_seed(0)
        tokenizer = keras_hub.models.ElectraTokenizer(
            vocabulary=VOCABULARY, lowercase=True
        )
        encoder = ElectraEncoder(**TINY_ENCODER)
        return ElectraTextClassifier(
            backbone=encoder,
            num_classes=2,
            preprocessor=ElectraTextClassifierPreprocessor(
                tokenizer, sequence_length=8
            ),
        )
    finally:
        keras.mixed_precision.set_global_policy(previous)


@pytest.fixture(scope="module")
def trained():
    """(a classifier trained one step under mixed_bfloat16, its float32 copy)."""
    classifier = _classifier("mixed_bfloat16")
    classifier.fit(x=TEXTS, y=np.array([1, 0]), batch_size=2, verbose=0)
    return classifier, float32_model(classifier)


def test_the_copy_computes_in_float32_with_the_same_weights(trained):
    classifier, copy = trained
    assert type(copy) is ElectraTextClassifier
    assert reduced_policies(copy) == {}
    # The trained model is left as it was, and so is the global policy.
    # (By the backbone itself: layer paths carry a suffix when other tests
    # built models in the same process.)
    assert classifier.backbone.dtype_policy.name == "mixed_bfloat16"
    assert reduced_policies(classifier)
    assert keras.mixed_precision.global_policy().name == "float32"
    assert [w.path for w in copy.weights] == [w.path for w in classifier.weights]
    for original, copied in zip(classifier.weights, copy.weights):
        assert copied.dtype == original.dtype == "float32", copied.path
        np.testing.assert_array_equal(copied.numpy(), original.numpy(), copied.path)
    # Compiled as the original was, with its optimizer's step and moments.
    assert int(copy.optimizer.iterations.numpy()) == 1
    moments = {v.path: v.numpy() for v in classifier.optimizer.variables}
    for variable in copy.optimizer.variables:
        np.testing.assert_array_equal(variable.numpy(), moments[variable.path])


def test_the_copy_computes_what_a_float32_model_of_its_weights_does(trained):
    classifier, copy = trained
    reference = _classifier("float32")
    reference.set_weights(classifier.get_weights())
    expected = reference.predict(TEXTS, verbose=0)
    # The preprocessor came along, vocabulary and all.
    copied = copy.predict(TEXTS, verbose=0)
    assert copied.dtype == np.float32
    np.testing.assert_allclose(copied, expected, rtol=1e-6, atol=1e-6)
    # The tolerance tells the precisions apart: bfloat16 is further off.
    bfloat16 = classifier.predict(TEXTS, verbose=0)
    assert not np.allclose(bfloat16, expected, rtol=1e-6, atol=1e-6)


def test_a_float32_model_is_its_own_copy(trained):
    _, copy = trained
    assert float32_model(copy) is copy


def test_a_saved_model_export_of_a_bfloat16_model_computes_in_float32(
    trained, tmp_path
):
    classifier, _ = trained
    # What the check finds in the bfloat16 model's own graph.
    spec = {
        name: tf.TensorSpec([None, None], tf.int32)
        for name in ("token_ids", "segment_ids", "padding_mask")
    }
    traced = tf.function(lambda x: classifier(x)).get_concrete_function(spec)
    assert reduced_precision_ops(traced)
    path = export_text_classifier(
        classifier, str(tmp_path), text_features=["text"], label_names=["bad", "good"]
    )
    loaded = tf.saved_model.load(path)
    for name, signature in loaded.signatures.items():
        assert reduced_precision_ops(signature) == set(), name
    served = loaded.signatures["serving_default"](text=tf.constant(TEXTS))
    np.testing.assert_allclose(
        served["logits"].numpy(),
        trained[1].predict(TEXTS, verbose=0),
        rtol=1e-5,
        atol=1e-6,
    )


def test_a_litert_model_of_a_bfloat16_model_computes_in_float32(trained):
    from ai_edge_litert.interpreter import Interpreter

    classifier, copy = trained
    flatbuffer = litert_model(classifier)
    runner = Interpreter(model_content=flatbuffer).get_signature_runner(SIGNATURE)
    inputs = random_batch(batch_size=2, length=8, vocabulary_size=len(VOCABULARY))
    logits = runner(**inputs)["logits"]
    assert logits.dtype == np.float32
    np.testing.assert_allclose(logits, copy(inputs), rtol=1e-5, atol=1e-6)


def test_float32_config_changes_only_policies_below_float32():
    def policy(name, class_name="DTypePolicy"):
        return {"module": "keras", "class_name": class_name, "config": {"name": name}}

    quantized = policy("int8_from_mixed_bfloat16", "QuantizedDTypePolicy")
    dtypes = [  # (a layer's dtype, what the float32 config holds)
        (policy("mixed_bfloat16"), policy("float32")),
        (policy("int32"), policy("int32")),
        ("mixed_float16", "float32"),
        ("int32", "int32"),
        (quantized, quantized),
    ]
    config = {
        "layers": [{"config": {"dtype": before}} for before, _ in dtypes],
        "name": "mixed_bfloat16",  # not a dtype
    }
    assert float32_config(config) == {
        "layers": [{"config": {"dtype": after}} for _, after in dtypes],
        "name": "mixed_bfloat16",
    }
