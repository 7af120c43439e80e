"""Train-step time of a preset with and without XLA, with and without dropout.

Alternates the variants round by round in one process (a shared machine drifts;
ratios between variants in the same run hold). Reads real batches from TFRecords
built by `pretrain/build_data.py`. Reports wall-clock and process CPU seconds
per step (CPU time is the steadier figure when other jobs share the cores) and
the time of the first call (tracing and, with XLA, compilation).

    python bench/step_time.py --data 'runs/pretrain/data/train-*' --preset tiny
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", required=True, help="TFRecord pattern (train-*).")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10, help="Timed steps per round.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default="bench/step_time.json")
    args = parser.parse_args()

    import tensorflow as tf
    from run_info import run_info

    from electra_tf.data.pretraining_dataset import (
        describe_data,
        make_pretraining_dataset,
    )
    from electra_tf.presets import get_preset
    from electra_tf.pretraining import build_pretrainer

    data_dir, vocabulary, length = describe_data(args.data)
    preset = get_preset(args.preset)
    dataset = make_pretraining_dataset(args.data, args.batch_size, length)
    batch = next(iter(dataset))
    repeated = tf.data.Dataset.from_tensors(batch).repeat()

    variants, first_call = {}, {}
    for jit in (False, True):
        for dropout in (0.1, 0.0):
            model = build_pretrainer(
                preset.model.override(vocabulary_size=vocabulary.size, dropout=dropout),
                preset.pretraining.override(max_seq_length=length),
                preset.optimizer,
                vocabulary,
                jit_compile=jit,
            )
            name = f"xla={jit} dropout={dropout}"
            start = time.perf_counter()
            model.fit(repeated, steps_per_epoch=2, verbose=0)  # compile
            first_call[name] = time.perf_counter() - start
            variants[name] = model

    times = {name: [] for name in variants}
    cpu_times = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, model in variants.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            model.fit(repeated, steps_per_epoch=args.steps, verbose=0)
            times[name].append((time.perf_counter() - start) / args.steps)
            cpu_times[name].append((time.process_time() - cpu_start) / args.steps)

    rows = {name: statistics.median(values) for name, values in times.items()}
    cpu_rows = {name: statistics.median(values) for name, values in cpu_times.items()}
    base = rows["xla=False dropout=0.1"]
    print(
        f"{args.preset}, batch {args.batch_size}, length {length}, "
        f"vocab {vocabulary.size}"
    )
    print(
        f"{'variant':<24} {'s/step':>8} {'seq/s':>8} {'vs no XLA':>10} "
        f"{'CPU s/step':>10} {'first call s':>12}"
    )
    for name, seconds in rows.items():
        print(
            f"{name:<24} {seconds:8.3f} {args.batch_size / seconds:8.1f} "
            f"{base / seconds:9.2f}x {cpu_rows[name]:10.3f} {first_call[name]:12.1f}"
        )
    with open(args.output, "w") as f:
        json.dump(
            {
                "preset": args.preset,
                "batch_size": args.batch_size,
                "max_seq_length": length,
                "vocabulary_size": vocabulary.size,
                "seconds_per_step": rows,
                "cpu_seconds_per_step": cpu_rows,
                "first_call_seconds": first_call,
                "rounds_seconds_per_step": times,
                **run_info(__file__),
            },
            f,
            indent=2,
        )


if __name__ == "__main__":
    main()
