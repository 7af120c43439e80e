"""Studies: the paper's experiments at CPU scale (`paper_experiments`), pre-training
dynamics, a checkpoint's RTD AUC, and fine-tuning studies. One-off diagnoses whose
findings BENCHMARKS.md records were removed; each section names the commit that
last had its script."""
