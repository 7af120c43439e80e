"""A file of sentences (one a line) scored by a run's `sentence_scorer` SavedModel."""

from __future__ import annotations

import os

import tensorflow as tf

from electra_tf.atomic_write import write_text_atomically
from electra_tf.data.corpus import iter_lines
from electra_tf.scoring.sentence_scorer import ScoringError, score_in_batches

# Where a sentence scorer may sit, relative to the directory a user names:
# the SavedModel itself, an export directory, a pre-training run's directory.
_SCORER_PLACES = ("", "sentence_scorer", os.path.join("export", "sentence_scorer"))


def find_sentence_scorer(path) -> str:
    """The `sentence_scorer` SavedModel in or under `path` (see `_SCORER_PLACES`).

    Raises `ScoringError` naming where it looked.
    """
    path = os.fspath(path)
    for place in _SCORER_PLACES:
        candidate = os.path.join(path, place) if place else path
        if tf.io.gfile.exists(os.path.join(candidate, "saved_model.pb")):
            return candidate
    raise ScoringError(
        f"no sentence scorer in {path} (looked for {path}/export/sentence_scorer, "
        f"{path}/sentence_scorer and {path} itself): give a pre-training run's "
        "--model-dir; a run exported before sentence scoring existed, or with a "
        "uniform generator and an objective other than electric, has none "
        "(rerunning its pretrain/run.py command re-exports)"
    )


def read_sentences(path) -> list[str]:
    """The lines of a UTF-8 text file (plain or `.gz`), without "\\n" or "\\r\\n".

    Raises `CorpusError` (`electra_tf.data.corpus.iter_lines`) if the file
    is missing, a directory, binary or not UTF-8.
    """
    return [line.removesuffix("\r") for line in iter_lines(path, kind="input")]


def load_sentence_scorer(path):
    """The loaded `sentence_scorer` SavedModel in or under `path`.

    Raises `ScoringError` if there is none, or if the SavedModel found is
    another export (e.g. `export/saved_model`, the discriminator), naming
    what to pass instead.
    """
    found = find_sentence_scorer(path)
    scorer = tf.saved_model.load(found)
    if hasattr(scorer, "score_sentences"):
        return scorer
    sibling = os.path.join(os.path.dirname(os.path.normpath(found)), "sentence_scorer")
    hint = (
        f"pass {sibling}, or the run's --model-dir"
        if tf.io.gfile.exists(os.path.join(sibling, "saved_model.pb"))
        else "pass a pre-training run's --model-dir, its export/ directory or "
        "its export/sentence_scorer"
    )
    raise ScoringError(
        f"{found} is a SavedModel but not a sentence scorer (it has no "
        f"score_sentences): {hint}"
    )


def _same_file(a, b) -> bool:
    """Whether paths `a` and `b` name one file (also via a symlink, a hard
    link or another spelling of the path)."""
    a, b = os.fspath(a), os.fspath(b)
    if "://" in a or "://" in b:
        return a.rstrip("/") == b.rstrip("/")
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return False


def score_file(scorer_path, input_path, output_path, batch_size=64) -> int:
    """Scores every line of `input_path`; writes `output_path`; returns the count.

    The output is a TSV with the header `score`, `token_count`, `sentence`
    and one row per input line, in order (an empty line scores 0 with 0
    tokens). Scores are `SentenceScorer` pseudo-log-likelihoods (natural log,
    higher: more likely). The output is written whole or not at all
    (`write_text_atomically`; its folder must exist: a misspelt one is an
    error, not a new folder), and a failed write is a `ScoringError`.

    Raises `ScoringError` before reading anything if `output_path` is the
    input file (by any path to it) or `batch_size` is not positive.
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ScoringError(f"--batch-size must be >= 1, got {batch_size}")
    if _same_file(input_path, output_path):
        raise ScoringError(
            f"--output {output_path} is the input file {input_path}: writing the "
            "scores would overwrite the sentences; choose another --output"
        )
    sentences = read_sentences(input_path)
    scorer = load_sentence_scorer(scorer_path)
    scored = score_in_batches(scorer.score_sentences, sentences, batch_size)
    rows = zip(scored["score"], scored["token_count"], sentences)
    lines = ["score\ttoken_count\tsentence\n"]
    lines += [f"{score:.6f}\t{count}\t{sentence}\n" for score, count, sentence in rows]
    write_text_atomically(
        output_path, "".join(lines), ScoringError, create_folder=False
    )
    return len(sentences)
