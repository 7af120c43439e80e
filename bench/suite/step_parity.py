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

import numpy as np

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
    from electra_tf.pretraining.run import build_pretrainer
    from tests.pretraining import test_step_parity as case

    def build(model, pretraining):
        return build_pretrainer(
            model, pretraining, case.OPTIMIZER, case._vocabulary(), jit_compile=False
        )

    pretrainer, reference = case._pair("electra", "tied", build=build)
    variables = reference.variables()
    parameters = reference.parameters()
    adam = case.AdamWeightDecay(
        {n: p for n, (p, _) in parameters.items()},
        peak=case.OPTIMIZER.learning_rate,
        warmup_steps=case.OPTIMIZER.warmup_steps,
        total_steps=case.OPTIMIZER.total_steps,
        weight_decay=case.OPTIMIZER.weight_decay,
        clip_norm=case.OPTIMIZER.clip_norm,
    )
    steps = []
    for step in range(case.OPTIMIZER.total_steps):
        batch, draws = case._batch(10 + step)
        pretrainer.reset_metrics()
        ours = pretrainer.train_on_batch({**batch, **draws}, return_dict=True)
        for parameter, _ in parameters.values():
            parameter.grad = None
        theirs = reference.step(batch, draws)
        theirs["loss"].backward()
        adam.step()
        weight_difference = max(
            float(
                np.abs(
                    variable.numpy()
                    - case.keras_layout(
                        parameters[name][0], parameters[name][1], variable
                    )
                ).max()
            )
            for name, variable in variables.items()
        )
        steps.append(
            {
                "step": step + 1,
                "loss_ours": float(ours["loss"]),
                "loss_reference": float(theirs["loss"]),
                "max_weight_difference": weight_difference,
                "reference_global_norm": adam.last_global_norm,
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
