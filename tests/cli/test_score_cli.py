"""pretrain/score.py: a file of sentences scored by a run's sentence_scorer
SavedModel (a tiny generator's, saved where a run's export puts it), and its
one-line errors."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import electra_tf.cli.score
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.scoring.sentence_scorer import SentenceScorer
from tests.helpers import SUBPROCESS_TIMEOUT, TINY_VOCABULARY_SIZE, make_pretrainer

LINES = [
    "the cat sat on the mat",
    "",
    "mat the on sat cat the",
    "a line\u2028with a Unicode line separator\tand a tab",
]


@pytest.fixture(scope="module")
def run(tiny_configs, tmp_path_factory):
    """(a run directory whose export has a sentence scorer, that scorer)."""
    words = "the cat sat on a mat line with unicode separator and tab".split()
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    tokens += [f"w{i}" for i in range(TINY_VOCABULARY_SIZE - len(tokens))]
    model_dir = tmp_path_factory.mktemp("run")
    (model_dir / "vocab.txt").write_text("".join(t + "\n" for t in tokens))
    vocabulary = Vocabulary.from_file(model_dir / "vocab.txt")
    model_config, pretraining_config = tiny_configs
    pretrainer = make_pretrainer(
        model_config.override(initializer_range=0.2), pretraining_config
    )
    scorer = SentenceScorer(
        pretrainer.generator, vocabulary.tokenizer(), 32, method="mlm"
    )
    path = model_dir / "export" / "sentence_scorer"
    tf.saved_model.save(scorer, str(path))
    return model_dir, scorer


def _error(capsys, *argv):
    assert electra_tf.cli.score.main(list(argv)) == 2
    message = capsys.readouterr().err.strip().splitlines()
    assert len(message) == 1 and message[0].startswith("error: "), message
    return message[0]


def test_every_line_is_scored_in_order_as_the_python_api_scores_it(
    run, capsys, tmp_path
):
    model_dir, scorer = run
    source = tmp_path / "sentences.txt"
    source.write_bytes("\r\n".join(LINES).encode("utf-8") + b"\n")
    output = tmp_path / "scores.tsv"
    argv = ["--model-dir", str(model_dir), "--input", str(source)]
    assert electra_tf.cli.score.main([*argv, "--output", str(output)]) == 0
    assert f"scored 4 sentences: {output}" in capsys.readouterr().out
    header, *rows = output.read_text().split("\n")[:-1]
    assert header == "score\ttoken_count\tsentence"
    rows = [row.split("\t", 2) for row in rows]
    assert [row[2] for row in rows] == LINES
    expected = scorer.score(LINES)
    np.testing.assert_allclose([float(r[0]) for r in rows], expected, atol=1e-4)
    assert [int(r[1]) for r in rows][:3] == [6, 0, 6]
    assert expected[0] != expected[2]  # word order changes the score
    # The export directory, or the SavedModel itself, also do.
    for where in (model_dir / "export", model_dir / "export" / "sentence_scorer"):
        again = tmp_path / "again.tsv"
        assert (
            electra_tf.cli.score.main(
                [
                    "--model-dir",
                    str(where),
                    "--input",
                    str(source),
                    "--output",
                    str(again),
                ]
            )
            == 0
        )
        assert again.read_text() == output.read_text()


def test_bad_input_is_one_line_naming_the_problem(run, capsys, tmp_path):
    model_dir, _ = run
    output = str(tmp_path / "scores.tsv")
    model = ["--model-dir", str(model_dir)]
    missing = tmp_path / "missing.txt"
    message = _error(capsys, *model, "--input", str(missing), "--output", output)
    assert message == f"error: input file not found: {missing}"
    broken = tmp_path / "latin1.txt"
    broken.write_bytes(b"fine\nalso fine\ncaf\xe9\n")
    message = _error(capsys, *model, "--input", str(broken), "--output", output)
    assert message == f"error: {broken} is not UTF-8 text (invalid byte at offset 18)"
    message = _error(capsys, *model, "--input", str(tmp_path), "--output", output)
    assert message == f"error: input path is a directory, not a file: {tmp_path}"
    good = tmp_path / "good.txt"
    good.write_text("the cat\n")
    message = _error(
        capsys, "--model-dir", str(tmp_path), "--input", str(good), "--output", output
    )
    assert f"no sentence scorer in {tmp_path}" in message
    message = _error(
        capsys, *model, "--input", str(good), "--output", str(tmp_path / "no" / "x")
    )
    assert "cannot write" in message


def test_an_output_that_is_the_input_is_refused_and_the_input_kept(run, tmp_path):
    # Through the console script: the same path, another spelling of it, a
    # symlink to it, a hard link to it. Each wrote the scores over the
    # sentences before.
    model_dir, _ = run
    source = tmp_path / "sentences.txt"
    source.write_text("the cat sat\na mat\n")
    original = source.read_bytes()
    (tmp_path / "link.txt").symlink_to(source)
    os.link(source, tmp_path / "hard.txt")
    script = pathlib.Path(sys.executable).parent / "electra-score"
    for output in (
        source,
        f"{tmp_path}/./sentences.txt",
        tmp_path / "link.txt",
        tmp_path / "hard.txt",
    ):
        result = subprocess.run(
            [script, "--model-dir", str(model_dir), "--input", str(source)]
            + ["--output", str(output)],
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT,
        )
        assert result.returncode == 2, result.stderr[-2000:]
        assert result.stderr.strip().splitlines()[-1] == (
            f"error: --output {output} is the input file {source}: writing the "
            "scores would overwrite the sentences; choose another --output"
        )
        assert source.read_bytes() == original


def test_flags_that_cannot_work_are_one_line(run, capsys, tmp_path):
    """`--batch-size 0` or `-3` (was: a `ValueError` traceback; -1 wrote a header only
    and printed `scored 2 sentences`); `--model-dir` at the run's SavedModel, which
    has no `score_sentences` (was: an `AttributeError`)."""
    model_dir, _ = run
    good = tmp_path / "good.txt"
    good.write_text("the cat\n")
    output = tmp_path / "scores.tsv"
    argv = ["--model-dir", str(model_dir), "--input", str(good)]
    for size in ("0", "-3"):
        message = _error(capsys, *argv, "--output", str(output), "--batch-size", size)
        assert message == f"error: --batch-size must be >= 1, got {size}"
    assert not output.exists()
    # A run's export/saved_model (the discriminator) was an AttributeError.
    other = model_dir / "export" / "saved_model"
    tf.saved_model.save(tf.Module(), str(other))
    message = _error(
        capsys, "--model-dir", str(other), "--input", str(good), "--output", str(output)
    )
    scorer = model_dir / "export" / "sentence_scorer"
    assert message == (
        f"error: {other} is a SavedModel but not a sentence scorer (it has no "
        f"score_sentences): pass {scorer}, or the run's --model-dir"
    )


def test_a_failed_write_keeps_the_previous_output_whole(run, tmp_path, monkeypatch):
    model_dir, _ = run
    source = tmp_path / "sentences.txt"
    source.write_text("the cat sat\n")
    output = tmp_path / "scores.tsv"
    output.write_text("the previous scores\n")

    def fail(*args, **kwargs):
        raise tf.errors.ResourceExhaustedError(None, None, "disk full")

    monkeypatch.setattr(tf.io.gfile, "rename", fail)
    argv = ["--model-dir", str(model_dir), "--input", str(source)]
    assert electra_tf.cli.score.main([*argv, "--output", str(output)]) == 2
    assert output.read_text() == "the previous scores\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.tsv", "sentences.txt"]
