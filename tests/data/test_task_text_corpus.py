"""scripts/task_text_corpus.py: a task's training sentences as pre-training text."""

import pathlib

import pytest

from electra_tf.data.corpus import read_documents
from scripts.task_text_corpus import main

FIXTURES = pathlib.Path(__file__).parents[1] / "fixtures"
SST2_TRAIN = FIXTURES / "glue" / "SST-2" / "train.tsv"


def test_writes_shuffled_copies_in_documents_without_labels(tmp_path):
    output = tmp_path / "corpus" / "task.txt"
    main(
        [
            "--tsv",
            str(SST2_TRAIN),
            "--copies",
            "2",
            "--sentences-per-document",
            "4",
            "--output",
            str(output),
        ]
    )
    rows = SST2_TRAIN.read_text(encoding="utf-8").splitlines()[1:]
    sentences = sorted(row.rsplit("\t", 1)[0].strip() for row in rows)
    documents = read_documents(str(output))
    # 6 sentences per copy, in documents of 4 and 2; each copy has all of them.
    assert [len(d) for d in documents] == [4, 2, 4, 2]
    assert sorted(documents[0] + documents[1]) == sentences
    assert sorted(documents[2] + documents[3]) == sentences
    assert documents[0] + documents[1] != documents[2] + documents[3]
    assert "\t" not in output.read_text(encoding="utf-8")


def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
    with pytest.raises(SystemExit, match="no column 'text'"):
        main(
            [
                "--tsv",
                str(SST2_TRAIN),
                "--column",
                "text",
                "--output",
                str(tmp_path / "x"),
            ]
        )
    missing = tmp_path / "missing.tsv"
    with pytest.raises(SystemExit, match=f"{missing}: cannot read it"):
        main(["--tsv", str(missing), "--output", str(tmp_path / "x")])
    latin1 = tmp_path / "latin1.tsv"
    latin1.write_bytes("sentence\tlabel\ncaf\xe9\t1\n".encode("latin-1"))
    with pytest.raises(SystemExit, match=f"{latin1}: cannot read it"):
        main(["--tsv", str(latin1), "--output", str(tmp_path / "x")])
    assert not (tmp_path / "x").exists()
