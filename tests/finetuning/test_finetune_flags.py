"""`finetune/run.py` flags that do not fit the run: each is one line (exit
status 2) before anything is trained or written, and a previous run in
`--output-dir` is kept unless `--overwrite`. No model is built here."""

import dataclasses
import json
import pathlib

import pytest

import electra_tf.finetuning.finetune
from electra_tf.cli.finetune import main, parse_args
from electra_tf.config import ConfigError, FinetuningConfig
from electra_tf.finetuning.classification import ClassificationTask
from electra_tf.finetuning.files import check_output_dir
from electra_tf.finetuning.question_answering import (
    QuestionAnsweringConfig,
    QuestionAnsweringTask,
)
from electra_tf.finetuning.settings import (
    FinetuningFlags,
    flag_overrides,
    resolve_finetuning_config,
)
from electra_tf.finetuning.tagging import TaggingConfig, TaggingTask

REPO = pathlib.Path(__file__).resolve().parents[2]
GLUE = ["--pretrained", "none", "--data-dir", str(REPO / "tests/fixtures/glue")]
SQUAD = ["--pretrained", "none", "--data-dir", str(REPO / "tests/fixtures/squad")]
TAGGING = ["--task", "tagging", "--pretrained", "none"]


def _error(capsys, argv):
    assert main(argv) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("error: ")
    return line.removeprefix("error: ")


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            [*TAGGING, "--max-seq-length", "2"],
            "max_seq_length must be at least 8 ([CLS], [SEP] and some text), got 2",
        ),
        (
            [*GLUE, "--hparams", '{"max_seq_length": 1}'],
            "max_seq_length must be at least 8 ([CLS], [SEP] and some text), got 1",
        ),
        ([*GLUE, "--epochs", "0"], "--epochs must be >= 1, got 0"),
        ([*TAGGING, "--epochs", "0"], "--epochs must be >= 1, got 0"),
        (["--task", "squad1", *SQUAD, "--epochs", "0"], "--epochs must be >= 1, got 0"),
        (
            ["--task", "squad1", *SQUAD, "--train-file", "train.json"],
            "--train-file does not apply to --task squad1, which reads --data-dir "
            "or --tfds",
        ),
        (
            ["--task", "squad2", *SQUAD, "--label-column", "answer"],
            "--label-column does not apply to --task squad2, which reads "
            "--data-dir or --tfds",
        ),
        (
            [*TAGGING, "--text-columns", "word"],
            "--text-columns does not apply to --task tagging (CoNLL files: the "
            "word first, its tag last)",
        ),
        (
            [*GLUE, "--task", "rte", "--label-type", "regression"],
            "--label-type does not apply to GLUE task rte (it is for your own "
            "--train-file)",
        ),
        (
            [*GLUE, "--test-file", "test.csv"],
            "--test-file does not apply to GLUE task sst2 (it is for your own "
            "--train-file)",
        ),
        (
            [*TAGGING, "--data-dir", "conll"],
            "--task tagging reads CoNLL files (--train-file, --dev-file) or "
            "--tfds (conll2003), not --data-dir",
        ),
        (
            [*TAGGING, "--tfds", "--train-file", "t.conll", "--dev-file", "d.conll"],
            "--task tagging: --tfds or your own files, choose one",
        ),
        (
            [*TAGGING, "--hparams", '{"pooling": "mean"}'],
            "--hparams pooling does not apply to --task tagging (it is for "
            "classification and regression)",
        ),
        (
            ["--task", "squad2", *SQUAD, "--hparams", '{"head_dropout": 0.2}'],
            "--hparams head_dropout does not apply to --task squad2 (the span head "
            "has no dropout)",
        ),
        (
            [*TAGGING, "--hparams", '{"loss_reduction": "total"}'],
            "loss_reduction must be one of ('mean', 'sum'), got 'total'",
        ),
        (
            [*GLUE, "--hparams", '{"loss_reduction": "Sum"}'],
            "loss_reduction must be one of ('mean', 'sum'), got 'Sum'",
        ),
        (
            ["--task", "squad1", *SQUAD, "--hparams", '{"loss_reduction": "sum"}'],
            "--hparams loss_reduction does not apply to --task squad1 (the span "
            "loss is the mean over the windows)",
        ),
    ],
    ids=[
        "max-seq-length-2-tagging",
        "max-seq-length-1-classification",
        "epochs-0-glue",
        "epochs-0-tagging",
        "epochs-0-squad",
        "train-file-squad",
        "label-column-squad",
        "text-columns-tagging",
        "label-type-glue",
        "test-file-glue",
        "data-dir-tagging",
        "tfds-and-files-tagging",
        "hparams-pooling-tagging",
        "hparams-head-dropout-squad",
        "hparams-loss-reduction-tagging",
        "hparams-loss-reduction-glue",
        "hparams-loss-reduction-squad",
    ],
)
def test_flags_that_do_not_fit_are_one_line(argv, message, capsys):
    """Each is one line before training: `--max-seq-length 2` (was: a `ValueError`
    traceback; at 1, a model that saw no text), `--epochs 0` (was: silently the
    task's 3), flags of own files with a task that does not read them and
    `--hparams` keys a task does not read (were: ignored, or `Unknown hparam` for
    SQuAD)."""
    assert _error(capsys, argv) == message


def test_an_unknown_task_lists_every_kind(capsys):
    """Was: "Unknown GLUE task 'ner'; choose one of cola, ..., ax", naming no
    other kind."""
    message = _error(capsys, ["--task", "ner", *GLUE])
    assert message.startswith("unknown --task 'ner'; choose a GLUE task (cola, sst2")
    assert message.endswith(
        "), tagging, squad1, squad2, mrqa, or no --task for your own "
        "classification or regression --train-file"
    )


def test_a_directory_without_an_extension_as_train_file_says_so(capsys, tmp_path):
    """Was: "unknown file type; name it .csv, ..."."""
    (tmp_path / "data").mkdir()
    path = tmp_path / "data"
    message = _error(
        capsys, ["--pretrained", "none", "--train-file", str(path), "--dev-file", "d"]
    )
    assert message == (
        f"{path} is a directory, not a data file; give a .csv, .tsv or .jsonl file"
    )


def _previous_run(directory: pathlib.Path) -> dict[pathlib.Path, bytes]:
    files = {
        directory / "metrics.json": json.dumps({"task": "sst2"}).encode(),
        directory / "logs" / "seed_1" / "events.out.tfevents.1": b"events",
        directory / "dev_predictions.tsv": b"index\tprediction\n0\t1\n",
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


@pytest.mark.parametrize(
    "argv", [GLUE, [*TAGGING], ["--task", "squad1", *SQUAD]], ids=str
)
def test_a_reused_output_dir_is_refused_and_kept(argv, capsys, tmp_path):
    files = _previous_run(tmp_path / "run")
    message = _error(capsys, [*argv, "--output-dir", str(tmp_path / "run")])
    assert message == (
        f"--output-dir {tmp_path / 'run'} holds a previous run (metrics.json); "
        "pass --overwrite to replace it, or choose another directory"
    )
    assert {path: path.read_bytes() for path in files} == files


def test_overwrite_deletes_the_previous_runs_tensorboard_logs(tmp_path):
    files = _previous_run(tmp_path)
    check_output_dir(str(tmp_path), overwrite=True)
    assert not (tmp_path / "logs").exists()
    assert (tmp_path / "metrics.json").read_bytes() == files[tmp_path / "metrics.json"]
    check_output_dir(str(tmp_path / "new"), overwrite=False)  # nothing there


def _logged_recipe(flags, caplog, monkeypatch):
    """The recipe line `finetune(flags)` logs, and the config the run gets
    (the run itself stubbed: no model is built)."""
    given = {}

    def run_finetuning(task, *args, **kwargs):
        given["task"] = task
        return {}

    module = electra_tf.finetuning.finetune
    monkeypatch.setattr(module, "run_finetuning", run_finetuning)
    caplog.set_level("INFO", logger=module.__name__)
    module.finetune(flags)
    (line,) = [m for m in caplog.messages if " recipe for " in m]
    caplog.clear()
    return line, given["task"]


def test_the_tagging_log_shows_only_settings_that_apply_to_tagging(
    caplog, monkeypatch, tmp_path
):
    """The tagging run's logged recipe and `metrics.json` `config` showed `pooling` and
    `swap_pairs`, which tagging never reads; now only the settings tagging reads,
    while classification runs still show them."""
    flags = FinetuningFlags(task="tagging", pretrained="none", max_seq_length=64)
    line, task = _logged_recipe(
        dataclasses.replace(flags, output_dir=str(tmp_path / "tagging")),
        caplog,
        monkeypatch,
    )
    assert isinstance(task, TaggingTask) and task.config.max_seq_length == 64
    assert line.startswith("tiny recipe for tagging: {")
    assert "'max_seq_length': 64" in line and "'reinit_layers': 0" in line
    for name in ("pooling", "swap_pairs"):
        assert f"'{name}'" not in line
        assert name not in task.settings()
    # A classification run reads them, and shows them.
    line, _ = _logged_recipe(
        FinetuningFlags(data_dir=GLUE[-1], pretrained="none", output_dir=str(tmp_path)),
        caplog,
        monkeypatch,
    )
    assert line.startswith("tiny recipe for sst2: {")
    assert "'pooling': 'cls'" in line and "'swap_pairs': True" in line


def test_max_seq_length_flag_reaches_every_config():
    flags = FinetuningFlags(max_seq_length=96, epochs=2)
    encoder = {"hidden_dim": 64, "max_sequence_length": 128, "num_segments": 2}
    for kind in (ClassificationTask, TaggingTask, QuestionAnsweringTask):
        size, config = resolve_finetuning_config(
            flags, kind, encoder, jit_compile=False
        )
        assert size == "tiny" and isinstance(config, kind.config_class)
        assert (config.max_seq_length, config.epochs) == (96, 2)
    # --hparams still wins over the flag, as for every other field.
    flags = FinetuningFlags(max_seq_length=64, hparams='{"max_seq_length": 32}')
    _, config = resolve_finetuning_config(
        flags, ClassificationTask, encoder, jit_compile=False
    )
    assert config.max_seq_length == 32
    with pytest.raises(ConfigError, match="--epochs must be >= 1, got -1"):
        flag_overrides(FinetuningFlags(epochs=-1))


def test_help_names_max_seq_length_and_overwrite(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--max-seq-length MAX_SEQ_LENGTH Tokens per example" in text
    assert "is refused unless --overwrite" in text
    assert "--overwrite Replace a previous run in --output-dir" in text
    assert "--epochs EPOCHS >= 1;" in text


def test_help_says_which_keys_hparams_takes_and_how_json_files_are_read(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "--hparams HPARAMS JSON object of recipe fields: FinetuningConfig's (e.g. "
        "'{\"warmup_fraction\": 0.05}'); for SQuAD and MRQA, QuestionAnsweringConfig's "
        "(e.g. doc_stride); for tagging, TaggingConfig's (segment_id). Unknown keys "
        "are an error."
    ) in text
    assert "JSON Lines (.jsonl; .json: lines or one array)" in text
    # The keys named there are the configs' own.
    assert "warmup_fraction" in {f.name for f in dataclasses.fields(FinetuningConfig)}
    assert "doc_stride" in {f.name for f in dataclasses.fields(QuestionAnsweringConfig)}
    assert "doc_stride" not in {f.name for f in dataclasses.fields(FinetuningConfig)}
    assert "segment_id" in {f.name for f in dataclasses.fields(TaggingConfig)}
    assert "segment_id" not in {f.name for f in dataclasses.fields(FinetuningConfig)}


@pytest.mark.parametrize("task", ["sst2", "squad1"])
def test_a_missing_default_pretrained_names_where_it_looked(
    task, capsys, tmp_path, monkeypatch
):
    # The default --pretrained is relative to the working directory, as is
    # pre-training's --model-dir: the error names the absolute path and the
    # command that writes it there.
    monkeypatch.chdir(tmp_path)
    data = REPO / "tests/fixtures" / ("glue" if task == "sst2" else "squad")
    message = _error(capsys, ["--task", task, "--data-dir", str(data)])
    assert message == (
        f"no pre-trained model at {tmp_path / 'runs/pretrain/export/discriminator'} "
        "(the default --pretrained, runs/pretrain/export/discriminator, under the "
        f"current directory): run `python pretrain/run.py` (or `electra-pretrain`) "
        f"in {tmp_path} first, which exports it there; or pass --pretrained PATH, "
        "or --pretrained none"
    )
