"""`tfds:` corpora: tensorflow-datasets datasets built into pre-training TFRecords.

Offline, through `tfds.testing.mock_data` (USE_CODE: random examples generated
from each dataset's features as its code declares them, nothing downloaded).
"""

import doctest
import json

import pytest
import tensorflow_datasets as tfds

import electra_tf.cli.build_data
import electra_tf.cli.pretrain
import electra_tf.data.tfds_corpus
import electra_tf.pretraining.run
from electra_tf.data.corpus import CorpusError, expand_paths, iter_documents
from electra_tf.data.preparation import prepare_pretraining_data
from electra_tf.data.tfds_corpus import TfdsCorpus
from electra_tf.data.vocabulary import BUNDLED_VOCABULARY
from electra_tf.network import unreachable_reason as UNREACHABLE_REASON
from electra_tf.pretraining.settings import PretrainingFlags

IMDB = "tfds:imdb_reviews/plain_text:unsupervised"
DOCUMENTS = 6


@pytest.fixture
def mock_tfds():
    with tfds.testing.mock_data(
        num_examples=DOCUMENTS, policy=tfds.testing.MockPolicy.USE_CODE
    ):
        yield


def _build(arguments, output_dir):
    return electra_tf.cli.build_data.main(
        [*arguments, "--max-seq-length", "16", "--no-progress"]
        + ["--output-dir", str(output_dir)]
    )


def test_specs_parse_and_stay_in_place_among_paths(tmp_path):
    source = TfdsCorpus.parse("tfds:wikipedia/20230601.en:train[:1%]")
    assert (source.name, source.split) == ("wikipedia/20230601.en", "train[:1%]")
    assert TfdsCorpus.parse("tfds:lm1b").split == "train"
    (tmp_path / "a.txt").write_text("One.\n")
    files = expand_paths(["tfds:lm1b", str(tmp_path), "tfds:lm1b"])
    assert files == [TfdsCorpus("lm1b"), str(tmp_path / "a.txt")]
    for bad in ("tfds:", "tfds::train", "tfds:lm1b:"):
        with pytest.raises(CorpusError, match="tfds:<name>"):
            TfdsCorpus.parse(bad)


def test_build_data_reads_a_tfds_split_one_example_per_document(
    mock_tfds, tmp_path, capsys
):
    arguments = ["--input", IMDB, "--eval-fraction", "0.5", "--seed", "3"]
    assert _build(arguments, tmp_path / "a") == 0, capsys.readouterr().err
    stats = json.loads((tmp_path / "a" / "stats.json").read_text())
    assert stats["input_files"] == [IMDB]
    assert stats["documents"] == DOCUMENTS
    # Whole documents held out, as for a local corpus.
    assert stats["train_documents"] and stats["eval_documents"]
    assert _build(arguments, tmp_path / "b") == 0
    for name in ("train-00000-of-00008.tfrecord", "eval-00000-of-00001.tfrecord"):
        first, second = (tmp_path / d / name for d in "ab")
        assert first.read_bytes() == second.read_bytes(), name


def test_documents_are_the_examples_lines(mock_tfds):
    records = list(
        tfds.as_numpy(tfds.load("imdb_reviews/plain_text", split="unsupervised"))
    )
    documents = list(iter_documents(IMDB))
    expected = [
        [line.strip() for line in r["text"].decode().split("\n") if line.strip()]
        for r in records
    ]
    assert documents == [document for document in expected if document]


def test_text_field_is_inferred_named_or_refused(mock_tfds, tmp_path, capsys):
    # wikipedia: title and text, both text features: the one named text.
    wikipedia = TfdsCorpus.parse("tfds:wikipedia/20230601.en")
    records = list(tfds.as_numpy(tfds.load("wikipedia/20230601.en", split="train")))
    assert next(iter_documents(wikipedia)) == [records[0]["text"].decode().strip()]
    titled = TfdsCorpus("wikipedia/20230601.en", text_field="title")
    assert next(iter_documents(titled)) == [records[0]["title"].decode().strip()]
    # squad: title, context and question, none named text.
    assert _build(["--input", "tfds:squad/v1.1"], tmp_path / "squad") == 2
    err = capsys.readouterr().err
    assert "several text features (context, question, title)" in err
    assert "--tfds-text-field" in err and err.count("\n") == 1
    arguments = ["--input", "tfds:squad/v1.1", "--tfds-text-field", "context"]
    assert _build(arguments, tmp_path / "context") == 0
    arguments = ["--input", IMDB, "--tfds-text-field", "body"]
    assert _build(arguments, tmp_path / "body") == 2
    assert "has no feature 'body' (it has label, text)" in capsys.readouterr().err


def test_an_unknown_dataset_is_one_line_naming_it(mock_tfds, tmp_path, capsys):
    assert _build(["--input", "tfds:no_such_corpus/x:train"], tmp_path) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no tensorflow-datasets dataset 'no_such_corpus/x'")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_pretrain_corpus_flag_builds_from_tfds(mock_tfds, tmp_path, monkeypatch):
    # run.py's flags reach PretrainingFlags (the run itself is not started) ...
    seen = []
    monkeypatch.setattr(electra_tf.pretraining.run, "pretrain", seen.append)
    arguments = ["--corpus", IMDB, "--tfds-text-field", "text"]
    assert electra_tf.cli.pretrain.main([*arguments, "--model-dir", str(tmp_path)]) == 0
    (flags,) = seen
    assert isinstance(flags, PretrainingFlags)
    assert flags.corpus == (IMDB,) and flags.tfds_text_field == "text"
    # ... and build its data as `pretrain()` does with them.
    data = prepare_pretraining_data(
        str(tmp_path),
        16,
        corpus=flags.corpus,
        tfds_text_field=flags.tfds_text_field,
        vocab=BUNDLED_VOCABULARY,
        progress=False,
    )
    stats = json.loads((tmp_path / "data" / "stats.json").read_text())
    assert stats["documents"] == DOCUMENTS
    assert stats["input_files"] == [IMDB + " (field text)"]
    assert data.max_seq_length == 16


def test_docstring_examples_run():
    result = doctest.testmod(electra_tf.data.tfds_corpus, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_an_unprepared_dataset_offline_fails_fast_saying_so(
    mock_tfds, tmp_path, capsys, monkeypatch
):
    # The one connection attempt fails (no socket is opened in the test);
    # neither the corpus reader nor fine-tuning's loader starts a download.
    """A tfds dataset not prepared on disk, offline: one connection attempt (3 s
    timeout) before any download, then one line saying the network is unreachable
    (was: 210 s of retries with progress bars)."""
    import socket

    import electra_tf.network
    from electra_tf.finetuning.files import load_tfds

    def refuse(host, timeout):
        raise socket.gaierror(-3, "Temporary failure in name resolution")

    monkeypatch.setattr(electra_tf.network.socket, "create_connection", refuse)
    monkeypatch.setattr(electra_tf.network, "unreachable_reason", UNREACHABLE_REASON)

    def no_download(*args, **kwargs):
        raise AssertionError("a download was started")

    monkeypatch.setattr(tfds.core.DatasetBuilder, "download_and_prepare", no_download)
    monkeypatch.setattr(tfds, "load", no_download)
    assert _build(["--input", IMDB], tmp_path / "out") == 2
    message = capsys.readouterr().err.strip().splitlines()[-1]
    assert message.startswith("error: tfds dataset imdb_reviews/plain_text")
    assert "needs downloading, but the network is unreachable" in message
    assert "storage.googleapis.com:443" in message and "offline?" in message
    with pytest.raises(ValueError, match="network is unreachable.*offline"):
        load_tfds("glue/mrpc", "train", str(tmp_path / "tfds"), ValueError)
