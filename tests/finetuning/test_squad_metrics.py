"""The official SQuAD metrics, against scores worked out by hand; the readers.

Every expected number below was computed on paper from the official
definitions (normalise: lower case, drop punctuation and a/an/the, collapse
spaces; F1 on the normalised words; max over gold answers).
"""

import json
import pathlib

import pytest

from electra_tf.finetuning import squad_metrics
from electra_tf.finetuning.squad_data import (
    SquadDataError,
    examples_from_json,
    examples_from_tfds,
    golds,
    read_squad_json,
    squad_split_path,
    write_null_odds_json,
    write_predictions_json,
)
from electra_tf.finetuning.squad_metrics import (
    evaluate_v1,
    evaluate_v2,
    exact_match,
    f1,
)

FIXTURE = pathlib.Path(__file__).parents[1] / "fixtures" / "squad"


@pytest.mark.parametrize(
    "prediction, gold, expected_exact, expected_f1",
    [
        # Articles and case vanish: "the Eiffel Tower" == "Eiffel tower".
        ("the Eiffel Tower", "Eiffel tower", 1, 1.0),
        # "a" is an article only as a whole word: "Alabama" keeps its a's.
        ("A Alabama", "alabama", 1, 1.0),
        # Punctuation is deleted, not replaced by a space: "well-known" ->
        # "wellknown", one word, which matches no word of "well known".
        ("well-known", "well known", 0, 0.0),
        ("$10.00!", "1000", 1, 1.0),
        # Partial overlap: pred {in, 1961}, gold {1961}: P 1/2, R 1, F1 2/3.
        ("in 1961", "1961", 0, 2 / 3),
        # pred {john, stuart, mill} vs gold {stuart, mill, himself}: P 2/3,
        # R 2/3, F1 2/3.
        ("John Stuart Mill", "Stuart Mill himself", 0, 2 / 3),
        # Repeated words count as a multiset: pred {no, no, no} vs {no}:
        # overlap 1, P 1/3, R 1, F1 1/2.
        ("no no no", "no", 0, 0.5),
        # Only articles and punctuation: normalises to "" on both sides.
        ("the.", "an", 1, 1.0),
    ],
)
def test_exact_match_and_f1_by_hand(prediction, gold, expected_exact, expected_f1):
    assert exact_match(prediction, gold) == expected_exact
    assert f1(prediction, gold) == pytest.approx(expected_f1)


def test_empty_answers_follow_each_version():
    # v2: F1 is 1 only when both are empty.
    assert f1("", "", version=2) == 1.0
    assert f1("", "Atlanta", version=2) == 0.0
    assert f1("Atlanta", "", version=2) == 0.0
    # v1: no overlap is 0, even for two empty answers.
    assert f1("", "", version=1) == 0.0


def test_v1_takes_the_max_over_golds_and_counts_missing_as_zero():
    golds_ = {
        "q1": ["Durwood Pye", "Judge Durwood Pye"],  # exact on the second
        "q2": ["the mountains beyond Northfield Gulf", "Northfield Gulf"],
        "q3": ["green"],  # no prediction: 0, still counted
    }
    predictions = {
        "q1": "judge Durwood Pye.",
        # vs "northfield gulf": pred {mountains, beyond, northfield, gulf}
        # -> vs gold 1 {mountains, beyond, northfield, gulf}: exact.
        "q2": "The mountains beyond Northfield Gulf",
    }
    results = evaluate_v1(golds_, predictions)
    assert results["exact_match"] == pytest.approx(100 * 2 / 3)
    assert results["f1"] == pytest.approx(100 * 2 / 3)
    predictions["q3"] = "little green"  # F1: P 1/2, R 1 -> 2/3
    results = evaluate_v1(golds_, predictions)
    assert results["exact_match"] == pytest.approx(100 * 2 / 3)
    assert results["f1"] == pytest.approx(100 * (1 + 1 + 2 / 3) / 3)


def test_v2_breakdown_threshold_and_best_threshold_by_hand():
    golds_ = {
        "a": ["Fulton"],  # answerable
        "b": ["150 kilometers", "150"],  # answerable
        "c": [],  # unanswerable
        "d": [],  # unanswerable
        "e": ["the", "Mill"],  # "the" normalises to "": dropped, gold "Mill"
    }
    predictions = {"a": "Fulton", "b": "150 km", "c": "", "d": "Cadillac", "e": "Mill"}
    na = {"a": 0.1, "b": 0.6, "c": 0.9, "d": 0.3, "e": 0.2}
    results = evaluate_v2(golds_, predictions, na, na_threshold=0.5)
    # After the threshold 0.5: b (0.6) and c (0.9) are "no answer".
    # exact: a 1, b 0 (abstained on an answerable), c 1, d 0 (answered an
    # unanswerable with text), e 1 -> 3/5.
    assert results["exact"] == pytest.approx(60.0)
    assert results["f1"] == pytest.approx(60.0)
    assert results["total"] == 5
    assert results["HasAns_exact"] == pytest.approx(100 * 2 / 3)
    assert results["HasAns_total"] == 3
    assert results["NoAns_exact"] == pytest.approx(50.0)
    assert results["NoAns_total"] == 2
    # Best threshold, visiting na ascending: start 2 (both NoAns right).
    # a(0.1) +1 -> 3 best@0.1; e(0.2) +1 -> 4 best@0.2; d(0.3) predicted text
    # -> 3; b(0.6): exact 0 (F1 of "150 km" vs "150": P 1/2, R 1 -> 2/3)
    # -> 3 (F1 3.667); c(0.9) empty -> +0.
    assert results["best_exact"] == pytest.approx(80.0)
    assert results["best_exact_thresh"] == pytest.approx(0.2)
    assert results["best_f1"] == pytest.approx(80.0)
    assert results["best_f1_thresh"] == pytest.approx(0.2)
    # Without a threshold every text counts as it stands.
    plain = evaluate_v2(golds_, predictions)
    # a 1, b 0 (F1 2/3), c 1 (empty == empty), d 0, e 1.
    assert plain["exact"] == pytest.approx(60.0)
    assert plain["f1"] == pytest.approx(100 * (3 + 2 / 3) / 5)
    assert "best_exact" not in plain


def test_apply_threshold_empties_unsure_answers():
    out = squad_metrics.apply_threshold(
        {"a": "x", "b": "y"}, {"a": 1.0, "b": -3.0}, -2.75
    )
    assert out == {"a": "", "b": "y"}


def test_reads_the_fixture_in_both_versions():
    v1 = read_squad_json(squad_split_path(str(FIXTURE), 1, "train"), 1)
    v2 = read_squad_json(squad_split_path(str(FIXTURE), 2, "train"), 2)
    assert not any(example.is_impossible for example in v1)
    impossible = [example for example in v2 if example.is_impossible]
    assert impossible and all(not example.answers for example in impossible)
    assert len(v2) == len(v1) + len(impossible)
    for example in v1:
        for text, start in example.answers:
            assert example.context[start : start + len(text)] == text
    dev = read_squad_json(squad_split_path(str(FIXTURE), 2, "dev"), 2)
    assert any(len(answers) > 1 for answers in golds(dev).values())


def _raw(answers, impossible=False, qid="q"):
    return {
        "data": [
            {
                "title": "t",
                "paragraphs": [
                    {
                        "context": "Wires whined in the cold.",
                        "qas": [
                            {
                                "id": qid,
                                "question": "What whined?",
                                "answers": answers,
                                "is_impossible": impossible,
                            }
                        ],
                    }
                ],
            }
        ]
    }


@pytest.mark.parametrize(
    "data, version, message",
    [
        (_raw([{"text": "Wires", "answer_start": 99}]), 2, "outside its context"),
        (_raw([], impossible=True), 1, "only SQuAD 2.0 allows"),
        (_raw([]), 2, "has no answer"),
        ({"version": "2.0"}, 2, "not a SQuAD file"),
    ],
)
def test_malformed_files_are_one_clear_error(data, version, message):
    with pytest.raises(SquadDataError, match=message):
        examples_from_json(data, version, source="x.json")


CONTEXT = b"Wires whined as a cold November blast rocked the wings."


def test_an_answer_off_its_start_is_kept_with_a_warning(caplog):
    data = _raw([{"text": "Wires", "answer_start": s} for s in (3, 0, 0)])
    (example,) = examples_from_json(data, 2, source="x.json")
    assert example.answer_texts == ["Wires"] * 3 and not example.answer_is_aligned
    assert "reads 'es wh'" in caplog.text and "x.json: 1 of 3 answers" in caplog.text


def _shifted(shift):
    data = json.loads((FIXTURE / "train-v1.1.json").read_text())
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                for answer in qa["answers"]:
                    answer["answer_start"] = shift(paragraph["context"], answer)
    return data


def test_one_based_answer_starts_are_one_error_naming_the_first():
    """Every `answer_start` shifted by one: one error naming the first misaligned
    answer and the likely cause (was: an `IndexError` while windowing). A few
    misaligned answers are a warning instead
    (`test_an_answer_off_its_start_is_kept_with_a_warning`)."""
    data = _shifted(lambda context, answer: answer["answer_start"] + 1)
    with pytest.raises(SquadDataError) as error:
        examples_from_json(data, 1, source="x.json")
    assert str(error.value) == (
        "x.json: 23 of 23 answers are not at their answer_start (first: question "
        "fulton_county_grand_jury_00: answer_start 107 reads 'o evidence ', not "
        "the answer 'no evidence'); they are 1-based (the answer is at "
        "answer_start - 1); SQuAD's offsets count characters from 0"
    )


def test_byte_offset_answer_starts_are_one_error_naming_the_cause():
    data = _raw([])
    paragraph = data["data"][0]["paragraphs"][0]
    paragraph["context"] = "Caf\u00e9 cr\u00e8me in Z\u00fcrich: Wires whined."
    byte_start = paragraph["context"].encode().index(b"Wires")
    paragraph["qas"][0]["answers"] = [{"text": "Wires", "answer_start": byte_start}]
    with pytest.raises(SquadDataError, match=r"1 of 1 answers .* UTF-8 byte offsets"):
        examples_from_json(data, 2, source="x.json")


WIRES = [{"text": "Wires", "answer_start": 0}]


def _bad(change):
    """`_raw(WIRES)` changed in place by `change(data, article, paragraph, qa)`."""
    data = _raw([dict(answer) for answer in WIRES])
    article = data["data"][0]
    paragraph = article["paragraphs"][0]
    change(data, article, paragraph, paragraph["qas"][0])
    return data


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda d, a, p, q: d["data"].append("Biplane"),
            "x.json: article 1 is a str, not an object with 'title' and 'paragraphs'",
        ),
        (
            lambda d, a, p, q: a.update(paragrahs=a.pop("paragraphs")),
            "x.json: article 0 ('t') has no 'paragraphs' list; its keys: "
            "['paragrahs', 'title']",
        ),
        (
            lambda d, a, p, q: q["answers"][0].update(answer_start="0"),
            "x.json: question q: answer_start '0' must be an integer (a character "
            "offset into the context)",
        ),
        (
            lambda d, a, p, q: p["qas"].append(dict(q)),
            "x.json: question id 'q' occurs twice (article 't'); ids must be "
            "unique, answers are scored by id",
        ),
        (
            lambda d, a, p, q: q.update(question=" "),
            "x.json: question q: the question is empty",
        ),
        (
            lambda d, a, p, q: p.update(context=""),
            "x.json: question q: the context is empty",
        ),
        (
            # Was read as true (a non-empty string): "marked unanswerable but
            # has answers", pointing away from the string.
            lambda d, a, p, q: q.update(is_impossible="false"),
            "x.json: question q: is_impossible must be true or false (a JSON "
            "boolean), not the str 'false'",
        ),
    ],
    ids=[
        "string-article",
        "paragraphs-key",
        "string-start",
        "duplicate-id",
        "empty-question",
        "empty-context",
        "string-is-impossible",
    ],
)
def test_bad_articles_and_questions_are_one_line_naming_them(change, message):
    """An article that is a string, a misspelt `paragraphs` key, `answer_start` `"0"`,
    `is_impossible` `"false"`, an empty question or context: one line naming the
    article or question (were: an `AttributeError`, a misleading "outside its
    context", `"false"` read as true, silently dropped questions)."""
    with pytest.raises(SquadDataError) as error:
        examples_from_json(_bad(change), 2, source="x.json")
    assert str(error.value) == message


def test_tfds_records_with_a_duplicate_id_are_refused():
    record = {
        "id": b"q1",
        "title": b"Biplane",
        "context": CONTEXT,
        "question": b"Which month?",
        "answers": {"text": [b"November"], "answer_start": [23]},
    }
    with pytest.raises(SquadDataError, match="question id 'q1' occurs twice"):
        examples_from_tfds([record, record], version=1)


def test_tfds_records_convert_like_the_json_reader():
    records = [
        {
            "id": b"q1",
            "title": b"Biplane",
            "context": CONTEXT,
            "question": b"Which month?",
            "answers": {
                "text": [b"November", b"cold November"],
                "answer_start": [23, 18],
            },
            "is_impossible": False,
            "plausible_answers": {"text": [], "answer_start": []},
        },
        {
            "id": b"q2",
            "title": b"Biplane",
            "context": CONTEXT,
            "question": "Who flew? é".encode(),
            "answers": {"text": [], "answer_start": []},
            "is_impossible": True,
            "plausible_answers": {"text": [b"Wires"], "answer_start": [0]},
        },
    ]
    examples = examples_from_tfds(records, version=2)
    assert examples[0].answers == (("November", 23), ("cold November", 18))
    assert examples[1].is_impossible and examples[1].question == "Who flew? é"
    with pytest.raises(SquadDataError, match="q2 has no answer"):
        examples_from_tfds(records, version=1)


def test_prediction_files_are_the_official_layout(tmp_path):
    path = write_predictions_json(str(tmp_path / "p.json"), {"a": "Pye", "b": ""})
    assert json.loads(pathlib.Path(path).read_text()) == {"a": "Pye", "b": ""}
    path = write_null_odds_json(str(tmp_path / "n.json"), {"a": 1})
    assert json.loads(pathlib.Path(path).read_text()) == {"a": 1.0}


def test_best_threshold_below_every_logit_when_abstaining_wins():
    golds_ = {"a": ["x"], "b": [], "c": []}
    predictions = {"a": "wrong", "b": "y", "c": "z"}
    na = {"a": -3.0, "b": -2.0, "c": -1.0}  # logits: all below 0
    results = evaluate_v2(golds_, predictions, na)
    assert results["best_f1"] == pytest.approx(100 * 2 / 3)
    threshold = results["best_f1_thresh"]
    assert threshold < -3.0
    answered = squad_metrics.apply_threshold(predictions, na, threshold)
    assert evaluate_v2(golds_, answered)["f1"] == pytest.approx(results["best_f1"])


def test_docstring_examples_run():
    import doctest

    result = doctest.testmod(squad_metrics, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
