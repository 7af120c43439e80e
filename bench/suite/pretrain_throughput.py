"""Pre-training throughput, MFU and peak memory: ours next to transformers.

    python -m bench.suite.pretrain_throughput --data 'data/shared128/train-*' \\
        --preset small

Each implementation runs in its own resident worker process; the workers take
turns, round by round (a shared machine drifts; ratios within a run hold).

* `ours`: `ElectraPretrainer` as `pretrain/run.py` builds it (`--jit auto`),
  trained with `fit` on the real input pipeline; `ours_xla` / `ours_graph`
  force XLA on or off; `ours_gumbel_max` uses the original's Gumbel-max
  sampler instead of the default inverse CDF.
* `transformers`: the same configuration in Hugging Face transformers on
  PyTorch as a typical user writes it (`bench/hf_peer.py`), on the same
  batches, one thread per core; `transformers_1_thread` on one thread.

`--precision` (float32, mixed_bfloat16 or auto, as `electra_tf.precision`
resolves it) sets both sides (the peer's step under `torch.autocast("cpu",
dtype=torch.bfloat16)` for bf16); `--peer-precision` gives the peer another.

Per round every worker measures a matmul peak at its precision (best single
call, and GFLOP per CPU-second), then runs `--steps` steps, timed in wall-clock
and process CPU seconds. Model FLOPs (`electra_tf/pretraining/flops.py`) are
the same for every implementation, in the paper's accounting and as executed;
MFU (median over rounds) is `MFU paper` / `MFU exec` per wall-clock second
over the round's best matmul GFLOP/s, and `MFU CPU` per CPU-second over the
matmul's FLOPs per CPU-second (the one that other jobs on the cores do not
distort). Peak memory is each implementation's whole-process peak RSS (VmHWM)
in a fresh worker at `--memory-batch-size`.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

from bench.result_file import write_result
from bench.worker_process import WorkerDied, WorkerProcess

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

IMPLEMENTATIONS = (
    "ours",
    "ours_xla",
    "ours_graph",
    "ours_gumbel_max",
    "transformers",
    "transformers_1_thread",
)
MATMUL_SIZES = (1024, 2048)
# What `--precision` takes here (float16 does not train on a CPU).
BENCH_PRECISIONS = ("float32", "mixed_bfloat16", "auto")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="TFRecord pattern (train-*).")
    parser.add_argument("--preset", default="small", help="small, base, ...")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--max-seq-length",
        type=int,
        default=None,
        help="Must equal the TFRecords' length (default: read from the data).",
    )
    parser.add_argument(
        "--steps", type=int, default=3, help="Timed steps per implementation per round."
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--warmup-rounds",
        type=int,
        default=2,
        help="Untimed rounds first (tracing, XLA compilation, warm caches).",
    )
    parser.add_argument(
        "--memory-batch-size",
        type=int,
        default=128,
        help="Batch size of the peak-memory runs; 0 skips them.",
    )
    parser.add_argument(
        "--implementations",
        default="ours,transformers",
        help=f"Comma-separated subset of {', '.join(IMPLEMENTATIONS)}.",
    )
    parser.add_argument(
        "--memory-implementations",
        default="ours,transformers",
        help="Comma-separated implementations of the peak-memory runs.",
    )
    parser.add_argument(
        "--precision",
        default="float32",
        choices=BENCH_PRECISIONS,
        help="Both sides' precision (auto: as pre-training resolves it here).",
    )
    parser.add_argument(
        "--peer-precision",
        choices=BENCH_PRECISIONS,
        help="The peer's precision (default: --precision).",
    )
    parser.add_argument("--output", default="bench/results/pretrain_throughput.json")
    # Internal: the worker of one implementation.
    parser.add_argument("--worker", choices=IMPLEMENTATIONS, help=argparse.SUPPRESS)
    parser.add_argument("--worker-batch-size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--batches-file", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


# --- Worker side ---------------------------------------------------------------


def _reply(**message) -> None:
    print(json.dumps(message), flush=True)


def _commands():
    for line in sys.stdin:
        yield json.loads(line)["command"]


def _peak_rss_gib() -> float:
    """This process's peak resident set (VmHWM), in GiB.

    Not `getrusage`'s ru_maxrss: Linux carries that over `exec` from the
    parent, so a worker would report at least the parent's peak.
    """
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**20
    raise RuntimeError("no VmHWM in /proc/self/status (Linux only)")


def _matmul_rates(function, size: int, repeats: int = 10) -> tuple[float, float]:
    """(best GFLOP/s of one call, GFLOP per CPU-second over all calls)."""
    function()
    best = float("inf")
    cpu_start = time.process_time()
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    cpu = time.process_time() - cpu_start
    flops = 2.0 * size**3
    return flops / best / 1e9, repeats * flops / cpu / 1e9


def tensorflow_peak(precision: str = "float32") -> dict:
    """TensorFlow's best matmul rates here, in graph mode, in float32 or (for
    a mixed_bfloat16 run) bfloat16: `gflops` (per second) and
    `gflops_per_cpu_second`, over `MATMUL_SIZES`."""
    import tensorflow as tf

    dtype = tf.bfloat16 if precision == "mixed_bfloat16" else tf.float32
    matmul = tf.function(lambda x: tf.matmul(x, x))
    rates = []
    for size in MATMUL_SIZES:
        a = tf.cast(tf.random.stateless_normal((size, size), seed=(0, size)), dtype)
        rates.append(_matmul_rates(lambda a=a: matmul(a).numpy(), size))
    return _best_rates(rates)


def torch_peak(precision: str = "float32") -> dict:
    """PyTorch's best matmul rates here, as `tensorflow_peak`."""
    import torch

    dtype = torch.bfloat16 if precision == "mixed_bfloat16" else torch.float32
    rates = []
    for size in MATMUL_SIZES:
        a = torch.randn(size, size).to(dtype)
        rates.append(_matmul_rates(lambda a=a: torch.matmul(a, a), size))
    return _best_rates(rates)


def resolved_precision(
    precision: str, jit: str = "auto", on_cpu: bool = True, preset: str | None = None
):
    """`electra_tf.precision.Resolved` for a benchmark's `--precision` and an
    implementation's `--jit`, as the commands resolve them on this machine
    for `preset`'s width (`on_cpu`: pre-training's XLA on a CPU, False for
    fine-tuning's)."""
    from electra_tf.distribution import resolve_jit_compile
    from electra_tf.precision import detect_hardware, resolve_precision
    from electra_tf.presets import get_preset

    return resolve_precision(
        precision,
        jit,
        detect_hardware(),
        jit_when_float32=resolve_jit_compile("auto", on_cpu=on_cpu),
        width=get_preset(preset).model.hidden_dim if preset else None,
    )


def peaks_by_precision(workers: dict) -> dict:
    """Asks every worker (with a `precision`) for its matmul peak; returns per
    worker name the best peak among the workers at its precision."""
    measured = {name: worker.ask("peak") for name, worker in workers.items()}
    return {
        name: {
            key: max(
                m[key]
                for other, m in measured.items()
                if workers[other].precision == worker.precision
            )
            for key in measured[name]
        }
        for name, worker in workers.items()
    }


def precision_of(name: str, args) -> str:
    """Implementation `name`'s precision, resolved on this machine: the
    peer's `--peer-precision` (default `--precision`), ours `--precision`."""
    peer = name.startswith("transformers")
    requested = (peer and args.peer_precision) or args.precision
    return resolved_precision(requested, preset=args.preset).precision


def torch_autocast(precision: str):
    """The peer's step context: bfloat16 autocast for mixed_bfloat16."""
    import contextlib

    import torch

    if precision == "mixed_bfloat16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _best_rates(rates) -> dict:
    return {
        "gflops": max(r[0] for r in rates),
        "gflops_per_cpu_second": max(r[1] for r in rates),
    }


def _configs(preset_name: str, vocabulary, length: int):
    from electra_tf.presets import get_preset

    preset = get_preset(preset_name)
    model = preset.model.override(vocabulary_size=vocabulary.size)
    pretraining = preset.pretraining.override(max_seq_length=length)
    return preset, model, pretraining


def _wait_for_steps(peak) -> bool:
    """Answers the parent's commands; True at `steps`, False at `stop` or EOF."""
    for command in _commands():
        if command == "steps":
            return True
        if command == "peak":
            _reply(**peak())
        elif command == "rss":
            _reply(peak_rss_gib=_peak_rss_gib())
        elif command == "stop":
            return False
    return False


def our_worker(args) -> None:
    """`fit` on the real input pipeline; pauses between epochs for the parent."""
    import keras

    from electra_tf.data.input_pipeline import (
        describe_data,
        make_pretraining_dataset,
    )
    from electra_tf.distribution import set_precision
    from electra_tf.pretraining.run import build_pretrainer

    _, vocabulary, length = describe_data(args.data)
    preset, model, pretraining = _configs(args.preset, vocabulary, length)
    jit = {"ours_xla": "on", "ours_graph": "off"}.get(args.worker, "auto")
    if args.worker == "ours_gumbel_max":
        pretraining = pretraining.override(sampler="gumbel_max")
    resolved = resolved_precision(args.precision, jit, preset=args.preset)
    set_precision(resolved.precision)
    keras.utils.set_random_seed(0)
    pretrainer = build_pretrainer(
        model,
        pretraining,
        preset.optimizer,
        vocabulary,
        jit_compile=resolved.jit_compile,
    )
    peak = functools.partial(tensorflow_peak, resolved.precision)
    dataset = make_pretraining_dataset(
        args.data, args.worker_batch_size, length, training=True, seed=0
    )

    class Pause(keras.callbacks.Callback):
        """Times each epoch of `--steps` steps, then waits for the next command."""

        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter(), time.process_time()

        def on_epoch_end(self, epoch, logs=None):
            wall = time.perf_counter() - self.start[0]
            cpu = time.process_time() - self.start[1]
            _reply(wall=wall, cpu=cpu)
            if not _wait_for_steps(peak):
                self.model.stop_training = True

    if not _wait_for_steps(peak):
        return
    pretrainer.fit(
        dataset,
        epochs=10**9,
        steps_per_epoch=args.steps,
        callbacks=[Pause()],
        verbose=0,
    )


def peer_worker(args) -> None:
    """The transformers step over the batches the parent read."""
    import numpy as np
    import torch

    from bench.hf_peer import HfElectraPretraining
    from electra_tf.data.vocabulary import Vocabulary

    one_thread = args.worker == "transformers_1_thread"
    torch.set_num_threads(1 if one_thread else os.cpu_count())
    with np.load(args.batches_file) as stored:
        arrays = {name: stored[name] for name in stored.files}
    vocabulary = Vocabulary.from_file(str(arrays.pop("vocabulary_path")))
    length = arrays["token_ids"].shape[-1]
    preset, model, pretraining = _configs(args.preset, vocabulary, length)
    peer = HfElectraPretraining(
        model, pretraining, vocabulary, learning_rate=preset.optimizer.learning_rate
    )
    size = args.worker_batch_size
    count = len(arrays["token_ids"]) // size
    batches = [
        {name: array[i * size : (i + 1) * size] for name, array in arrays.items()}
        for i in range(count)
    ]
    position = 0

    def run_steps():
        nonlocal position
        start = time.perf_counter(), time.process_time()
        for _ in range(args.steps):
            with torch_autocast(args.precision):
                peer.train_step(batches[position % count])
            position += 1
        return time.perf_counter() - start[0], time.process_time() - start[1]

    while _wait_for_steps(functools.partial(torch_peak, args.precision)):
        wall, cpu = run_steps()
        _reply(wall=wall, cpu=cpu)


# --- Parent side -----------------------------------------------------------------


class Worker:
    """One implementation in its own process, driven over a pipe."""

    def __init__(self, name, args, batch_size, steps, batches_file):
        self.name = name
        self.precision = precision_of(name, args)
        self.process = WorkerProcess(
            name,
            "bench.suite.pretrain_throughput",
            [
                "--worker",
                name,
                "--data",
                args.data,
                "--preset",
                args.preset,
                "--steps",
                steps,
                "--worker-batch-size",
                batch_size,
                "--batches-file",
                batches_file,
                "--precision",
                self.precision,
            ],
        )

    def ask(self, command: str) -> dict:
        """The worker's answer to `command`; `WorkerDied` if it died."""
        return self.process.ask(command)

    def stop(self) -> None:
        self.process.stop(json.dumps({"command": "stop"}))


def _write_batches(args, path, batch_size, count, vocabulary) -> None:
    """The first `count` training batches of our pipeline (same seed), as numpy."""
    import numpy as np

    from electra_tf.data.input_pipeline import make_pretraining_dataset

    _, _, length = _describe(args)
    dataset = make_pretraining_dataset(
        args.data, batch_size, length, training=True, seed=0
    ).take(count)
    batches = [{k: v.numpy() for k, v in batch.items()} for batch in dataset]
    arrays = {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
    np.savez(path, vocabulary_path=np.array(vocabulary.path), **arrays)


def _describe(args):
    from electra_tf.data.input_pipeline import describe_data

    return describe_data(args.data)


def measure_throughput(args, names, batches_file) -> tuple[dict, list]:
    workers = {
        name: Worker(name, args, args.batch_size, args.steps, batches_file)
        for name in names
    }
    seconds = {name: [] for name in names}
    cpu = {name: [] for name in names}
    peaks = []
    try:
        for round_index in range(args.warmup_rounds + args.rounds):
            peak = peaks_by_precision(workers)
            for name, worker in workers.items():
                timing = worker.ask("steps")
                if round_index >= args.warmup_rounds:
                    seconds[name].append(timing["wall"] / args.steps)
                    cpu[name].append(timing["cpu"] / args.steps)
            if round_index >= args.warmup_rounds:
                peaks.append(peak)
                print(
                    f"round {round_index - args.warmup_rounds}: peak "
                    + ", ".join(f"{n} {peak[n]['gflops']:.1f}" for n in names)
                    + " GFLOP/s; s/step "
                    + ", ".join(f"{n} {seconds[n][-1]:.2f}" for n in names),
                    flush=True,
                )
        rss = {name: w.ask("rss")["peak_rss_gib"] for name, w in workers.items()}
    finally:
        for worker in workers.values():
            worker.stop()
    return {"seconds": seconds, "cpu": cpu, "rss": rss}, peaks


def _mfu(seconds_per_step, peaks, key, flops_per_step) -> float:
    """Median over rounds of (model FLOPs / second) / (that round's peak of
    the implementation's precision: `peaks` are its own rows)."""
    return statistics.median(
        flops_per_step / seconds / 1e9 / peak[key]
        for seconds, peak in zip(seconds_per_step, peaks)
    )


def measure_memory(args, name, batches_file) -> float | None:
    """Peak RSS of a fresh worker after 2 steps at `--memory-batch-size`.

    The optimizer's slots exist from the first step on, so the second one
    already runs at the steady-state footprint.
    """
    worker = Worker(name, args, args.memory_batch_size, 1, batches_file)
    try:
        for _ in range(2):
            worker.ask("steps")
        return worker.ask("rss")["peak_rss_gib"]
    except WorkerDied as error:
        print(f"peak-memory run of {name}: {error}")
        return None
    finally:
        worker.stop()


def _volunteer_for_the_oom_killer() -> None:
    """Makes this worker the first process Linux kills when memory runs out.

    The machine is shared: a peak-memory run that does not fit must die
    alone (and be reported as such) rather than take another job with it.
    """
    try:
        with open("/proc/self/oom_score_adj", "w") as adjustment:
            adjustment.write("1000")
    except OSError:
        pass


def _memory_available_gib() -> float:
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    return float("nan")


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        _volunteer_for_the_oom_killer()
        peer = args.worker.startswith("transformers")
        return (peer_worker if peer else our_worker)(args)

    from electra_tf.pretraining.flops import (
        executed_pretraining_flops,
        pretraining_flops,
    )

    names = [n for n in args.implementations.split(",") if n]
    memory_names = [n for n in args.memory_implementations.split(",") if n]
    unknown = set(names + memory_names) - set(IMPLEMENTATIONS)
    if unknown or not names:
        sys.exit(f"--implementations: unknown {sorted(unknown)} (of {IMPLEMENTATIONS})")
    # Each implementation's precision, resolved here (auto: this machine's).
    ours = resolved_precision(args.precision, preset=args.preset)
    peer_precision = resolved_precision(
        args.peer_precision or args.precision, preset=args.preset
    )
    precisions = {name: precision_of(name, args) for name in IMPLEMENTATIONS}
    xla = {
        name: resolved_precision(args.precision, jit, preset=args.preset).jit_compile
        for name, jit in (("ours", "auto"), ("ours_xla", "on"), ("ours_graph", "off"))
    }
    xla["ours_gumbel_max"] = xla["ours"]
    _, vocabulary, length = _describe(args)
    if args.max_seq_length not in (None, length):
        sys.exit(
            f"--max-seq-length {args.max_seq_length}: the TFRecords of {args.data} "
            f"have length {length}"
        )
    preset, model, pretraining = _configs(args.preset, vocabulary, length)
    paper_flops = pretraining_flops(model, pretraining)
    executed_flops = executed_pretraining_flops(model, pretraining)

    with tempfile.TemporaryDirectory() as scratch:
        batches_file = os.path.join(scratch, "batches.npz")
        memory_file = os.path.join(scratch, "memory_batches.npz")
        count = (args.warmup_rounds + args.rounds) * args.steps
        _write_batches(args, batches_file, args.batch_size, count, vocabulary)
        try:
            timings, peaks = measure_throughput(args, names, batches_file)
        except WorkerDied as error:
            sys.exit(f"error: {error}")
        memory, available = {}, {}
        if args.memory_batch_size:
            _write_batches(args, memory_file, args.memory_batch_size, 2, vocabulary)
            for name in memory_names:
                available[name] = _memory_available_gib()
                print(
                    f"peak-memory run of {name} at batch {args.memory_batch_size} "
                    f"({available[name]:.1f} GiB available)",
                    flush=True,
                )
                memory[name] = measure_memory(args, name, memory_file)

    rows = {}
    for name in names:
        per_step = timings["seconds"][name]
        seconds = statistics.median(per_step)
        sequences = args.batch_size / seconds
        # MFU per round against that round's peak, then the median.
        own = [peak[name] for peak in peaks]
        mfu_paper = _mfu(per_step, own, "gflops", args.batch_size * paper_flops)
        mfu_executed = _mfu(per_step, own, "gflops", args.batch_size * executed_flops)
        mfu_cpu = _mfu(
            timings["cpu"][name],
            own,
            "gflops_per_cpu_second",
            args.batch_size * paper_flops,
        )
        rows[name] = {
            "precision": precisions[name],
            "jit_compile": xla.get(name),
            "seconds_per_step": seconds,
            "cpu_seconds_per_step": statistics.median(timings["cpu"][name]),
            "sequences_per_second": sequences,
            "tokens_per_second": sequences * length,
            "mfu_paper_accounting": mfu_paper,
            "mfu_executed": mfu_executed,
            "mfu_paper_accounting_per_cpu_second": mfu_cpu,
            "peak_rss_gib_at_batch": timings["rss"][name],
            # None where that run failed (killed: it did not fit in what was
            # available when it started).
            "peak_rss_gib_at_memory_batch": memory.get(name),
            "memory_available_gib_at_memory_run_start": available.get(name),
            "round_seconds_per_step": per_step,
        }

    # The ratio's peer: the default-threads one, else the one-thread one (a
    # per-core comparison, the whole run pinned to one core).
    peer = rows.get("transformers") or rows.get("transformers_1_thread") or {}
    reference = peer.get("tokens_per_second")
    burst = [p["gflops"] for peak in peaks for p in peak.values()]
    per_cpu = [p["gflops_per_cpu_second"] for peak in peaks for p in peak.values()]
    print(
        f"\n{args.preset}, batch {args.batch_size}, length {length}, vocabulary "
        f"{vocabulary.size}; matmul peak {min(burst):.0f}-{max(burst):.0f} GFLOP/s "
        f"({min(per_cpu):.0f}-{max(per_cpu):.0f} per CPU-second); "
        f"{paper_flops / 1e9:.2f} GFLOP/sequence (paper accounting), "
        f"{executed_flops / 1e9:.2f} executed; ours = {ours.precision}, XLA "
        f"{'on' if ours.jit_compile else 'off'}; peer {peer_precision.precision}"
    )
    memory_header = f"RSS@{args.memory_batch_size}" if args.memory_batch_size else ""
    print(
        f"{'implementation':<21} {'s/step':>7} {'seq/s':>7} {'tokens/s':>9} "
        f"{'vs HF':>6} {'MFU paper':>9} {'MFU exec':>9} {'MFU CPU':>8} "
        f"{f'RSS@{args.batch_size}':>9} {memory_header:>9}"
    )
    for name, row in rows.items():
        ratio = row["tokens_per_second"] / reference if reference else float("nan")
        at_memory_batch = row["peak_rss_gib_at_memory_batch"]
        print(
            f"{name:<21} {row['seconds_per_step']:7.2f} "
            f"{row['sequences_per_second']:7.2f} {row['tokens_per_second']:9.0f} "
            f"{ratio:5.2f}x {row['mfu_paper_accounting']:9.1%} "
            f"{row['mfu_executed']:9.1%} "
            f"{row['mfu_paper_accounting_per_cpu_second']:8.1%} "
            f"{row['peak_rss_gib_at_batch']:8.2f}G "
            + (
                f"{at_memory_batch:8.2f}G"
                if at_memory_batch
                else f"{'failed' if name in memory else '-':>9}"
            )
        )
    from bench.run_info import run_info

    try:  # imported for their versions in the report
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        pass

    report = {
        **run_info(__file__),
        "preset": args.preset,
        "batch_size": args.batch_size,
        "max_seq_length": length,
        "vocabulary_size": vocabulary.size,
        "steps_per_round": args.steps,
        "rounds": args.rounds,
        "memory_batch_size": args.memory_batch_size,
        "ours_uses_xla": ours.jit_compile,
        "precision": {"requested": args.precision, "ours": ours.precision},
        "peer_precision": peer_precision.precision,
        "matmul_peak_per_round": peaks,
        "gflop_per_sequence_paper_accounting": paper_flops / 1e9,
        "gflop_per_sequence_executed": executed_flops / 1e9,
        "results": rows,
    }
    write_result(args.output, report)


if __name__ == "__main__":
    main()
