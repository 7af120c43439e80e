"""Fine-tuning on the user's own CSV, TSV and JSON Lines files.

The run test fine-tunes a tiny model on a slice of the bundled rt_polarity
task twice, as `--task sst2` and through the custom-file path, and checks that
both give the same dev accuracy, epoch by epoch.
"""

import csv
import gzip
import json
import pathlib

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.config import FinetuningConfig
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.finetuning.classification import ClassificationTask
from electra_tf.finetuning.custom_data import (
    DataFileError,
    infer_label_type,
    load_custom_data,
    read_labelled_file,
    write_test_predictions,
)
from electra_tf.finetuning.glue_readers import GlueExamples, TaskData, read_glue_tsv
from electra_tf.finetuning.glue_tasks import get_task
from electra_tf.finetuning.starting_point import StartingPoint
from electra_tf.finetuning.trainer import finetune_seed, run_finetuning
from electra_tf.presets import get_preset
from tests.helpers import TINY_VOCABULARY_SIZE

REPO = pathlib.Path(__file__).resolve().parents[2]
RT_POLARITY = REPO / "electra_tf" / "assets" / "tasks" / "rt_polarity"
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding) if isinstance(text, str) else text)
    return path


def test_csv_tsv_and_jsonl_pairs(tmp_path):
    csv_file = write(
        tmp_path / "train.csv",
        'q,a,y\n"Is it, really?","Yes, ""quite""",same\nwhy,because,other\n',
    )
    tsv_file = write(tmp_path / "dev.tsv", 'q\ta\ty\n"odd quote\tkept\tsame\n')
    jsonl_file = write(
        tmp_path / "test.jsonl",
        json.dumps({"q": "caf\u00e9", "a": "\u6f22\u5b57"})
        + "\n\n"
        + json.dumps({"q": "b", "a": "c", "y": "x"})
        + "\n",
    )
    task, data = load_custom_data(
        csv_file, tsv_file, jsonl_file, text_columns=["q", "a"], label_column="y"
    )
    assert data.train.texts == (("Is it, really?", "why"), ('Yes, "quite"', "because"))
    assert data.dev["dev"].texts == (('"odd quote',), ("kept",))
    assert data.test["custom", "test"].texts == (
        ("caf\u00e9", "b"),
        ("\u6f22\u5b57", "c"),
    )
    assert task.labels == ("other", "same") and len(task.text_columns) == 2
    assert data.train.labels.tolist() == [1, 0] and data.dev["dev"].labels.tolist() == [
        1
    ]
    assert task.text_features == ("q", "a")


def test_label_type_is_inferred_or_forced(tmp_path):
    assert infer_label_type(["1", "2", "5", "3"]) == "classification"
    assert infer_label_type(["0.5", "1", "4.75"]) == "regression"
    assert infer_label_type([str(i) for i in range(40)]) == "regression"
    assert infer_label_type(["neg", "pos"]) == "classification"
    rows = "".join(
        json.dumps({"text": f"t{i}", "score": i % 3}) + "\n" for i in range(6)
    )
    train = write(tmp_path / "train.jsonl", rows)
    task, data = load_custom_data(train, train, label_column="score")
    assert task.labels == ("0", "1", "2") and task.metrics == ("accuracy", "mcc")
    task, data = load_custom_data(
        train, train, label_column="score", label_type="regression"
    )
    assert task.is_regression and task.metrics == ("pearson", "spearman")
    assert data.train.labels.dtype == np.float32
    assert data.train.labels.tolist() == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0]


GOOD_TRAIN = "text,label\ngood,pos\nbad,neg\n"


@pytest.mark.parametrize(
    "train, dev, kwargs, message",
    [
        (GOOD_TRAIN, "txt,label\nfine,pos\n", {}, r"dev.csv, line 1: no column 'text'"),
        (GOOD_TRAIN, "text,label\n", {}, r"dev.csv: no examples"),
        (
            GOOD_TRAIN,
            "text,label\nok,pos\nmeh,neutral\n",
            {},
            r"dev.csv, line 3: label 'neutral' does not occur in the training file",
        ),
        (
            GOOD_TRAIN,
            "text,label\nok,pos\nso, so,neg\n",
            {},
            r"dev.csv, line 3: 3 comma-separated fields where the header has 2",
        ),
        (
            GOOD_TRAIN,
            b"text,label\nok,pos\ncaf\xe9,neg\n",
            {},
            r"dev.csv, line 3: not UTF-8 \(byte\(s\) b'\\xe9'\)",
        ),
        (
            "text,label\na,1.5\nb,2\n",
            "text,label\nc,high\n",
            {},
            r"dev.csv, line 2: label 'high' is not a number",
        ),
        (
            "text,label\na,pos\nb,pos\n",
            "text,label\nc,pos\n",
            {},
            r"train.csv: every label is 'pos'",
        ),
        (
            GOOD_TRAIN,
            GOOD_TRAIN,
            {"text_columns": ["a", "b", "c"]},
            r"one or two text columns",
        ),
    ],
    ids=[
        "column",
        "empty",
        "unseen",
        "fields",
        "utf8",
        "number",
        "one-class",
        "3-cols",
    ],
)
def test_bad_files_get_one_line_naming_file_line_and_value(
    tmp_path, train, dev, kwargs, message
):
    if kwargs.get("text_columns") == ["a", "b", "c"]:
        train = dev = "a,b,c,label\nx,y,z,pos\nx,y,z,neg\n"
    train_file = write(tmp_path / "train.csv", train)
    dev_file = write(tmp_path / "dev.csv", dev)
    with pytest.raises(DataFileError, match=message) as error:
        load_custom_data(train_file, dev_file, **{"text_columns": ["text"], **kwargs})
    assert "\n" not in str(error.value)


def test_bad_tsv_and_jsonl_rows(tmp_path):
    tsv = write(tmp_path / "x.tsv", "text\tlabel\na\t1\nb\t0\textra\n")
    with pytest.raises(DataFileError, match=r"x.tsv, line 3: 3 tab-separated"):
        read_labelled_file(tsv, ["text"], "label")
    jsonl = write(tmp_path / "x.jsonl", '{"text": "a", "label": 1}\n{"text": "b"\n')
    with pytest.raises(DataFileError, match=r"x.jsonl, line 2: not valid JSON"):
        read_labelled_file(jsonl, ["text"], "label")
    jsonl = write(tmp_path / "y.jsonl", '{"text": "a", "label": 1}\n{"label": 0}\n')
    with pytest.raises(DataFileError, match=r"y.jsonl, line 2: no 'text' field"):
        read_labelled_file(jsonl, ["text"], "label")
    with pytest.raises(DataFileError, match=r"z.txt: unknown file type"):
        read_labelled_file(tmp_path / "z.txt", ["text"], "label")
    with pytest.raises(DataFileError, match=r"nowhere.csv: file not found"):
        read_labelled_file(tmp_path / "nowhere.csv", ["text"], "label")


def test_a_gzipped_file_reads_as_its_text_and_a_corrupt_one_is_named(tmp_path):
    plain = write(tmp_path / "train.csv", GOOD_TRAIN)
    packed = write(tmp_path / "train.csv.gz", gzip.compress(GOOD_TRAIN.encode()))
    assert read_labelled_file(packed, ["text"], "label") == read_labelled_file(
        plain, ["text"], "label"
    )
    broken = write(tmp_path / "dev.csv.gz", gzip.compress(GOOD_TRAIN.encode())[:-9])
    with pytest.raises(DataFileError, match=r"dev.csv.gz: not a readable gzip file"):
        read_labelled_file(broken, ["text"], "label")
    with pytest.raises(DataFileError, match=r"x.csv.gz: not a readable gzip file"):
        read_labelled_file(write(tmp_path / "x.csv.gz", GOOD_TRAIN), ["text"], "label")


def test_empty_and_null_labels_are_refused_with_their_line(tmp_path):
    dev = write(tmp_path / "dev.csv", GOOD_TRAIN)
    empty = write(tmp_path / "empty.csv", "text,label\ngood,pos\nso-so,\nbad,neg\n")
    with pytest.raises(DataFileError) as error:
        load_custom_data(empty, dev)
    assert str(error.value) == (
        f"{empty}, line 3: the label (label) is empty; every training and dev "
        "example needs one"
    )
    null = write(
        tmp_path / "null.jsonl",
        '{"text": "good", "label": "pos"}\n{"text": "bad", "label": null}\n',
    )
    with pytest.raises(DataFileError, match=r"null.jsonl, line 2: .* is null"):
        load_custom_data(dev, null)  # in the dev file too


def test_a_score_column_with_a_typo_names_the_cells(tmp_path):
    scores = "".join(f"t{i},{i * 0.37:.2f}\n" for i in range(30))
    train = write(tmp_path / "train.csv", "text,label\n" + scores + "x,n/a\n")
    dev = write(tmp_path / "dev.csv", "text,label\na,4.86\n")
    with pytest.raises(DataFileError) as error:
        load_custom_data(train, dev)
    assert str(error.value) == (
        f"{train}: the labels (label) are numbers but for 1 of 31: line 32 'n/a'; "
        "fix those cells if the labels are scores, or pass --label-type "
        "classification if every value is a class"
    )
    task, _ = load_custom_data(train, train, label_type="classification")
    assert len(task.labels) == 31


def test_the_inferred_labels_are_logged_with_their_counts(tmp_path, caplog):
    caplog.set_level("INFO", logger="electra_tf.finetuning.custom_data")
    train = write(tmp_path / "train.csv", "text,label\na,pos\nb,neg\nc,pos\nd,0\n")
    load_custom_data(train, train)
    assert (
        f"{train}: labels are 3 classes (inferred; --label-type to force): "
        "'0' 1, 'neg' 1, 'pos' 2"
    ) in caplog.text
    assert "class(es) '0' (1 examples) are numbers among word classes" in caplog.text
    scores = write(tmp_path / "scores.csv", "text,label\na,0.5\nb,1.5\n")
    load_custom_data(scores, scores)
    assert f"{scores}: labels are scores (inferred" in caplog.text
    assert "2, from 0.5 to 1.5, mean 1" in caplog.text


def _predict_test_file(tmp_path, name, text, text_columns=("text",)):
    """`write_test_predictions` for the test file `name` holding `text`,
    predicting the first class for every row; returns the file written."""
    train = write(tmp_path / "train.csv", "text,second,label\na,x,pos\nb,y,neg\n")
    test = write(tmp_path / name, text)
    task, data = load_custom_data(train, train, test, text_columns=text_columns)
    examples = data.test[task.name, "test"]
    out = tmp_path / "predictions" / name
    written = write_test_predictions(examples, ["neg"] * len(examples), str(out.parent))
    return pathlib.Path(written)


def test_own_test_predictions_keep_every_column_in_the_files_format(tmp_path):
    # CSV: standard quoting, so commas, quotes and line breaks in a text survive.
    """Own `--test-file` predictions go to `predictions/test.<the test file's format>`,
    holding the test file's rows with every column kept (texts with commas, quotes,
    line breaks, non-ASCII; ids; nested JSON) and a `prediction` column (was:
    `submission/test.tsv` with `index<TAB>prediction` only, no text to read a
    prediction beside)."""
    text = 'id,text\n7,"good, ""really"""\n8,"two\nlines"\n9,Ünïcode 映画\n'
    path = _predict_test_file(tmp_path, "test.csv", text)
    assert path == tmp_path / "predictions" / "test.csv"
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows == [
        ["id", "text", "prediction"],
        ["7", 'good, "really"', "neg"],
        ["8", "two\nlines", "neg"],
        ["9", "Ünïcode 映画", "neg"],
    ]
    # TSV: no quoting, as read (a quote is text).
    path = _predict_test_file(
        tmp_path, "test.tsv", 'text\tsecond\nsay "hi"\tthere\n', ("text", "second")
    )
    assert path.read_text() == 'text\tsecond\tprediction\nsay "hi"\tthere\tneg\n'
    # JSON Lines and a JSON array: JSON Lines, every field kept with its type.
    rows = [{"text": "good", "id": 1, "meta": {"a": [1]}}, {"text": "映画", "id": 2}]
    lines = "\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n"
    for name, text in (("test.jsonl", lines), ("test.json", json.dumps(rows))):
        path = _predict_test_file(tmp_path, name, text)
        assert path.name == "test.jsonl"
        written = [json.loads(line) for line in path.read_text().splitlines()]
        assert written == [{**row, "prediction": "neg"} for row in rows]


def test_a_test_file_with_a_prediction_column_is_refused(tmp_path):
    train = write(tmp_path / "train.csv", GOOD_TRAIN)
    test = write(tmp_path / "test.csv", "text,prediction\ngood,pos\n")
    with pytest.raises(DataFileError) as error:
        load_custom_data(train, train, test)
    assert str(error.value) == (
        f"{test}, line 1: a column named 'prediction', which the predictions file "
        "adds beside your columns; rename it"
    )


def test_a_json_array_reads_like_json_lines(tmp_path):
    rows = [{"text": "good", "label": "pos"}, {"text": "bad", "label": "neg"}]
    array = write(tmp_path / "train.json", json.dumps(rows, indent=1))
    lines = write(tmp_path / "dev.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    array_texts, array_labels, array_lines = read_labelled_file(
        array, ["text"], "label"
    )
    assert (array_texts, array_labels) == read_labelled_file(lines, ["text"], "label")[
        :2
    ]
    assert array_lines == [2, 6]  # where each object starts
    bad = write(tmp_path / "bad.json", '[\n{"text": "a", "label": "x"},\n"b"\n]')
    with pytest.raises(DataFileError) as error:
        read_labelled_file(bad, ["text"], "label")
    assert str(error.value) == (
        f"{bad}, line 3: expected a JSON object, got '\"b\"' (a JSON array of objects)"
    )
    write(bad, '[{"text": "a", "label": "x"}\n{"text": "b"}]')
    with pytest.raises(DataFileError, match=r"line 2: expected ',' or ']'"):
        read_labelled_file(bad, ["text"], "label")


def _rt_slice(split, rows):
    examples = read_glue_tsv(get_task("sst2"), split, str(RT_POLARITY))
    return examples.texts[0][:rows], examples.labels[:rows]


@pytest.fixture(scope="module")
def rt_polarity_runs(tmp_path_factory):
    """rt_polarity (64 train, 32 dev) as sst2 and as a custom CSV with labels
    neg/pos; one seed, two epochs, the tiny model."""
    root = tmp_path_factory.mktemp("custom")
    vocabulary = (
        SPECIAL
        + sorted({w for t in _rt_slice("train", 64)[0] for w in t.lower().split()})[
            : TINY_VOCABULARY_SIZE - 5
        ]
    )
    vocabulary += [f"unused{i}" for i in range(TINY_VOCABULARY_SIZE - len(vocabulary))]
    model_config = get_preset("tiny").model.override(
        vocabulary_size=TINY_VOCABULARY_SIZE, max_sequence_length=32
    )
    config = FinetuningConfig(
        learning_rate=1e-3, epochs=2, batch_size=16, max_seq_length=32
    )
    sst2 = get_task("sst2")
    glue_data = TaskData(
        train=GlueExamples(sst2, "train", *_wrap(*_rt_slice("train", 64))),
        dev={"dev": GlueExamples(sst2, "dev", *_wrap(*_rt_slice("dev", 32)))},
        test={},
    )
    for split, rows in (("train", 64), ("dev", 32), ("test", 4)):
        texts, labels = _rt_slice("train" if split == "test" else split, rows)
        with open(root / f"{split}.csv", "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(["review", "sentiment"])
            writer.writerows([t, "neg pos".split()[y]] for t, y in zip(texts, labels))
    task, custom_data = load_custom_data(
        root / "train.csv",
        root / "dev.csv",
        root / "test.csv",
        text_columns=["review"],
        label_column="sentiment",
    )

    start = StartingPoint(None, model_config, Vocabulary(tuple(vocabulary)))
    _, glue_results = finetune_seed(
        ClassificationTask(glue_data, config, start), seed=3, verbose=0
    )
    summary = run_finetuning(
        ClassificationTask(custom_data, config, start),
        str(root / "run"),
        seeds=(3,),
        verbose=0,
    )
    return root / "run", glue_results, summary


def _wrap(texts, labels):
    return (texts,), labels


def test_custom_path_gives_the_sst2_dev_accuracy(rt_polarity_runs):
    _, glue_results, summary = rt_polarity_runs
    custom = summary["seeds"]["3"]["epochs"]
    glue = glue_results["epochs"]
    assert [e["dev"]["dev"]["accuracy"] for e in custom] == [
        e["dev"]["dev"]["accuracy"] for e in glue
    ]
    assert [e["train"]["loss"] for e in custom] == [e["train"]["loss"] for e in glue]
    assert {"accuracy", "f1", "mcc"} <= set(custom[0]["dev"]["dev"])


def test_custom_run_predicts_and_exports_the_users_labels(rt_polarity_runs):
    run_dir, _, summary = rt_polarity_runs
    # Not a GLUE task: no GLUE-server submission, but the test file's rows
    # (its texts and labels) with a prediction each, as CSV like the file.
    assert not (run_dir / "submission").exists()
    assert summary["predictions"] == str(run_dir / "predictions" / "test.csv")
    with open(summary["predictions"], newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    texts, _ = _rt_slice("train", 4)
    assert [row["review"] for row in rows] == list(texts)
    assert {row["prediction"] for row in rows} <= {"neg", "pos"}
    # The test file has the label column: scored once, with the model that
    # wrote these predictions.
    right = [row["prediction"] == row["sentiment"] for row in rows]
    assert summary["test"]["accuracy"] == pytest.approx(sum(right) / len(rows))
    serve = tf.saved_model.load(str(run_dir / "saved_model")).signatures[
        "serving_default"
    ]
    outputs = serve(review=tf.constant(["a gripping film", "dull"]))
    assert set(outputs["label"].numpy().tolist()) <= {b"neg", b"pos"}
    assert json.loads((run_dir / "metrics.json").read_text())["task"] == "custom"


def test_docstring_examples_run():
    import doctest

    import electra_tf.finetuning.custom_data

    result = doctest.testmod(
        electra_tf.finetuning.custom_data, optionflags=doctest.ELLIPSIS
    )
    assert result.attempted > 0 and result.failed == 0


def test_csv_layout_problems_name_the_line_where_they_are(tmp_path):
    # A column named twice (the second silently won), a quote left open (the
    # error named the file's last line), a cell over the csv module's 128 KiB
    # field limit (a csv.Error traceback naming nothing).
    """A column named twice (was: the second column silently used); a quote left open,
    named at the line it opens on (was: reported on the file's last line); a cell
    over 128 KiB is read (was: a `csv.Error` traceback)."""
    twice = write(tmp_path / "twice.csv", "text,label,text\nhello,pos,x\nbye,neg,y\n")
    with pytest.raises(DataFileError) as error:
        load_custom_data(twice, twice)
    assert str(error.value) == (
        f"{twice}, line 1: the header names column 'text' 2 times "
        "(['text', 'label', 'text']); each column needs its own name"
    )
    rows = 'text,label\nfine,pos\n"unclosed,neg\nthird,pos\nfourth,neg\nfifth,pos\n'
    quote = write(tmp_path / "quote.csv", rows)
    with pytest.raises(DataFileError) as error:
        load_custom_data(quote, quote)
    assert str(error.value).startswith(
        f"{quote}, line 3: a quoted field opened on line 3 runs to line 6 "
        "(1 comma-separated fields where the header has 2); is a closing quote "
        "missing?"
    )
    long_text = "word " * 40_000  # 200,000 characters in one cell
    long = write(tmp_path / "long.csv", f'text,label\n"{long_text}",pos\nshort,neg\n')
    _, data = load_custom_data(long, long)
    assert data.train.texts[0][0] == long_text


def test_labels_that_are_not_labels_are_refused_or_warned(tmp_path, caplog):
    """The label column also a text column, and a text column given as the label column
    (a class per row: 20 classes or more, and more than half the rows), are refused.
    Numbers and words mixed in a label column get a WARNING naming the number
    classes and the word classes, whatever their proportion (was: an INFO line when
    numbers were half or more); labels differing only by surrounding spaces are one
    class, with a WARNING naming them (were: two classes)."""
    train = write(tmp_path / "train.csv", "text,label\na,pos\nb,neg\n")
    # The label column given as the text column.
    with pytest.raises(DataFileError, match="'label' is both a text column and the"):
        load_custom_data(train, train, text_columns=["label"])
    # A text column given as the label column: a class per row.
    rows = "".join(f"title {i},body {i}\n" for i in range(30))
    swapped = write(tmp_path / "swapped.csv", "title,body\n" + rows)
    with pytest.raises(DataFileError) as error:
        load_custom_data(swapped, swapped, text_columns=["body"], label_column="title")
    assert str(error.value).startswith(
        f"{swapped}: the labels (title) are 30 different values in 30 rows"
    )
    assert "is 'title' a text column?" in str(error.value)
    # Numbers and words mixed half and half: warned, not only an INFO line.
    caplog.set_level("INFO", logger="electra_tf.finetuning.custom_data")
    mixed = write(tmp_path / "mixed.csv", "text,label\na,0\nb,1\nc,pos\nd,neg\n")
    load_custom_data(mixed, mixed)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        f"{mixed}: class(es) '0' (1 examples), '1' (1 examples) are numbers among "
        "word classes ('neg', 'pos'); each is a class of its own: mistakes?"
    ]
    # Labels that differ only by the spaces around them are one class.
    caplog.clear()
    spaced = write(tmp_path / "spaced.csv", "text,label\na,pos\nb, pos\nc,neg \n")
    dev = write(tmp_path / "dev.csv", "text,label\nd,pos\ne, neg\n")
    task, data = load_custom_data(spaced, dev)
    assert task.labels == ("neg", "pos")
    assert data.train.labels.tolist() == [1, 1, 0]
    assert data.dev["dev"].labels.tolist() == [1, 0]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        f"{spaced}: label(s) ' pos', 'neg ' have spaces around them; read without "
        "them, as 'pos', 'neg'"
    ]
