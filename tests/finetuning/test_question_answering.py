"""The SQuAD fine-tuning run writes the official files and a working export.

Slow (one tiny model trained, evaluated, exported): run with `-m slow`.
"""

import json
import pathlib
import shutil

import pytest

from electra_tf.config import ConfigError, ModelConfig
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.finetuning.question_answering import (
    QuestionAnsweringConfig,
    QuestionAnsweringTask,
    build_question_answerer,
    fit_to_encoder,
    load_squad_data,
)
from electra_tf.finetuning.squad_data import load_squad_split
from electra_tf.finetuning.squad_metrics import evaluate_v2
from electra_tf.finetuning.starting_point import StartingPoint
from electra_tf.finetuning.trainer import run_finetuning
from electra_tf.presets import RECIPES

REPO = pathlib.Path(__file__).parents[2]
FIXTURE = str(REPO / "tests" / "fixtures" / "squad")


@pytest.mark.slow
def test_squad2_run_writes_metrics_predictions_and_exports(tmp_path):
    """`finetune/run.py --task squad2 --data-dir ...` through the library."""
    vocabulary = Vocabulary.from_file(REPO / "electra_tf/assets/vocab.txt")
    model_config = ModelConfig(
        vocabulary_size=vocabulary.size,
        num_layers=1,
        hidden_dim=32,
        embedding_dim=16,
        num_heads=2,
        max_sequence_length=64,
    )
    config = QuestionAnsweringConfig(
        learning_rate=1e-3,
        epochs=2,
        batch_size=16,
        max_seq_length=64,
        max_query_length=16,
        doc_stride=32,
        head_hidden_dim=16,
        beam_size=8,
    )
    # One training answer off its answer_start: kept, but not trained on.
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    shutil.copy(pathlib.Path(FIXTURE) / "dev-v2.0.json", data_dir)
    train = json.loads((pathlib.Path(FIXTURE) / "train-v2.0.json").read_text())
    train["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] += 1
    (data_dir / "train-v2.0.json").write_text(json.dumps(train))
    dev = load_squad_split(2, "dev", FIXTURE)
    task = QuestionAnsweringTask(
        load_squad_data(2, str(data_dir)),
        config,
        StartingPoint(None, model_config, vocabulary),
    )
    summary = run_finetuning(task, str(tmp_path), verbose=0)
    assert summary["config"]["doc_stride"] == 32
    assert "pooling" not in summary["config"]  # only what question answering reads
    metrics = json.loads((tmp_path / "metrics.json").read_text())
    assert metrics["best_seed"] == 1
    assert metrics["score_definition"] == (
        "dev best_f1 (F1 at the best no-answer threshold)"
    )
    assert metrics["seeds"]["1"]["score"] == metrics["seeds"]["1"]["dev"]["best_f1"]
    questions = len(load_squad_split(2, "train", FIXTURE))
    assert metrics["train_questions"] == questions - 1
    assert metrics["train_questions_misaligned"] == 1
    assert len(metrics["seeds"]["1"]["epochs"]) == 2
    dev_results = metrics["seeds"]["1"]["dev"]
    assert {"exact", "f1", "HasAns_f1", "NoAns_f1", "best_f1", "best_f1_thresh"} <= set(
        dev_results
    )
    predictions = json.loads((tmp_path / "predictions.json").read_text())
    null_odds = json.loads((tmp_path / "null_odds.json").read_text())
    assert set(predictions) == set(null_odds) == {e.qid for e in dev}
    # The written predictions score the best-threshold F1 with no threshold.
    golds = {e.qid: e.answer_texts for e in dev}
    assert evaluate_v2(golds, predictions)["f1"] == pytest.approx(
        dev_results["best_f1"]
    )
    assert (tmp_path / "saved_model" / "saved_model.pb").exists()
    assert summary["keras_model"].endswith("question_answerer.keras")


@pytest.mark.slow
def test_a_small_model_memorises_the_fixture_end_to_end():
    """Labels, head, span search and the mapping back to text agree: trained
    on the SQuAD 1.1 fixture until it memorises it, the model answers its
    training questions exactly (official EM 100)."""
    import keras

    from electra_tf.finetuning import length_grouping
    from electra_tf.finetuning.question_answering import (
        evaluate_answers,
        training_windows,
    )

    vocabulary = Vocabulary.from_file(REPO / "electra_tf/assets/vocab.txt")
    model_config = ModelConfig(
        vocabulary_size=vocabulary.size,
        num_layers=2,
        hidden_dim=64,
        embedding_dim=32,
        num_heads=2,
        max_sequence_length=64,
        dropout=0.0,
    )
    config = QuestionAnsweringConfig(
        max_seq_length=64,
        max_query_length=16,
        doc_stride=32,
        head_hidden_dim=32,
        beam_size=8,
    )
    train = load_squad_split(1, "train", FIXTURE)
    keras.utils.set_random_seed(1)
    model = build_question_answerer(
        1, config, StartingPoint(None, model_config, vocabulary)
    )
    windows = training_windows(model.preprocessor, train)
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    dataset = length_grouping.batches(windows, 32, shuffle=True, seed=1)
    model.fit(dataset, epochs=120, verbose=0)
    results, _, _ = evaluate_answers(model, train, version=1)
    assert results["exact_match"] == 100.0


def test_squad_without_data_is_one_clear_error():
    from electra_tf.finetuning.squad_data import SquadDataError

    with pytest.raises(SquadDataError, match="needs --data-dir"):
        load_squad_data(1)
    with pytest.raises(SquadDataError, match="train-v2.0.json: file not found"):
        load_squad_data(2, str(REPO / "nowhere"))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--task", "squad2", "--pretrained", "none"], "squad2 needs --data-dir"),
        (
            ["--task", "squad1", "--pretrained", "none", "--data-dir", "nowhere"],
            "train-v1.1.json: file not found",
        ),
        (
            [
                "--task",
                "squad2",
                "--pretrained",
                "none",
                "--data-dir",
                FIXTURE,
                "--hparams",
                '{"doc_strid": 64}',
            ],
            "Unknown hparam 'doc_strid'",
        ),
    ],
)
def test_the_command_line_answers_bad_squad_flags_in_one_line(argv, message, capsys):
    from electra_tf.cli.finetune import main

    assert main(argv) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: ") and message in error


def test_windows_follow_a_short_encoder_unless_set():
    """The CPU demo's export has 128 positions: the paper's 512-token windows
    would not fit, so the defaults follow the encoder (README's SQuAD command
    on README command 1's export)."""
    recipe = QuestionAnsweringTask.recipe(RECIPES["base"])  # 512-token windows
    assert isinstance(recipe, QuestionAnsweringConfig) and recipe.epochs == 0
    fitted = fit_to_encoder(recipe, 128, {})
    assert (fitted.max_seq_length, fitted.max_query_length) == (128, 64)
    short = fit_to_encoder(recipe, 128, {"max_seq_length": 64})
    assert (short.max_seq_length, short.max_query_length) == (64, 32)
    kept = fit_to_encoder(recipe, 512, {})
    assert (kept.max_seq_length, kept.max_query_length) == (512, 64)
    assert fit_to_encoder(recipe, 128, {"max_query_length": 20}).max_query_length == 20


def test_a_window_longer_than_the_encoder_names_the_setting():
    with pytest.raises(ConfigError, match="use --max-seq-length 128 or less"):
        fit_to_encoder(QuestionAnsweringConfig(), 128, {"max_seq_length": 256})
