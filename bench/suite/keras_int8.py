"""Does Keras' own int8 quantization (`model.quantize("int8")`) serve a
fine-tuned classifier faster than float32 on this CPU?

Both copies of `--classifier` (a `.keras` file) run in graph mode (one
`tf.function` each over the packed inputs, as the SavedModel serves), on
one thread pinned to `--core`, alternating call by call; batch 1 and batch
`--batch-size` of real sentences (`--tsv`), p50 and p95 in ms, and how
often the two copies agree on the label over the whole file.

    python -m bench.suite.keras_int8 --classifier runs/ft/classifier.keras
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
REPO = pathlib.Path(__file__).resolve().parents[2]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--classifier", required=True)
    parser.add_argument(
        "--tsv",
        default=str(REPO / "electra_tf/assets/tasks/rt_polarity/dev.tsv"),
        help="Sentences: a TSV with a `sentence` column.",
    )
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--core", type=int, default=1)
    parser.add_argument("--output", default="bench/results/keras_int8.json")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    os.sched_setaffinity(0, {args.core})
    import keras
    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    import electra_tf  # noqa: F401  (registers the model classes for loading)
    from bench.result_file import write_result
    from bench.run_info import run_info

    with open(args.tsv, encoding="utf-8", newline="") as f:
        sentences = [row["sentence"] for row in csv.DictReader(f, delimiter="\t")]
    classifiers = {
        name: keras.models.load_model(args.classifier, compile=False)
        for name in ("float32", "int8")
    }
    preprocessor = classifiers["float32"].preprocessor
    # The functional graphs alone: `quantize` refuses the preprocessor's
    # tokenizer (an unbuilt layer).
    models = {
        name: keras.Model(model.input, model.output)
        for name, model in classifiers.items()
    }
    models["int8"].quantize("int8")
    # One trace each: any batch and length, as the SavedModel's signature.
    spec = {
        key: tf.TensorSpec([None, None], tf.int32)
        for key in ("token_ids", "segment_ids", "padding_mask")
    }
    functions = {
        name: tf.function(
            lambda x, model=model: model(x, training=False), input_signature=[spec]
        )
        for name, model in models.items()
    }

    def packed(batch):
        x = preprocessor(x=tf.constant(batch))
        mask = tf.cast(x["padding_mask"], tf.int32)
        length = int(tf.reduce_max(tf.reduce_sum(mask, -1)))
        return {key: tf.cast(value[:, :length], tf.int32) for key, value in x.items()}

    agree = total = 0
    for start in range(0, len(sentences), args.batch_size):
        x = packed(sentences[start : start + args.batch_size])
        labels = {n: np.argmax(f(x).numpy(), -1) for n, f in functions.items()}
        agree += int((labels["float32"] == labels["int8"]).sum())
        total += len(labels["int8"])
    rows = {}
    for size in (1, args.batch_size):
        seconds = {name: [] for name in functions}
        for index in range(args.requests if size == 1 else args.requests // 5):
            start = (index * size) % max(1, len(sentences) - size)
            x = packed(sentences[start : start + size])
            for name, function in functions.items():
                begin = time.perf_counter()
                function(x).numpy()
                seconds[name].append(time.perf_counter() - begin)
        for name, values in seconds.items():
            values = sorted(values[3:])  # the first calls trace
            rows.setdefault(name, {})[f"batch{size}_p50_ms"] = 1e3 * statistics.median(
                values
            )
            rows[name][f"batch{size}_p95_ms"] = 1e3 * values[int(0.95 * len(values))]
    print(f"{args.classifier}: one thread on core {args.core}")
    for name, row in rows.items():
        print(name, {key: round(value, 2) for key, value in row.items()})
    print(f"same label: {agree}/{total}")
    write_result(
        args.output,
        {
            **run_info(__file__),
            "classifier": args.classifier,
            "tsv": args.tsv,
            "core": args.core,
            "results": rows,
            "same_label_fraction": agree / total,
        },
    )


if __name__ == "__main__":
    main()
