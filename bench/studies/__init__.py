"""Studies: the paper's experiments at CPU scale (`paper_experiments`, its parts in
`paper/`). Finished studies
whose findings BENCHMARKS.md records were removed; each section names the commit
that last had its script."""
