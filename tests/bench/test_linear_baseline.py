"""bench/tasks/linear_baseline.py: C is chosen on dev before test is read, the
figure is the chosen model's, and a malformed split names its file and line
(read as the study reads it)."""

import pathlib

import pytest

from bench.tasks import linear_baseline

RT_POLARITY = pathlib.Path(__file__).parents[2] / "electra_tf/assets/tasks/rt_polarity"


def _task(tmp_path):
    """The bundled rt_polarity excerpt, its labelled dev halved into dev and
    test (its test.tsv has no labels, as GLUE's)."""
    (tmp_path / "train.tsv").write_bytes((RT_POLARITY / "train.tsv").read_bytes())
    header, *rows = (RT_POLARITY / "dev.tsv").read_text().splitlines()
    for split, part in (("dev", rows[:250]), ("test", rows[250:])):
        (tmp_path / f"{split}.tsv").write_text("\n".join([header, *part]) + "\n")
    return tmp_path


def test_c_is_chosen_on_dev_before_test_is_read(monkeypatch, tmp_path):
    reads = []
    real_read = linear_baseline.read_split

    def read_split(task_dir, split):
        reads.append(split)
        return real_read(task_dir, split)

    monkeypatch.setattr(linear_baseline, "read_split", read_split)
    args = linear_baseline.parse_args(
        ["--task-dir", str(_task(tmp_path)), "--c-grid", "0.01,1,100", "--output", "x"]
    )
    result = linear_baseline.run(args)
    assert reads == ["train", "dev", "test"]
    by_c = result["dev_accuracy_by_c"]
    assert result["dev_accuracy"] == max(by_c.values())
    assert by_c[str(result["chosen_c"])] == result["dev_accuracy"]
    assert result["examples"] == {"train": 2000, "dev": 250, "test": 250}
    # Words carry sentiment: well above the majority class on 2,000 sentences.
    assert result["test_accuracy"] > result["test_majority_share"] + 0.05


def test_a_malformed_split_names_its_file_and_line(tmp_path):
    (tmp_path / "train.tsv").write_text("text\tlabel\nfine words\t1\n")
    with pytest.raises(SystemExit, match="train.tsv, line 1: no column 'sentence'"):
        linear_baseline.read_split(tmp_path, "train")
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\nfine words\tpositive\n")
    with pytest.raises(
        SystemExit, match="dev.tsv, line 2: label 'positive' is not one of 0, 1"
    ):
        linear_baseline.read_split(tmp_path, "dev")
    (tmp_path / "test.tsv").write_bytes(b"sentence\tlabel\n\xff\t1\n")
    with pytest.raises(SystemExit, match="test.tsv, line 2: not UTF-8"):
        linear_baseline.read_split(tmp_path, "test")
    with pytest.raises(SystemExit, match="other file not found: .*other.tsv"):
        linear_baseline.read_split(tmp_path, "other")


def test_pieces_are_the_encoders_wordpiece_ids_cut_as_fine_tuning_cuts_them():
    from electra_tf.data.vocabulary import Vocabulary

    vocab = pathlib.Path(__file__).parents[2] / "electra_tf/assets/demo_vocab.txt"
    text = "An unflinchingly bleak and desperate film."
    ids = Vocabulary.from_file(vocab).tokenizer().tokenize([text])[0]
    assert linear_baseline.as_pieces([text], str(vocab), 0) == [" ".join(map(str, ids))]
    assert linear_baseline.as_pieces([text], str(vocab), 3)[0].split() == [
        str(i) for i in ids[:3]
    ]
