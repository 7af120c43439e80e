"""Train-step time of a preset: where the time of a step goes, by ablation.

    python -m bench.suite.step_time --data 'runs/pretrain/data/train-*' --preset tiny

Each variant (`--variants`) is one change to the step `pretrain/run.py` runs
(`default`: XLA, dropout 0.1, inverse-CDF sampling, float32): `graph` (no XLA),
`dropout0`, `gumbel_max`, `uniform_generator` (no generator run),
`mixed_bfloat16`, `graph_mixed_bfloat16`, and `auto` (what `--precision auto
--jit auto` resolve to here). The variants alternate round by round in one
process on real TFRecord batches; reported: wall-clock and process CPU seconds
per step, the first call's time, each variant's precision and XLA setting, and
the CPU's flags.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.result_file import write_result

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


# name: (ModelConfig changes, PretrainingConfig changes, XLA, precision)
VARIANTS = {
    "default": ({}, {}, True, "float32"),
    "graph": ({}, {}, False, "float32"),
    "dropout0": ({"dropout": 0.0}, {}, True, "float32"),
    "gumbel_max": ({}, {"sampler": "gumbel_max"}, True, "float32"),
    "uniform_generator": ({}, {"uniform_generator": True}, True, "float32"),
    "mixed_bfloat16": ({}, {}, True, "mixed_bfloat16"),
    "graph_mixed_bfloat16": ({}, {}, False, "mixed_bfloat16"),
    # XLA and precision resolved at run time (see the module docstring).
    "auto": ({}, {}, None, "auto"),
}


def _stepper(train_function, iterator):
    """One training step per call, returning once it has run."""

    def step():
        logs = train_function(iterator)
        float(logs["loss"])  # waits for the step's result

    return step


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="TFRecord pattern (train-*).")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10, help="Timed steps per round.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"Comma-separated subset of {', '.join(VARIANTS)}.",
    )
    parser.add_argument("--output", default="bench/results/step_time.json")
    args = parser.parse_args()
    names = args.variants.split(",")
    if set(names) - set(VARIANTS) or "default" not in names:
        parser.error(f"--variants: default plus any of {', '.join(VARIANTS)}")

    import tensorflow as tf

    from bench.run_info import run_info
    from electra_tf.data.input_pipeline import (
        describe_data,
        make_pretraining_dataset,
    )
    from electra_tf.distribution import set_precision
    from electra_tf.presets import get_preset
    from electra_tf.pretraining.run import build_pretrainer

    data_dir, vocabulary, length = describe_data(args.data)
    preset = get_preset(args.preset)
    dataset = make_pretraining_dataset(args.data, args.batch_size, length)
    batch = next(iter(dataset))
    repeated = tf.data.Dataset.from_tensors(batch).repeat()

    variants, first_call, settings = {}, {}, {}
    for name in names:
        model_changes, pretraining_changes, jit, precision = VARIANTS[name]
        if precision == "auto":
            from bench.suite.pretrain_throughput import resolved_precision

            resolved = resolved_precision("auto", preset=args.preset)
            jit, precision = resolved.jit_compile, resolved.precision
        settings[name] = {"precision": precision, "jit_compile": jit}
        set_precision(precision)
        model = build_pretrainer(
            preset.model.override(vocabulary_size=vocabulary.size, **model_changes),
            preset.pretraining.override(max_seq_length=length, **pretraining_changes),
            preset.optimizer,
            vocabulary,
            jit_compile=jit,
        )
        set_precision("float32")
        # The compiled step itself, called on one long-lived iterator: a
        # `fit` call per round was seen to stall for whole seconds on its own.
        model.make_train_function()
        step = _stepper(model.train_function, iter(repeated))
        start = time.perf_counter()
        step()  # tracing and, with XLA, compilation
        step()
        first_call[name] = time.perf_counter() - start
        variants[name] = step

    times = {name: [] for name in variants}
    cpu_times = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, step in variants.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            for _ in range(args.steps):
                step()
            times[name].append((time.perf_counter() - start) / args.steps)
            cpu_times[name].append((time.process_time() - cpu_start) / args.steps)

    rows = {name: statistics.median(values) for name, values in times.items()}
    # The best round too: a stall from outside the step (seen here: whole
    # rounds stretched to exactly 3.41 s/step on an otherwise idle VM) only
    # ever adds time.
    best = {name: min(values) for name, values in times.items()}
    cpu_rows = {name: statistics.median(values) for name, values in cpu_times.items()}
    base = rows["default"]
    print(
        f"{args.preset}, batch {args.batch_size}, length {length}, "
        f"vocab {vocabulary.size}"
    )
    print(
        f"{'variant':<24} {'s/step':>8} {'seq/s':>8} {'vs default':>10} "
        f"{'best s/step':>11} {'CPU s/step':>10} {'first call s':>12}"
    )
    for name, seconds in rows.items():
        print(
            f"{name:<24} {seconds:8.3f} {args.batch_size / seconds:8.1f} "
            f"{seconds / base:9.2f}x {best[name]:11.3f} {cpu_rows[name]:10.3f} "
            f"{first_call[name]:12.1f}"
        )
    write_result(
        args.output,
        {
            "preset": args.preset,
            "batch_size": args.batch_size,
            "max_seq_length": length,
            "vocabulary_size": vocabulary.size,
            "variant_settings": settings,
            "load_average_1min": os.getloadavg()[0],
            "seconds_per_step": rows,
            "best_seconds_per_step": best,
            "cpu_seconds_per_step": cpu_rows,
            "first_call_seconds": first_call,
            "rounds_seconds_per_step": times,
            **run_info(__file__),
        },
    )


if __name__ == "__main__":
    main()
