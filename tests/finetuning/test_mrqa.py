"""MRQA 2019: the reader on the fixture and on broken files, the official
metric against a direct computation, `--task mrqa`'s flags, and the
documented command run as written (slow)."""

import collections
import gzip
import json
import logging
import pathlib
import re
import shlex
import string

import keras_hub
import pytest

from electra_tf.finetuning import squad_metrics
from electra_tf.finetuning.finetune import task_kind
from electra_tf.finetuning.mrqa_data import MrqaDataError, read_mrqa_file
from electra_tf.finetuning.question_answering import QuestionAnsweringTask
from electra_tf.finetuning.squad_data import golds
from electra_tf.models.question_answerer_preprocessor import (
    ElectraQuestionAnswererPreprocessor,
)

REPO = pathlib.Path(__file__).parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "mrqa"
TRAIN, DEV = str(FIXTURE / "train.jsonl.gz"), str(FIXTURE / "dev.jsonl.gz")

# The fixture command of the MRQA docs, as written there.
DOCUMENTED = (
    "electra-finetune --task mrqa --train-file tests/fixtures/mrqa/train.jsonl.gz "
    "--dev-file tests/fixtures/mrqa/dev.jsonl.gz --pretrained none --seeds 1 "
    "--epochs 2 --max-seq-length 128 --hparams '{\"doc_stride\": 64}'"
)


@pytest.fixture(scope="module")
def train():
    return {e.qid: e for e in read_mrqa_file(TRAIN, training=True)}


@pytest.fixture(scope="module")
def dev():
    return read_mrqa_file(DEV, training=False)


# === Reading the fixture ===


def test_the_fixture_reads_as_squad_examples(train, dev):
    assert (len(train), len(dev)) == (32, 18)
    assert {e.title for e in [*train.values(), *dev]} == {"CorpusFixture"}
    # Several answers: every detected span in file order, the first the
    # training target; the golds are the question's `answers`.
    divorce = train["long_06"]
    assert divorce.answers == (
        ("Mayor William B. Hartsfield", 3397),
        ("William B. Hartsfield", 3403),
    )
    assert divorce.answer_texts == [
        "Mayor William B. Hartsfield",
        "William B. Hartsfield",
    ]
    # SearchQA-style: the answer "sphinx" is found as "Sphinx" twice, in a
    # title and in a snippet; the span keeps the context's text.
    sphinx = train["search_00"]
    assert sphinx.answers == (("Sphinx", 12), ("Sphinx", 113))
    assert sphinx.answer_texts == ["sphinx"] and sphinx.answer_is_aligned
    assert sphinx.context.startswith("[DOC] [TLE] Sphinx documentation generator [PAR]")
    # A dev question scored against all its answers.
    assert golds(dev)["long_08"] == ["Opelika, Ala.", "Opelika"]


def test_a_long_context_is_cut_into_windows_and_labelled_in_one(train):
    vocabulary = str(REPO / "electra_tf/assets/vocab.txt")
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=vocabulary, lowercase=True)
    preprocessor = ElectraQuestionAnswererPreprocessor(
        tokenizer, sequence_length=128, max_query_length=32, doc_stride=64
    )
    example = train["long_02"]  # "mental cruelty", 3,544 characters in
    text, start = example.answers[0]
    w = preprocessor.windows([example.question], [example.context], [start], [text])
    starts, ends = w["start_positions"].numpy(), w["end_positions"].numpy()
    labelled = [i for i in range(len(starts)) if starts[i] > 0]
    assert len(starts) > 10 and labelled and labelled[0] > 0
    for i in labelled:
        ids = w["token_ids"].numpy()[i, starts[i] : ends[i] + 1]
        assert tokenizer.detokenize(ids) == "mental cruelty"
    # Windows that miss the answer point at [CLS], as SQuAD's do.
    assert (starts[: labelled[0]] == 0).all()


def test_searchqa_markers_are_ordinary_text(train):
    vocabulary = str(REPO / "electra_tf/assets/vocab.txt")
    tokenizer = keras_hub.models.ElectraTokenizer(vocabulary=vocabulary, lowercase=True)
    preprocessor = ElectraQuestionAnswererPreprocessor(
        tokenizer, sequence_length=64, max_query_length=16
    )
    ids, *_ = preprocessor.tokenize_with_offsets([train["search_00"].context])
    ids = ids[0].numpy().tolist()
    special = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id}
    assert not special & set(ids)
    assert tokenizer.detokenize(ids[:9]) == "[ doc ] [ tle ] sphinx documentation"


def test_plain_and_gzip_by_content_read_the_same(tmp_path):
    plain = tmp_path / "NewsQA.jsonl"
    plain.write_bytes(gzip.decompress(pathlib.Path(DEV).read_bytes()))
    unnamed = tmp_path / "gzipped.jsonl"  # gzip content, no .gz in the name
    unnamed.write_bytes(pathlib.Path(DEV).read_bytes())
    expected = read_mrqa_file(DEV, training=False)
    assert read_mrqa_file(str(plain), training=False) == expected
    assert read_mrqa_file(str(unnamed), training=False) == expected


# === Bad input: one line naming the file, the line and the value ===

HEADER = {"header": {"dataset": "NewsQA", "split": "train"}}
CONTEXT = "The Normans gave their name to Normandy."


def _question(qid="q1", text="Normans", spans=((4, 10),), answers=None):
    return {
        "qid": qid,
        "question": "Who gave their name to Normandy?",
        "question_tokens": [["Who", 0]],
        "answers": [text] if answers is None else answers,
        "detected_answers": [
            {"text": text, "char_spans": [list(s) for s in spans], "token_spans": []}
        ],
    }


def _line(*questions):
    return {"context": CONTEXT, "context_tokens": [["The", 0]], "qas": list(questions)}


def _write(path, rows, compress=True):
    text = "".join(json.dumps(row) + "\n" for row in rows).encode()
    path.write_bytes(gzip.compress(text) if compress else text)
    return str(path)


@pytest.mark.parametrize(
    "rows, training, message",
    [
        (
            [_line(_question())],
            True,
            r"line 1: no MRQA header \(a first line \{\"header\"",
        ),
        (
            [HEADER, _line(_question("q7", spans=()))],
            True,
            "line 2, question q7: no detected answer",
        ),
        (
            [HEADER, _line(_question("q7", answers=[]))],
            False,
            "line 2, question q7: 'answers' is empty",
        ),
        (
            [HEADER, _line(_question("q3", spans=((0, 2),)))],
            True,
            r"1 of 1 detected answer spans do not hold their text \(first: line 2, "
            r"question q3: char_spans \[0, 2\] reads 'The', not the answer 'Normans'\)",
        ),
        (
            [HEADER, _line(_question("q3", text="Normandy", spans=((31, 39),)))],
            True,
            "their ends look exclusive; MRQA's char_spans end on the answer's last "
            "character",
        ),
        (
            [HEADER, _line(_question("q4", spans=((30, 45),)))],
            True,
            r"line 2, question q4: char_spans \[30, 45\] for 'Normans' is outside "
            "its context of 40 characters",
        ),
        (
            [HEADER, _line(_question("q5", spans=(("4", 10),)))],
            True,
            r"line 2, question q5: char_spans entry \['4', 10\] for 'Normans' is "
            "not a pair of integers",
        ),
        (
            [HEADER, _line(_question("q1")), _line(_question("q1"))],
            True,
            "line 3: question id 'q1' occurs twice",
        ),
        ([HEADER, HEADER, _line(_question())], True, "line 2: a second header"),
        (
            [HEADER, {"context": CONTEXT}],
            True,
            r"line 2: expected an MRQA context.*its keys: \['context'\]",
        ),
        ([HEADER], True, "no questions"),
    ],
)
def test_bad_files_are_refused_in_one_line(tmp_path, rows, training, message):
    path = _write(tmp_path / "NewsQA.jsonl.gz", rows)
    with pytest.raises(MrqaDataError, match=message) as error:
        read_mrqa_file(path, training=training)
    assert str(error.value).startswith(path) and "\n" not in str(error.value)


def test_bytes_that_are_not_utf8_json_or_gzip_name_their_line(tmp_path):
    good = json.dumps(_line(_question())).encode()
    path = tmp_path / "a.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b"\n" + good[:20] + b"\xff" + good)
    with pytest.raises(MrqaDataError, match=r"a.jsonl, line 2: not UTF-8 \(byte"):
        read_mrqa_file(str(path), training=True)
    path.write_bytes(json.dumps(HEADER).encode() + b"\n{not json\n")
    with pytest.raises(MrqaDataError, match=r"a.jsonl, line 2: not valid JSON"):
        read_mrqa_file(str(path), training=True)
    named = tmp_path / "b.jsonl.gz"  # a .gz name, plain content
    named.write_bytes(json.dumps(HEADER).encode() + b"\n")
    with pytest.raises(MrqaDataError, match=r"b.jsonl.gz, line 1: not a readable gzip"):
        read_mrqa_file(str(named), training=True)
    cut = tmp_path / "c.jsonl.gz"  # a truncated download
    cut.write_bytes(pathlib.Path(TRAIN).read_bytes()[:3000])
    with pytest.raises(MrqaDataError, match=r"c.jsonl.gz, line \d+: not a readable"):
        read_mrqa_file(str(cut), training=True)
    with pytest.raises(MrqaDataError, match="nowhere.jsonl.gz: file not found"):
        read_mrqa_file(str(tmp_path / "nowhere.jsonl.gz"), training=True)


def test_a_few_spans_off_their_text_are_warned_about_and_not_trained_on(
    tmp_path, caplog
):
    rows = [
        HEADER,
        _line(
            _question("q1"),
            _question("q2", spans=((0, 2), (4, 10))),  # first span off
            _question("q3", text="Normandy", spans=((31, 38),)),
        ),
    ]
    with caplog.at_level(logging.WARNING):
        examples = read_mrqa_file(_write(tmp_path / "t.jsonl.gz", rows), True)
    assert "1 of 4 detected answer spans do not hold their text" in caplog.text
    aligned = {e.qid: e.answer_is_aligned for e in examples}
    assert aligned == {"q1": True, "q2": False, "q3": True}


# === The official metric ===


def _official(answers, predictions):
    """MRQA's `mrqa_official_eval.evaluate`, written out from its definition:
    lower-case, drop punctuation, drop a/an/the, split at whitespace; EM and
    token F1, each the max over the gold answers; percentages."""

    def normal(text):
        text = "".join(c for c in text.lower() if c not in set(string.punctuation))
        return re.sub(r"\b(a|an|the)\b", " ", text).split()

    def f1(prediction, gold):
        common = collections.Counter(normal(prediction)) & collections.Counter(
            normal(gold)
        )
        same = sum(common.values())
        if same == 0:
            return 0.0
        precision, recall = same / len(normal(prediction)), same / len(normal(gold))
        return 2 * precision * recall / (precision + recall)

    exact = sum(
        max(normal(predictions[q]) == normal(g) for g in golds)
        for q, golds in answers.items()
    )
    token_f1 = sum(
        max(f1(predictions[q], g) for g in golds) for q, golds in answers.items()
    )
    return {
        "exact_match": 100 * exact / len(answers),
        "f1": 100 * token_f1 / len(answers),
    }


def test_the_metric_is_squad_v1_and_the_official_mrqa_one(dev):
    answers = golds(dev)
    predictions = {}
    for number, (qid, texts) in enumerate(sorted(answers.items())):
        # Exact, last gold, changed in case and punctuation, partial, wrong, empty.
        choice = number % 6
        predictions[qid] = [
            texts[0],
            texts[-1],
            f"THE {texts[0]}!",
            f"{texts[0]} and then some more words",
            "Northfield",
            "",
        ][choice]
    results = squad_metrics.evaluate_v1(answers, predictions)
    assert results == pytest.approx(_official(answers, predictions))
    assert 0 < results["exact_match"] < results["f1"] < 100
    # By hand: "the mayor was 71" against "71": "mayor was 71", P 1/3, R 1.
    one = squad_metrics.evaluate_v1({"q": ["71"]}, {"q": "the mayor was 71"})
    assert one == pytest.approx({"exact_match": 0.0, "f1": 50.0})
    # The best of several golds counts: "Opelika" is the second one exactly.
    two = squad_metrics.evaluate_v1(
        {"q": ["Opelika, Ala.", "Opelika"]}, {"q": "Opelika"}
    )
    assert two == {"exact_match": 100.0, "f1": 100.0}


# === --task mrqa ===


def test_mrqa_is_the_question_answering_kind():
    assert task_kind("mrqa") is task_kind("MRQA/news_qa") is QuestionAnsweringTask


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--task", "mrqa"], "--task mrqa needs --train-file and --dev-file"),
        (["--task", "mrqa", "--tfds"], "--task mrqa --tfds needs the dataset"),
        (["--task", "mrqa/news_qa"], "reads tensorflow-datasets: add --tfds"),
        (["--task", "mrqa/drop", "--tfds"], "mrqa/drop is not a tensorflow-datasets"),
        (["--task", "mrqa", "--data-dir", "x"], "--data-dir does not apply to"),
        (
            ["--task", "mrqa/news_qa", "--tfds", "--train-file", TRAIN],
            "--train-file does not apply to --task mrqa/news_qa --tfds",
        ),
        (["--task", "mrqa", "--train-file", TRAIN], "--train-file and --dev-file go"),
        (
            ["--task", "mrqa", "--train-file", "no.jsonl.gz", "--dev-file", DEV],
            "no.jsonl.gz: file not found",
        ),
    ],
)
def test_the_command_line_answers_bad_mrqa_flags_in_one_line(argv, message, capsys):
    from electra_tf.cli.finetune import main

    assert main([*argv, "--pretrained", "none"]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("error: ") and message in error


def test_a_test_file_is_read_with_train_and_dev():
    """`--task mrqa --test-file` (on main: `--test-file does not apply to
    --task mrqa`); answered and scored once by the best seed's model
    (`test_the_documented_mrqa_command_runs_as_written`)."""
    from electra_tf.finetuning.question_answering import load_mrqa_data
    from electra_tf.finetuning.settings import FinetuningFlags

    flags = FinetuningFlags(
        task="mrqa", train_file=TRAIN, dev_file=DEV, test_file=DEV, pretrained="none"
    )
    data, info = load_mrqa_data(flags)
    assert len(data.test) == 18 and len(data.dev) == 18 and len(data.train) == 32
    assert info["test_data"] == DEV


@pytest.mark.slow
def test_the_documented_mrqa_command_runs_as_written(tmp_path, monkeypatch, dev):
    """The docs' fixture command, run from a directory holding the
    repository's tests/ (so that its relative paths and its default output
    directory, runs/finetune/mrqa, are as a user meets them)."""
    from electra_tf.cli.finetune import main

    for document in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = re.sub(r"\s*\\\n\s*", " ", document.read_text(encoding="utf-8"))
        if "--task mrqa --train-file tests/fixtures" in text:
            assert DOCUMENTED.split(" ", 1)[1] in text, document
    (tmp_path / "tests").symlink_to(REPO / "tests")
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(DOCUMENTED)
    assert argv[0] == "electra-finetune"
    assert main(argv[1:]) == 0
    out = tmp_path / "runs" / "finetune" / "mrqa"
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["task"] == "mrqa" and metrics["train_dataset"] == "CorpusFixture"
    assert metrics["train_questions"] == 32 and metrics["dev_questions"] == 18
    assert metrics["score_definition"].startswith("dev f1 (MRQA official")
    dev_results = metrics["seeds"]["1"]["dev"]
    predictions = json.loads((out / "predictions.json").read_text())
    assert set(predictions) == {e.qid for e in dev}
    # The written predictions give the recorded score, officially computed.
    assert _official(golds(dev), predictions)["f1"] == pytest.approx(dev_results["f1"])
    assert (out / "saved_model" / "saved_model.pb").exists()
    # With --test-file: scored once by the MRQA metric, its predictions written.
    assert main([*argv[1:], "--test-file", DEV, "--overwrite"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    test_predictions = json.loads((out / "test_predictions.json").read_text())
    assert metrics["test_predictions"].endswith("mrqa/test_predictions.json")
    assert set(test_predictions) == {e.qid for e in dev}
    assert _official(golds(dev), test_predictions)["f1"] == pytest.approx(
        metrics["test"]["f1"]
    )
