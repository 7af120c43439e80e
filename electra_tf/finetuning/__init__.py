"""Fine-tuning on GLUE-style tasks.

* `glue_tasks`: the tasks (`GlueTask`: columns, labels, metrics).
* `glue_readers`: reading their TSV files (or TFDS) into examples.
* `glue_metrics`: accuracy, F1, Matthews and Pearson/Spearman correlations.
* `layerwise_decay`: ELECTRA's layer-wise learning-rate decay.
* `settings`: the paper's recipes; flags and `--hparams` -> the run's config.
* `run`: a whole fine-tuning run: `finetune(flags)`, `run_finetuning` (train,
  evaluate, predict, export).
"""
