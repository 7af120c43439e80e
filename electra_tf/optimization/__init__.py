"""The optimizer (`ElectraAdam`, its loss-scale wrapper) and the learning-rate
schedule (`WarmupPolynomialDecay`)."""
