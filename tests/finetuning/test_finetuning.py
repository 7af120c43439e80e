"""The fine-tuning run (library and command line) on the GLUE fixtures."""

import dataclasses
import json
import logging
import pathlib
import shutil
import warnings

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

import electra_tf.cli.finetune
import electra_tf.finetuning.finetune
from electra_tf.config import ConfigError, FinetuningConfig
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.finetuning.classification import (
    ClassificationTask,
    build_classifier,
    load_task_data,
)
from electra_tf.finetuning.glue_readers import GlueExamples, TaskData
from electra_tf.finetuning.glue_tasks import get_task
from electra_tf.finetuning.settings import FinetuningFlags
from electra_tf.finetuning.starting_point import StartingPoint, random_init_model
from electra_tf.finetuning.tagging import TaggingConfig, build_token_classifier
from electra_tf.finetuning.trainer import (
    finetune_seed,
    make_optimizer,
    run_finetuning,
)
from electra_tf.optimization.schedule import WarmupPolynomialDecay
from electra_tf.presets import RECIPES, get_preset, recipe_for_width
from tests.helpers import TINY_VOCABULARY_SIZE

REPO = pathlib.Path(__file__).resolve().parents[2]
GLUE_DIR = REPO / "tests" / "fixtures" / "glue"
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCABULARY = SPECIAL + [f"word{i}" for i in range(TINY_VOCABULARY_SIZE - 5)]


def tiny_model_config():
    return get_preset("tiny").model.override(
        vocabulary_size=TINY_VOCABULARY_SIZE, max_sequence_length=32
    )


def test_recipe():
    assert RECIPES["small"].learning_rate == 3e-4
    assert RECIPES["base"].learning_rate == 1e-4
    assert RECIPES["large"].learning_rate == 5e-5
    assert [RECIPES[s].layerwise_decay for s in ("small", "base", "large")] == [
        0.8,
        0.8,
        0.9,
    ]
    config = FinetuningConfig()
    assert (config.batch_size, config.max_seq_length, config.warmup_fraction) == (
        32,
        128,
        0.1,
    )
    assert config.weight_decay == 0.01 and config.swap_pairs
    assert recipe_for_width(256)[0] == "small"
    assert recipe_for_width(1024)[0] == "large"
    with pytest.raises(ConfigError, match="Unknown hparam 'learnin_rate'"):
        config.override(learnin_rate=1e-3)
    with pytest.raises(ConfigError, match="layerwise_decay must be in"):
        config.override(layerwise_decay=1.5)
    with pytest.raises(ConfigError, match=r"encoder_dropout must be in \[0, 1\)"):
        config.override(encoder_dropout=1.0)
    assert config.pooling == "cls"  # the original's head
    with pytest.raises(ConfigError, match="pooling must be one of"):
        config.override(pooling="max")
    assert config.reinit_layers == 0  # the whole encoder is transferred
    with pytest.raises(ConfigError, match="reinit_layers must be >= 0"):
        config.override(reinit_layers=-1)


def test_random_encoder_gets_the_fine_tuning_dropout_not_the_presets():
    # Both arms of a comparison fine-tune with the same encoder dropout.
    classifier = build_classifier(
        get_task("sst2"),
        FinetuningConfig(encoder_dropout=0.25, max_seq_length=32, pooling="mean"),
        StartingPoint(
            None,
            tiny_model_config().override(dropout=0.0),
            Vocabulary(tuple(VOCABULARY)),
        ),
    )
    assert classifier.backbone.dropout == 0.25
    assert classifier.pooling == "mean"


def _saved_preset(path):
    """A tiny encoder saved as a keras-hub preset, every weight set to 0.5 so
    that a re-drawn weight cannot be mistaken for a loaded one."""
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.models.keras_hub_preset import save_keras_hub_preset

    encoder = ElectraEncoder.discriminator_from_config(tiny_model_config())
    encoder.set_weights([np.full(w.shape, 0.5, "float32") for w in encoder.weights])
    save_keras_hub_preset(encoder, Vocabulary(tuple(VOCABULARY)), str(path))
    return path


def test_random_init_rebuilds_a_preset_directory_without_its_weights(tmp_path):
    # `--pretrained none --preset <export>`: the same model, not pre-trained.
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.models.keras_hub_preset import (
        PretrainedModelError,
        save_keras_hub_preset,
    )

    architecture = dict(num_layers=3, hidden_dim=48, embedding_dim=24, num_heads=3)
    encoder = ElectraEncoder.discriminator_from_config(
        tiny_model_config().override(**architecture, intermediate_dim=96)
    )
    encoder.set_weights([np.full(w.shape, 0.5, "float32") for w in encoder.weights])
    # keras-hub's learner writes a " " token (the demo vocabulary has one);
    # keras-hub's own loader would strip it to an empty token.
    cased = Vocabulary(tuple(VOCABULARY[:-1] + [" "]), lowercase=False)
    save_keras_hub_preset(encoder, cased, str(tmp_path / "export"))

    flags = FinetuningFlags(pretrained="none", preset=str(tmp_path / "export"))
    model_config, vocabulary = random_init_model(flags)
    assert {k: getattr(model_config, k) for k in architecture} == architecture
    assert model_config.intermediate_dim == 96
    assert model_config.max_sequence_length == 32
    assert model_config.vocabulary_size == TINY_VOCABULARY_SIZE
    assert model_config.initializer_range == 0.02  # BERT's, not the preset's
    assert vocabulary.tokens == cased.tokens and not vocabulary.lowercase
    classifier = build_classifier(
        get_task("sst2"),
        FinetuningConfig(max_seq_length=32),
        StartingPoint(None, model_config, vocabulary),
    )
    kernels = [w for w in classifier.backbone.weights if len(w.shape) == 2]
    assert kernels and all(not np.any(w.numpy() == 0.5) for w in kernels)

    # --vocab replaces the directory's vocabulary, with --no-lowercase's casing.
    other = tmp_path / "vocab.txt"
    other.write_text("\n".join(VOCABULARY[:150]) + "\n")
    _, vocabulary = random_init_model(
        dataclasses.replace(flags, vocab=str(other), lowercase=True)
    )
    assert vocabulary.size == 150 and vocabulary.lowercase
    # A size of ours still means that size, with the bundled vocabulary.
    model_config, vocabulary = random_init_model(FinetuningFlags(preset="tiny"))
    assert model_config.hidden_dim == 64 and vocabulary.size == 30522
    with pytest.raises(ConfigError, match="--preset 'huge' is neither one of tiny"):
        random_init_model(FinetuningFlags(preset="huge"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(PretrainedModelError, match="config.json is missing"):
        random_init_model(FinetuningFlags(preset=str(tmp_path / "empty")))


def test_reinit_layers_redraws_only_the_top_blocks(tmp_path):
    preset = _saved_preset(tmp_path / "discriminator")
    config = FinetuningConfig(max_seq_length=32, reinit_layers=1)
    classifier = build_classifier(get_task("sst2"), config, StartingPoint(str(preset)))
    for weight in classifier.backbone.weights:
        value = keras.ops.convert_to_numpy(weight)
        if not weight.path.startswith("transformer_layer_1/"):
            np.testing.assert_array_equal(value, 0.5, err_msg=weight.path)
        elif weight.path.endswith("gamma"):
            np.testing.assert_array_equal(value, 1.0, err_msg=weight.path)
        elif weight.path.endswith(("beta", "bias")):
            np.testing.assert_array_equal(value, 0.0, err_msg=weight.path)
        else:  # kernels: BERT's truncated normal, whatever the preset's range
            assert 0.01 < value.std() < 0.03 and abs(value.mean()) < 0.01, weight.path
    assert classifier.backbone.transformer_layers[0].get_weights()[0].std() == 0.0
    # The tagger reads the same setting.
    tagger = build_token_classifier(
        ["DET", "NOUN"],
        TaggingConfig(**config.to_dict()).override(reinit_layers=2),
        StartingPoint(str(preset)),
    )
    for layer in tagger.backbone.transformer_layers:
        assert 0.01 < layer.get_weights()[0].std() < 0.03
    np.testing.assert_array_equal(tagger.backbone.token_embedding.get_weights()[0], 0.5)


def test_optimizer_follows_the_recipe():
    config = FinetuningConfig(learning_rate=1e-4, layerwise_decay=0.8)
    optimizer = make_optimizer(config, num_layers=12, total_steps=1000)
    schedule = optimizer._learning_rate
    assert isinstance(schedule, WarmupPolynomialDecay)
    assert (schedule.warmup_steps, schedule.total_steps) == (100, 1000)
    assert optimizer.weight_decay == 0.01 and optimizer.epsilon == 1e-6
    assert optimizer.global_clipnorm == 1.0
    assert optimizer.learning_rate_multiplier(
        "transformer_layer_11/self_attention_layer/query/kernel"
    ) == pytest.approx(0.8**2)
    assert optimizer.learning_rate_multiplier("output_dense/kernel") == 1.0


class CountingTask(ClassificationTask):
    """Records, at each epoch's end, how many examples the epoch trained on
    (the loss tracker's count, before dev evaluation resets it)."""

    trained: list[int]

    def evaluate(self, model, logs):
        (loss,) = [m for m in model.metrics if m.name == "loss"]
        self.trained.append(int(loss.count.numpy()))
        return super().evaluate(model, logs)


def test_grouped_training_trains_every_example_in_the_counted_steps():
    # Seven sentences of different lengths, fewer than a batch: grouping by
    # length once dropped every group's partial batch and trained no step
    # at all, while the schedule counted one step an epoch and Keras warned
    # that the input ran out of data.
    words = [1, 2, 9, 10, 17, 25, 33]
    train = GlueExamples(
        task=get_task("sst2"),
        split="train",
        texts=(tuple(" ".join(VOCABULARY[5 : 5 + n]) for n in words),),
        labels=np.array([0, 1, 0, 1, 0, 1, 0], np.int32),
    )
    config = FinetuningConfig(
        learning_rate=1e-3, epochs=2, batch_size=8, max_seq_length=32
    )
    assert config.group_by_length and not config.jit_compile
    start = StartingPoint(None, tiny_model_config(), Vocabulary(tuple(VOCABULARY)))
    task = CountingTask(TaskData(train, {"dev": train}, {}), config, start)
    task.trained = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, _ = finetune_seed(task, seed=1, verbose=0)
    assert not [w for w in caught if "ran out of data" in str(w.message)]
    steps = 1  # seven examples, batches of 8
    assert task.trained == [7, 7]
    assert int(model.optimizer.iterations) == 2 * steps
    assert model.optimizer._learning_rate.total_steps == 2 * steps


@pytest.fixture(scope="module")
def mnli_run(tmp_path_factory):
    """Two seeds x two epochs of MNLI (two dev sets, two test sets, and AX)."""
    output_dir = tmp_path_factory.mktemp("mnli")
    task = get_task("mnli")
    config = FinetuningConfig(
        learning_rate=1e-3, epochs=2, batch_size=2, max_seq_length=32
    )
    start = StartingPoint(None, tiny_model_config(), Vocabulary(tuple(VOCABULARY)))
    classification = ClassificationTask(
        load_task_data(task, str(GLUE_DIR)), config, start
    )

    # The run's log (caplog is per test; this fixture serves the module).
    records = []
    handler = logging.Handler(logging.INFO)
    handler.emit = records.append
    logger = logging.getLogger("electra_tf.finetuning")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        summary = run_finetuning(
            classification,
            str(output_dir),
            seeds=(1, 2),
            run_info={"pretrained": "none"},
            verbose=0,
        )
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return output_dir, summary, [record.getMessage() for record in records]


def test_run_writes_metrics_per_seed_epoch_and_median(mnli_run):
    output_dir, summary, _ = mnli_run
    on_disk = json.loads((output_dir / "metrics.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    assert set(on_disk["seeds"]) == {"1", "2"}
    for results in on_disk["seeds"].values():
        assert [e["epoch"] for e in results["epochs"]] == [1, 2]
        for epoch in results["epochs"]:
            assert set(epoch["dev"]) == {"dev_matched", "dev_mismatched"}
            assert set(epoch["dev"]["dev_matched"]) == {"loss", "accuracy"}
        best = results["epochs"][results["best_epoch"] - 1]
        assert (
            results["score"]
            == best["score"]
            == max(e["score"] for e in results["epochs"])
        )
    scores = sorted(s["score"] for s in on_disk["seeds"].values())
    assert on_disk["median"]["score"] == pytest.approx(sum(scores) / 2)
    assert on_disk["best_seed"] in (1, 2)
    assert on_disk["epochs"] == 2 and on_disk["pretrained"] == "none"
    # The task's evaluate puts dev results in the epoch logs as val_*, which
    # Keras' TensorBoard callback writes to the "validation" run.
    for seed in ("seed_1", "seed_2"):
        (events,) = (output_dir / "logs" / seed / "validation").iterdir()
        tags = {
            value.tag
            for event in tf.compat.v1.train.summary_iterator(str(events))
            for value in event.summary.value
        }
        assert {"epoch_accuracy", "epoch_dev_mismatched_accuracy"} <= tags


def test_the_run_logs_and_records_what_its_score_is(mnli_run):
    """The `score` (a mean of metrics for MRPC, QQP, STS-B and own files) was
    unexplained; each run logs what it is once, before training (`mnli: score =
    dev accuracy; it picks each seed's best epoch and the best seed`), and
    records it in `metrics.json` (`score_definition`)."""
    output_dir, summary, log = mnli_run
    explanation = (
        "mnli: score = dev accuracy; it picks each seed's best epoch and the best seed"
    )
    assert log.count(explanation) == 1  # once per run, before the epoch lines
    assert log.index(explanation) < min(
        i for i, line in enumerate(log) if line.startswith("epoch 1: dev")
    )
    on_disk = json.loads((output_dir / "metrics.json").read_text())
    assert on_disk["score_definition"] == summary["score_definition"] == "dev accuracy"


def test_run_writes_glue_submissions(mnli_run):
    output_dir, _, _ = mnli_run
    submission = output_dir / "submission"
    assert sorted(p.name for p in submission.iterdir()) == [
        "AX.tsv",
        "MNLI-m.tsv",
        "MNLI-mm.tsv",
    ]
    rows = (submission / "MNLI-mm.tsv").read_text().splitlines()
    assert rows[0] == "index\tprediction" and len(rows) == 3
    labels = {"entailment", "neutral", "contradiction"}
    for name, count in (("MNLI-m.tsv", 1), ("MNLI-mm.tsv", 2), ("AX.tsv", 3)):
        rows = (submission / name).read_text().splitlines()[1:]
        assert [r.split("\t")[0] for r in rows] == [str(i) for i in range(count)]
        assert {r.split("\t")[1] for r in rows} <= labels


def test_run_exports_a_raw_text_saved_model(mnli_run):
    output_dir, _, _ = mnli_run
    serve = tf.saved_model.load(str(output_dir / "saved_model")).signatures[
        "serving_default"
    ]
    outputs = serve(
        premise=tf.constant(["The cat sat on the mat.", "Then he ran."]),
        hypothesis=tf.constant(["The cat did not sit.", "He ran away."]),
    )
    assert outputs["probabilities"].shape == (2, 3)
    assert set(outputs["label"].numpy().tolist()) <= {
        b"entailment",
        b"neutral",
        b"contradiction",
    }
    assert (output_dir / "classifier.keras").exists()


def test_raw_text_export_is_robust_and_matches_keras(mnli_run):
    """Empty, very long, invalid UTF-8 and non-ASCII text, in one mixed batch,
    give the Keras classifier's probabilities."""
    output_dir, _, _ = mnli_run
    serve = tf.saved_model.load(str(output_dir / "saved_model")).signatures[
        "serving_default"
    ]
    premises = [
        "The cat sat on the mat.",
        "",
        "a very long premise " * 5000,
        "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u6f22\u5b57 \U0001f600",
    ]
    hypotheses = ["The cat did not sit.", "", "short", "\u00fcber"]
    served = serve(premise=tf.constant(premises), hypothesis=tf.constant(hypotheses))
    probabilities = served["probabilities"].numpy()
    assert np.isfinite(probabilities).all()
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)

    classifier = keras.models.load_model(output_dir / "classifier.keras")
    expected = keras.ops.softmax(
        classifier.predict((tf.constant(premises), tf.constant(hypotheses)), verbose=0)
    )
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)

    broken = serve(
        premise=tf.constant([b"\xff\xfe broken \xc3\x28 bytes", b"fine"]),
        hypothesis=tf.constant([b"ok", b"\x80"]),
    )["probabilities"].numpy()
    assert np.isfinite(broken).all() and broken.shape == (2, 3)


# --- The command line -------------------------------------------------------


@pytest.fixture(scope="module")
def cli():
    return electra_tf.cli.finetune


def _error(cli, capsys, *argv):
    assert cli.main(list(argv)) == 2
    message = capsys.readouterr().err.strip()
    assert message.startswith("error: ") and "\n" not in message
    return message


def test_cli_demo_needs_the_pretraining_demo(cli, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no runs/pretrain/export here
    message = _error(cli, capsys)
    # Where it looked, and how to make it or do without it.
    assert f"no pre-trained model at {tmp_path}" in message
    assert "run `python pretrain/run.py`" in message and "first" in message
    assert "--pretrained none" in message
    assert "--pretrained none" in message


def test_cli_result_line_says_what_the_score_is(cli, caplog, monkeypatch):
    summary = {
        "task": "mrpc",
        "seeds": {"1": {}, "2": {}, "3": {}},
        "median": {"dev": {"dev": {"accuracy": 0.7, "f1": 0.8}}, "score": 0.75},
        "score_definition": "the mean of dev accuracy, f1",
    }
    # The command line runs `finetune` from its library module once parsed.
    monkeypatch.setattr(
        electra_tf.finetuning.finetune, "finetune", lambda flags: ("runs/mrpc", summary)
    )
    caplog.set_level(logging.INFO)
    assert cli.main(["--task", "mrpc"]) == 0
    assert (
        'mrpc dev, median of 3 seeds: {"dev": {"accuracy": 0.7, "f1": 0.8}} '
        "(score 0.7500 = the mean of dev accuracy, f1)"
    ) in caplog.messages


def test_a_labelled_test_split_is_logged_with_the_seed_whose_model_scored_it(
    caplog, monkeypatch, tmp_path
):
    from electra_tf.finetuning import trainer
    from electra_tf.finetuning.task import FinetuningTask

    class Model:
        def save(self, path):
            pathlib.Path(path).write_text("model")

    class Task(FinetuningTask):
        name, model_file = "tagging", "tagger.keras"

        def __init__(self):
            self.config = FinetuningConfig()

        def settings(self):
            return {}

        def score_definition(self):
            return "dev token accuracy"

        def write_outputs(self, model, output_dir):
            return {"test": {"accuracy": 0.875}}

    Task.epochs = 1
    scores = {1: 0.8, 2: 0.9}
    monkeypatch.setattr(
        trainer,
        "finetune_seed",
        lambda task, seed, log_dir, verbose: (
            Model(),
            {"seed": seed, "dev": {}, "score": scores[seed]},
        ),
    )
    caplog.set_level(logging.INFO)
    summary = trainer.run_finetuning(Task(), str(tmp_path), seeds=(1, 2))
    assert summary["test"] == {"accuracy": 0.875} and summary["best_seed"] == 2
    assert (
        "tagging test, scored once with seed 2's model: {'accuracy': 0.875}"
        in caplog.messages
    )


def test_cli_help_says_what_the_score_is(cli, capsys):
    with pytest.raises(SystemExit):
        cli.parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "The `score` logged and in metrics.json picks the best epoch and seed" in text
    )
    assert "the mean of the task's dev metrics" in text


def test_cli_bad_flags(cli, capsys):
    assert "unknown --task 'squad'" in _error(cli, capsys, "--task", "squad")
    assert "demo data is for sst2 only" in _error(cli, capsys, "--task", "cola")
    message = _error(
        cli, capsys, "--pretrained", "none", "--hparams", '{"learnin_rate": 1}'
    )
    assert "Unknown hparam 'learnin_rate'" in message
    assert "--seeds" in _error(cli, capsys, "--seeds", "1,x")
    glue = ["--pretrained", "none", "--data-dir", str(GLUE_DIR)]
    message = _error(cli, capsys, *glue, "--train-examples", "7")
    assert "--train-examples must be between 1 and the 6 training examples" in message
    assert "got 0" in _error(cli, capsys, *glue, "--train-examples", "0")
    for task in ("tagging", "squad1"):
        message = _error(cli, capsys, "--task", task, "--train-examples", "1")
        assert f"--train-examples does not apply to --task {task}" in message
    message = _error(
        cli, capsys, "--pretrained", "missing/preset", "--data-dir", str(GLUE_DIR)
    )
    assert "missing/preset is not a keras-hub preset directory" in message
    message = _error(cli, capsys, *glue, "--preset", "huge")
    assert "--preset 'huge' is neither one of tiny" in message


def test_cli_bad_data(cli, capsys, tmp_path):
    shutil.copytree(GLUE_DIR / "RTE", tmp_path / "RTE")
    train = tmp_path / "RTE" / "train.tsv"
    train.write_text(train.read_text().replace("\tnot_entailment\n", "\tmaybe\n", 1))
    args = ["--task", "rte", "--data-dir", str(tmp_path), "--pretrained", "none"]
    message = _error(cli, capsys, *args)
    assert f"{train}, line 2: label 'maybe' is not one of" in message
    (tmp_path / "RTE" / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n")
    train.write_text((GLUE_DIR / "RTE" / "train.tsv").read_text())
    dev = tmp_path / "RTE" / "dev.tsv"
    assert f"{dev}: no examples (the split is empty)" in _error(cli, capsys, *args)
    assert "RTE train file not found" in _error(
        cli, capsys, "--task", "rte", "--data-dir", str(tmp_path / "nowhere")
    )


def test_cli_rejects_a_vocabulary_that_does_not_fit(cli, capsys, tmp_path):
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.models.keras_hub_preset import save_keras_hub_preset

    preset = tmp_path / "discriminator"
    encoder = ElectraEncoder.discriminator_from_config(tiny_model_config())
    save_keras_hub_preset(encoder, Vocabulary(tuple(VOCABULARY)), str(preset))
    # Re-save the tokenizer with a vocabulary of another size.
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=VOCABULARY[:150])
    tokenizer.save_to_preset(str(preset))
    message = _error(
        cli, capsys, "--pretrained", str(preset), "--data-dir", str(GLUE_DIR)
    )
    assert "the tokenizer has 150 tokens but the model's embedding has 200" in message


def test_cli_rejects_more_reinit_layers_than_the_encoder_has(cli, capsys, tmp_path):
    preset = _saved_preset(tmp_path / "discriminator")
    message = _error(
        cli,
        capsys,
        "--pretrained",
        str(preset),
        "--data-dir",
        str(GLUE_DIR),
        "--hparams",
        '{"reinit_layers": 3}',
    )
    assert f"reinit_layers is 3, but {preset} has 2 transformer layers" in message


def test_cli_own_files_and_tagging_bad_inputs(cli, capsys, tmp_path):
    train = tmp_path / "train.csv"
    train.write_text("text,label\ngood,pos\nbad,neg\n")
    dev = tmp_path / "dev.csv"
    dev.write_text("text,label\nok,pos\nmeh,neutral\n")
    own = ["--train-file", str(train), "--dev-file", str(dev), "--pretrained", "none"]
    message = _error(cli, capsys, *own)
    assert f"{dev}, line 3: label 'neutral' does not occur" in message
    message = _error(cli, capsys, *own, "--text-columns", "review")
    assert f"{train}, line 1: no column 'review'" in message
    assert "needs no --task" in _error(cli, capsys, *own, "--task", "mnli")
    assert "go together" in _error(cli, capsys, "--train-file", str(train))
    conll = tmp_path / "dev.conll"
    conll.write_text("The\tDET\ncat\tNOUN\tX\n")
    message = _error(
        cli,
        capsys,
        "--task",
        "tagging",
        "--pretrained",
        "none",
        "--train-file",
        str(conll),
        "--dev-file",
        str(conll),
    )
    assert f"{conll}, line 2: 3 columns" in message
