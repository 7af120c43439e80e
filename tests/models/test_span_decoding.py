"""The span decoder against an exhaustive search on random logits."""

import numpy as np
import pytest

from electra_tf.models.span_decoding import best_spans


def _log_softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))


def brute_force(
    start_logits,
    end_logits_full,
    starts,
    start_allowed,
    end_allowed,
    example_index,
    num_examples,
    max_answer_length,
):
    """Every (window, start in `starts[w]`, end) pair, scored one by one.

    `end_logits_full[w, s]` are the end logits given start s (any s).
    """
    best = [(-np.inf, -1, -1, -1)] * num_examples
    for w in range(start_logits.shape[0]):
        start_lp = _log_softmax(start_logits[w])
        for s in starts[w]:
            if not start_allowed[w, s]:
                continue
            end_lp = _log_softmax(end_logits_full[w, s])
            for e in range(start_logits.shape[1]):
                if not end_allowed[w, e] or e < s or e - s + 1 > max_answer_length:
                    continue
                score = start_lp[s] + end_lp[e]
                ex = example_index[w]
                if score > best[ex][0]:
                    best[ex] = (score, w, s, e)
    return best


def random_case(seed, windows=7, length=24):
    rng = np.random.default_rng(seed)
    start_logits = rng.normal(size=(windows, length)).astype("float32") * 3
    end_full = rng.normal(size=(windows, length, length)).astype("float32") * 3
    # Context at positions 5..length-2; one window's context is empty.
    end_allowed = np.zeros((windows, length), bool)
    end_allowed[:, 5 : length - 1] = True
    end_allowed[3] = False
    start_allowed = end_allowed & (rng.random((windows, length)) < 0.8)
    example_index = np.array([0, 0, 0, 1, 2, 2, 2])[:windows]
    return start_logits, end_full, start_allowed, end_allowed, example_index


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("max_answer_length", [1, 4, 30])
def test_all_starts_give_the_exhaustive_best(seed, max_answer_length):
    start_logits, end_full, start_allowed, end_allowed, example_index = random_case(
        seed
    )
    windows, length = start_logits.shape
    starts = np.tile(np.arange(length), (windows, 1))
    got = best_spans(
        start_logits,
        end_full,
        starts,
        start_allowed,
        end_allowed,
        example_index,
        3,
        max_answer_length,
    )
    expected = brute_force(
        start_logits,
        end_full,
        starts,
        start_allowed,
        end_allowed,
        example_index,
        3,
        max_answer_length,
    )
    for ex, (score, w, s, e) in enumerate(expected):
        assert got["window"][ex] == w
        assert got["start"][ex] == s and got["end"][ex] == e
        np.testing.assert_allclose(got["score"][ex], score, rtol=1e-5)
        assert 0 <= e - s < max_answer_length


def test_a_beam_of_starts_searches_only_those_starts():
    start_logits, end_full, start_allowed, end_allowed, example_index = random_case(5)
    windows, length = start_logits.shape
    # The model's beam: the top 4 starts of each window, ends given each.
    beam = np.argsort(-start_logits, axis=1, kind="stable")[:, :4]
    end_beam = np.take_along_axis(end_full, beam[:, :, None], axis=1)
    got = best_spans(
        start_logits, end_beam, beam, start_allowed, end_allowed, example_index, 3, 30
    )
    expected = brute_force(
        start_logits, end_full, beam, start_allowed, end_allowed, example_index, 3, 30
    )
    for ex, (score, w, s, e) in enumerate(expected):
        assert (got["window"][ex], got["start"][ex], got["end"][ex]) == (w, s, e)
        np.testing.assert_allclose(got["score"][ex], score, rtol=1e-5)


def test_no_allowed_span_gives_no_answer():
    start_logits, end_full, start_allowed, end_allowed, example_index = random_case(3)
    # Example 1 owns window 3 alone, whose context is empty.
    windows, length = start_logits.shape
    starts = np.tile(np.arange(length), (windows, 1))
    got = best_spans(
        start_logits, end_full, starts, start_allowed, end_allowed, example_index, 3, 30
    )
    assert got["window"][1] == -1 and got["start"][1] == -1 and got["end"][1] == -1
    assert got["score"][1] == -np.inf
    assert got["window"][0] >= 0
