"""Raw text -> TFRecords: features, layout, no token lost, stats, determinism,
atomic and non-destructive output, clear errors on bad input, and the CLI.

The fixture `fixtures/corpus_excerpt.txt` is real text: the first sentences of
every 50th document of the Brown Corpus and of every 120th document of the Python
manual (the sources of the bundled demo corpus), 14 documents, 12 KB.
"""

import doctest
import gzip
import hashlib
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import electra_tf.cli.build_data
import electra_tf.data.corpus
import electra_tf.data.tfrecord_format
import electra_tf.data.tfrecord_writer
from electra_tf.data.corpus import CorpusError, iter_documents
from electra_tf.data.tfrecord_writer import (
    BuildError,
    build_pretraining_data,
    is_held_out,
)
from electra_tf.data.vocabulary import Vocabulary
from tests.helpers import SUBPROCESS_TIMEOUT

REPO = pathlib.Path(__file__).parents[2]
CORPUS = pathlib.Path(__file__).parents[1] / "fixtures" / "corpus_excerpt.txt"
VOCABULARY = REPO / "electra_tf" / "assets" / "vocab.txt"
FEATURES = ("input_ids", "input_mask", "segment_ids")
L = 64
# The shared build: two train shards, a third of the documents held out.
BUILD = dict(max_seq_length=L, num_shards=2, eval_fraction=0.3, seed=1)


@pytest.fixture(scope="module")
def vocabulary():
    return Vocabulary.from_file(REPO / "electra_tf" / "assets" / "vocab.txt")


@pytest.fixture(scope="module")
def built(vocabulary, tmp_path_factory):
    directory = tmp_path_factory.mktemp("built")
    stats = build_pretraining_data(
        [CORPUS], vocabulary, directory, progress=False, **BUILD
    )
    return directory, stats


@pytest.fixture(scope="module")
def corpus_tokens(vocabulary):
    """Each fixture document's token ids, by keras-hub's eager Python WordPiece:
    an implementation independent of the builder's tensorflow-text graph."""
    tokenizer = vocabulary.tokenizer()
    return [
        [t for sentence in tokenizer.tokenize(document) for t in sentence]
        for document in iter_documents(CORPUS)
    ]


def _read(directory, split="train"):
    """The examples of a split in build order (shards are dealt round-robin)."""
    shards = []
    for path in sorted(pathlib.Path(directory).glob(f"{split}-*.tfrecord")):
        examples = []
        for record in tf.data.TFRecordDataset(str(path)):
            features = tf.train.Example.FromString(record.numpy()).features.feature
            examples.append(
                {name: np.array(features[name].int64_list.value) for name in FEATURES}
            )
        shards.append(examples)
    ordered = []
    for i in range(sum(map(len, shards))):
        ordered.append(shards[i % len(shards)][i // len(shards)])
    return ordered


def _text_tokens(examples, vocabulary):
    """The non-special tokens of `examples`, concatenated."""
    specials = {vocabulary.cls_id, vocabulary.sep_id, vocabulary.pad_id}
    return [t for e in examples for t in e["input_ids"].tolist() if t not in specials]


def test_features_dtypes_shapes_and_layout(built, vocabulary):
    directory, stats = built
    for split in ("train", "eval"):
        examples = _read(directory, split)
        assert len(examples) == stats[f"{split}_examples"] > 0
        for example in examples:
            assert sorted(example) == list(FEATURES)
            for values in example.values():
                assert values.shape == (L,) and values.dtype == np.int64
            mask, ids, segments = (
                example["input_mask"],
                example["input_ids"],
                example["segment_ids"],
            )
            real = int(mask.sum())
            assert mask[:real].all() and not mask[real:].any()
            assert (ids[real:] == vocabulary.pad_id).all()
            assert not segments[real:].any()
            # [CLS] A [SEP] B [SEP]: segment 0 up to the first [SEP], then 1.
            assert ids[0] == vocabulary.cls_id and ids[real - 1] == vocabulary.sep_id
            seps = np.flatnonzero(ids[:real] == vocabulary.sep_id)
            assert len(seps) in (1, 2) and seps[0] > 1
            assert not segments[: seps[0] + 1].any()
            assert segments[seps[0] + 1 : real].all()
            assert vocabulary.cls_id not in ids[1:]


def test_no_token_lost_and_whole_documents_held_out(built, vocabulary, corpus_tokens):
    directory, stats = built
    streams = {
        split: _text_tokens(_read(directory, split), vocabulary)
        for split in ("train", "eval")
    }
    # Walking the corpus in order, each document is the next run of tokens of
    # exactly the split `is_held_out` assigns it to.
    cursors = {"train": 0, "eval": 0}
    for index, tokens in enumerate(corpus_tokens):
        split = "eval" if is_held_out(index, BUILD["seed"], 0.3) else "train"
        start = cursors[split]
        assert streams[split][start : start + len(tokens)] == tokens, index
        cursors[split] += len(tokens)
    assert cursors == {split: len(stream) for split, stream in streams.items()}
    assert stats["eval_documents"] > 0 and stats["train_documents"] > 0


def test_stats_json(built, vocabulary, corpus_tokens):
    directory, stats = built
    saved = json.loads((directory / "stats.json").read_text())
    assert saved == stats
    examples = _read(directory, "train") + _read(directory, "eval")
    masks = np.stack([e["input_mask"] for e in examples])
    all_tokens = [t for document in corpus_tokens for t in document]
    assert stats["documents"] == len(corpus_tokens) == 14
    assert stats["train_documents"] + stats["eval_documents"] == 14
    assert stats["examples"] == len(examples)
    assert stats["tokens"] == len(all_tokens)
    assert stats["train_tokens"] + stats["eval_tokens"] == stats["tokens"]
    assert stats["padding_fraction"] == pytest.approx(1 - masks.mean())
    unknown = all_tokens.count(vocabulary.unk_id) / len(all_tokens)
    assert stats["unknown_token_rate"] == pytest.approx(unknown)
    assert stats["max_seq_length"] == L
    assert stats["vocabulary_size"] == 30522
    # The md5 of the vocab.txt copied next to the shards.
    assert (
        stats["vocabulary_md5"]
        == hashlib.md5((directory / "vocab.txt").read_bytes()).hexdigest()
    )
    assert stats["input_files"] == [str(CORPUS)]
    assert stats["num_shards"] == 2 and stats["num_eval_shards"] == 1
    assert sorted(p.name for p in directory.iterdir()) == [
        "eval-00000-of-00001.tfrecord",
        "stats.json",
        "train-00000-of-00002.tfrecord",
        "train-00001-of-00002.tfrecord",
        "vocab.txt",
    ]


def _files(directory):
    return {p.name: p.read_bytes() for p in sorted(pathlib.Path(directory).iterdir())}


def test_deterministic_for_a_seed_and_process_count(
    built, vocabulary, tmp_path, monkeypatch
):
    directory, _ = built
    # Small chunks, so that several chunks go through the two worker processes.
    monkeypatch.setattr(electra_tf.data.tfrecord_writer, "CHUNK_SENTENCES", 10)
    build_pretraining_data(
        [CORPUS], vocabulary, tmp_path / "2", progress=False, num_processes=2, **BUILD
    )
    build_pretraining_data(
        [CORPUS], vocabulary, tmp_path / "1", progress=False, num_processes=1, **BUILD
    )
    assert _files(tmp_path / "1") == _files(tmp_path / "2")
    monkeypatch.undo()
    build_pretraining_data(
        [CORPUS], vocabulary, tmp_path / "a", progress=False, **BUILD
    )
    assert _files(tmp_path / "a") == _files(directory)
    other_seed = dict(BUILD, seed=2)
    build_pretraining_data(
        [CORPUS], vocabulary, tmp_path / "b", progress=False, **other_seed
    )
    shard = "train-00000-of-00002.tfrecord"
    assert _files(tmp_path / "b")[shard] != _files(directory)[shard]


def test_gzip_and_directory_inputs_read_the_same_text(built, vocabulary, tmp_path):
    directory, stats = built
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    text = CORPUS.read_bytes()
    # The same documents split over a .gz file and a plain file, read in
    # sorted order; hidden files are skipped.
    head, tail = text.split(b"\n\n", 7)[:7], text.split(b"\n\n", 7)[7]
    (corpus / "a.txt.gz").write_bytes(gzip.compress(b"\n\n".join(head) + b"\n"))
    (corpus / "b.txt").write_bytes(tail)
    (corpus / ".hidden").write_bytes(b"\xff not text")
    out = tmp_path / "out"
    gz_stats = build_pretraining_data(
        [corpus], vocabulary, out, progress=False, **BUILD
    )
    assert gz_stats["input_files"] == [str(corpus / "a.txt.gz"), str(corpus / "b.txt")]
    for key in ("documents", "tokens", "train_examples", "eval_examples"):
        assert gz_stats[key] == stats[key]
    assert (
        _files(out)["train-00001-of-00002.tfrecord"]
        == _files(directory)["train-00001-of-00002.tfrecord"]
    )


def test_refuses_a_non_empty_directory_and_overwrites_only_its_files(
    vocabulary, tmp_path
):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    # The flag to pass, not the library's argument (was: "pass overwrite=True
    # (--overwrite)").
    with pytest.raises(
        BuildError, match=r"out is not empty \(notes.txt\); pass --overwrite to "
    ):
        build_pretraining_data([CORPUS], vocabulary, out, progress=False)
    build_pretraining_data(
        [CORPUS], vocabulary, out, progress=False, overwrite=True, num_shards=4
    )
    assert (out / "train-00003-of-00004.tfrecord").exists()
    # A killed build's leftovers and another shard count: replaced, not kept.
    (out / ".tmp-train-00000-of-00002.tfrecord").write_bytes(b"partial")
    (out / ".tmp-4242-stats.json").write_bytes(b"{")  # write_text_atomically's
    build_pretraining_data(
        [CORPUS], vocabulary, out, progress=False, overwrite=True, **BUILD
    )
    assert sorted(p.name for p in out.iterdir()) == [
        "eval-00000-of-00001.tfrecord",
        "notes.txt",
        "stats.json",
        "train-00000-of-00002.tfrecord",
        "train-00001-of-00002.tfrecord",
        "vocab.txt",
    ]
    assert (out / "notes.txt").read_text() == "keep me"


def test_a_failed_build_leaves_no_shard_and_keeps_the_previous_one(
    built, vocabulary, tmp_path
):
    bad = tmp_path / "z_bad.txt"
    bad.write_bytes(b"fine\n\ncaf\xe9\n")
    fresh = tmp_path / "fresh"
    with pytest.raises(CorpusError, match="z_bad.txt is not UTF-8"):
        build_pretraining_data([CORPUS, bad], vocabulary, fresh, progress=False)
    assert list(fresh.iterdir()) == []
    # A failed overwrite leaves the earlier build as it was.
    directory, _ = built
    before = _files(directory)
    with pytest.raises(CorpusError):
        build_pretraining_data(
            [CORPUS, bad], vocabulary, directory, progress=False, overwrite=True
        )
    assert _files(directory) == before


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("blank.txt", b"\n\n   \n", "the corpus has no text: .*blank.txt"),
        ("zip.txt", b"PK\x03\x04\x00\x00binary", r"zip.txt looks binary .*offset 4\)"),
        (
            "utf16.txt",
            "hello\n".encode("utf-16"),
            r"utf16.txt looks binary .*offset 3\)",
        ),
        (
            "latin1.txt",
            "ok\ncaf\xe9 au lait\n".encode("latin-1"),
            r"latin1.txt is not UTF-8 text \(invalid byte at offset 6\)",
        ),
        ("bad.gz", b"\x1f\x8b\x08\x00garbage", "bad.gz is not a valid gzip file"),
        ("missing*.txt", None, "no input files match .*missing"),
    ],
)
def test_bad_corpora_name_the_culprit(vocabulary, tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(CorpusError, match=message):
        build_pretraining_data([path], vocabulary, tmp_path / "out", progress=False)
    assert not list((tmp_path / "out").glob("*"))


def test_bad_arguments(vocabulary, tmp_path):
    for arguments, message in [
        (dict(max_seq_length=4), "max_seq_length must be at least 8"),
        (dict(eval_fraction=1.0), "eval_fraction must be in"),
        (dict(num_shards=0), "num_shards must be at least 1"),
        (dict(num_processes=0), "num_processes must be at least 1"),
    ]:
        with pytest.raises(BuildError, match=message):
            build_pretraining_data([CORPUS], vocabulary, tmp_path, **arguments)


def test_progress_bar_goes_to_stderr_only(vocabulary, tmp_path, capsys):
    build_pretraining_data([CORPUS], vocabulary, tmp_path / "a", max_seq_length=L)
    captured = capsys.readouterr()
    assert captured.out == "" and "Building TFRecords" in captured.err
    build_pretraining_data(
        [CORPUS], vocabulary, tmp_path / "b", max_seq_length=L, progress=False
    )
    assert capsys.readouterr() == ("", "")


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    data=st.one_of(
        st.text(max_size=400).map(lambda text: text.encode("utf-8")),
        st.text(alphabet="ab \n\u00e9\u4e2d\U0001f600\x00", max_size=200).map(
            lambda text: text.encode("utf-8")
        ),
        st.binary(max_size=300),
    ),
    seed=st.integers(0, 3),
)
def test_fuzz_text_to_tfrecords(vocabulary, tmp_path_factory, data, seed):
    """Any valid UTF-8 text builds (or is rejected as empty or NUL-binary), with
    no token lost; any bytes build or raise CorpusError, nothing else."""
    directory = tmp_path_factory.mktemp("fuzz")
    path = directory / "corpus.txt"
    path.write_bytes(data)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    try:
        stats = build_pretraining_data(
            [path],
            vocabulary,
            directory / "out",
            max_seq_length=16,
            num_shards=2,
            eval_fraction=0.5,
            seed=seed,
            progress=False,
        )
    except CorpusError as error:
        kinds = [
            k for k in ("no text", "is not UTF-8", "looks binary") if k in str(error)
        ]
        assert len(kinds) == 1, error
        event(f"CorpusError: {kinds[0]}")
        assert str(path) in str(error)
        if text is not None and "\x00" not in text:
            # Valid text is only refused when WordPiece finds no token in it.
            assert "no text" in str(error)
            lines = [line.strip() for line in text.split("\n") if line.strip()]
            assert not any(vocabulary.tokenizer().tokenize(lines))
        return
    event("built")
    assert text is not None and "\x00" not in text
    examples = _read(directory / "out") + _read(directory / "out", "eval")
    assert len(examples) == stats["examples"] >= 1
    assert len(_text_tokens(examples, vocabulary)) == stats["tokens"]


def test_cli_help_runs_from_the_repo_root():
    result = subprocess.run(
        [sys.executable, "pretrain/build_data.py", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert result.returncode == 0
    for flag in ("--input", "--vocab", "--learn-vocab-size", "--num-hosts"):
        assert flag in result.stdout


def _cli():
    return electra_tf.cli.build_data


def test_cli_builds_and_learns_a_vocabulary(tmp_path, capsys):
    out = tmp_path / "out"
    code = _cli().main(
        [
            "--input",
            str(CORPUS),
            "--learn-vocab-size",
            "300",
            "--output-dir",
            str(out),
            "--max-seq-length",
            "32",
            "--num-shards",
            "2",
            "--num-hosts",
            "2",
            "--eval-fraction",
            "0.3",
            "--no-progress",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "train and" in captured.out and str(out) in captured.out
    stats = json.loads((out / "stats.json").read_text())
    vocabulary = Vocabulary.from_file(out / "vocab.txt")
    assert vocabulary.pad_id == 0 and stats["vocabulary_size"] == vocabulary.size <= 300
    assert stats["vocabulary_md5"] == vocabulary.md5()
    # --num-eval-shards defaults to --num-hosts.
    assert stats["num_eval_shards"] == 2


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--num-shards", "3", "--num-hosts", "2"], "--num-shards 3 is not a multiple"),
        (["--vocab", "nope.txt"], "vocabulary file not found: nope.txt"),
        (["--input", "nothing-*.txt"], "no input files match 'nothing-"),
        (["--max-seq-length", "4"], "max_seq_length must be at least 8"),
    ],
)
def test_cli_errors_are_one_line_and_exit_2(tmp_path, capsys, arguments, message):
    if "--input" not in arguments:
        arguments = ["--input", str(CORPUS), *arguments]
    code = _cli().main(
        [*arguments, "--output-dir", str(tmp_path / "o"), "--no-progress"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


_SENTENCES = "The committee met on Tuesday.\nThe chair moved the vote.\n"


@pytest.mark.parametrize(
    "text, arguments, warning",
    [
        # Two documents: the first is never held out, the second was not
        # drawn: no eval shard, so no held-out evaluation downstream.
        (
            "\n".join([_SENTENCES] * 2),
            [],
            "no document was held out for evaluation (2 documents at "
            "eval_fraction 0.02): runs on these data will have no held-out",
        ),
        # A learned vocabulary of 10 pieces: nearly every token is [UNK].
        (
            "\n".join([_SENTENCES] * 30),
            ["--learn-vocab-size", "10", "--eval-fraction", "0"],
            "of the corpus' tokens are [UNK] (above 5%)",
        ),
        # 300,000 characters without a newline: one sentence of one document.
        (
            "word " * 60_000,
            ["--eval-fraction", "0"],
            "corpus.txt, line 1: a line of 300000 characters, read as ONE sentence",
        ),
        # More shards than examples: the last shards are empty (was: silent).
        (
            "\n".join([_SENTENCES] * 2),
            ["--num-shards", "8", "--eval-fraction", "0"],
            "train examples for 8 train shards: the last ",
        ),
        # Longer than the position table of every preset (512 at most).
        (
            "\n".join([_SENTENCES] * 2),
            ["--max-seq-length", "2000", "--eval-fraction", "0"],
            "max_seq_length 2000 is longer than any preset's position table "
            "(at most 512)",
        ),
    ],
)
def test_cli_warns_at_build_time_about_data_a_run_cannot_use_well(
    tmp_path, caplog, capsys, text, arguments, warning
):
    """Each build succeeds (exit 0) with a warning saying what is wrong; on
    main these were silent."""
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text, encoding="utf-8")
    if "--learn-vocab-size" not in arguments:
        arguments = [*arguments, "--vocab", str(VOCABULARY)]
    code = _cli().main(
        ["--input", str(corpus), "--output-dir", str(tmp_path / "o"), "--no-progress"]
        + ["--num-shards", "1", *arguments]
    )
    assert code == 0, capsys.readouterr().err
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any(warning in message for message in warnings), warnings


def test_a_non_utf8_corpus_gives_its_line_without_a_traceback(tmp_path):
    """Learning a vocabulary from a Latin-1 file: one line (on main, two
    TensorFlow tracebacks of the reading thread came before it)."""
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes("caf\u00e9 au lait\n".encode("latin-1") * 20)
    result = subprocess.run(
        [sys.executable, "pretrain/build_data.py", "--input", str(corpus)]
        + ["--output-dir", str(tmp_path / "o"), "--learn-vocab-size", "100"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        # TensorFlow's log as a user sees it (the suite quietens it).
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"},
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: {corpus} is not UTF-8 text (invalid byte at offset 3)"
    )
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "module",
    [
        electra_tf.data.corpus,
        electra_tf.data.tfrecord_format,
        electra_tf.data.tfrecord_writer,
    ],
)
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
