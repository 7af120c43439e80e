"""The best answer span of each question over all windows of its context.

`best_spans` takes what `SpanHead` predicts for every window (start logits,
end logits for each of K candidate starts) and what the preprocessor knows
about every position (is it a context token; is this its best-context
window), and returns per question the span with the highest
`log p(start) + log p(end | start)`, among spans that

* start on a context token in its maximum-context window (not `[CLS]`,
  the question or a `[SEP]`),
* end on a context token at or after the start,
* are at most `max_answer_length` tokens long,

as google-research/electra's `SpanBasedQAScorer.write_predictions` filters
its beam. Unlike the original, every end of each candidate start is
considered (not only its `beam_size` best), so with all starts as
candidates this is the exhaustive best span, which the tests check against
a brute-force search. Ties go to the first window, start and end.

`answer_text_batch` runs preprocessor, model and decoder for a batch of raw
questions and contexts; `ElectraQuestionAnswerer.answer` and the SavedModel
export both call it, so they agree by construction.
"""

from __future__ import annotations

import tensorflow as tf

_NO_SPAN = float("-inf")


def best_spans(
    start_logits,
    end_logits,
    start_index,
    start_allowed,
    end_allowed,
    example_index,
    num_examples,
    max_answer_length=30,
):
    """Best span per example.

    Args:
        start_logits: float [W, L], masked logits (log-softmax over L is the
            start log-probability).
        end_logits: float [W, K, L], end logits for each candidate start.
        start_index: int [W, K], the candidate starts.
        start_allowed: bool [W, L], where a span may start.
        end_allowed: bool [W, L], where a span may end.
        example_index: int [W], the example of each window.
        num_examples: N.
        max_answer_length: most tokens in a span.

    Returns:
        dict of [N] tensors: `window` (int32, -1 when no span is allowed),
        `start`, `end` (int32 positions in that window, -1 likewise) and
        `score` (float32, -inf likewise).
    """
    start_logits = tf.convert_to_tensor(start_logits, tf.float32)
    end_logits = tf.convert_to_tensor(end_logits, tf.float32)
    start_index = tf.cast(start_index, tf.int32)
    start_allowed = tf.cast(start_allowed, tf.bool)
    end_allowed = tf.cast(end_allowed, tf.bool)
    example_index = tf.cast(example_index, tf.int32)
    length = tf.shape(start_logits)[1]
    k = tf.shape(start_index)[1]

    start_log_probs = tf.gather(
        tf.nn.log_softmax(start_logits), start_index, batch_dims=1
    )
    end_log_probs = tf.nn.log_softmax(end_logits)  # [W, K, L]
    start = start_index[:, :, None]  # [W, K, 1]
    end = tf.range(length)[None, None, :]  # [1, 1, L]
    valid = (
        tf.gather(start_allowed, start_index, batch_dims=1)[:, :, None]
        & end_allowed[:, None, :]
        & (end >= start)
        & (end - start < max_answer_length)
    )
    scores = tf.where(valid, start_log_probs[:, :, None] + end_log_probs, _NO_SPAN)
    flat = tf.reshape(scores, [-1, k * length])
    best = tf.argmax(flat, axis=1, output_type=tf.int32)  # first maximum
    window_score = tf.reduce_max(flat, axis=1)
    window_start = tf.gather(start_index, best // length, batch_dims=1)
    window_end = best % length

    example_score = tf.math.unsorted_segment_max(
        window_score, example_index, num_examples
    )
    # The first window reaching its example's best score.
    windows = tf.range(tf.size(example_index))
    reaches = (window_score >= tf.gather(example_score, example_index)) & (
        window_score > _NO_SPAN
    )
    big = tf.int32.max
    chosen = tf.math.unsorted_segment_min(
        tf.where(reaches, windows, big), example_index, num_examples
    )
    found = chosen < big
    safe = tf.where(found, chosen, 0)
    return {
        "window": tf.where(found, chosen, -1),
        "start": tf.where(found, tf.gather(window_start, safe), -1),
        "end": tf.where(found, tf.gather(window_end, safe), -1),
        "score": tf.where(found, example_score, _NO_SPAN),
    }


def answer_text_batch(model, questions, contexts):
    """Raw questions and contexts [N] -> best answers, all in TensorFlow ops.

    `model` is an `ElectraQuestionAnswerer` with a preprocessor. Returns
    [N] tensors: `text` (tf.string, "" without a span), `answer_start`,
    `answer_end` (int32 character offsets, end exclusive, -1 without a
    span), `score` and `no_answer_score` (float32; see
    `ElectraQuestionAnswerer.answer`).
    """
    preprocessor = model.preprocessor
    windows = preprocessor.windows(questions, contexts)
    outputs = model(
        {
            "token_ids": windows["token_ids"],
            "segment_ids": windows["segment_ids"],
            "padding_mask": windows["padding_mask"],
            "start_positions": None,
        },
        training=False,
    )
    num_examples = tf.shape(questions)[0]
    is_context = windows["context_token"] >= 0
    best = best_spans(
        outputs["start_logits"],
        outputs["end_logits"],
        outputs["start_index"],
        windows["start_allowed"],
        is_context,
        windows["example_index"],
        num_examples,
        max_answer_length=model.max_answer_length,
    )
    found = best["window"] >= 0
    window = tf.maximum(best["window"], 0)
    start = tf.maximum(best["start"], 0)
    end = tf.maximum(best["end"], 0)

    def at(field, position):
        values = tf.gather(windows[field], window)  # [N, L]
        return tf.gather(values, position[:, None], batch_dims=1)[:, 0]

    byte_start, byte_end = at("byte_start", start), at("byte_end", end)
    byte_start = tf.maximum(byte_start, 0)
    text = tf.strings.substr(
        contexts, byte_start, tf.maximum(byte_end - byte_start, 0), unit="BYTE"
    )
    if "no_answer_logit" in outputs:
        no_answer = tf.math.unsorted_segment_min(
            outputs["no_answer_logit"], windows["example_index"], num_examples
        )
    else:
        no_answer = tf.zeros([num_examples], tf.float32)
    return {
        "text": tf.where(found, text, ""),
        "answer_start": tf.where(found, at("char_start", start), -1),
        "answer_end": tf.where(found, at("char_end", end), -1),
        "score": best["score"],
        "no_answer_score": no_answer,
    }
