"""Studies: the objectives at equal compute, and the probes of the RTD plateau."""
