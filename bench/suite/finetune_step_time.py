"""Where a small model's fine-tuning step goes: per-step time by ablation, and
the compilations of an epoch.

    python -m bench.suite.finetune_step_time --preset cpu --max-seq-length 64 \\
        --task-dir ../shared/data/tasks

`finetune_throughput` compares whole steps with the transformers peer at one
padded length; this script takes a step of the library's own fine-tuning
path apart, at the size the study of issue 28 fine-tunes (the `cpu` preset,
batch 32, length 64, batches grouped by length and cut to their longest).
Per task (`tagging`: Brown POS; `classification`: rt_polarity, as SST-2),
with the model, optimizer and dataset fine-tuning builds
(`build_token_classifier` / `build_classifier`, `make_optimizer`,
`length_grouping.batches` sorted by length in runs):

* `pipeline`: CPU seconds per batch of the input pipeline alone (reading,
  shuffling, grouping, and the preprocessor's tokenisation, which keras-hub
  maps over the dataset inside `fit`);
* `epoch`: the batch shapes of one epoch under XLA (each one compilation)
  and in graph mode, and the positions a batch computes against its real
  tokens; `before_row_padding` is XLA's without `pad_rows`;
* the step on `--batches` real batches held in memory (all of the epoch's
  most common XLA shape, so that each variant compiles once), one change
  at a time: `xla` and `graph` (what fine-tuning runs), `*_einsum` (the
  attention projections as Keras' `EinsumDense`, before `FlatEinsumDense`),
  `xla_adam` (Keras' Adam: no layer-wise rates, weight decay or clipping),
  `xla_no_metrics`, `xla_steps_per_execution` (`--steps-per-execution` steps
  a call), and `xla_gradients` (forward and backward alone, no optimizer,
  loss tracker or metrics: the model's share);
* each XLA variant's first call (tracing and compiling one shape);
* `dev_evaluation` (tagging): CPU seconds to tag the dev split with
  `predict` in file order (a dataset, taken as it comes) and as in-memory
  sentences (run shortest first, `dynamic_padding.length_order`), as
  fine-tuning does after every epoch.

Every variant lives in this one process, on one thread pinned to one CPU
(`--core`), and the variants take turns round by round, so a shared
machine's drift hits all of them; CPU seconds per step are the steadier
figure there. MFU: the encoder's executed FLOPs (forward x 3) at the
batches' shape over the round's one-thread matmul peak per CPU-second.
`--precision` (float32, mixed_bfloat16, or auto: as fine-tuning resolves it
on this machine) is the Keras dtype policy every variant's model is built
under; the matmul peak is then of that precision (bfloat16 for
mixed_bfloat16).
Writes `--output` (JSON with the command, date, machine, CPU flags and load).
"""

from __future__ import annotations

import argparse
import collections
import os
import pathlib
import statistics
import time

from bench.result_file import write_result

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

REPO = pathlib.Path(__file__).resolve().parents[2]
TASKS = ("tagging", "classification")
VARIANTS = (
    "xla",
    "graph",
    "xla_einsum",
    "graph_einsum",
    "xla_adam",
    "xla_no_metrics",
    "xla_steps_per_execution",
    "xla_gradients",
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="cpu")
    parser.add_argument(
        "--tasks", default=",".join(TASKS), help=f"Comma-separated, of {TASKS}."
    )
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"Comma-separated subset of {', '.join(VARIANTS)}.",
    )
    parser.add_argument(
        "--task-dir",
        default=str(REPO / "electra_tf" / "assets" / "tasks"),
        help="Holds brown_pos/ (CoNLL) and rt_polarity/ (SST-2 layout).",
    )
    parser.add_argument(
        "--vocab",
        default=str(REPO / "electra_tf" / "assets" / "demo_vocab.txt"),
        help="WordPiece vocabulary (default: the demo's, as the cpu preset's).",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=64)
    parser.add_argument("--batches", type=int, default=8, help="Batches held.")
    parser.add_argument("--steps", type=int, default=8, help="Timed steps a round.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--warmup-calls",
        type=int,
        default=6,
        help="Untimed calls after the first (graph mode was seen to take "
        "seconds a step for its first few).",
    )
    parser.add_argument("--steps-per-execution", type=int, default=8)
    parser.add_argument(
        "--precision",
        default="float32",
        choices=("float32", "mixed_bfloat16", "auto"),
        help="Keras dtype policy of the models (auto: as fine-tuning resolves it).",
    )
    parser.add_argument(
        "--core", type=int, default=None, help="CPU to pin to (-1: none)."
    )
    parser.add_argument("--output", default="bench/results/finetune_step_time.json")
    return parser.parse_args(argv)


def _one_thread(core):
    if core is None:
        core = max(os.sched_getaffinity(0))
    if core >= 0:
        os.sched_setaffinity(0, {core})
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    return core


class Task:
    """One task's data, and its model and dataset as fine-tuning builds them."""

    def __init__(self, name, args, vocabulary):
        from electra_tf.presets import get_preset, recipe_for_width

        self.name = name
        self.model_config = get_preset(args.preset).model.override(
            vocabulary_size=vocabulary.size, dropout=0.1
        )
        _, recipe = recipe_for_width(self.model_config.hidden_dim)
        self.recipe = recipe.override(
            batch_size=args.batch_size, max_seq_length=args.max_seq_length
        )
        self.vocabulary = vocabulary
        directory = pathlib.Path(args.task_dir)
        if name == "tagging":
            from electra_tf.finetuning.tagging import load_tagging_data

            path = directory / "brown_pos"
            self.data = load_tagging_data(path / "train.conll", path / "dev.conll")
            self.examples = len(self.data.train)
        else:
            from electra_tf.finetuning.glue_readers import read_glue_tsv
            from electra_tf.finetuning.glue_tasks import get_task

            self.task = get_task("sst2")
            path = str(directory / "rt_polarity")
            self.data = read_glue_tsv(self.task, "train", path)
            self.examples = len(self.data)

    def model(self, jit_compile, optimizer="recipe", metrics=True, spe=1):
        import keras

        from electra_tf.finetuning.starting_point import StartingPoint
        from electra_tf.finetuning.trainer import make_optimizer

        config = self.recipe.override(jit_compile=jit_compile)
        start = StartingPoint(None, self.model_config, self.vocabulary)
        keras.utils.set_random_seed(1)
        if self.name == "tagging":
            from electra_tf.finetuning.tagging import build_token_classifier

            model = build_token_classifier(self.data.tags, config, start)
            loss = "auto"
            metric_list = "auto" if metrics else None
        else:
            from electra_tf.finetuning.classification import build_classifier
            from electra_tf.finetuning.glue_metrics import task_metrics

            model = build_classifier(self.task, config, start)
            loss = "auto"
            metric_list = task_metrics(self.task) if metrics else None
        if optimizer == "recipe":
            optimizer = make_optimizer(config, model.backbone.num_layers, 10_000)
        else:
            optimizer = keras.optimizers.Adam(config.learning_rate)
        if self.name == "tagging" and not metrics:
            loss = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="mean_with_sample_weight"
            )
        model.compile(
            optimizer=optimizer,
            loss=loss,
            metrics=metric_list,
            jit_compile=jit_compile,
            steps_per_execution=spe,
        )
        return model

    def dataset(self, batch_size, preprocessor):
        """The training dataset as the task kind builds it, sorted in runs
        by the lengths `preprocessor` packs."""
        from electra_tf.finetuning import length_grouping

        if self.name == "tagging":
            train = self.data.train
            elements = train.elements(self.data.tag_ids)
        else:
            train = self.data
            elements = train.elements
        return length_grouping.batches(
            elements,
            batch_size,
            shuffle=True,
            seed=1,
            lengths=preprocessor.sequence_lengths(elements[0]),
        )


def preprocessed(dataset, preprocess):
    """`dataset` mapped as keras-hub's `fit` maps it."""
    from keras_hub.src.utils.pipeline_model import _apply_preprocessing

    return _apply_preprocessing(dataset, preprocess)


def without_row_padding(model):
    """The tagger's preprocessing before `pad_rows` (trimming alone)."""
    import keras
    import keras_hub

    from electra_tf.models.dynamic_padding import trim_padding

    def preprocess(x, y=None, sample_weight=None):
        x, y, w = keras.utils.unpack_x_y_sample_weight(
            keras_hub.models.Task.preprocess_samples(model, x, y, sample_weight)
        )
        return keras.utils.pack_x_y_sample_weight(
            *trim_padding(x, y, w, few_lengths=model.jit_compile is True)
        )

    return preprocess


def epoch_shapes(dataset) -> dict:
    """Distinct batch shapes of one pass, positions and real tokens a batch."""
    shapes = collections.Counter()
    positions = real = 0
    for element in dataset:
        x = element[0]
        rows, length = x["token_ids"].shape
        shapes[(rows, length)] += 1
        positions += rows * length
        real += int(x["padding_mask"].numpy().sum())
    batches = sum(shapes.values())
    return {
        "batches": batches,
        "distinct_shapes": len(shapes),
        "positions_per_batch": positions / batches,
        "real_tokens_per_batch": real / batches,
        "shapes": {f"{r}x{n}": c for (r, n), c in shapes.most_common()},
    }


def pipeline_seconds(dataset, batches: int) -> dict:
    iterator = iter(dataset.repeat())
    next(iterator)
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(batches):
        next(iterator)
    return {
        "wall": (time.perf_counter() - start) / batches,
        "cpu": (time.process_time() - cpu) / batches,
    }


def held_batches(dataset, shape, count):
    """`count` of `dataset`'s batches of `shape`, held in memory, repeated: the
    step is then timed without the input pipeline, on a `tf.data` iterator as
    `fit`'s."""
    import tensorflow as tf

    def has_shape(x, *labels):
        return tf.reduce_all(tf.equal(tf.shape(x["token_ids"]), shape))

    return dataset.filter(has_shape).take(count).cache().repeat()


def as_einsum(model):
    """The attention projections back to Keras' `EinsumDense` (before)."""
    import keras

    from electra_tf.models.flat_einsum_dense import FlatEinsumDense

    for layer in model._flatten_layers():
        if type(layer) is FlatEinsumDense:
            layer.__class__ = keras.layers.EinsumDense


def _timed(step, iterator) -> dict:
    """Wall and CPU seconds of one call of `step` on `iterator`."""
    start, cpu = time.perf_counter(), time.process_time()
    float(step(iterator)["loss"])
    return {"wall": time.perf_counter() - start, "cpu": time.process_time() - cpu}


def make_step(task, variant, spe):
    """`(step, steps per call)`: a callable running one call on held batches."""
    import tensorflow as tf

    jit = variant.startswith("xla")
    if variant == "xla_gradients":
        model = task.model(True, metrics=False)
        weights = model.trainable_variables

        @tf.function(jit_compile=True, reduce_retracing=True)
        def gradients(x, y, w):
            with tf.GradientTape() as tape:
                loss = model.compute_loss(x, y, model(x, training=True), w)
            return tf.linalg.global_norm(
                [tf.convert_to_tensor(g) for g in tape.gradient(loss, weights)]
            )

        def run(iterator):
            x, y, *w = next(iterator)
            return {"loss": gradients(x, y, w[0] if w else None)}

        return model, run, 1
    model = task.model(
        jit,
        optimizer="adam" if variant == "xla_adam" else "recipe",
        metrics=variant != "xla_no_metrics",
        spe=spe if variant == "xla_steps_per_execution" else 1,
    )
    if variant.endswith("_einsum"):
        as_einsum(model)
    model.make_train_function()
    return model, model.train_function, model.steps_per_execution


def measure_task(task, args, variants):
    from bench.suite.pretrain_throughput import tensorflow_peak
    from electra_tf.pretraining.flops import executed_encoder_training_flops

    xla_model = task.model(True)
    graph_model = task.model(False)
    # One dataset for both modes: since batches are sorted in runs (no
    # remainders pooled under XLA), it no longer depends on the mode.
    dataset = task.dataset(args.batch_size, xla_model.preprocessor)
    result = {"examples": task.examples, "epoch": {}}
    xla_data = preprocessed(dataset, xla_model.preprocess_samples)
    result["pipeline_seconds_per_batch"] = pipeline_seconds(xla_data, 100)
    result["epoch"]["xla"] = epoch_shapes(xla_data)
    result["epoch"]["graph"] = epoch_shapes(
        preprocessed(dataset, graph_model.preprocess_samples)
    )
    if task.name == "tagging":
        result["epoch"]["xla_before_row_padding"] = epoch_shapes(
            preprocessed(dataset, without_row_padding(xla_model))
        )
    common = next(iter(result["epoch"]["xla"]["shapes"]))
    shape = tuple(int(n) for n in common.split("x"))
    batches = held_batches(xla_data, shape, args.batches)
    other = tuple(int(n) for n in list(result["epoch"]["xla"]["shapes"])[1].split("x"))
    result["held_shape"], result["new_shape"] = list(shape), list(other)
    print(f"{task.name}: {result['epoch']}", flush=True)
    steps, first_call, new_shape = {}, {}, {}
    for variant in variants:
        model, step, per_call = make_step(task, variant, args.steps_per_execution)
        iterator = iter(batches)
        first_call[variant] = _timed(step, iterator)
        # At least one pass over the held batches: the first reads them
        # through the input pipeline (into `cache()`).
        for _ in range(max(args.warmup_calls, -(-args.batches // per_call))):
            float(step(iterator)["loss"])
        if variant in ("xla", "graph"):
            # A batch of the epoch's second shape: what `fit` pays for a
            # shape it has not seen (XLA: a compilation; graph: nothing).
            other_batch = iter(held_batches(xla_data, other, 1))
            new_shape[variant] = _timed(step, other_batch)
        steps[variant] = (step, iterator, per_call, model)
        print(f"{task.name} {variant}: first call {first_call[variant]}", flush=True)
    timings = {v: {"wall": [], "cpu": []} for v in variants}
    peaks = []
    for round_index in range(args.rounds):
        peaks.append(tensorflow_peak(args.precision))
        for variant, (step, iterator, per_call, _) in steps.items():
            calls = max(args.steps // per_call, 1)
            start, cpu = time.perf_counter(), time.process_time()
            for _ in range(calls):
                float(step(iterator)["loss"])
            done = calls * per_call
            timings[variant]["wall"].append((time.perf_counter() - start) / done)
            timings[variant]["cpu"].append((time.process_time() - cpu) / done)
        print(
            f"{task.name} round {round_index}: "
            + ", ".join(f"{v} {timings[v]['cpu'][-1]:.3f}" for v in variants),
            flush=True,
        )
    if task.name == "tagging":
        result["dev_evaluation"] = dev_evaluation(task, graph_model, args.rounds)
        print(f"tagging dev evaluation: {result['dev_evaluation']}", flush=True)
    flops = shape[0] * executed_encoder_training_flops(task.model_config, shape[1])
    peak = statistics.median(p["gflops_per_cpu_second"] for p in peaks)
    rows = {}
    for variant, timing in timings.items():
        cpu = statistics.median(timing["cpu"])
        rows[variant] = {
            "cpu_seconds_per_step": cpu,
            "seconds_per_step": statistics.median(timing["wall"]),
            "mfu_per_cpu_second": flops / cpu / 1e9 / peak,
            "first_call": first_call[variant],
            "new_shape_call": new_shape.get(variant),
            "rounds_cpu_seconds_per_step": timing["cpu"],
        }
    result.update(
        {
            "gflop_per_step_executed": flops / 1e9,
            "matmul_peak_per_round": peaks,
            "variants": rows,
        }
    )
    return result


def dev_evaluation(task, model, rounds) -> dict:
    """CPU seconds to tag the dev split in file order and in length order,
    the two taking turns round by round; medians over `rounds`."""
    from electra_tf.models.in_memory import in_memory_dataset

    sentences = [list(words) for words in task.data.dev.words]
    batch_size = task.recipe.eval_batch_size
    ways = {
        "file_order": lambda: model.predict(
            in_memory_dataset(sentences, batch_size=batch_size)
        ),
        "length_order": lambda: model.predict(sentences, batch_size=batch_size),
    }
    for predict in ways.values():
        predict()  # tracing
    seconds = {name: [] for name in ways}
    for _ in range(rounds):
        for name, predict in ways.items():
            cpu = time.process_time()
            predict()
            seconds[name].append(time.process_time() - cpu)
    result = {"sentences": len(sentences), "batch_size": batch_size}
    for name, rounds_seconds in seconds.items():
        result[name] = {
            "cpu_seconds": statistics.median(rounds_seconds),
            "rounds_cpu_seconds": rounds_seconds,
        }
    return result


def main(argv=None):
    args = parse_args(argv)
    core = _one_thread(args.core)
    tasks = [t for t in args.tasks.split(",") if t]
    variants = [v for v in args.variants.split(",") if v]
    unknown = set(tasks) - set(TASKS) | set(variants) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"error: unknown {sorted(unknown)}")

    from bench.run_info import run_info
    from bench.suite.pretrain_throughput import resolved_precision
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.distribution import set_precision

    # The variants set XLA themselves; the policy holds for every model.
    args.precision = resolved_precision(args.precision, on_cpu=False).precision
    set_precision(args.precision)
    vocabulary = Vocabulary.from_file(args.vocab)
    report = {
        "precision": args.precision,
        **run_info(__file__),
        "preset": args.preset,
        "batch_size": args.batch_size,
        "max_seq_length": args.max_seq_length,
        "vocabulary_size": vocabulary.size,
        "core": core,
        "threads": 1,
        "load_average_1min": {"before": os.getloadavg()[0]},
        "tasks": {},
    }
    for name in tasks:
        task = Task(name, args, vocabulary)
        report["tasks"][name] = measure_task(task, args, variants)
    report["load_average_1min"]["after"] = os.getloadavg()[0]
    print(f"\n{args.preset}, batch {args.batch_size}, length {args.max_seq_length}")
    for name, result in report["tasks"].items():
        print(
            f"{name}: pipeline {result['pipeline_seconds_per_batch']['cpu']:.4f} "
            f"CPU-s/batch; step on {result['held_shape']}"
        )
        for variant, row in result["variants"].items():
            print(
                f"  {variant:<24} {row['cpu_seconds_per_step']:7.4f} CPU-s "
                f"{row['seconds_per_step']:7.4f} s  "
                f"MFU {row['mfu_per_cpu_second']:6.1%}  "
                f"first call {row['first_call']['cpu']:6.1f} CPU-s"
                + (
                    f"  new shape {row['new_shape_call']['cpu']:5.1f} CPU-s"
                    if row["new_shape_call"]
                    else ""
                )
            )
    write_result(args.output, report)


if __name__ == "__main__":
    main()
