"""Question + context -> overlapping windows of packed tokens, with char offsets."""

from __future__ import annotations

import keras
import keras_hub
import tensorflow as tf
import tensorflow_text as tf_text
from keras_hub.src.tokenizers import word_piece_tokenizer as _wordpiece

from electra_tf.errors import ElectraError

# The largest int32, for "no such position" in min/max reductions.
_BIG = 2**31 - 1


class QuestionAnsweringInputError(ElectraError, ValueError):
    """The preprocessor's lengths cannot hold a question and a context."""


@keras.saving.register_keras_serializable(package="electra_tf")
class ElectraQuestionAnswererPreprocessor(keras_hub.models.Preprocessor):
    """Packs `[CLS] question [SEP] context window [SEP]` for `ElectraQuestionAnswerer`.

    As google-research/electra's `QATask.featurize` (itself BERT's SQuAD
    recipe), in TensorFlow ops so that it runs inside `fit()` and inside a
    SavedModel:

    1. the question is WordPiece-tokenized and cut to `max_query_length`;
    2. the context is tokenized with each token's character offsets in the
       original string (see `tokenize_with_offsets`);
    3. the context tokens are cut into windows of `sequence_length -
       len(question) - 3` tokens, each starting `doc_stride` tokens after the
       previous one, until one reaches the end (a context that fits gives one
       window; an empty one gives one empty window, so every question has
       an answer slot);
    4. each window is packed with segment 0 for `[CLS] question [SEP]` and
       segment 1 for `window [SEP]`, padded to `sequence_length`.

    A token seen by several windows is answerable only in the window where it
    has the most context, min(tokens left, tokens right) + 0.01 * window
    length, the first such window on ties (the original's
    `_check_is_max_context`); `windows()` marks it in `start_allowed`.

    `call(x, y)`: `x` is `(questions, contexts)`, tf.string [batch]; `y`,
    when given, is a dict of `answer_start` (int, character offset; -1 for
    no answer) and `answer_text` (tf.string). It returns the windows of the
    batch as a batch (so a batch of questions becomes at least as many
    windows): `x` is the encoder's `token_ids`, `segment_ids`, `padding_mask`
    plus `start_positions`, and `y` the labels keyed by the model's outputs:
    `start_logits` and `end_logits` (token positions of the answer in the
    window, or 0, the `[CLS]` position, when the window does not hold all of
    it or there is none) and `no_answer_logit` (1.0 for an unanswerable
    question). As in the original, a window that misses the answer of an
    answerable question keeps `no_answer_logit` 0. Without `y`,
    `start_positions` is -1 (the model then searches for starts). An `x`
    that is already a dict of windows (see `training_windows` in
    `electra_tf.finetuning.question_answering`) passes through unchanged, so that
    windows made once can be trained on for many epochs.

    Args:
        tokenizer: a `keras_hub.models.ElectraTokenizer`.
        sequence_length: tokens per window (original SQuAD recipe: 512 for
            base and large, 384 in BERT).
        max_query_length: question tokens kept (original: 64).
        doc_stride: context tokens between window starts (original: 128).

    Example:
    >>> vocabulary = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ...               "who", "flew", "the", "green", "plane", "?", "pilot"]
    >>> tokenizer = keras_hub.models.ElectraTokenizer(
    ...     vocabulary=vocabulary, lowercase=True)
    >>> preprocessor = ElectraQuestionAnswererPreprocessor(
    ...     tokenizer, sequence_length=8, max_query_length=3, doc_stride=2)
    >>> w = preprocessor.windows(["Who flew?"], ["The pilot flew the plane"])
    >>> w["token_ids"].numpy().tolist()
    [[2, 5, 6, 10, 3, 7, 11, 3], [2, 5, 6, 10, 3, 6, 7, 3], [2, 5, 6, 10, 3, 9, 3, 0]]
    >>> w["char_start"].numpy()[1].tolist()  # "flew the" at 10 and 15
    [-1, -1, -1, -1, -1, 10, 15, -1]
    """

    backbone_cls = keras_hub.models.ElectraBackbone
    tokenizer_cls = keras_hub.models.ElectraTokenizer

    def __init__(
        self,
        tokenizer,
        sequence_length=384,
        max_query_length=64,
        doc_stride=128,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.tokenizer = tokenizer
        if sequence_length - max_query_length - 3 < 1:
            raise QuestionAnsweringInputError(
                f"sequence_length {sequence_length} leaves no room for context "
                f"after a question of max_query_length {max_query_length} "
                "and [CLS], [SEP], [SEP]"
            )
        if doc_stride < 1:
            raise QuestionAnsweringInputError(
                f"doc_stride must be positive, got {doc_stride}"
            )
        self.sequence_length = sequence_length
        self.max_query_length = max_query_length
        self.doc_stride = doc_stride
        self._wordpiece = None
        if getattr(tokenizer, "vocabulary", None) is not None:
            # Built now, outside any tf.data map (as keras-hub's tokenizer is).
            self._make_wordpiece()

    def build(self, input_shape=None):
        self._make_wordpiece()
        self.built = True

    def _make_wordpiece(self):
        # Built eagerly (not inside a tf.data map), as keras-hub does.
        if self._wordpiece is None:
            tokenizer = self.tokenizer
            if getattr(tokenizer, "special_tokens_in_strings", False):
                raise QuestionAnsweringInputError(
                    "tokenizers with special_tokens_in_strings are not supported"
                )
            self._wordpiece = tf_text.FastWordpieceTokenizer(
                vocab=tokenizer.get_vocabulary(),
                token_out_type=tf.int32,
                suffix_indicator=tokenizer.suffix_indicator,
                unknown_token=tokenizer.oov_token,
                no_pretokenization=True,
                support_detokenization=False,
            )
        return self._wordpiece

    # === Tokenization with offsets ===

    def tokenize_with_offsets(self, text):
        """WordPiece ids of `text` [batch] with each token's word's offsets.

        The ids are the tokenizer's (same splitting on whitespace,
        punctuation and CJK characters, accent stripping and case folding),
        but computed word by word so that each token keeps the position of
        its word in the original string: every WordPiece of a word carries
        that word's span, so answers are whole words of the context.

        Returns:
            `(ids, byte_start, byte_end, char_start, char_end)`, ragged
            [batch, (tokens)]; ends are exclusive; chars are Unicode code
            points (SQuAD's `answer_start` unit).
        """
        tokenizer = self.tokenizer
        wordpiece = self._make_wordpiece()
        text = tf.convert_to_tensor(text, tf.string)
        if tokenizer.split:
            if tokenizer.split_on_cjk:
                delimiter = _wordpiece.WHITESPACE_PUNCTUATION_AND_CJK_REGEX
                keep = _wordpiece.PUNCTUATION_AND_CJK_REGEX
            else:
                delimiter = _wordpiece.WHITESPACE_AND_PUNCTUATION_REGEX
                keep = _wordpiece.PUNCTUATION_REGEX
            words, starts, ends = tf_text.regex_split_with_offsets(
                text, delim_regex_pattern=delimiter, keep_delim_regex_pattern=keep
            )
        else:
            words = tf.RaggedTensor.from_tensor(text[:, None])
            starts = tf.RaggedTensor.from_tensor(tf.zeros_like(text, tf.int64)[:, None])
            ends = tf.RaggedTensor.from_tensor(
                tf.strings.length(text, unit="BYTE")[:, None]
            )
        normalized = words
        if tokenizer.strip_accents:
            normalized = tf_text.normalize_utf8(normalized, "NFD")
            normalized = tf.strings.regex_replace(normalized, r"\p{Mn}", "")
        if tokenizer.lowercase:
            normalized = tf_text.case_fold_utf8(normalized)
        pieces = wordpiece.tokenize(normalized)  # [batch, (words), (pieces)]
        word_of_piece = pieces.values.value_rowids()  # flat word index
        ids = pieces.merge_dims(1, 2)
        byte_start = ids.with_flat_values(
            tf.cast(tf.gather(starts.flat_values, word_of_piece), tf.int32)
        )
        byte_end = ids.with_flat_values(
            tf.cast(tf.gather(ends.flat_values, word_of_piece), tf.int32)
        )
        # Byte offsets -> code point offsets: the number of characters that
        # start before the byte.
        _, char_bytes = tf.strings.unicode_decode_with_offsets(
            text, "UTF-8", errors="replace"
        )
        char_bytes = tf.cast(char_bytes, tf.int32).to_tensor(default_value=_BIG)

        def to_chars(offsets):
            dense = offsets.to_tensor(default_value=0)
            chars = tf.searchsorted(char_bytes, dense, side="left")
            return tf.RaggedTensor.from_tensor(chars, lengths=offsets.row_lengths())

        return ids, byte_start, byte_end, to_chars(byte_start), to_chars(byte_end)

    # === Windows ===

    def windows(self, questions, contexts, answer_starts=None, answer_texts=None):
        """All windows of a batch of questions, with what decoding needs.

        Args:
            questions, contexts: tf.string [batch].
            answer_starts: optional int [batch], character offset of each
                answer in its context, -1 for no answer.
            answer_texts: optional tf.string [batch], the answers (their
                length in characters gives the answer's end).

        Returns:
            A dict over windows [num_windows, ...], L = `sequence_length`:
            `token_ids`, `segment_ids` int32 [W, L], `padding_mask` bool
            [W, L]; `example_index` int32 [W] (the question it belongs to);
            `window_start` int32 [W] (its first context token);
            `context_token` int32 [W, L] (index of the context token at
            each position, -1 off the context); `start_allowed` bool [W, L]
            (context tokens with their maximum context here);
            `char_start`, `char_end`, `byte_start`, `byte_end` int32 [W, L]
            (the token's word in the context, -1 off the context);
            with answers also `start_positions`, `end_positions` int32 [W]
            and `is_impossible` float32 [W].
        """
        self._make_wordpiece()
        questions = tf.convert_to_tensor(questions, tf.string)
        contexts = tf.convert_to_tensor(contexts, tf.string)
        length = self.sequence_length
        cls_id = self.tokenizer.cls_token_id
        sep_id = self.tokenizer.sep_token_id
        pad_id = self.tokenizer.pad_token_id

        query, *_ = self.tokenize_with_offsets(questions)
        query = query[:, : self.max_query_length]
        doc, byte_start, byte_end, char_start, char_end = self.tokenize_with_offsets(
            contexts
        )
        num_query = tf.cast(query.row_lengths(), tf.int32)  # [B]
        num_doc = tf.cast(doc.row_lengths(), tf.int32)  # [B]
        room = length - num_query - 3  # context tokens per window
        stride = tf.minimum(room, self.doc_stride)
        extra = tf.maximum(num_doc - room, 0)
        num_windows = 1 + (extra + stride - 1) // stride  # [B]

        example_index = tf.repeat(tf.range(tf.size(num_windows)), num_windows)  # [W]
        window_number = tf.ragged.range(num_windows).flat_values
        window_start = window_number * tf.gather(stride, example_index)
        window_room = tf.gather(room, example_index)
        window_doc = tf.gather(num_doc, example_index)
        window_length = tf.maximum(
            tf.minimum(window_room, window_doc - window_start), 0
        )

        # Context token indices of each window: ragged [W, (window_length)].
        positions = tf.ragged.range(window_start, window_start + window_length)
        flat = positions.with_flat_values(
            positions.flat_values
            + tf.repeat(
                tf.gather(tf.cast(doc.row_starts(), tf.int32), example_index),
                window_length,
            )
        )

        def doc_values(ragged):
            return flat.with_flat_values(
                tf.gather(ragged.flat_values, flat.flat_values)
            )

        num_windows_total = tf.size(example_index)
        ones = tf.ones([num_windows_total, 1], tf.int32)
        window_query = tf.gather(query, example_index)
        token_ids = tf.concat(
            [
                ones * cls_id,
                window_query,
                ones * sep_id,
                doc_values(doc),
                ones * sep_id,
            ],
            axis=1,
        )
        shape = [None, length]
        token_ids = token_ids.to_tensor(default_value=pad_id, shape=shape)
        window_query_length = tf.gather(num_query, example_index)
        real = window_query_length + window_length + 3
        padding_mask = tf.sequence_mask(real, length)
        position = tf.range(length)[None, :]
        offset = window_query_length[:, None] + 2  # first context position
        segment_ids = tf.cast((position >= offset) & padding_mask, tf.int32)

        def place(values):
            """A ragged [W, (window_length)] context field at its positions."""
            minus = -tf.ones_like(tf.gather(query, example_index))
            row = tf.concat([-ones, minus, -ones, values, -ones], axis=1)
            return row.to_tensor(default_value=-1, shape=shape)

        context_token = place(positions)
        outputs = {
            "token_ids": token_ids,
            "segment_ids": segment_ids,
            "padding_mask": padding_mask,
            "example_index": example_index,
            "window_start": window_start,
            "context_token": context_token,
            "char_start": place(doc_values(char_start)),
            "char_end": place(doc_values(char_end)),
            "byte_start": place(doc_values(byte_start)),
            "byte_end": place(doc_values(byte_end)),
        }
        outputs["start_allowed"] = self._max_context(
            context_token, example_index, window_start, window_length
        )
        if answer_starts is not None:
            outputs.update(
                self._labels(
                    answer_starts,
                    answer_texts,
                    char_start,
                    char_end,
                    example_index,
                    window_start,
                    window_length,
                    offset[:, 0],
                )
            )
        return outputs

    @staticmethod
    def _max_context(context_token, example_index, window_start, window_length):
        """[W, L] bool: the token's best-context window is this one."""
        token = context_token[:, :, None]  # [W, L, 1]: w's token at p
        start = window_start[None, None, :]  # [1, 1, V]
        end = (window_start + window_length - 1)[None, None, :]
        same = example_index[:, None] == example_index[None, :]  # [W, V]
        inside = (token >= start) & (token <= end) & same[:, None, :]
        # 100 x (min(left, right) + 0.01 x length), in integers.
        score = (
            100 * tf.minimum(token - start, end - token) + window_length[None, None, :]
        )
        score = tf.where(inside, score, -1)
        own = tf.range(tf.size(example_index))
        before = own[None, :] < own[:, None]  # [W, V]: v comes before w
        after = own[None, :] > own[:, None]
        mine = tf.linalg.diag_part(tf.transpose(score, [1, 0, 2]))  # [L, W]
        mine = tf.transpose(mine)  # [W, L]
        best_before = tf.reduce_max(tf.where(before[:, None, :], score, -1), axis=-1)
        best_after = tf.reduce_max(tf.where(after[:, None, :], score, -1), axis=-1)
        return (context_token >= 0) & (mine > best_before) & (mine >= best_after)

    @staticmethod
    def _labels(
        answer_starts,
        answer_texts,
        char_start,
        char_end,
        example_index,
        window_start,
        window_length,
        offset,
    ):
        answer_starts = tf.cast(tf.convert_to_tensor(answer_starts), tf.int32)
        answer_ends = answer_starts + tf.strings.length(
            tf.convert_to_tensor(answer_texts, tf.string), unit="UTF8_CHAR"
        )
        impossible = answer_starts < 0
        # First token ending after the answer's start; last starting before
        # its end (context token indices).
        first = tf.reduce_sum(
            tf.cast(char_end <= answer_starts[:, None], tf.int32), axis=1
        )
        last = (
            tf.reduce_sum(tf.cast(char_start < answer_ends[:, None], tf.int32), axis=1)
            - 1
        )
        first, last = tf.gather(first, example_index), tf.gather(last, example_index)
        window_end = window_start + window_length - 1
        inside = (
            ~tf.gather(impossible, example_index)
            & (first >= window_start)
            & (last <= window_end)
            & (first <= last)
        )
        start_positions = tf.where(inside, first - window_start + offset, 0)
        end_positions = tf.where(inside, last - window_start + offset, 0)
        return {
            "start_positions": start_positions,
            "end_positions": end_positions,
            "is_impossible": tf.cast(tf.gather(impossible, example_index), tf.float32),
        }

    # === Keras ===

    def call(self, x, y=None, sample_weight=None):
        if isinstance(x, dict):
            # Windows made beforehand (`windows()`, once for all epochs):
            # they pass through as they are.
            return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)
        questions, contexts = x
        if y is None:
            w = self.windows(questions, contexts)
            inputs = self._model_inputs(w)
            inputs["start_positions"] = -tf.ones_like(w["example_index"])
            return keras.utils.pack_x_y_sample_weight(inputs, None, sample_weight)
        if sample_weight is not None:
            raise QuestionAnsweringInputError(
                "sample weights are per question, but training is per window; "
                "they are not supported"
            )
        w = self.windows(questions, contexts, y["answer_start"], y["answer_text"])
        inputs = self._model_inputs(w)
        inputs["start_positions"] = w["start_positions"]
        labels = {
            "start_logits": w["start_positions"],
            "end_logits": w["end_positions"][:, None],
            "no_answer_logit": w["is_impossible"],
        }
        return inputs, labels

    @staticmethod
    def _model_inputs(w):
        return {
            "token_ids": w["token_ids"],
            "segment_ids": w["segment_ids"],
            "padding_mask": w["padding_mask"],
        }

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "sequence_length": self.sequence_length,
                "max_query_length": self.max_query_length,
                "doc_stride": self.doc_stride,
            }
        )
        return config
