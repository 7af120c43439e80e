"""Scoring sentences with a pre-trained model.

* `pseudo_log_likelihood`: per-token log p(x_t | the other tokens) from an
  Electric discriminator (one pass), a masked-language model (one pass per
  token, batched) or Electric's cloze model (one pass).
* `sentence_scorer`: `SentenceScorer`, raw sentences in, one score each out
  (the `sentence_scorer` SavedModel of a pre-training run's export).
* `sentence_file`: a file of sentences scored by that SavedModel into a TSV
  (what `pretrain/score.py` runs).
"""
