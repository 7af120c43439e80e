"""Checkpoint conversion, all through the original's variable names.

* `original_layout`: google-research/electra's variable names and shapes.
* `hf`: Hugging Face transformers checkpoints, both ways.
* `tf1`: the original TF1 release, to ours.
* `keras_hub`: keras-hub `ElectraBackbone` presets, both ways.
"""
