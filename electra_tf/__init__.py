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

import os

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

from electra_tf.config import (
    FinetuningConfig,
    ModelConfig,
    OptimizerConfig,
    PretrainingConfig,
    TrainingConfig,
)
from electra_tf.conversion.hf import load_hf_pretrainer
from electra_tf.conversion.tf1 import load_tf1_pretrainer
from electra_tf.data.preparation import prepare_pretraining_data
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.errors import ElectraError
from electra_tf.export.pretrained import load_generator
from electra_tf.finetuning.classification import ClassificationTask
from electra_tf.finetuning.finetune import finetune
from electra_tf.finetuning.glue_tasks import get_task
from electra_tf.finetuning.question_answering import QuestionAnsweringTask
from electra_tf.finetuning.settings import FinetuningFlags
from electra_tf.finetuning.starting_point import StartingPoint
from electra_tf.finetuning.tagging import TaggingTask
from electra_tf.finetuning.trainer import run_finetuning
from electra_tf.models.all_tokens_mlm import ElectraAllTokensMLM
from electra_tf.models.discriminator import ElectraDiscriminator
from electra_tf.models.encoder import ElectraEncoder
from electra_tf.models.generator import ElectraGenerator
from electra_tf.models.keras_hub_preset import load_keras_hub_preset
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.question_answerer_preprocessor import (
    ElectraQuestionAnswererPreprocessor,
)
from electra_tf.models.text_classifier import ElectraTextClassifier
from electra_tf.models.text_classifier_preprocessor import (
    ElectraTextClassifierPreprocessor,
)
from electra_tf.presets import get_preset
from electra_tf.pretraining.checkpoint import load_pretraining_checkpoint
from electra_tf.pretraining.pretrainer import ElectraPretrainer
from electra_tf.pretraining.run import pretrain, run_pretraining
from electra_tf.pretraining.settings import PretrainingFlags, resolve_configs
from electra_tf.scoring.sentence_scorer import SentenceScorer

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
