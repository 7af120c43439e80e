"""WordPiece vocabularies: load and validate a `vocab.txt`, or learn one from text.

A vocabulary is a BERT-style `vocab.txt`: one token per line, the id of a token is
its line number (from 0). ELECTRA needs five special tokens in it: `[PAD]`, `[UNK]`,
`[CLS]`, `[SEP]` and `[MASK]`.

>>> vocabulary = Vocabulary.from_file(BUNDLED_VOCABULARY)  # BERT uncased
>>> vocabulary.size, vocabulary.pad_id, vocabulary.cls_id, vocabulary.mask_id
(30522, 0, 101, 103)
>>> vocabulary.tokenizer().tokenize(["Hello, world!"])  # keras-hub WordPiece
[[7592, 1010, 2088, 999]]

For a new language or domain, `learn_vocabulary(["corpus/"], 30000,
"data/vocab.txt")` learns one (special tokens first, `[PAD]` = 0).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os

import tensorflow as tf

from electra_tf.atomic_write import write_text_atomically
from electra_tf.data.corpus import CorpusError, expand_paths, iter_documents
from electra_tf.errors import ElectraError

# The tokens ELECTRA needs, in the order a learned vocabulary puts them (so [PAD] = 0,
# which the models and the TFRecord padding assume for a learned vocabulary).
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

# BERT-base uncased (Apache-2.0), as the released ELECTRA models use; see
# electra_tf/assets/README.md.
BUNDLED_VOCABULARY = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), "assets", "vocab.txt"
)

# The 4,691 tokens `learn_vocabulary` learns from the demo corpus when asked for
# `presets.DEMO_VOCABULARY_REQUEST` (the corpus supports no more), lower-cased and
# accents stripped, shipped so that README command 1 does not spend a minute
# of its ten relearning them; a slow test relearns them.
DEMO_VOCABULARY = os.path.join(os.path.dirname(BUNDLED_VOCABULARY), "demo_vocab.txt")

# Sentences per batch fed to keras-hub's vocabulary learner.
_LEARN_BATCH = 1024


class VocabularyError(ElectraError, ValueError):
    """A vocabulary file is missing, unreadable, malformed or lacks special tokens."""


def check_vocabulary_fits(
    tokens: int,
    rows: int,
    source: str = "the vocabulary",
    error: type[ElectraError] = VocabularyError,
) -> None:
    """Vocabulary size = embedding rows: the one check every loader and writer makes.

    Raises `error` (`VocabularyError` unless the caller's own, e.g.
    `ConversionError`) naming `source` when `tokens` != `rows`.

    >>> check_vocabulary_fits(3, 4, "vocab.txt")
    Traceback (most recent call last):
    ...
    electra_tf.data.vocabulary.VocabularyError: vocab.txt has 3 tokens but the \
model's embedding has 4 rows
    """
    if tokens != rows:
        raise error(
            f"{source} has {tokens} tokens but the model's embedding has {rows} rows"
        )


def _check_one_token_a_line(lines: list[str], path: str) -> None:
    """Refuses a file that is text, not a vocabulary: WordPiece splits text at
    whitespace, so no token holds any; a line that does is a sentence (a
    corpus, a README given as `--vocab`), which the token checks would only
    report as "an empty token" or a missing `[CLS]`."""
    for number, line in enumerate(lines, 1):
        if len(line.split()) > 1:
            shown = line if len(line) <= 40 else line[:37] + "..."
            raise VocabularyError(
                f"{path} is not a vocabulary (one WordPiece token a line): line "
                f"{number} is text with spaces, {shown!r}; give the vocab.txt "
                "the data or model were built with"
            )


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """A validated WordPiece vocabulary: token `i` has id `i`.

    Construct with `Vocabulary.from_file(path)` or `learn_vocabulary(...)`;
    the constructor itself validates `tokens` (no duplicates or empty tokens, all
    of `SPECIAL_TOKENS` present) and raises `VocabularyError` naming `path`.

    Attributes:
        tokens: the tokens in id order. A tuple, so that the vocabulary is
            really immutable (and hashable).
        path: where the tokens were read from or written to ("" if neither);
            used in messages.
        lowercase: whether text is lower-cased before WordPiece (True for
            uncased vocabularies such as BERT's uncased one).
    """

    tokens: tuple[str, ...]
    path: str = ""
    lowercase: bool = True

    def __post_init__(self):
        object.__setattr__(self, "tokens", tuple(self.tokens))
        name = self.path or "the vocabulary"
        if not self.tokens:
            raise VocabularyError(f"{name} is empty")
        index: dict[str, int] = {}
        for i, token in enumerate(self.tokens):
            if not token:
                # FastWordpiece cannot be built with an empty token, and an empty
                # line inside vocab.txt usually means a damaged file.
                raise VocabularyError(f"{name}: line {i + 1} is an empty token")
            if token in index:
                raise VocabularyError(
                    f"{name}: token {token!r} appears twice "
                    f"(lines {index[token] + 1} and {i + 1})"
                )
            index[token] = i
        missing = [token for token in SPECIAL_TOKENS if token not in index]
        if missing:
            raise VocabularyError(
                f"{name} lacks the special tokens ELECTRA needs: {', '.join(missing)}"
            )
        object.__setattr__(self, "_index", index)

    @classmethod
    def from_file(cls, path, lowercase: bool = True) -> Vocabulary:
        """Reads a `vocab.txt` (local or any `tf.io.gfile` path, e.g. `gs://`).

        `lowercase` is the vocabulary's casing (a `vocab.txt` does not record it).

        Raises:
            VocabularyError: naming the file, if it is missing, empty, not UTF-8,
                has duplicate or empty tokens, or lacks a special token.
        """
        path = os.fspath(path)
        if not tf.io.gfile.exists(path):
            raise VocabularyError(f"vocabulary file not found: {path}")
        if tf.io.gfile.isdir(path):
            raise VocabularyError(f"vocabulary path is a directory: {path}")
        with tf.io.gfile.GFile(path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise VocabularyError(
                f"{path} is not UTF-8 text (invalid byte at offset {error.start})"
            ) from error
        # Only "\n" ends a line: a token may contain other Unicode line separators,
        # on which str.splitlines() would split.
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        tokens = [line.removesuffix("\r") for line in lines]
        if not tokens:
            raise VocabularyError(f"vocabulary file is empty: {path}")
        _check_one_token_a_line(tokens, path)
        return cls(tuple(tokens), path, lowercase)

    @property
    def size(self) -> int:
        """Number of tokens (the models' `vocabulary_size`)."""
        return len(self.tokens)

    def has(self, token: str) -> bool:
        """Whether `token` is in the vocabulary."""
        return token in self._index

    def id(self, token: str) -> int:
        """The id of `token`; `KeyError` if it is not in the vocabulary."""
        return self._index[token]

    @property
    def pad_id(self) -> int:
        return self._index["[PAD]"]

    @property
    def unk_id(self) -> int:
        return self._index["[UNK]"]

    @property
    def cls_id(self) -> int:
        return self._index["[CLS]"]

    @property
    def sep_id(self) -> int:
        return self._index["[SEP]"]

    @property
    def mask_id(self) -> int:
        return self._index["[MASK]"]

    def special_token_ids(self) -> dict[str, int]:
        """The ids models take as keyword arguments (`ElectraPretrainer`'s)."""
        return dict(
            pad_token_id=self.pad_id,
            cls_token_id=self.cls_id,
            sep_token_id=self.sep_id,
            mask_token_id=self.mask_id,
        )

    def to_text(self) -> str:
        """The canonical `vocab.txt` content: each token followed by "\\n"."""
        return "".join(token + "\n" for token in self.tokens)

    def md5(self) -> str:
        """md5 of `to_text()`: what `md5sum` gives for a canonical `vocab.txt`.

        The data builder records it in `stats.json`, so that a run can check that
        its TFRecords were built with its vocabulary.
        """
        return hashlib.md5(self.to_text().encode("utf-8")).hexdigest()

    def save(self, path) -> None:
        """Writes `to_text()` to `path`, creating its folder, whole or not at
        all (`write_text_atomically`: nothing takes a half-written file for a
        vocabulary)."""
        write_text_atomically(path, self.to_text())

    def tokenizer(self, lowercase: bool | None = None, strip_accents: bool = True):
        """keras-hub's `ElectraTokenizer` over these tokens.

        WordPiece runs in tensorflow-text ops (`FastWordpieceTokenizer`). Text that
        spells a special token ("[SEP]") is split like any other text, so raw text
        can never produce a special id.

        Args:
            lowercase: lower-case (Unicode case folding) before WordPiece;
                default: the vocabulary's `lowercase`.
            strip_accents: remove accents (NFD, then drop combining marks).

        Returns:
            A `keras_hub.models.ElectraTokenizer`: `tokenize(strings [batch])`
            gives int32 ids, a `tf.RaggedTensor` [batch, None].
        """
        import keras_hub

        return keras_hub.models.ElectraTokenizer(
            vocabulary=list(self.tokens),
            lowercase=self.lowercase if lowercase is None else lowercase,
            strip_accents=strip_accents,
            oov_token="[UNK]",
            dtype="int32",
        )


def learn_vocabulary(
    text_files,
    vocabulary_size: int,
    output_path,
    lowercase: bool = True,
    strip_accents: bool = True,
) -> Vocabulary:
    """Learns a WordPiece vocabulary from a corpus with keras-hub's learner.

    Uses `keras_hub.tokenizers.compute_word_piece_vocabulary` (tensorflow-text's
    bottom-up WordPiece learner) with the text normalisation of
    `Vocabulary.tokenizer`, so that the learned pieces fit how text is tokenised.
    The corpus is streamed: the learner keeps word counts, not the text.

    Args:
        text_files: corpus files, directories or glob patterns, in the format of
            `electra_tf.data.corpus` (one sentence per line; plain or .gz).
        vocabulary_size: the most tokens to keep, special tokens included; a
            small corpus may give fewer.
        output_path: where to write `vocab.txt`.
        lowercase, strip_accents: normalisation, as in `Vocabulary.tokenizer`.

    Returns:
        The learned `Vocabulary`: `SPECIAL_TOKENS` first (`[PAD]` = 0), then the
        learned pieces; its `path` is `output_path`.

    Raises:
        VocabularyError: `vocabulary_size` leaves no room for learned tokens.
        CorpusError: the corpus is missing, unreadable or holds no text.
    """
    import keras_hub

    if vocabulary_size <= len(SPECIAL_TOKENS):
        raise VocabularyError(
            f"vocabulary_size {vocabulary_size} leaves no room for learned tokens "
            f"next to the {len(SPECIAL_TOKENS)} special tokens"
        )
    files = expand_paths(text_files)
    # A CorpusError raised inside tf.data would reach us as a tf error: keep it.
    read = {"sentences": 0, "error": None}

    def sentences():
        try:
            for path in files:
                for document in iter_documents(path):
                    read["sentences"] += len(document)
                    yield from document
        except CorpusError as error:
            # Ends the stream: raised here, tf.data would log its traceback.
            read["error"] = error

    dataset = tf.data.Dataset.from_generator(
        sentences, output_signature=tf.TensorSpec([], tf.string)
    ).batch(_LEARN_BATCH)
    no_text = f"the corpus has no text: {', '.join(map(str, files))}"
    try:
        learned = keras_hub.tokenizers.compute_word_piece_vocabulary(
            dataset,
            vocabulary_size=vocabulary_size,
            lowercase=lowercase,
            strip_accents=strip_accents,
            reserved_tokens=list(SPECIAL_TOKENS),
        )
    except Exception:
        if read["error"] is not None:
            raise read["error"] from None
        if not read["sentences"]:
            raise CorpusError(no_text) from None
        raise
    if read["error"] is not None:
        raise read["error"]
    if not read["sentences"]:
        raise CorpusError(no_text)
    output_path = os.fspath(output_path)
    vocabulary = Vocabulary(tuple(learned), output_path, lowercase)
    vocabulary.save(output_path)
    return vocabulary
