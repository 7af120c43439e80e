"""Vocabulary: loading, validation with clear errors, tokenizer, learning."""

import doctest
import hashlib
import pathlib

import keras_hub
import pytest
import tensorflow as tf

import electra_tf.data.preparation
import electra_tf.data.vocabulary
from electra_tf.data.corpus import DEMO_CORPUS, CorpusError
from electra_tf.data.preparation import prepare_pretraining_data
from electra_tf.data.vocabulary import (
    DEMO_VOCABULARY,
    SPECIAL_TOKENS,
    Vocabulary,
    VocabularyError,
    learn_vocabulary,
)
from electra_tf.presets import DEMO_VOCABULARY_REQUEST

REPO = pathlib.Path(__file__).parents[2]
BERT_VOCAB = REPO / "electra_tf" / "assets" / "vocab.txt"
CORPUS = pathlib.Path(__file__).parents[1] / "fixtures" / "corpus_excerpt.txt"


@pytest.fixture(scope="module")
def bert():
    return Vocabulary.from_file(BERT_VOCAB)


def test_bundled_bert_vocabulary(bert):
    assert bert.size == 30522
    assert (bert.pad_id, bert.unk_id, bert.cls_id, bert.sep_id, bert.mask_id) == (
        0,
        100,
        101,
        102,
        103,
    )
    assert bert.special_token_ids() == dict(
        pad_token_id=0, cls_token_id=101, sep_token_id=102, mask_token_id=103
    )
    assert bert.id("hello") == 7592
    # md5() is what `md5sum vocab.txt` gives (the number in the assets README).
    file_md5 = hashlib.md5(BERT_VOCAB.read_bytes()).hexdigest()
    assert bert.md5() == file_md5 == "64800d5d8528ce344256daf115d4965e"


def test_save_round_trip(bert, tmp_path):
    bert.save(tmp_path / "sub" / "vocab.txt")
    assert (tmp_path / "sub" / "vocab.txt").read_bytes() == BERT_VOCAB.read_bytes()
    assert Vocabulary.from_file(tmp_path / "sub" / "vocab.txt").tokens == bert.tokens
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["vocab.txt"]


SPECIALS = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"


@pytest.mark.parametrize(
    "content, message",
    [
        # Every missing special token is named.
        (b"[PAD]\n[UNK]\n[CLS]\nhello\n", r"lacks .* needs: \[SEP\], \[MASK\]$"),
        (b"", "is empty"),
        (b"\n", "line 1 is an empty token"),
        ((SPECIALS + "a\nb\na\n").encode(), "token 'a' appears twice .lines 6 and 8"),
        ((SPECIALS + "a\n\nb\n").encode(), "line 7 is an empty token"),
        ((SPECIALS + "caf\xe9\n").encode("latin-1"), r"not UTF-8 .*offset 34\)"),
        # A corpus given as --vocab: text, not tokens (was: "line 5 is an
        # empty token", its first blank line).
        (
            b"The committee met.\nIt voted.\nThen it rose.\nAll went home.\n\nNext",
            r"is not a vocabulary \(one WordPiece token a line\): line 1 is text "
            r"with spaces, 'The committee met.'",
        ),
    ],
    ids=[
        "missing-specials",
        "empty",
        "blank",
        "duplicate",
        "empty-line",
        "latin-1",
        "plain-text",
    ],
)
def test_bad_vocabularies_name_the_file(tmp_path, content, message):
    path = tmp_path / "vocab.txt"
    path.write_bytes(content)
    with pytest.raises(VocabularyError, match=message) as error:
        Vocabulary.from_file(path)
    assert str(path) in str(error.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(VocabularyError, match="not found: .*nope.txt"):
        Vocabulary.from_file(tmp_path / "nope.txt")
    with pytest.raises(VocabularyError, match="is a directory"):
        Vocabulary.from_file(tmp_path)


def test_crlf_file_reads_like_lf(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_bytes((SPECIALS + "a\n").replace("\n", "\r\n").encode())
    assert Vocabulary.from_file(path).tokens == (*SPECIAL_TOKENS, "a")


def test_tokenizer_is_keras_hub_wordpiece(bert):
    tokenizer = bert.tokenizer()
    assert isinstance(tokenizer, keras_hub.models.ElectraTokenizer)
    # In a graph (as the data builder runs it): tensorflow-text ops.
    tokenize = tf.function(tokenizer.tokenize, autograph=False)
    ids = tokenize(tf.constant(["Hello world.", "Café [SEP] x"])).to_list()
    assert ids[0] == [7592, 2088, 1012]
    # Text spelling a special token is text: it never becomes the special id.
    assert bert.sep_id not in ids[1]
    assert ids[1][0] == bert.id("cafe")  # lower-cased, accent stripped
    # keras-hub's eager Python path agrees.
    assert tokenizer.tokenize(["Hello world.", "Café [SEP] x"]) == ids


def test_learned_vocabulary(tmp_path):
    vocabulary = learn_vocabulary([CORPUS], 400, tmp_path / "vocab.txt")
    assert vocabulary.tokens[: len(SPECIAL_TOKENS)] == SPECIAL_TOKENS
    assert vocabulary.pad_id == 0
    assert 100 < vocabulary.size <= 400
    assert Vocabulary.from_file(tmp_path / "vocab.txt").tokens == vocabulary.tokens
    # Every character of the corpus is in it: its own text has no [UNK].
    lines = [line for line in CORPUS.read_text().splitlines() if line.strip()]
    ids = vocabulary.tokenizer().tokenize(lines)
    assert vocabulary.unk_id not in {i for sentence in ids for i in sentence}


@pytest.mark.slow
def test_the_demo_vocabulary_is_the_one_learned_from_the_demo_corpus(tmp_path):
    learned = learn_vocabulary(
        [DEMO_CORPUS], DEMO_VOCABULARY_REQUEST, tmp_path / "vocab.txt"
    )
    assert learned.tokens == Vocabulary.from_file(DEMO_VOCABULARY).tokens


def test_the_demo_builds_with_the_demo_vocabulary_and_learns_none(tmp_path, caplog):
    with caplog.at_level("INFO"):
        data = prepare_pretraining_data(str(tmp_path), 64, num_shards=1)
    assert data.vocabulary.path == DEMO_VOCABULARY
    assert data.vocabulary.size == 4691
    assert "Learning" not in caplog.text
    assert not (tmp_path / "vocab.txt").exists()
    # The data record that vocabulary: a run with it resumes on them.
    built = Vocabulary.from_file(tmp_path / "data" / "vocab.txt")
    assert built.tokens == data.vocabulary.tokens


@pytest.mark.parametrize(
    "asked", [{"learn_vocab_size": 400}, {"lowercase": False}], ids=["size", "cased"]
)
def test_another_demo_vocabulary_is_learned(tmp_path, monkeypatch, asked):
    learned = []

    def learn(inputs, size, path, lowercase=True, strip_accents=True):
        learned.append((inputs, size, lowercase))
        raise VocabularyError("stop here")

    monkeypatch.setattr(electra_tf.data.preparation, "learn_vocabulary", learn)
    with pytest.raises(VocabularyError, match="stop here"):
        prepare_pretraining_data(str(tmp_path), 64, num_shards=1, **asked)
    expected = (asked.get("learn_vocab_size", 8192), asked.get("lowercase", True))
    assert [(size, lowercase) for _, size, lowercase in learned] == [expected]


def test_learning_errors(tmp_path):
    with pytest.raises(VocabularyError, match="leaves no room"):
        learn_vocabulary([CORPUS], 5, tmp_path / "vocab.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    with pytest.raises(CorpusError, match="no text: .*empty.txt"):
        learn_vocabulary([empty], 100, tmp_path / "vocab.txt")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("ok\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(CorpusError, match="latin.txt is not UTF-8"):
        learn_vocabulary([latin], 100, tmp_path / "vocab.txt")
    assert not (tmp_path / "vocab.txt").exists()


@pytest.mark.parametrize("module", [electra_tf.data.vocabulary])
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
