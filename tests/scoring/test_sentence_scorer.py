"""Sentence scores: each method against its definition computed by hand, raw text
through the project's tokenizer, and the exported SavedModels against the Python API.

One tiny Electric pretrainer and one tiny ELECTRA pretrainer (for its
generator) on a 200-token vocabulary written for the module.
"""

import math

import numpy as np
import pytest
import tensorflow as tf

from electra_tf.data.vocabulary import Vocabulary
from electra_tf.export.pretrained import export_pretrained
from electra_tf.models.cloze_generator import electric_correction
from electra_tf.scoring.pseudo_log_likelihood import (
    cloze_token_scores,
    electric_token_scores,
    mlm_token_scores,
)
from electra_tf.scoring.sentence_scorer import (
    ScoringError,
    SentenceScorer,
    score_in_batches,
)
from tests.helpers import (
    CLS,
    MASK,
    PAD,
    SEP,
    TINY_VOCABULARY_SIZE,
    make_pretrainer,
    random_batch,
)

WORDS = "the cat sat on a mat dog ran in park and was very happy old man".split()
SENTENCES = [
    "The cat sat on the mat.",
    "a dog ran in the park and the old man was very happy",
    "",  # nothing to score
    "cat " * 40,  # longer than the sequence: truncated
    "zebra",  # not in the vocabulary: [UNK], scored like any token
]
SEQUENCE_LENGTH = 32


@pytest.fixture(scope="module")
def vocabulary(tmp_path_factory):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *WORDS]
    tokens += [f"w{i}" for i in range(TINY_VOCABULARY_SIZE - len(tokens))]
    assert [tokens.index(t) for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")] == [
        PAD,
        CLS,
        SEP,
        MASK,
    ]
    path = tmp_path_factory.mktemp("vocabulary") / "vocab.txt"
    path.write_text("".join(t + "\n" for t in tokens))
    return Vocabulary.from_file(path)


def _pretrainer(tiny_configs, objective):
    model_config, pretraining_config = tiny_configs
    return make_pretrainer(
        # A larger initialiser range: scores visibly depend on the tokens.
        model_config.override(dropout=0.0, initializer_range=0.2),
        pretraining_config.override(
            objective=objective, max_seq_length=SEQUENCE_LENGTH
        ),
    )


@pytest.fixture(scope="module")
def electric(tiny_configs):
    return _pretrainer(tiny_configs, "electric")


@pytest.fixture(scope="module")
def electra(tiny_configs):
    return _pretrainer(tiny_configs, "electra")


@pytest.fixture(scope="module")
def batch():
    return random_batch(batch_size=3, length=12, seed=5)


def _scored(batch):
    token_ids = batch["token_ids"]
    return (batch["padding_mask"] > 0) & ~np.isin(token_ids, [PAD, CLS, SEP, MASK])


def _log_softmax(x):
    x = x.astype("float64")
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_mlm_scores_equal_a_loop_over_tokens_one_masked_at_a_time(electra, batch):
    scored = _scored(batch)
    # 7 copies a pass: passes hold tokens of two sequences, the last is short.
    scores = mlm_token_scores(
        electra.generator,
        batch,
        scored,
        mask_token_id=MASK,
        copies_per_batch=7,
    ).numpy()
    assert scored.sum() > 2 * 7
    expected = np.zeros(scores.shape)
    for row, position in zip(*np.nonzero(scored)):
        one = {k: v[row : row + 1].copy() for k, v in batch.items()}
        one["token_ids"][0, position] = MASK
        one["mask_positions"] = np.array([[position]], "int32")
        logits = electra.generator(one).numpy()[0, 0]
        expected[row, position] = _log_softmax(logits)[
            batch["token_ids"][row, position]
        ]
    np.testing.assert_allclose(scores, expected, atol=1e-4)
    assert np.ptp(expected[scored]) > 0.5  # the tokens' scores differ


def test_electric_scores_are_minus_the_energy_the_training_corrects(electric, batch):
    """The score of token t is -E(x)_t: the noise-corrected training logit
    minus its correction (log q + log(p / (1 - p))), negated."""
    out = electric(batch, step=3)
    corrupted = {**batch, "token_ids": out["corrupted_ids"].numpy()}
    cloze_logits = electric.generator(batch).numpy()
    log_q = np.take_along_axis(
        _log_softmax(cloze_logits), out["corrupted_ids"].numpy()[..., None], -1
    )[..., 0]
    p = electric.pretraining_config.mask_prob
    energy = out["rtd_logits"].numpy() - log_q - math.log(p / (1 - p))
    np.testing.assert_allclose(
        electric_token_scores(electric.discriminator, corrupted), -energy, atol=1e-4
    )


def test_cloze_scores_are_the_cloze_models_log_softmax_at_the_token(electric, batch):
    logits = electric.generator(batch).numpy()
    expected = np.take_along_axis(
        _log_softmax(logits), batch["token_ids"][..., None], -1
    )[..., 0]
    np.testing.assert_allclose(
        cloze_token_scores(electric.generator, batch), expected, atol=1e-4
    )


def _wordpieces(tokenizer, sentence):
    return list(tokenizer.tokenize([sentence])[0])


@pytest.fixture(scope="module")
def scorers(electric, electra, vocabulary):
    tokenizer = vocabulary.tokenizer()
    return {
        "electric": SentenceScorer(
            electric.discriminator, tokenizer, SEQUENCE_LENGTH, method="electric"
        ),
        "mlm": SentenceScorer(
            electra.generator,
            tokenizer,
            SEQUENCE_LENGTH,
            method="mlm",
            copies_per_batch=16,
        ),
        "cloze": SentenceScorer(
            electric.generator, tokenizer, SEQUENCE_LENGTH, method="cloze"
        ),
    }


@pytest.mark.parametrize("method", ["electric", "mlm", "cloze"])
def test_raw_sentences_are_tokenised_packed_and_summed(scorers, vocabulary, method):
    scorer = scorers[method]
    out = {
        k: v.numpy() for k, v in scorer.score_sentences(tf.constant(SENTENCES)).items()
    }
    tokenizer = vocabulary.tokenizer()
    for row, sentence in enumerate(SENTENCES):
        pieces = _wordpieces(tokenizer, sentence)[: SEQUENCE_LENGTH - 2]
        packed = [CLS, *pieces, SEP]
        token_ids = out["token_ids"][row]
        np.testing.assert_array_equal(token_ids[: len(packed)], packed)
        assert (token_ids[len(packed) :] == PAD).all()
        assert out["token_count"][row] == len(pieces)
        # Alone (no padding beyond its own [SEP]) it scores the same.
        one = np.array([packed], "int32")
        inputs = {
            "token_ids": one,
            "segment_ids": np.zeros_like(one),
            "padding_mask": np.ones_like(one),
        }
        tokens, scored = scorer.token_scores(inputs)
        np.testing.assert_array_equal(scored.numpy()[0, [0, -1]], [False, False])
        np.testing.assert_allclose(out["score"][row], tokens.numpy().sum(), atol=1e-4)
        np.testing.assert_allclose(
            out["token_scores"][row, : len(packed)], tokens.numpy()[0], atol=1e-4
        )
    assert out["token_count"][2] == 0 and out["score"][2] == 0.0
    assert out["token_count"][3] == SEQUENCE_LENGTH - 2
    assert _wordpieces(tokenizer, "zebra") == [vocabulary.unk_id]
    assert _wordpieces(tokenizer, "The mat.") == [6, 11, 5]  # lower-cased
    # In batches of two (other paddings, other companions): the same scores.
    np.testing.assert_allclose(
        scorer.score(SENTENCES, batch_size=2), out["score"], atol=1e-4
    )


def test_a_method_refuses_a_model_it_cannot_score_with(electra, vocabulary):
    with pytest.raises(ScoringError, match="'mlm' scores with an ElectraGenerator"):
        SentenceScorer(electra.discriminator, vocabulary.tokenizer(), 16, method="mlm")
    with pytest.raises(ScoringError, match="unknown scoring method 'bert'"):
        SentenceScorer(electra.generator, vocabulary.tokenizer(), 16, method="bert")


def test_a_saved_then_loaded_mlm_scorer_gives_the_python_apis_scores(scorers, tmp_path):
    scorer = scorers["mlm"]
    tf.saved_model.save(
        scorer, str(tmp_path), signatures={"serving_default": scorer.score_sentences}
    )
    loaded = tf.saved_model.load(str(tmp_path))
    expected = scorer.score(SENTENCES)
    scored = score_in_batches(loaded.score_sentences, SENTENCES, batch_size=3)
    np.testing.assert_allclose(scored["score"], expected, atol=1e-4)
    np.testing.assert_array_equal(scored["token_count"], [7, 13, 0, 30, 1])
    served = loaded.signatures["serving_default"](text=tf.constant(SENTENCES))
    np.testing.assert_allclose(served["score"], expected, atol=1e-4)
    assert np.ptp(expected) > 1.0  # the sentences' scores differ


@pytest.mark.slow
def test_an_electric_runs_export_scores_sentences_and_corrects_its_probabilities(
    electric, scorers, vocabulary, tmp_path
):
    paths = export_pretrained(electric, vocabulary, tmp_path)
    # The run's scorer is its discriminator's, in one pass.
    loaded = tf.saved_model.load(paths["sentence_scorer"])
    expected = scorers["electric"].score(SENTENCES)
    np.testing.assert_allclose(
        score_in_batches(loaded.score_sentences, SENTENCES, batch_size=3)["score"],
        expected,
        atol=1e-4,
    )
    assert np.ptp(expected) > 1.0
    # The served replaced probability is the noise-corrected one Electric
    # trains, not the sigmoid of the energy.
    discriminator = tf.saved_model.load(paths["saved_model"])
    out = discriminator.signatures["detect_replaced_tokens_text"](
        text=tf.constant(SENTENCES)
    )
    inputs = {k: out[k] for k in ("token_ids", "segment_ids", "padding_mask")}
    corrected = electric.discriminator(inputs) + electric_correction(
        electric.generator(inputs), inputs["token_ids"], 0.15
    )
    np.testing.assert_allclose(
        out["replaced_probability"], tf.sigmoid(corrected), atol=1e-5
    )
    raw = tf.sigmoid(electric.discriminator(inputs))
    assert np.abs(out["replaced_probability"] - raw).max() > 0.1
