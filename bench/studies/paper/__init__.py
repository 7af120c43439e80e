"""The parts of `bench.studies.paper_experiments`, by concern:

* `design`: the tasks, the pre-training variants and the study's setup.
* `units`: the work as units, where each is recorded, and what is left to run.
* `pretraining`, `finetuning`: what one unit of each kind runs.
* `intervals`: the differences between arms and their intervals.
* `report`: the summary tables and JSON, from the unit records or a report;
  `plots`: its figures.
"""
