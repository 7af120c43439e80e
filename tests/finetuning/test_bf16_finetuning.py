"""Every fine-tuning kind trains under `mixed_bfloat16` (issue 50): a few epochs on
its tiny fixture (`test_task_kinds.CASES`) with a finite, falling training loss;
`metrics.json` records the precision; the saved Keras model and the SavedModel
compute in float32 (`electra_tf.export.float32`): float32 policies, weights,
graph and outputs.

Slow (a tiny model of each kind trained and exported): `-m slow`.
"""

import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.finetuning.trainer import run_finetuning
from tests.finetuning.test_task_kinds import CASES
from tests.helpers import reduced_policies, reduced_precision_ops

EPOCHS = 4


@pytest.fixture(scope="module", params=sorted(CASES))
def bf16_run(request, tmp_path_factory):
    case = CASES[request.param]
    task = case.task()
    config = task.config.override(precision="mixed_bfloat16", epochs=EPOCHS)
    task = type(task)(task.data, config, task.starting_point)
    output_dir = tmp_path_factory.mktemp(f"{request.param}_bf16")
    before = keras.mixed_precision.global_policy().name
    summary = run_finetuning(task, str(output_dir), seeds=(1,), verbose=0)
    # The run puts the global policy back.
    assert keras.mixed_precision.global_policy().name == before
    return case, output_dir, summary


@pytest.mark.slow
def test_every_kind_trains_in_bfloat16_and_records_it(bf16_run):
    _, output_dir, summary = bf16_run
    recorded = json.loads((output_dir / "metrics.json").read_text())
    assert recorded["precision"] == recorded["config"]["precision"] == "mixed_bfloat16"
    assert recorded["jit_compile"] is False
    losses = [epoch["train"]["loss"] for epoch in summary["seeds"]["1"]["epochs"]]
    assert len(losses) == EPOCHS and np.all(np.isfinite(losses))
    assert losses[-1] < losses[0], losses


@pytest.mark.slow
def test_bfloat16_models_and_exports_are_float32_outside(bf16_run):
    case, _, summary = bf16_run
    model = keras.models.load_model(summary["keras_model"])
    assert model.backbone.dtype_policy.name == "float32"
    assert reduced_policies(model) == {}
    assert {v.dtype for v in model.weights} == {"float32"}
    # The reloaded model's outputs, as the kind's harness reads them.
    outputs = np.asarray(case.keras_outputs(model, case.inputs))
    assert outputs.dtype == np.float32
    if not hasattr(model, "answer"):  # the logits themselves
        x = case.inputs.get("text") or (
            tf.constant(case.inputs["sentence1"]),
            tf.constant(case.inputs["sentence2"]),
        )
        predicted = model.predict(x, verbose=0)
        for row in predicted if isinstance(predicted, list) else [predicted]:
            assert np.asarray(row).dtype == np.float32
    variables = os.path.join(summary["saved_model"], "variables", "variables")
    dtypes = tf.train.load_checkpoint(variables).get_variable_to_dtype_map()
    weights = {n: d for n, d in dtypes.items() if "/.ATTRIBUTES/" in n}
    assert weights and {d for d in weights.values() if d.is_floating} == {tf.float32}
    loaded = tf.saved_model.load(summary["saved_model"])
    for name, signature in loaded.signatures.items():
        assert reduced_precision_ops(signature) == set(), name
    serve = loaded.signatures["serving_default"]
    for name, spec in serve.structured_outputs.items():
        assert spec.dtype in (tf.float32, tf.int32, tf.string), name
    served = serve(**{name: tf.constant(v) for name, v in case.inputs.items()})
    floats = [v for v in served.values() if v.dtype.is_floating]
    assert floats and all(v.dtype == tf.float32 for v in floats)
    assert all(np.all(np.isfinite(v.numpy())) for v in floats)
