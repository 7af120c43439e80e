"""The public API, imported whole: `import electra_tf` gives these names (see
the package's docstring), and importing their modules registers every Keras
class of ours for `keras.models.load_model`. The names are listed in
`electra_tf.__all__`."""

# ruff: noqa: F401  (imported for `electra_tf` to export)

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
