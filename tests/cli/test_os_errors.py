"""Operating-system errors, for every command: an unreadable file, a
directory where a file is expected, a read-only or impossible output
directory get one line naming the path and what is wrong (exit 2), never a
traceback.

Tests run as root in CI's container, where `chmod` does not deny reads or
writes: there, the commands run without root's capabilities to override file
modes (`probe_bad_inputs.bound_by_file_modes`), so that `chmod` binds them.
"""

import os
import pathlib
import subprocess

import pytest
import tensorflow as tf

from electra_tf.cli import command_line
from scripts import probe_bad_inputs
from tests.helpers import SUBPROCESS_TIMEOUT

REPO = pathlib.Path(__file__).parents[2]

VOCABULARY = REPO / "electra_tf" / "assets" / "vocab.txt"
SENTENCES = "The committee met on Tuesday.\nThe chair moved the vote.\n"


def _raising(error):
    @command_line(lambda argv: None)
    def main(args):
        raise error

    return main


@pytest.mark.parametrize(
    "error, line",
    [
        (
            PermissionError(13, "Permission denied", "/d/x.txt"),
            "/d/x.txt: Permission denied",
        ),
        (
            IsADirectoryError(21, "Is a directory", "/d/t.csv"),
            "/d/t.csv: Is a directory",
        ),
        (
            tf.errors.PermissionDeniedError(
                None, None, "/d/run/config.json; Permission denied"
            ),
            "/d/run/config.json; Permission denied",
        ),
        (
            tf.errors.FailedPreconditionError(
                None, None, "/d/f/run is not a directory"
            ),
            "/d/f/run is not a directory",
        ),
        (
            tf.errors.FailedPreconditionError(None, None, "Could not find variable x"),
            None,
        ),
        (
            tf.errors.FailedPreconditionError(None, None, "/d/f; Not a directory"),
            "/d/f; Not a directory",
        ),
    ],
)
def test_command_line_prints_os_errors_in_one_line(capsys, error, line):
    if line is None:  # not recognisably about a file: a bug, with its traceback
        with pytest.raises(type(error)):
            _raising(error)([])
        return
    assert _raising(error)([]) == 2
    assert capsys.readouterr().err == f"error: {line}\n"


@pytest.fixture
def space(tmp_path):
    return tmp_path


def _run(space, command, *args):
    """The console script `command` in `space`, bound by file modes."""
    argv = [*probe_bad_inputs.script(command), *map(str, args)]
    result = subprocess.run(
        probe_bad_inputs.bound_by_file_modes(argv),
        cwd=space,
        env=probe_bad_inputs.environment(space),
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert result.returncode == 2, result.stderr[-3000:]
    return lines[-1]


def _corpus(space, name="corpus.txt"):
    path = space / name
    path.write_text("\n".join([SENTENCES] * 20))
    return path


def test_an_unreadable_corpus_is_named(space):
    corpus = _corpus(space)
    os.chmod(corpus, 0)
    last = _run(
        space,
        "electra-build-data",
        "--input",
        corpus,
        "--vocab",
        VOCABULARY,
        "--output-dir",
        space / "out",
        "--no-progress",
    )
    assert last.startswith(f"error: {corpus}") and "Permission denied" in last, last


def test_a_read_only_model_dir_is_named_new_and_finished(space):
    corpus = _corpus(space)
    run = [
        "--corpus",
        corpus,
        "--vocab",
        VOCABULARY,
        "--steps",
        "2",
        "--checkpoint-every",
        "2",
        "--batch-size",
        "4",
        "--max-seq-length",
        "32",
        "--jit",
        "off",
        "--hparams",
        '{"num_layers": 1, "eval_steps": 1}',
    ]
    locked = space / "locked"
    locked.mkdir()
    os.chmod(locked, 0o555)
    last = _run(space, "electra-pretrain", "--model-dir", locked / "run", *run)
    assert last.startswith("error: ") and str(locked) in last, last
    assert "Permission denied" in last, last
    # A file where the directory should be, at any depth.
    (space / "afile").write_text("x")
    last = _run(space, "electra-pretrain", "--model-dir", space / "afile" / "run", *run)
    assert last.startswith("error: ") and str(space / "afile") in last, last


def test_a_directory_named_like_a_file_is_named(space):
    (space / "train.csv").mkdir()
    last = _run(
        space,
        "electra-finetune",
        "--train-file",
        space / "train.csv",
        "--dev-file",
        space / "train.csv",
        "--pretrained",
        "none",
        "--output-dir",
        space / "out",
    )
    assert last.startswith("error: ") and str(space / "train.csv") in last, last
    (space / "in.csv").mkdir()
    last = _run(
        space,
        "electra-score",
        "--model-dir",
        space,
        "--input",
        space / "in.csv",
        "--output",
        space / "o.tsv",
    )
    assert last.startswith("error: ") and str(space / "in.csv") in last, last


def test_outputs_under_a_file_are_named(space):
    (space / "afile").write_text("x")
    last = _run(
        space,
        "electra-finetune-demo",
        "--pretrained",
        space / "afile" / "encoder",
        "--output-dir",
        space / "out",
    )
    assert last.startswith("error: ") and str(space / "afile") in last, last
    last = _run(
        space,
        "electra-convert",
        "hf-to-electra",
        "--discriminator",
        space / "afile" / "model",
        "--output",
        space / "out",
    )
    assert last.startswith("error: ") and str(space / "afile") in last, last
