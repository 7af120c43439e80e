"""Matmul speed by precision and compilation: the figures `--precision auto` rests on.

    python -m bench.suite.matmul_peak --rounds 5

One thread, the shape of an ELECTRA-small feed-forward layer ([--rows, 256] @
[256, 1024]), each variant timed in turn round by round in one process:
TensorFlow float32 and bfloat16 in graph mode (oneDNN) and under XLA, and
`torch.nn.Linear` in float32 and under `torch.autocast("cpu", torch.bfloat16)`
(skipped without torch). GFLOP/s of the best call per round, median over
rounds; `--output` records the CPU's flags (native bf16: `avx512_bf16`,
`amx_bf16`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.result_file import write_result

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _best_seconds(function, calls: int) -> float:
    best = float("inf")
    for _ in range(calls):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def tensorflow_variants(rows: int) -> dict:
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    x = tf.random.stateless_normal((rows, 256), seed=(0, 1))
    w = tf.random.stateless_normal((256, 1024), seed=(0, 2))
    variants = {}
    for dtype in ("float32", "bfloat16"):
        a, b = tf.cast(x, dtype), tf.cast(w, dtype)
        for mode, jit in (("graph", False), ("xla", True)):
            matmul = tf.function(lambda a, b: tf.matmul(a, b), jit_compile=jit)
            variants[f"tf_{dtype}_{mode}"] = lambda matmul=matmul, a=a, b=b: matmul(
                a, b
            ).numpy()
    return variants


def torch_variants(rows: int) -> dict:
    try:
        import torch
    except ImportError:
        return {}
    torch.set_num_threads(1)
    linear = torch.nn.Linear(256, 1024)
    x = torch.randn(rows, 256)

    def float32():
        with torch.no_grad():
            linear(x)

    def bfloat16():
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            linear(x)

    return {"torch_float32": float32, "torch_bfloat16_autocast": bfloat16}


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--calls", type=int, default=20, help="Calls per round.")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--output", default="bench/results/matmul_peak.json")
    args = parser.parse_args(argv)
    if args.rows < 1 or args.calls < 1 or args.rounds < 1:
        parser.error("--rows, --calls and --rounds must be >= 1")

    variants = {**tensorflow_variants(args.rows), **torch_variants(args.rows)}
    for function in variants.values():  # tracing, compilation, warm caches
        function()
        function()
    flops = 2.0 * args.rows * 256 * 1024
    rounds = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, function in variants.items():
            rounds[name].append(flops / _best_seconds(function, args.calls) / 1e9)
    gflops = {name: statistics.median(values) for name, values in rounds.items()}
    print(f"[{args.rows}, 256] @ [256, 1024], one thread; GFLOP/s, best call")
    for name, value in gflops.items():
        print(f"{name:<26} {value:7.1f}")

    from bench.run_info import run_info

    write_result(
        args.output,
        {
            **run_info(__file__),
            "shape": [[args.rows, 256], [256, 1024]],
            "threads": 1,
            "load_average_1min": os.getloadavg()[0],
            "gflops": gflops,
            "rounds_gflops": rounds,
        },
    )


if __name__ == "__main__":
    main()
