"""Fine-tuning on GLUE-style tasks, your own files, tagging and SQuAD.

* `glue_tasks`: the tasks (`GlueTask`: columns, labels, metrics).
* `glue_readers`: reading their TSV files (or TFDS) into examples.
* `glue_metrics`: accuracy, F1, Matthews and Pearson/Spearman correlations.
* `layerwise_decay`: ELECTRA's layer-wise learning-rate decay.
* `settings`: the paper's recipes; flags and `--hparams` -> the run's config.
* `custom_data`: your own CSV, TSV or JSON Lines files as a task.
* `tagging_data`, `tagging_metrics`, `tagging`: CoNLL files, token accuracy and
  span P/R/F1, a whole tagging run (`run_tagging`).
* `run`: a whole fine-tuning run: `run_finetuning` (train, evaluate, predict,
  export).
* `finetune`: `finetune(flags)`, what `finetune/run.py` runs: a GLUE task, your
  own files or tagging, chosen from the flags.
* `squad_data`, `squad_metrics`: SQuAD 1.1/2.0 files (and TFDS) and the official
  exact match and F1 (HasAns/NoAns, best no-answer thresholds).
* `question_answering`: a SQuAD run: `finetune_squad`, `run_question_answering`.
"""
