"""Words (or raw text) -> WordPiece windows for token classification (tagging)."""

from __future__ import annotations

import keras
import keras_hub
import numpy as np
import tensorflow as tf

# A word is a run of characters that are not whitespace, control characters,
# punctuation or CJK; each punctuation mark and CJK character is a word of its
# own. These are the splits WordPiece itself makes (keras-hub's
# `WordPieceTokenizer` patterns, as BERT's basic tokenizer), so raw text gives
# the words a tokenised corpus such as CoNLL-2003 has.
_WHITESPACE = r"\s|\p{Cc}|\p{Cf}"
_PUNCTUATION = r"[!-/]|[:-@]|[\[-`]|[{-~]|[\p{P}]"
_CJK = (
    r"[\x{4E00}-\x{9FFF}]|[\x{3400}-\x{4DBF}]|[\x{20000}-\x{2A6DF}]|"
    r"[\x{2A700}-\x{2B73F}]|[\x{2B740}-\x{2B81F}]|[\x{2B820}-\x{2CEAF}]|"
    r"[\x{F900}-\x{FAFF}]|[\x{2F800}-\x{2FA1F}]"
)
WORD_SPLIT_PATTERN = "|".join([_WHITESPACE, _PUNCTUATION, _CJK])
WORD_KEEP_PATTERN = "|".join([_PUNCTUATION, _CJK])
# Labels of positions the loss ignores (other pieces, specials, padding).
IGNORED = 0


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraTokenClassifierPreprocessor(keras_hub.models.Preprocessor):
    """Tokenizes words into WordPieces and packs them into windows.

    Input is a batch of sentences, each a list of words (a `tf.RaggedTensor`
    of strings [batch, (words)], or Python lists), or a batch of raw texts
    (tf.string [batch]), which are split into words first (`split_words`:
    whitespace separates words, punctuation and CJK characters are words).

    1. Each word is tokenized with the `ElectraTokenizer`; a word that gives
       no piece at all becomes `[UNK]`, so every word keeps a position.
    2. A sentence's pieces are cut into windows of `sequence_length - 2`
       pieces (`[CLS] pieces [SEP]`): a word belongs to the window that holds
       its first piece, so a long sentence becomes several windows and no
       word is dropped; a word's pieces beyond its window's end are cut.
    3. The first piece of each word carries the word's label: `y` [batch,
       (words)] (int tag ids, or tag strings from `tags`) becomes labels
       [windows, sequence_length] with `sample_weight` 1 at first pieces and
       0 at other pieces, specials and padding, so the loss ignores them.

    Outputs are `(x, y, sample_weight)` with `x` the encoder's
    `token_ids`, `segment_ids` (`segment_id` at every token, specials
    included, 0 at padding) and `padding_mask` [windows, sequence_length];
    there are at least as many windows as sentences (empty sentences have
    none). `windows()` also returns where each word is, to map window outputs
    back to words.

    Args:
        tokenizer: a `keras_hub.models.ElectraTokenizer`.
        tags: the tag set, in id order (e.g. `["O", "B-PER", "I-PER"]`).
        sequence_length: tokens per window (ELECTRA: 128 or 512).
        segment_id: the windows' segment: 0 (transformers' token
            classification) or 1 (the original ELECTRA's tagging inputs).

    Example:
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...               "the", "fox", "jump", "##s"]
    >>> tokenizer = keras_hub.models.ElectraTokenizer(
    ...     vocabulary=vocabulary, lowercase=True)
    >>> preprocessor = ElectraTokenClassifierPreprocessor(
    ...     tokenizer, tags=["DET", "NOUN", "VERB"], sequence_length=8)
    >>> words, tags = [["The", "fox", "jumps"]], [["DET", "NOUN", "VERB"]]
    >>> x, y, weight = preprocessor(words, tags)
    >>> x["token_ids"].numpy().tolist()
    [[2, 5, 6, 7, 8, 3, 0, 0]]
    >>> y.numpy().tolist(), weight.numpy().tolist()
    ([[0, 0, 1, 2, 0, 0, 0, 0]], [[0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]])
    """

    backbone_cls = keras_hub.models.ElectraBackbone
    tokenizer_cls = keras_hub.models.ElectraTokenizer

    def __init__(self, tokenizer, tags=(), sequence_length=128, segment_id=0, **kwargs):
        super().__init__(**kwargs)
        self.tokenizer = tokenizer
        self.tags = list(tags)
        self.sequence_length = sequence_length
        self.segment_id = segment_id
        if sequence_length < 3:
            raise ValueError(f"sequence_length must be >= 3, got {sequence_length}")
        if segment_id < 0:
            raise ValueError(f"segment_id must be >= 0, got {segment_id}")
        with tf.init_scope():
            self._tag_table = tf.lookup.StaticHashTable(
                tf.lookup.KeyValueTensorInitializer(
                    tf.constant(self.tags or [""], tf.string),
                    tf.range(max(len(self.tags), 1), dtype=tf.int32),
                ),
                default_value=-1,
            )

    @property
    def num_tags(self) -> int:
        return len(self.tags)

    def tag_ids(self, tags) -> tf.Tensor:
        """Tag strings (any shape, ragged too) -> int32 ids; unknown tags fail."""
        if isinstance(tags, tf.RaggedTensor):
            return tags.with_flat_values(self.tag_ids(tags.flat_values))
        ids = self._tag_table.lookup(tags)
        check = tf.debugging.assert_non_negative(
            ids, message=f"a tag that is not one of {self.tags}"
        )
        with tf.control_dependencies([check]):
            return tf.identity(ids)

    def call(self, x, y=None, sample_weight=None):
        if sample_weight is not None:
            raise ValueError(
                "sample_weight is not supported: the preprocessor weights each "
                "word's first piece"
            )
        windows = self.windows(x)
        inputs = {
            key: windows[key] for key in ("token_ids", "segment_ids", "padding_mask")
        }
        if y is None:
            return inputs
        labels, weights = self.window_labels(windows, y)
        return inputs, labels, weights

    def sequence_lengths(self, words, batch_size: int = 1024) -> np.ndarray:
        """Each sentence's real positions once in windows (int [sentences]):
        its pieces with `[CLS]` and `[SEP]`, or its longest window's when it
        takes more than one (0 for a sentence of no words). `words` is
        tf.string [sentences, (words)]; fine-tuning groups training batches
        by it (`length_grouping`)."""
        words = _as_ragged_strings(words)
        lengths = []
        for batch in tf.data.Dataset.from_tensor_slices(words).batch(batch_size):
            windows = self._windows_of_words(batch)
            real = tf.reduce_sum(tf.cast(windows["padding_mask"], tf.int32), axis=1)
            per_word = tf.gather(real, windows["word_window"])
            lengths.append(tf.reduce_max(per_word, axis=1).numpy())
        return np.maximum(np.concatenate([[]] + lengths), 0).astype(np.int64)

    # === Words ===

    def windows(self, x) -> dict[str, tf.Tensor | tf.RaggedTensor]:
        """The model's windows of a batch, and where each word went.

        Returns a dict with
        * `token_ids`, `segment_ids`, `padding_mask`: int32 / int32 / bool
          [windows, sequence_length], the encoder's inputs;
        * `words`: tf.string [batch, (words)];
        * `word_window`, `word_position`: int32 [batch, (words)], the window
          and position of each word's first piece;
        * for raw text also `word_start`, `word_end`: int32 [batch, (words)],
          character offsets of each word (Python string indices).
        """
        if isinstance(x, tf.RaggedTensor) or _is_word_lists(x):
            words = _as_ragged_strings(x)
            return self._windows_of_words(words)
        return self._windows_of_text(tf.convert_to_tensor(x, tf.string))

    @tf.function(reduce_retracing=True)
    def _windows_of_text(self, text):
        words, start, end = split_words(text)
        windows = self._windows_of_words(words)
        return {**windows, "word_start": start, "word_end": end}

    @tf.function(reduce_retracing=True)
    def _windows_of_words(self, words):
        words = words.with_flat_values(tf.convert_to_tensor(words.flat_values))
        length = self.sequence_length
        room = length - 2  # [CLS] and [SEP]
        flat_words = words.flat_values
        pieces = self.tokenizer(flat_words)  # [words, (pieces)]
        pieces = tf.cast(pieces, tf.int32)
        pieces = _unknown_if_empty(
            pieces, self.tokenizer.token_to_id(self.tokenizer.oov_token)
        )

        counts = tf.cast(pieces.row_lengths(), tf.int32)
        word_sentence = tf.cast(words.value_rowids(), tf.int32)
        first_word = tf.cast(words.row_splits[:-1], tf.int32)
        global_start = tf.cumsum(counts, exclusive=True)
        # Piece offset of each word within its sentence.
        sentence_offset = tf.gather(
            tf.concat([global_start, [tf.reduce_sum(counts)]], 0), first_word
        )
        start = global_start - tf.gather(sentence_offset, word_sentence)
        # A word's window: that of its first piece; a new window starts at a
        # sentence's first word or where the chunk changes.
        chunk = start // room
        index = tf.range(tf.size(counts), dtype=tf.int32)
        is_first = tf.equal(index, tf.gather(first_word, word_sentence))
        previous = tf.concat([[-1], chunk[:-1]], 0)
        new_window = is_first | tf.not_equal(chunk, previous)
        word_window = tf.cumsum(tf.cast(new_window, tf.int32)) - 1
        num_windows = tf.reduce_sum(tf.cast(new_window, tf.int32))
        window_start = tf.boolean_mask(start, new_window)
        word_position = start - tf.gather(window_start, word_window) + 1

        piece_word = tf.cast(pieces.value_rowids(), tf.int32)
        piece_index = tf.range(tf.size(pieces.flat_values), dtype=tf.int32) - tf.gather(
            tf.cast(pieces.row_splits, tf.int32), piece_word
        )
        piece_window = tf.gather(word_window, piece_word)
        piece_position = tf.gather(word_position, piece_word) + piece_index
        keep = piece_position <= room
        piece_window = tf.boolean_mask(piece_window, keep)
        piece_position = tf.boolean_mask(piece_position, keep)
        shape = tf.stack([num_windows, length])
        scattered = tf.scatter_nd(
            tf.stack([piece_window, piece_position], 1),
            tf.boolean_mask(pieces.flat_values, keep),
            shape,
        )
        real = tf.math.unsorted_segment_sum(
            tf.ones_like(piece_window), piece_window, num_windows
        )
        column = tf.range(length, dtype=tf.int32)[tf.newaxis, :]
        real = real[:, tf.newaxis]
        token_ids = tf.where(
            column == 0,
            self.tokenizer.start_token_id,
            tf.where(
                column == real + 1,
                self.tokenizer.end_token_id,
                tf.where(column <= real, scattered, self.tokenizer.pad_token_id),
            ),
        )
        padding_mask = column < real + 2
        return {
            "token_ids": token_ids,
            "segment_ids": tf.where(padding_mask, self.segment_id, 0),
            "padding_mask": padding_mask,
            "words": words,
            "word_window": words.with_flat_values(word_window),
            "word_position": words.with_flat_values(word_position),
        }

    def window_labels(self, windows, y):
        """Per-word labels [batch, (words)] -> labels and weights [windows, length]."""
        if not isinstance(y, tf.RaggedTensor):
            y = as_ragged(y)
        if y.dtype == tf.string:
            y = self.tag_ids(y)
        y = tf.cast(y.flat_values, tf.int32)
        indices = tf.stack(
            [windows["word_window"].flat_values, windows["word_position"].flat_values],
            1,
        )
        shape = tf.shape(windows["token_ids"])
        labels = tf.scatter_nd(indices, y, shape) + IGNORED
        weights = tf.scatter_nd(indices, tf.ones_like(y, tf.float32), shape)
        return labels, weights

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "tags": self.tags,
                "sequence_length": self.sequence_length,
                "segment_id": self.segment_id,
            }
        )
        return config


def split_words(text):
    """Raw text tf.string [batch] -> words and their character offsets.

    Returns `(words, start, end)`: tf.string [batch, (words)] and int32
    [batch, (words)], `text[i][start:end]` (Python indices of the decoded
    string) being the word. Invalid UTF-8 bytes count one character each.
    """
    import tensorflow_text as tf_text

    words, byte_start, byte_end = tf_text.regex_split_with_offsets(
        text, WORD_SPLIT_PATTERN, WORD_KEEP_PATTERN
    )
    # Byte offsets -> character offsets: the number of characters that start
    # before the byte offset.
    _, char_bytes = tf.strings.unicode_decode_with_offsets(
        text, "UTF-8", errors="replace"
    )
    char_bytes = tf.cast(char_bytes, tf.int64)
    big = tf.cast(tf.int32.max, tf.int64)
    starts = char_bytes.to_tensor(default_value=big)

    def to_chars(offsets):
        dense = offsets.to_tensor(default_value=0)
        chars = tf.searchsorted(starts, dense, side="left")
        return tf.RaggedTensor.from_tensor(
            tf.cast(chars, tf.int32), lengths=offsets.row_lengths()
        )

    return words, to_chars(byte_start), to_chars(byte_end)


def _unknown_if_empty(pieces, unk_id):
    """A word with no piece gets `[UNK]`."""
    empty = tf.equal(pieces.row_lengths(), 0)
    extra = tf.RaggedTensor.from_row_lengths(
        tf.fill([tf.reduce_sum(tf.cast(empty, tf.int32))], tf.cast(unk_id, tf.int32)),
        tf.cast(empty, tf.int64),
    )
    return tf.concat([pieces, extra], axis=1)


def _is_word_lists(x) -> bool:
    return isinstance(x, (list, tuple)) and bool(x) and isinstance(x[0], (list, tuple))


def as_ragged(values):
    """Rows of words or tags (lists, or a dense or ragged tensor) as a ragged
    tensor [batch, (items)]."""
    if isinstance(values, tf.RaggedTensor):
        return values
    if isinstance(values, tf.Tensor):
        return tf.RaggedTensor.from_tensor(values)
    return tf.ragged.constant([list(row) for row in values])


def _as_ragged_strings(x):
    x = as_ragged(x) if not isinstance(x, tf.RaggedTensor) else x
    if x.ragged_rank != 1:
        raise ValueError("words must be [batch, (words)]")
    return x
