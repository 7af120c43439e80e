"""One worker of the multi-worker test: `pretrain/run.py` as the user runs it.

Run by tests/test_distribution.py in one process per worker, each with its own
TF_CONFIG: `python -m tests.multi_worker_check WEIGHTS.npz RUN_ARGS...`. It calls
`pretrain/run.py`'s `main(RUN_ARGS)` unchanged, keeping a reference to the
model it builds, then saves that model's final weights to WEIGHTS.npz, so the
test can compare the workers (a non-chief worker keeps no checkpoint).
"""

import os
import sys

import numpy as np

import electra_tf.pretraining.run as pretraining
from electra_tf.cli import pretrain as run

built = []
_build_pretrainer = pretraining.build_pretrainer


def _keep(*args, **kwargs):
    built.append(_build_pretrainer(*args, **kwargs))
    return built[-1]


def main():
    weights_path, argv = sys.argv[1], sys.argv[2:]
    pretraining.build_pretrainer = _keep
    code = run.main(argv)
    if code:
        return code
    model = built[-1]
    np.savez(
        weights_path,
        step=int(model.optimizer.iterations.numpy()),
        **{f"w{i}": v.numpy() for i, v in enumerate(model.trainable_variables)},
    )
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.exit(main())
