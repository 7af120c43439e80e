"""WordPiece vocabularies: load and validate one, or learn one from a corpus."""

from __future__ import annotations

import dataclasses
import hashlib
import os

import tensorflow as tf

# The tokens ELECTRA needs; a learned vocabulary puts them first, [PAD] at id 0.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class VocabularyError(ValueError):
    """A vocabulary file is missing, unreadable or lacks ELECTRA's special tokens."""


@dataclasses.dataclass(frozen=True)
class Vocabulary:
    """A BERT-style vocabulary: one token per line, the id is the line number."""

    tokens: tuple[str, ...]
    # Where it was read from (for messages and provenance).
    path: str = ""

    def __post_init__(self):
        index = {}
        for i, token in enumerate(self.tokens):
            if token in index:
                raise VocabularyError(
                    f"{self.path or 'vocabulary'}: token {token!r} appears twice "
                    f"(lines {index[token] + 1} and {i + 1})"
                )
            index[token] = i
        missing = [t for t in SPECIAL_TOKENS if t not in index]
        if missing:
            raise VocabularyError(
                f"{self.path or 'vocabulary'} lacks the special tokens ELECTRA needs: "
                f"{', '.join(missing)}"
            )
        object.__setattr__(self, "_index", index)

    @classmethod
    def from_file(cls, path) -> Vocabulary:
        path = str(path)
        if not tf.io.gfile.exists(path):
            raise VocabularyError(f"vocabulary file not found: {path}")
        with tf.io.gfile.GFile(path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise VocabularyError(
                f"{path} is not UTF-8 text (byte {error.start})"
            ) from error
        tokens = tuple(line.rstrip("\r") for line in text.split("\n"))
        if tokens and tokens[-1] == "":
            tokens = tokens[:-1]
        if not tokens:
            raise VocabularyError(f"vocabulary file is empty: {path}")
        return cls(tokens, path)

    @property
    def size(self) -> int:
        return len(self.tokens)

    def id(self, token: str) -> int:
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

    def md5(self) -> str:
        return hashlib.md5("\n".join(self.tokens).encode("utf-8")).hexdigest()

    def tokenizer(self, lowercase=True, strip_accents=True):
        """keras-hub's WordPiece tokenizer (tensorflow-text ops) over these tokens."""
        import keras_hub

        return keras_hub.tokenizers.WordPieceTokenizer(
            vocabulary=list(self.tokens),
            lowercase=lowercase,
            strip_accents=strip_accents,
            oov_token="[UNK]",
            dtype="int32",
        )

    def save(self, path) -> None:
        with tf.io.gfile.GFile(str(path), "w") as f:
            f.write("\n".join(self.tokens) + "\n")


def learn_vocabulary(
    text_files,
    vocabulary_size: int,
    output_path,
    lowercase: bool = True,
    strip_accents: bool = True,
) -> Vocabulary:
    """Learns a WordPiece vocabulary from raw text with keras-hub's tool.

    The special tokens come first ([PAD] = 0). Writes `output_path` and
    returns the vocabulary.
    """
    import keras_hub

    from electra_tf.data.corpus import read_documents

    lines = [
        sentence
        for path in text_files
        for document in read_documents(path)
        for sentence in document
    ]
    learned = keras_hub.tokenizers.compute_word_piece_vocabulary(
        tf.data.Dataset.from_tensor_slices(lines).batch(1000),
        vocabulary_size=vocabulary_size,
        lowercase=lowercase,
        strip_accents=strip_accents,
        reserved_tokens=list(SPECIAL_TOKENS),
    )
    vocabulary = Vocabulary(tuple(learned), str(output_path))
    os.makedirs(os.path.dirname(os.path.abspath(str(output_path))), exist_ok=True)
    vocabulary.save(output_path)
    return vocabulary
