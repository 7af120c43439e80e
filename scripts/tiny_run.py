"""The tiny pre-training run that the bad-input probe
(`scripts/bad_input_cases.py`) and `tests/pretraining/test_pretrain_run.py`
start: the demo preset cut to one layer per tower, 8 sequences of 64 tokens a
step, a checkpoint every 5 steps, no XLA. It takes seconds to compile and
train on a CPU.

The flags give no data: each caller adds its own `--corpus` or `--data`. A
flag that comes again later on the command line wins (argparse keeps the last).
"""

from __future__ import annotations

import json

# One block per tower traces in less time, and 2 held-out batches per
# checkpoint (not 20) still give every evaluation, curve and
# eval_results.json. Resume, init and refusal act on whatever variables the
# model has.
TINY_HPARAMS = {"num_layers": 1, "eval_steps": 2}


def tiny_hparams(**changes) -> list[str]:
    """`--hparams` of `TINY_HPARAMS` with `changes` added or replaced."""
    return ["--hparams", json.dumps({**TINY_HPARAMS, **changes})]


def tiny_run_flags(steps: int, batch_size: int = 8) -> list[str]:
    """`electra-pretrain` flags of the tiny run, without `--hparams`
    (`tiny_hparams`)."""
    return [
        "--steps",
        str(steps),
        "--checkpoint-every",
        "5",
        "--batch-size",
        str(batch_size),
        "--max-seq-length",
        "64",
        # Graph mode: XLA (the default on CPUs) would compile for a minute in
        # every process, and nothing here depends on it.
        "--jit",
        "off",
    ]
