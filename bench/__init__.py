"""Benchmarks and studies; run from the repository root as modules, e.g.
`python -m bench.suite.step_time --help` (see BENCHMARKS.md).

* `suite/`: throughput, step time, data path, serving latency, conversion parity.
* `studies/`: the paper's experiments at CPU scale (`paper_experiments`, its
  parts in `studies/paper/`).
* `results/`: what they wrote, each JSON with the `run_info` header.

Scripts of finished studies leave the tree once written up; their result
files stay in `results/`, and BENCHMARKS.md names the commit that last had
each script.
"""
