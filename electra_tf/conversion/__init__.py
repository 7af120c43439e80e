"""Checkpoint conversion, all through the original's variable names.

* `original_layout`: google-research/electra's variable names and shapes.
* `hf`: Hugging Face transformers checkpoints, both ways.
* `tf1`: the original TF1 release, to ours.
* `convert`: what `pretrain/convert.py` runs, and `write_pretraining_checkpoint`,
  converted weights as our tools take them (checkpoint, config, exports).

keras-hub presets, our encoder's own saved form, are read and written by
`electra_tf.models.keras_hub_preset`.
"""
