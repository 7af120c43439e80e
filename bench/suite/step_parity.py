"""Twenty pre-training steps against the independent ELECTRA step, side by side.

Ours (`ElectraPretrainer.train_on_batch`, the optimizer `pretrain/run.py`
builds) and `tests/step_reference.py` (transformers' networks, the original's
losses, clipping, schedule and AdamWeightDecay in torch) from the same tiny
random weights, on the same 20 batches, masks and samples: the loss at each
step on both sides, the largest weight difference after each step, and the
global gradient norm the reference clipped. Also measured: with untied
embeddings, the global norm as the original's CPU clipping takes it (the
embedding gradient's rows unsummed) against the norm itself (ours).

    python -m bench.suite.step_parity  # bench/results/step_parity_curves.json
"""

from __future__ import annotations

import pathlib

from bench.result_file import write_result
from bench.run_info import run_info

REPO = pathlib.Path(__file__).resolve().parents[2]
RESULT = REPO / "bench/results/step_parity_curves.json"


def _unsummed_norm_ratio():
    """(original's CPU norm, the true norm) of an untied step's gradient."""
    import tensorflow as tf

    from tests.pretraining import test_step_parity as case

    pretrainer, _ = case._pair("electra", "none")
    batch, draws = case._batch(1)
    with tf.GradientTape() as tape:
        loss = pretrainer({**batch, **draws}, training=True)["loss"]
    gradients = tape.gradient(loss, pretrainer.trainable_variables)
    unsummed = dense = 0.0
    for gradient in gradients:
        if isinstance(gradient, tf.IndexedSlices):
            unsummed += float(tf.reduce_sum(gradient.values**2))
            gradient = tf.convert_to_tensor(gradient)
        else:
            unsummed += float(tf.reduce_sum(gradient**2))
        dense += float(tf.reduce_sum(gradient**2))
    return unsummed**0.5, dense**0.5


def main():
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from tests.pretraining import test_step_parity as case

    steps = []
    # The loop the test runs: the two cannot drift apart.
    for record in case.side_by_side_steps():
        steps.append(
            {
                "step": record["step"],
                "loss_ours": record["loss_ours"],
                "loss_reference": record["loss_reference"],
                "max_weight_difference": max(record["weight_errors"].values()),
                "reference_global_norm": record["reference_global_norm"],
            }
        )
        print(steps[-1])
    unsummed, dense = _unsummed_norm_ratio()
    write_result(
        RESULT,
        {
            **run_info(__file__),
            "setup": (
                "tests/pretraining/test_step_parity.py's tiny model (2 layers, "
                "H 32, E 16, generator 16, vocabulary 200, batch 4 x 24), "
                "objective electra, tied; learning rate 2e-3, warm-up 4, 20 "
                "steps, weight decay 0.5, clip 1.0; float32, CPU"
            ),
            "steps": steps,
            "untied_clipping_norm": {
                "original_cpu_unsummed_rows": unsummed,
                "ours_summed": dense,
            },
        },
    )


if __name__ == "__main__":
    main()
