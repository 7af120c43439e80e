"""Fine-tuning on GLUE-style tasks and on SQuAD.

* `glue_tasks`: the tasks (`GlueTask`: columns, labels, metrics).
* `glue_readers`: reading their TSV files (or TFDS) into examples.
* `glue_metrics`: accuracy, F1, Matthews and Pearson/Spearman correlations.
* `layerwise_decay`: ELECTRA's layer-wise learning-rate decay.
* `settings`: the paper's recipes; flags and `--hparams` -> the run's config.
* `run`: a whole fine-tuning run: `finetune(flags)`, `run_finetuning` (train,
  evaluate, predict, export).
* `squad_data`, `squad_metrics`: SQuAD 1.1/2.0 files (and TFDS) and the official
  exact match and F1 (HasAns/NoAns, best no-answer thresholds).
* `span_decoding`: the best answer span of a question over all its windows.
* `question_answering_run`: a SQuAD run: `finetune_squad`, `run_question_answering`.
"""
