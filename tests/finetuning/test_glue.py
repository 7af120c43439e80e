"""GLUE task registry and loaders, on fixtures in the official GLUE layout."""

import doctest
import pathlib
import random
import shutil

import numpy as np
import pytest

import electra_tf.finetuning.glue_tasks
from electra_tf.finetuning.glue_readers import (
    GlueDataError,
    load_tfds_split,
    predictions_to_glue,
    read_glue_tsv,
    task_directory,
    write_submission,
)
from electra_tf.finetuning.glue_tasks import GLUE_TASKS, UnknownTaskError, get_task

GLUE_DIR = pathlib.Path(__file__).parents[1] / "fixtures" / "glue"

# (task, split) -> (number of examples, first example's texts, labels).
EXPECTED = {
    ("cola", "train"): (
        4,
        ("Our friends won't buy this analysis, let alone the next one we propose.",),
        [1, 1, 0, 0],
    ),
    ("cola", "dev"): (
        3,
        ("The sailors rode the breeze clear of the rocks.",),
        [1, 0, 1],
    ),
    ("cola", "test"): (2, ("Bill whistled past the house.",), None),
    ("sst2", "train"): (
        6,
        ("hide new secretions from the parental units ",),
        [0, 0, 1, 0, 1, 1],
    ),
    ("sst2", "dev"): (
        3,
        ("it 's a charming and often affecting journey . ",),
        [1, 0, 1],
    ),
    ("sst2", "test"): (2, ("uneasy mishmash of styles and genres .",), None),
    ("mrpc", "train"): (
        3,
        (
            'Amrozi accused his brother , whom he called " the witness " , of '
            "deliberately distorting his evidence .",
            'Referring to him as only " the witness " , Amrozi accused his '
            "brother of deliberately distorting his evidence .",
        ),
        [1, 0, 1],
    ),
    ("mrpc", "dev"): (2, None, [1, 0]),
    ("mrpc", "test"): (1, None, None),
    ("stsb", "train"): (
        4,
        ("A plane is taking off.", "An air plane is taking off."),
        [1.0, 0.76, 0.76, 0.52],
    ),
    ("stsb", "dev"): (3, None, [1.0, 0.95, 0.1]),
    ("stsb", "test"): (
        1,
        ("A girl is styling her hair.", "A girl is brushing her hair."),
        None,
    ),
    ("qqp", "train"): (
        2,
        (
            "How is the life of a math student? Could you describe your own "
            "experiences?",
            "Which level of prepration is enough for the exam jlpt5?",
        ),
        [0, 1],
    ),
    ("qqp", "dev"): (2, None, [0, 0]),
    ("qqp", "test"): (1, None, None),
    ("mnli", "train"): (
        4,
        (
            "Conceptually cream skimming has two basic dimensions - product and "
            "geography.",
            "Product and geography are what make cream skimming work. ",
        ),
        [1, 0, 0, 2],
    ),
    ("mnli", "dev_matched"): (2, ("The new rights are nice enough", None), [1, 2]),
    ("mnli", "dev_mismatched"): (3, None, [2, 2, 0]),
    ("mnli", "test_matched"): (1, None, None),
    ("mnli", "test_mismatched"): (
        2,
        (
            "What have you decided, what are you going to do?",
            "So what's your decision?",
        ),
        None,
    ),
    ("qnli", "train"): (3, None, [1, 1, 0]),
    ("qnli", "dev"): (
        2,
        (
            "What came into force after the new constitution was herald?",
            "As of that day, the new constitution heralding the Second Republic "
            "came into force.",
        ),
        [0, 1],
    ),
    ("qnli", "test"): (1, None, None),
    ("rte", "train"): (
        3,
        (
            "No Weapons of Mass Destruction Found in Iraq Yet.",
            "Weapons of Mass Destruction Found in Iraq.",
        ),
        [1, 0, 0],
    ),
    ("rte", "dev"): (2, None, [1, 0]),
    ("rte", "test"): (1, None, None),
    ("wnli", "train"): (3, None, [1, 1, 0]),
    ("wnli", "dev"): (2, None, [0, 1]),
    ("wnli", "test"): (1, None, None),
    ("ax", "test"): (
        3,
        ("The cat sat on the mat.", "The cat did not sit on the mat."),
        None,
    ),
}


def test_every_task_and_split_has_a_fixture_case():
    cases = set()
    for task in GLUE_TASKS.values():
        splits = (["train"] if task.has_train else []) + list(task.dev_splits)
        cases |= {(task.name, split) for split in splits + list(task.test_splits)}
    assert cases == set(EXPECTED)


@pytest.mark.parametrize("task_name,split", sorted(EXPECTED))
def test_reads_official_layout(task_name, split):
    task = get_task(task_name)
    count, first, labels = EXPECTED[task_name, split]
    examples = read_glue_tsv(task, split, str(GLUE_DIR))
    assert len(examples) == count
    assert len(examples.texts) == len(task.text_columns)
    assert all(len(segment) == count for segment in examples.texts)
    for expected, actual in zip(first or (), (s[0] for s in examples.texts)):
        if expected is not None:
            assert actual == expected
    if labels is None:
        assert examples.labels is None
    elif task.is_regression:
        assert examples.labels.dtype == np.float32
        np.testing.assert_allclose(examples.labels, labels, rtol=1e-6)
    else:
        assert examples.labels.dtype == np.int32
        assert examples.labels.tolist() == labels


def test_quotes_are_kept_and_byte_order_mark_dropped():
    # QUOTE_NONE: an unbalanced quote stays inside its field.
    sst2 = read_glue_tsv(get_task("sst2"), "train", str(GLUE_DIR))
    assert sst2.texts[0][-1] == 'a "gripping film'
    cola = read_glue_tsv(get_task("cola"), "train", str(GLUE_DIR))
    assert cola.texts[0][3] == 'The more we study verbs, the crazier "they get.'
    # MRPC's files start with a byte-order mark before "Quality".
    assert (GLUE_DIR / "MRPC" / "train.tsv").read_bytes().startswith(b"\xef\xbb\xbf")
    assert len(read_glue_tsv(get_task("mrpc"), "train", str(GLUE_DIR))) == 3


def test_data_dir_may_be_the_task_directory():
    task = get_task("rte")
    assert task_directory(task, str(GLUE_DIR)) == str(GLUE_DIR / "RTE")
    assert task_directory(task, str(GLUE_DIR / "RTE")) == str(GLUE_DIR / "RTE")
    examples = read_glue_tsv(task, "dev", str(GLUE_DIR / "RTE"))
    assert examples.labels.tolist() == [1, 0]


def test_registry():
    assert set(GLUE_TASKS) == {
        "cola",
        "sst2",
        "mrpc",
        "stsb",
        "qqp",
        "mnli",
        "qnli",
        "rte",
        "wnli",
        "ax",
    }
    assert get_task("STS-B") is get_task("stsb") is get_task("sts_b")
    assert [t.name for t in GLUE_TASKS.values() if t.epochs == 10] == ["stsb", "rte"]
    assert [t.name for t in GLUE_TASKS.values() if t.swap_pairs] == ["mrpc", "stsb"]
    mnli = get_task("mnli")
    assert mnli.submission_file("test_matched") == "MNLI-m.tsv"
    assert mnli.submission_file("test_mismatched") == "MNLI-mm.tsv"
    assert mnli.tfds_split("dev_mismatched") == "validation_mismatched"
    assert get_task("ax").submission_file("test") == "AX.tsv"
    assert get_task("ax").labels == mnli.labels
    assert get_task("cola").tfds_name == "glue/cola"
    assert get_task("cola").metrics == ("mcc",)
    assert get_task("qqp").metrics == ("accuracy", "f1")
    assert get_task("stsb").num_classes == 1
    with pytest.raises(UnknownTaskError, match="Unknown GLUE task 'squad'"):
        get_task("squad")


def test_swapped_pairs_and_dataset():
    mrpc = read_glue_tsv(get_task("mrpc"), "train", str(GLUE_DIR))
    doubled = mrpc.with_swapped_pairs()
    assert len(doubled) == 6
    assert doubled.texts[0][3:] == mrpc.texts[1]
    assert doubled.texts[1][3:] == mrpc.texts[0]
    assert doubled.labels.tolist() == [1, 0, 1, 1, 0, 1]
    (first, second), labels = next(iter(doubled.to_dataset(batch_size=4)))
    assert first.shape == second.shape == labels.shape == (4,)
    assert second.numpy()[0].decode() == mrpc.texts[1][0]
    sst2_test = read_glue_tsv(get_task("sst2"), "test", str(GLUE_DIR))
    (batch,) = next(iter(sst2_test.to_dataset(batch_size=8)))
    assert batch.shape == (2,)  # unlabelled: text only
    mnli_test = read_glue_tsv(get_task("mnli"), "test_mismatched", str(GLUE_DIR))
    ((premise, hypothesis),) = next(iter(mnli_test.to_dataset(batch_size=8)))
    assert premise.shape == hypothesis.shape == (2,)


def test_sample_is_seeded_keeps_pairs_and_grows_by_prefix():
    mrpc = read_glue_tsv(get_task("mrpc"), "train", str(GLUE_DIR)).with_swapped_pairs()
    pairs = set(zip(*mrpc.texts, mrpc.labels.tolist()))
    two = mrpc.sample(2, seed=5)
    assert len(two) == 2 and two.task is mrpc.task
    # Each drawn example keeps both its segments and its label.
    assert set(zip(*two.texts, two.labels.tolist())) <= pairs
    again = mrpc.sample(2, seed=5)
    assert again.texts == two.texts and again.labels.tolist() == two.labels.tolist()
    four = mrpc.sample(4, seed=5)
    assert (
        four.texts[0][:2] == two.texts[0]
        and four.labels[:2].tolist() == two.labels.tolist()
    )
    # Python's random with the seed: the draw is the shuffle's prefix.
    order = list(range(len(mrpc)))
    random.Random(5).shuffle(order)
    assert list(four.texts[1]) == [mrpc.texts[1][i] for i in order[:4]]
    assert {mrpc.sample(2, seed=s).texts for s in range(6)} != {two.texts}
    unlabelled = read_glue_tsv(get_task("sst2"), "test", str(GLUE_DIR))
    assert unlabelled.sample(1).labels is None
    with pytest.raises(ValueError, match="cannot draw 7 of 6 examples"):
        mrpc.sample(7)
    with pytest.raises(ValueError, match="cannot draw 0 of 6 examples"):
        mrpc.sample(0)


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_missing_file(tmp_path):
    with pytest.raises(
        GlueDataError, match=r"SST-2 train file not found: .*train\.tsv"
    ):
        read_glue_tsv(get_task("sst2"), "train", str(tmp_path))


def test_missing_column(tmp_path):
    _write(
        tmp_path / "RTE" / "train.tsv", "index\tsentence1\tlabel\n0\ta\tentailment\n"
    )
    with pytest.raises(GlueDataError, match=r"line 1: no column 'sentence2'"):
        read_glue_tsv(get_task("rte"), "train", str(tmp_path))


def test_label_outside_the_set_names_file_line_and_value(tmp_path):
    path = tmp_path / "MNLI" / "train.tsv"
    shutil.copytree(GLUE_DIR / "MNLI", tmp_path / "MNLI")
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace("\tentailment\tentailment", "\tentailment\thidden")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(GlueDataError) as error:
        read_glue_tsv(get_task("mnli"), "train", str(tmp_path))
    assert str(error.value) == (
        f"{path}, line 4: label 'hidden' is not one of entailment, neutral, "
        "contradiction"
    )


def test_bad_regression_score(tmp_path):
    shutil.copytree(GLUE_DIR / "STS-B", tmp_path / "STS-B")
    path = tmp_path / "STS-B" / "dev.tsv"
    path.write_text(path.read_text().replace("4.750", "high"))
    with pytest.raises(GlueDataError, match=r"line 3: score 'high' is not a number"):
        read_glue_tsv(get_task("stsb"), "dev", str(tmp_path))


def test_empty_split(tmp_path):
    _write(tmp_path / "SST-2" / "dev.tsv", "sentence\tlabel\n")
    with pytest.raises(
        GlueDataError, match=r"dev.tsv: no examples \(the split is empty\)"
    ):
        read_glue_tsv(get_task("sst2"), "dev", str(tmp_path))
    _write(tmp_path / "SST-2" / "train.tsv", "")
    with pytest.raises(GlueDataError, match=r"train.tsv: no examples"):
        read_glue_tsv(get_task("sst2"), "train", str(tmp_path))


def test_malformed_row(tmp_path):
    _write(tmp_path / "SST-2" / "dev.tsv", "sentence\tlabel\ngood\t1\nbad\tmovie\t0\n")
    with pytest.raises(GlueDataError, match="line 3: 3 tab-separated fields"):
        read_glue_tsv(get_task("sst2"), "dev", str(tmp_path))


def test_predictions_and_submission_files(tmp_path):
    mnli = get_task("mnli")
    logits = np.array([[2.0, 0.0, 1.0], [0.0, 0.0, 3.0]])
    assert predictions_to_glue(mnli, logits) == ["entailment", "contradiction"]
    stsb = get_task("stsb")
    assert predictions_to_glue(stsb, np.array([[0.5], [1.0]])) == ["2.500", "5.000"]
    path = write_submission(mnli, "test_mismatched", logits, str(tmp_path))
    assert pathlib.Path(path).name == "MNLI-mm.tsv"
    assert pathlib.Path(path).read_text() == (
        "index\tprediction\n0\tentailment\n1\tcontradiction\n"
    )
    ax = get_task("ax")
    path = write_submission(ax, "test", logits[::-1], str(tmp_path))
    assert pathlib.Path(path).read_text().splitlines()[1] == "0\tcontradiction"
    cola = write_submission(get_task("cola"), "test", [[0.1, 0.9]], str(tmp_path))
    assert pathlib.Path(cola).read_text() == "index\tprediction\n0\t1\n"


def test_tfds_loader_on_mock_data():
    """The tfds path through `tfds.testing.mock_data` (random examples, no
    download): features, label ids and unlabelled test splits."""
    import tensorflow_datasets as tfds  # a dependency: missing is a failure

    with tfds.testing.mock_data(num_examples=5):
        mnli = get_task("mnli")
        dev = load_tfds_split(mnli, "dev_mismatched")
        assert len(dev) == 5 and len(dev.texts) == 2
        assert dev.labels.dtype == np.int32
        assert set(dev.labels.tolist()) <= {0, 1, 2}
        assert isinstance(dev.texts[0][0], str)
        assert load_tfds_split(get_task("cola"), "test").labels is None
        stsb = load_tfds_split(get_task("stsb"), "train")
        assert stsb.labels.dtype == np.float32


@pytest.mark.parametrize("module", [electra_tf.finetuning.glue_tasks])
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
