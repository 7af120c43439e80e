"""One harness that every fine-tuning task kind passes (keras-hub's habit of one
set of checks for every task model).

Each kind, on its bundled fixture with the same tiny encoder, runs through the
trainer (`run_finetuning`: a few steps of `fit`, dev scored, the best epoch's
test predictions and raw-text SavedModel written, the Keras file saved); its
Keras file reloads, and its SavedModel serves raw text as the reloaded model
predicts it. A new kind joins the harness with one `CASES` entry.

Slow (a tiny model of each kind trained, exported and served): `-m slow`.
"""

import dataclasses
import json
import pathlib
from collections.abc import Callable

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import FinetuningConfig, ModelConfig
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.finetuning.classification import ClassificationTask, load_task_data
from electra_tf.finetuning.finetune import TASK_KINDS, task_kind
from electra_tf.finetuning.glue_tasks import get_task
from electra_tf.finetuning.question_answering import (
    QuestionAnsweringConfig,
    QuestionAnsweringTask,
    load_squad_data,
)
from electra_tf.finetuning.starting_point import StartingPoint
from electra_tf.finetuning.tagging import (
    TaggingConfig,
    TaggingTask,
    load_tagging_data,
)
from electra_tf.finetuning.task import FinetuningTask
from electra_tf.finetuning.trainer import run_finetuning

REPO = pathlib.Path(__file__).resolve().parents[2]
BROWN = REPO / "tests" / "fixtures" / "brown_pos"  # 15 / 8 / 5 sentences
VOCABULARY = Vocabulary.from_file(REPO / "electra_tf" / "assets" / "demo_vocab.txt")
START = StartingPoint(
    None,
    ModelConfig(
        vocabulary_size=VOCABULARY.size,
        num_layers=1,
        hidden_dim=16,
        embedding_dim=16,
        num_heads=2,
        intermediate_dim=32,
        max_sequence_length=64,
    ),
    VOCABULARY,
)
SETTINGS = dict(learning_rate=1e-3, epochs=1, batch_size=8, max_seq_length=32)
CONTEXT = "The jury said it found no evidence of irregularities in the election."


def _softmax_rows(outputs):
    return np.concatenate([tf.nn.softmax(row).numpy() for row in outputs])


@dataclasses.dataclass
class Case:
    """A kind's task, raw-text inputs, and its Keras and served outputs."""

    task: Callable[[], FinetuningTask]
    inputs: dict[str, list[str]]
    # The reloaded Keras model's outputs for `inputs`, and the SavedModel's.
    keras_outputs: Callable[[keras.Model, dict], np.ndarray]
    served_outputs: Callable[[dict, dict], np.ndarray]


CASES = {
    "classification": Case(
        task=lambda: ClassificationTask(
            load_task_data(get_task("mrpc"), str(REPO / "tests/fixtures/glue")),
            # Batches of 2: the fixture's 6 pairs (swapped too) fill few
            # length groups, and each group's partial batch is dropped.
            FinetuningConfig(**{**SETTINGS, "batch_size": 2}),
            START,
        ),
        inputs={"sentence1": ["The cat sat.", ""], "sentence2": ["A cat sat.", "x"]},
        keras_outputs=lambda model, x: tf.nn.softmax(
            model.predict(
                (tf.constant(x["sentence1"]), tf.constant(x["sentence2"])), verbose=0
            )
        ).numpy(),
        served_outputs=lambda outputs, x: outputs["probabilities"].numpy(),
    ),
    "tagging": Case(
        task=lambda: TaggingTask(
            load_tagging_data(
                *(BROWN / f"{s}.conll" for s in ("train", "dev", "test"))
            ),
            TaggingConfig(**SETTINGS),
            START,
        ),
        inputs={"text": ["The jury said it.", "", "No evidence, they said"]},
        keras_outputs=lambda model, x: _softmax_rows(
            model.predict(x["text"], verbose=0)
        ),
        served_outputs=lambda outputs, x: np.concatenate(
            [
                probabilities[:count]
                for probabilities, count in zip(
                    outputs["probabilities"].numpy(), outputs["word_count"].numpy()
                )
            ]
        ),
    ),
    "question_answering": Case(
        task=lambda: QuestionAnsweringTask(
            load_squad_data(2, str(REPO / "tests/fixtures/squad")),
            QuestionAnsweringConfig(
                **{**SETTINGS, "max_seq_length": 64},
                max_query_length=16,
                doc_stride=16,
                head_hidden_dim=8,
                beam_size=4,
            ),
            START,
        ),
        inputs={
            "question": ["What did the jury find?", "Who said it?"],
            "context": [CONTEXT, CONTEXT * 4],  # the second needs several windows
        },
        keras_outputs=lambda model, x: model.answer(x["question"], x["context"])[
            "score"
        ],
        served_outputs=lambda outputs, x: outputs["score"].numpy(),
    ),
}


def test_every_kind_is_in_the_harness_and_chosen_by_its_names():
    kinds = {type(case.task()) for case in CASES.values()}
    assert kinds == {ClassificationTask, *TASK_KINDS}
    for kind in TASK_KINDS:
        assert all(task_kind(name.upper()) is kind for name in kind.names)
    assert task_kind("mnli") is task_kind(None) is ClassificationTask


@pytest.fixture(scope="module", params=sorted(CASES))
def run(request, tmp_path_factory):
    case = CASES[request.param]
    task = case.task()
    output_dir = tmp_path_factory.mktemp(request.param)
    summary = run_finetuning(task, str(output_dir), seeds=(1,), verbose=0)
    return case, task, output_dir, summary


@pytest.mark.slow
def test_every_kind_records_its_run(run):
    _, task, output_dir, summary = run
    assert json.loads((output_dir / "metrics.json").read_text()) == json.loads(
        json.dumps(summary)
    )
    assert summary["task"] == task.name and summary["best_seed"] == 1
    assert summary["config"] == task.settings() and summary["epochs"] == 1
    assert summary["score_definition"] == task.score_definition()
    (epoch,) = summary["seeds"]["1"]["epochs"]
    assert np.isfinite(epoch["train"]["loss"]) and np.isfinite(epoch["score"])
    assert summary["median"]["score"] == summary["seeds"]["1"]["score"]
    assert summary["median"]["dev"] == summary["seeds"]["1"]["dev"]
    predictions = summary.get("predictions") or summary["submissions"]
    for path in [predictions] if isinstance(predictions, str) else predictions:
        assert pathlib.Path(path).stat().st_size > 0
    assert (output_dir / "logs" / "seed_1").is_dir()


@pytest.mark.slow
def test_every_kind_reloads_and_serves_raw_text_as_keras_predicts(run):
    case, task, output_dir, summary = run
    assert summary["keras_model"] == str(output_dir / task.model_file)
    reloaded = keras.models.load_model(summary["keras_model"])
    expected = case.keras_outputs(reloaded, case.inputs)
    serve = tf.saved_model.load(summary["saved_model"]).signatures["serving_default"]
    served = serve(**{name: tf.constant(v) for name, v in case.inputs.items()})
    np.testing.assert_allclose(
        case.served_outputs(served, case.inputs), expected, rtol=1e-4, atol=1e-5
    )
