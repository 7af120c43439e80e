"""Fine-tuning on GLUE-style tasks.

* `glue_tasks`: the tasks (`GlueTask`: columns, labels, metrics).
* `glue_readers`: reading their TSV files (or TFDS) into examples.
* `glue_metrics`: accuracy, F1, Matthews and Pearson/Spearman correlations.
* `layerwise_decay`: ELECTRA's layer-wise learning-rate decay.
* `run`: a whole fine-tuning run: train, evaluate, predict, export.
"""
