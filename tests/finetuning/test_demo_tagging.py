"""The tagging demo's bundled excerpt (electra_tf/assets/tasks/brown_pos)."""

import pathlib
import subprocess
import sys

import pytest

from electra_tf.finetuning.settings import DEMO_TAGGING
from electra_tf.finetuning.tagging_data import read_conll
from tests.helpers import SUBPROCESS_TIMEOUT

REPO = pathlib.Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "tasks" / "brown_pos"


def _words(sentences):
    return sum(len(words) for words in sentences.words)


def test_the_excerpt_has_the_promised_sizes_and_tags():
    train, dev, test = (
        read_conll(pathlib.Path(DEMO_TAGGING) / f"{split}.conll")
        for split in ("train", "dev", "test")
    )
    assert len(train) == 2000
    assert _words(dev) >= 5000 and _words(test) >= 5000
    tags = {tag for sentence in train.tags for tag in sentence}
    # The 12 universal tags, every one seen in training.
    assert tags == set("NOUN VERB ADJ ADV PRON DET ADP NUM CONJ PRT . X".split())
    for split in (dev, test):
        assert {tag for sentence in split.tags for tag in sentence} <= tags


@pytest.mark.skipif(not SHARED.is_dir(), reason="no ../shared/data/tasks/brown_pos")
def test_the_script_rebuilds_the_excerpt_byte_for_byte(tmp_path):
    subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "make_demo_tagging.py"),
            "--shared",
            str(SHARED),
            "--output",
            str(tmp_path),
        ],
        check=True,
        capture_output=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    for split in ("train", "dev", "test"):
        bundled = pathlib.Path(DEMO_TAGGING) / f"{split}.conll"
        assert (tmp_path / f"{split}.conll").read_bytes() == bundled.read_bytes()
