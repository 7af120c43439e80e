"""Fine-tuning: one task abstraction, three kinds, one trainer.

* `task`: `FinetuningTask`, what a kind of fine-tuning states (data, model,
  dev score, outputs, recipe); `trainer`: the one loop every kind runs
  (`run_finetuning`: optimizer with layer-wise decay, seeds, best dev epoch,
  medians, TensorBoard, `metrics.json`, predictions and exports).
* The kinds: `classification` (GLUE and your own files), `tagging` (CoNLL
  files), `question_answering` (SQuAD 1.1 and 2.0, and its config fields).
* `finetune`: `finetune(flags)`, what `finetune/run.py` runs: the kind chosen
  by `--task`, the flags read once.
* Settings: `settings` (`FinetuningConfig`, the paper's recipes, flags and
  `--hparams` -> the run's config), `starting_point` (a pre-trained preset or
  a random encoder), `layerwise_decay`, `best_epoch`, `length_grouping`.
* Data and metrics: `glue_tasks`, `glue_readers`, `glue_metrics`,
  `custom_data` (your own CSV, TSV or JSON Lines files), `tagging_data`,
  `tagging_metrics`, `squad_data`, `squad_metrics`; `json_file`.
"""
