"""Vocabulary loading, validation and learning."""

import pathlib

import pytest

from electra_tf.vocabulary import (
    SPECIAL_TOKENS,
    Vocabulary,
    VocabularyError,
    learn_vocabulary,
)

ASSETS = pathlib.Path(__file__).parents[1] / "electra_tf" / "assets"
FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def test_bundled_bert_vocabulary():
    vocabulary = Vocabulary.from_file(ASSETS / "vocab.txt")
    assert vocabulary.size == 30522
    assert (vocabulary.pad_id, vocabulary.unk_id, vocabulary.cls_id) == (0, 100, 101)
    assert (vocabulary.sep_id, vocabulary.mask_id) == (102, 103)


@pytest.mark.parametrize(
    "content, message",
    [
        (
            "[PAD]\n[UNK]\n[CLS]\nhello\n",
            "lacks the special tokens ELECTRA needs: \\[SEP\\], \\[MASK\\]",
        ),
        ("", "is empty"),
        ("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\na\na\n", "token 'a' appears twice"),
    ],
)
def test_bad_vocabularies_name_the_file(tmp_path, content, message):
    path = tmp_path / "vocab.txt"
    path.write_text(content)
    with pytest.raises(VocabularyError, match=message) as error:
        Vocabulary.from_file(path)
    assert str(path) in str(error.value)


def test_missing_and_non_utf8_vocabulary(tmp_path):
    with pytest.raises(VocabularyError, match="not found"):
        Vocabulary.from_file(tmp_path / "nope.txt")
    path = tmp_path / "latin1.txt"
    path.write_bytes("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(VocabularyError, match="not UTF-8"):
        Vocabulary.from_file(path)


def test_learned_vocabulary_puts_specials_first(tmp_path):
    vocabulary = learn_vocabulary(
        [FIXTURES / "brown_excerpt.txt"], 400, tmp_path / "vocab.txt"
    )
    assert vocabulary.tokens[: len(SPECIAL_TOKENS)] == SPECIAL_TOKENS
    assert vocabulary.pad_id == 0
    assert 100 < vocabulary.size <= 400
    assert Vocabulary.from_file(tmp_path / "vocab.txt").tokens == vocabulary.tokens
