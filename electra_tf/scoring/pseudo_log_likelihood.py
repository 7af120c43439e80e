"""Per-token pseudo-log-likelihoods log p(x_t | the other tokens), three ways.

The pseudo-log-likelihood (PLL) of a sequence is the sum over its tokens of
log p(x_t | x_<t, x_>t) (Wang and Cho 2019; Salazar et al., ACL 2020, who
rank sentences with it). A model gives it in one of two ways:

* `mlm_token_scores`: a masked-language model (ELECTRA's generator, or a
  model pre-trained with `objective="mlm"`) reads x_t only if it is not
  masked, so each token needs its own copy of the sequence with that token
  masked: one forward pass per token. The copies are batched.
* `electric_token_scores`: Electric's discriminator (Clark et al., EMNLP
  2020) in ONE pass. Electric trains the discriminator's logit s_t, plus
  the noise term `log q(x_t | context) + log(p / (1 - p))` of
  `electra_tf.models.cloze_generator.electric_correction`, as the logit of
  "x_t is noise" (noise-contrastive estimation). At the optimum
  sigmoid(s_t + log q + log(p / (1 - p))) = (p q) / (p q + (1 - p) p_model),
  so s_t = -log p_model(x_t | x_\\t): the raw logit is the energy E(x)_t,
  and the paper scores a sentence with -sum_t E(x)_t. The model is only
  approximately self-normalised (nothing forces sum over x of exp(-E) = 1),
  so these are scores, not exact log-probabilities.
* `cloze_token_scores`: Electric's two-tower cloze model reads every token
  but x_t at position t, so its softmax is an exact conditional, in one
  pass.

Every function takes the encoder inputs (int32 [B, L] `token_ids`,
`segment_ids`, `padding_mask`) and returns float32 [B, L] scores; what
positions count (not `[CLS]`, `[SEP]` or padding) is the caller's choice.
"""

from __future__ import annotations

import tensorflow as tf


def _log_softmax_at(logits, token_ids):
    """float32 log softmax(logits)[..., token_ids]; logits [..., V], ids [...]."""
    logits = tf.cast(logits, tf.float32)
    batch_dims = len(token_ids.shape)
    return tf.gather(logits, token_ids, batch_dims=batch_dims) - tf.reduce_logsumexp(
        logits, axis=-1
    )


def electric_token_scores(discriminator, inputs):
    """-E(x)_t: minus an Electric discriminator's raw logit, float32 [B, L]."""
    return -tf.cast(discriminator(inputs, training=False), tf.float32)


def cloze_token_scores(cloze_generator, inputs):
    """log q(x_t | x_\\t) of a two-tower cloze model, float32 [B, L]."""
    logits = cloze_generator(inputs, training=False)
    return _log_softmax_at(logits, tf.cast(inputs["token_ids"], tf.int32))


def mlm_token_scores(generator, inputs, scored, *, mask_token_id, copies_per_batch):
    """log p(x_t | x with x_t masked) at every `scored` position, float32 [B, L].

    One copy of its sequence per scored token, with that token replaced by
    `[MASK]`; `copies_per_batch` copies (from any of the sequences) go
    through `generator` together. Unscored positions get 0.

    Args:
        generator: an `ElectraGenerator` (its `mask_positions` input picks
            the one slot each copy predicts).
        inputs: the encoder inputs, int32 [B, L].
        scored: bool [B, L], the positions to score.
        mask_token_id: the id of `[MASK]`.
        copies_per_batch: masked copies per forward pass.
    """
    inputs = {name: tf.cast(value, tf.int32) for name, value in inputs.items()}
    token_ids = inputs["token_ids"]
    # (sequence, position) of every token to score, in row-major order.
    where = tf.cast(tf.where(scored), tf.int32)
    count = tf.shape(where)[0]
    chunk = int(copies_per_batch)

    def one_batch(start, scores):
        pairs = where[start : start + chunk]
        size = tf.shape(pairs)[0]
        rows, positions = pairs[:, 0], pairs[:, 1:]
        copies = {name: tf.gather(value, rows) for name, value in inputs.items()}
        copies["token_ids"] = tf.tensor_scatter_nd_update(
            copies["token_ids"],
            tf.concat([tf.range(size)[:, None], positions], axis=1),
            tf.fill([size], tf.constant(mask_token_id, tf.int32)),
        )
        logits = generator(
            {**copies, "mask_positions": positions}, training=False
        )  # [size, 1, V]
        targets = tf.gather_nd(token_ids, pairs)
        log_p = _log_softmax_at(logits[:, 0], targets)
        indices = (start + tf.range(size))[:, None]
        return start + chunk, tf.tensor_scatter_nd_update(scores, indices, log_p)

    _, scores = tf.while_loop(
        lambda start, _: start < count,
        one_batch,
        (tf.constant(0), tf.zeros([count], tf.float32)),
    )
    return tf.scatter_nd(where, scores, tf.shape(token_ids))
