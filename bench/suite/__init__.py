"""The benchmark suite: what BENCHMARKS.md measures for speed and parity."""
