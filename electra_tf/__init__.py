"""ELECTRA in Keras 3 / TensorFlow: the public API.

`import electra_tf` registers every Keras class of ours, so that
`keras.models.load_model` reads our `.keras` exports, and gives:

* the models: `ElectraEncoder`, `ElectraGenerator`, `ElectraDiscriminator`,
  `ElectraPretrainer`, `ElectraTextClassifier` and its preprocessor,
  `ElectraQuestionAnswerer` and its preprocessor;
* the configs and presets: `ModelConfig`, `PretrainingConfig`, `OptimizerConfig`,
  `TrainingConfig`, `get_preset`, `resolve_configs`;
* pre-training: `Vocabulary`, `prepare_pretraining_data`, `run_pretraining`,
  `pretrain`; fine-tuning: `finetune` (`finetune/run.py`'s flags), or a task
  kind (`ClassificationTask`, `TaggingTask`, `QuestionAnsweringTask`) with a
  `FinetuningConfig` and a `StartingPoint` run by `run_finetuning`; `get_task`;
* the exports' and checkpoints' loaders: `load_generator`,
  `load_pretraining_checkpoint`, `load_hf_pretrainer`, `load_tf1_pretrainer`,
  `load_keras_hub_preset`;
* scoring: `SentenceScorer` (pseudo-log-likelihoods of raw sentences);
* `ElectraError`, the base of every error a user can cause.

The folders hold the rest: `models/`, `pretraining/`, `finetuning/`, `data/`,
`export/`, `conversion/`, `optimization/`, `scoring/`.
"""

import importlib
import os
import sys

# TensorFlow's best-fit pool (BFC, its GPU allocator) for CPU tensors instead
# of malloc per tensor. With malloc, a step's large buffers are mapped and
# unmapped by the kernel every step: on 2 AVX2-only EPYC cores a quarter of the
# demo's CPU time went to the kernel, and the pool makes its step 1.4-1.8x as
# fast with bit-identical numbers (BENCHMARKS.md section 1). TensorFlow reads
# the variable when it creates the CPU device, so it is set on import, before
# any op runs; a value the user set is kept ("false": malloc). The pool grows
# as needed (up to TF_CPU_BFC_MEM_LIMIT_IN_MB, 64 GiB by default) and keeps
# what it took until the process ends.
os.environ.setdefault("TF_CPU_ALLOCATOR_USE_BFC", "true")

# The command lines (`electra_tf.cli`) answer `--help` and a bad flag without
# TensorFlow (which takes 10-20 s to import on a busy 2-core machine): while
# this package is imported only as the parent of one of them, the public API
# is not imported here but on first use (PEP 562's module `__getattr__`), and
# the command imports it after parsing its flags. Any other import of the
# package imports it now, so that `import electra_tf` registers every Keras
# class of ours as before. Telling the two apart reads the import system's
# frames (CPython's `importlib._bootstrap`, stable since 3.3); where they
# cannot be read, the package is imported whole: slower, never wrong.


def _imported_for_a_command_line() -> bool:
    """Whether the module being imported, of which this package is a parent,
    is one of the command lines (`electra_tf.cli` or a module under it)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name in ("_find_and_load", "_get_module_details"):
            name = frame.f_locals.get("name", frame.f_locals.get("mod_name"))
            if isinstance(name, str) and (
                name == "electra_tf.cli" or name.startswith("electra_tf.cli.")
            ):
                return True
        frame = frame.f_back
    return False


__all__ = [
    "ClassificationTask",
    "ElectraAllTokensMLM",
    "ElectraDiscriminator",
    "ElectraEncoder",
    "ElectraError",
    "ElectraGenerator",
    "ElectraPretrainer",
    "ElectraQuestionAnswerer",
    "ElectraQuestionAnswererPreprocessor",
    "ElectraTextClassifier",
    "ElectraTextClassifierPreprocessor",
    "FinetuningConfig",
    "FinetuningFlags",
    "ModelConfig",
    "OptimizerConfig",
    "PretrainingConfig",
    "PretrainingFlags",
    "QuestionAnsweringTask",
    "SentenceScorer",
    "StartingPoint",
    "TaggingTask",
    "TrainingConfig",
    "Vocabulary",
    "finetune",
    "get_preset",
    "get_task",
    "load_generator",
    "load_hf_pretrainer",
    "load_keras_hub_preset",
    "load_pretraining_checkpoint",
    "load_tf1_pretrainer",
    "prepare_pretraining_data",
    "pretrain",
    "resolve_configs",
    "run_finetuning",
    "run_pretraining",
]


def __getattr__(name: str):
    """The public API's `name`, importing it on first use (after a command
    line's import: see above). Other names are not ours to answer: a
    submodule (`from electra_tf import config`) is then imported as usual."""
    if name not in __all__:
        raise AttributeError(f"module 'electra_tf' has no attribute {name!r}")
    return getattr(importlib.import_module("electra_tf.api"), name)


if not _imported_for_a_command_line():
    _api = importlib.import_module("electra_tf.api")
    globals().update((name, getattr(_api, name)) for name in __all__)
