"""Is a flat discriminator a bug or the early RTD plateau? Held-out AUC over steps.

Trains a preset on TFRecords with the real generator and, for comparison, with
`uniform_generator` (uniformly random replacements, which any working
discriminator detects quickly). If the uniform variant's AUC rises and the
generator variant's stays near 0.5, the RTD path works and the discriminator is
in the plateau where generator samples are still hard to tell from the original.

    python bench/rtd_plateau.py --data 'runs/pretrain/data/train-*' --steps 600
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="TFRecord pattern (train-*).")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--evaluations", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--output", default="bench/rtd_plateau.json")
    args = parser.parse_args()

    from electra_tf.data.pretraining_dataset import (
        describe_data,
        make_pretraining_dataset,
    )
    from electra_tf.presets import get_preset
    from electra_tf.pretraining import build_pretrainer

    data_dir, vocabulary, length = describe_data(args.data)
    preset = get_preset(args.preset)
    train = make_pretraining_dataset(args.data, args.batch_size, length)
    held_out = make_pretraining_dataset(
        os.path.join(data_dir, "eval-*"), args.batch_size, length, training=False
    )
    results = {}
    for uniform in (True, False):
        name = "uniform_generator" if uniform else "generator"
        model = build_pretrainer(
            preset.model.override(vocabulary_size=vocabulary.size),
            preset.pretraining.override(
                max_seq_length=length, uniform_generator=uniform
            ),
            preset.optimizer.override(
                total_steps=args.steps, warmup_steps=max(1, args.steps // 10)
            ),
            vocabulary,
            jit_compile=False,
        )
        curve = []
        for _ in range(args.evaluations):
            model.fit(
                train,
                steps_per_epoch=args.steps // args.evaluations,
                verbose=0,
                shuffle=False,
            )
            metrics = model.evaluate(held_out, steps=10, verbose=0, return_dict=True)
            point = {
                "step": int(model.optimizer.iterations.numpy()),
                "rtd_auc": float(metrics["rtd_auc"]),
                "rtd_loss": float(metrics["rtd_loss"]),
                "mlm_accuracy": float(metrics["mlm_accuracy"]),
            }
            curve.append(point)
            print(name, point, flush=True)
        results[name] = curve
    with open(args.output, "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
