"""A file of sentences (one a line) scored by a run's `sentence_scorer` SavedModel."""

from __future__ import annotations

import os

import tensorflow as tf

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


def score_file(scorer_path, input_path, output_path, batch_size=64) -> int:
    """Scores every line of `input_path`; writes `output_path`; returns the count.

    The output is a TSV with the header `score`, `token_count`, `sentence`
    and one row per input line, in order (an empty line scores 0 with 0
    tokens). Scores are `SentenceScorer` pseudo-log-likelihoods (natural log,
    higher: more likely).
    """
    sentences = read_sentences(input_path)
    scorer = tf.saved_model.load(find_sentence_scorer(scorer_path))
    scored = score_in_batches(scorer.score_sentences, sentences, batch_size)
    rows = zip(scored["score"], scored["token_count"], sentences)
    lines = ["score\ttoken_count\tsentence\n"]
    lines += [f"{score:.6f}\t{count}\t{sentence}\n" for score, count, sentence in rows]
    try:
        with tf.io.gfile.GFile(os.fspath(output_path), "w") as f:
            f.write("".join(lines))
    except (OSError, tf.errors.OpError) as error:
        raise ScoringError(f"cannot write {output_path}: {error}") from error
    return len(sentences)
