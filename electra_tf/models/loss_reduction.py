"""The Keras `reduction` of a fine-tuning model's "auto" loss (`keras_reduction`)."""

from __future__ import annotations

from electra_tf.config import LOSS_REDUCTIONS


def keras_reduction(loss, loss_reduction: str, mean: str) -> str:
    """The `reduction` for the "auto" loss of a model's `compile`.

    `loss_reduction` is `FinetuningConfig.loss_reduction`: "mean" gives
    `mean`, the model's own mean ("sum_over_batch_size", or
    "mean_with_sample_weight" over the labelled tokens); "sum" gives "sum",
    the original's. Under `tf.distribute` Keras divides a mean by the number
    of replicas and leaves a sum as it is; the replicas' gradients are then
    summed, so "sum" is the sum over the global batch.

    Raises:
        ValueError: `loss_reduction` is not one of `LOSS_REDUCTIONS`, or is
            not "mean" for a `loss` given explicitly (that loss reduces as it
            says, so the argument would be ignored).
    """
    if loss_reduction not in LOSS_REDUCTIONS:
        raise ValueError(
            f"loss_reduction must be one of {LOSS_REDUCTIONS}, got {loss_reduction!r}"
        )
    if loss != "auto" and loss_reduction != "mean":
        raise ValueError(
            f'loss_reduction="{loss_reduction}" is for loss="auto"; a loss given '
            "reduces as it is built to"
        )
    return mean if loss_reduction == "mean" else "sum"
