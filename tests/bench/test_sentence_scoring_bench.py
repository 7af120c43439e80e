"""bench/suite/sentence_scoring.py: how the minimal pairs are built and counted
(the pre-training and scoring it drives are tested in tests/scoring)."""

import collections

import pytest

from bench.suite.sentence_scoring import (
    MIN_COUNT,
    NEIGHBOURS,
    frequency_ranking,
    minimal_pairs,
    neighbours,
    pair_accuracy,
    unigram_scores,
    word_counts,
)

# 26 words a..z, word i seen 5 + i times; "Capital", "x2" and rare words
# are never eligible.
WORDS = [chr(ord("a") + i) * 2 for i in range(26)]
CORPUS = [" ".join([word] * (MIN_COUNT + i)) for i, word in enumerate(WORDS)]
CORPUS += ["Capital x2 rare"] * 3
SENTENCES = [
    "aa bb cc dd ee ff .",
    "gg hh Capital ii jj kk",
    "ll mm nn oo pp qq rr",
    "Capital x2 , rare .",  # nothing to replace or swap
    "ss tt uu vv ww xx",
    "yy zz aa bb cc dd",
]


@pytest.fixture(scope="module")
def ranking():
    tokens = [*WORDS, "capital", "x2", "rare", "[PAD]"]
    return frequency_ranking(word_counts(CORPUS), tokens)


def test_eligible_words_are_plain_frequent_tokens_ranked_by_count(ranking):
    assert ranking == WORDS[::-1]  # "zz" is the most frequent
    # A window of the nearest ranks, shifted at either end.
    assert neighbours(ranking, 0) == ranking[1 : NEIGHBOURS + 1]
    assert neighbours(ranking, 12) == ranking[7:12] + ranking[13:18]
    assert neighbours(ranking, 25) == ranking[15:25]


def test_pairs_are_half_replacements_half_swaps_and_reproducible(ranking):
    pairs = minimal_pairs(SENTENCES, ranking, 5, seed=3)
    assert pairs == minimal_pairs(SENTENCES, ranking, 5, seed=3)
    assert collections.Counter(p["kind"] for p in pairs) == {
        "replacement": 3,
        "swap": 2,
    }
    assert "Capital x2 , rare ." not in [p["original"] for p in pairs]
    rank = {word: i for i, word in enumerate(ranking)}
    for pair in pairs:
        before, after = pair["original"].split(" "), pair["corrupted"].split(" ")
        changed = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
        assert len(before) == len(after)
        if pair["kind"] == "replacement":
            (i,) = changed
            assert after[i] in neighbours(ranking, rank[before[i]])
        else:
            i, j = changed
            assert j == i + 1 and (after[i], after[j]) == (before[j], before[i])
    other = minimal_pairs(SENTENCES, ranking, 5, seed=4)
    assert other != pairs


def test_too_few_sentences_is_an_error(ranking):
    with pytest.raises(SystemExit, match="too few held-out sentences"):
        minimal_pairs(SENTENCES, ranking, 12, seed=0)


def test_accuracy_counts_ties_half_and_unigram_swaps_tie():
    pairs = [{"kind": "replacement"}] * 2 + [{"kind": "swap"}] * 2
    result = pair_accuracy(pairs, [2.0, 1.0, 3.0, 0.0], [1.0, 2.0, 3.0, -1.0])
    assert result["replacement"]["accuracy"] == 0.5
    assert result["swap"]["accuracy"] == 0.75 and result["swap"]["ties"] == 1
    assert result["all"]["accuracy"] == pytest.approx(2.5 / 4)
    low, high = result["all"]["interval_95"]
    assert 0 < low < 2.5 / 4 < high < 1
    counts = word_counts(CORPUS)
    swapped = unigram_scores(["aa bb zz cc", "aa zz bb cc"], counts)
    assert swapped[0] == swapped[1]


def _document(i):
    return [f"document {i} says its first thing .", f"and {i} says another ."]


def test_finished_runs_text_is_split_by_document_as_the_build_split_it(tmp_path):
    from bench.suite.sentence_scoring import corpus_split
    from electra_tf.data.tfrecord_writer import build_pretraining_data, is_held_out
    from electra_tf.data.vocabulary import BUNDLED_VOCABULARY, Vocabulary

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("\n".join(_document(i)) for i in range(40)) + "\n")
    data = tmp_path / "data"
    stats = build_pretraining_data(
        [str(corpus)],
        Vocabulary.from_file(BUNDLED_VOCABULARY),
        str(data),
        max_seq_length=32,
        num_shards=1,
        eval_fraction=0.25,
        seed=7,
        progress=False,
    )
    held = [i for i in range(40) if is_held_out(i, 7, 0.25)]
    assert 0 < len(held) == stats["eval_documents"] < 40

    text = corpus_split(data)

    assert text["candidates"] == [line for i in held for line in _document(i)]
    assert text["training_lines"] == [
        line for i in range(40) if i not in held for line in _document(i)
    ]
    assert text["source"]["held_out_documents"] == {str(corpus): len(held)}
    assert text["lowercase"] is True  # the build's, for the runs' tokenizer
    # A corpus that is not the one built from is refused, not split anew.
    corpus.write_text("\n\n".join("\n".join(_document(i)) for i in range(3)) + "\n")
    with pytest.raises(SystemExit, match="held-out documents found"):
        corpus_split(data)
    corpus.unlink()
    with pytest.raises(SystemExit, match="corpus file .*corpus.txt .*not found"):
        corpus_split(data)


def test_finished_runs_must_be_given_together_and_be_runs(tmp_path, capsys):
    from bench.suite.sentence_scoring import parse_args, read_run

    with pytest.raises(SystemExit):
        parse_args(["--electric-run", str(tmp_path)])
    assert "both --electric-run and --mlm-run" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args([])
    assert "--held-out is needed" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="not a finished run: no config.json"):
        read_run(tmp_path)
