"""Can the tiny discriminator learn to use context? A synthetic probe.

Every sequence counts upwards through the vocabulary ([CLS] t, t+1, t+2, ...
[SEP]), and the replacements are uniformly random tokens (`uniform_generator`).
Token identity says nothing about being replaced here (every id is as common
as any other); only the neighbours do (is this token its predecessor + 1?).
A discriminator that attends to its neighbours detects every replacement.

Prints the training-batch RTD AUC every `--every` steps, for several weight
initialisations, to show when (and whether) the tiny model picks up that
circuit.

    python -m bench.studies.rtd_synthetic --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from bench.run_info import run_info

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--seeds", default="0,1,2", help="Weight-init seeds.")
    parser.add_argument("--vocabulary-size", type=int, default=200)
    parser.add_argument("--length", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--output", default="bench/results/rtd_synthetic.json")
    args = parser.parse_args()

    import keras
    import tensorflow as tf

    from electra_tf.optimization.optimizer import ElectraAdam
    from electra_tf.presets import get_preset
    from electra_tf.pretraining.pretrainer import ElectraPretrainer

    vocabulary_size, length = args.vocabulary_size, args.length
    pad, cls, sep, mask = 0, 2, 3, 4  # ids of a made-up vocabulary ([UNK] = 1)
    preset = get_preset(args.preset)

    def batches(seed):
        rng = np.random.default_rng(seed)
        while True:
            start = rng.integers(0, vocabulary_size - 5, size=(args.batch_size, 1))
            ids = 5 + (start + np.arange(length)[None]) % (vocabulary_size - 5)
            ids[:, 0], ids[:, -1] = cls, sep
            yield {
                "token_ids": ids.astype("int32"),
                "segment_ids": np.zeros_like(ids, "int32"),
                "padding_mask": np.ones_like(ids, "int32"),
            }

    spec = tf.TensorSpec((args.batch_size, length), tf.int32)
    results = {}
    for seed in [int(s) for s in args.seeds.split(",")]:
        keras.utils.set_random_seed(seed)
        model = ElectraPretrainer(
            preset.model.override(vocabulary_size=vocabulary_size),
            preset.pretraining.override(max_seq_length=length, uniform_generator=True),
            pad_token_id=pad,
            cls_token_id=cls,
            sep_token_id=sep,
            mask_token_id=mask,
        )
        model.compile(
            optimizer=ElectraAdam(learning_rate=args.learning_rate, global_clipnorm=1.0)
        )
        data = tf.data.Dataset.from_generator(
            lambda seed=seed: batches(seed),
            output_signature={
                k: spec for k in ("token_ids", "segment_ids", "padding_mask")
            },
        )
        curve = []
        for step in range(args.every, args.steps + 1, args.every):
            history = model.fit(
                data, steps_per_epoch=args.every, verbose=0, shuffle=False
            ).history
            curve.append({"step": step, "rtd_auc": float(history["rtd_auc"][-1])})
        results[seed] = curve
        print(f"seed {seed}: " + "  ".join(f"{p['rtd_auc']:.3f}" for p in curve))
    with open(args.output, "w") as f:
        json.dump({**run_info(__file__), "seeds": results}, f, indent=2)


if __name__ == "__main__":
    main()
