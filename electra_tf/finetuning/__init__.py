"""Fine-tuning: one task abstraction (`task`), three kinds (`classification`,
`tagging`, `question_answering`) and one trainer (`trainer`); `finetune`'s
`finetune(flags)` is what `finetune/run.py` runs. Settings: `settings`,
`starting_point`, `layerwise_decay`, `best_epoch`, `length_grouping`;
`pretraining_gain` (`finetune/demo.py`: a pre-trained encoder against the same
one untrained). Data and metrics: `glue_tasks`, `glue_readers`, `glue_metrics`,
`custom_data`, `tagging_data`, `tagging_metrics`, `squad_data`, `squad_metrics`,
`files`.
"""
