"""`FinetuningTask`: what a kind of fine-tuning states; the trainer does the rest.

As google-research/electra's `finetune/task.py` and TF Model Garden's
`official/nlp/tasks`: a task is one kind's data, the run's `FinetuningConfig`
and the `StartingPoint`; `trainer.run_finetuning` runs every kind alike. The
kinds, one module each: `classification`, `tagging`, `question_answering`; a
fourth is a subclass listed in `finetune.TASK_KINDS` (docs/development.md,
"Adding a task kind").
"""

from __future__ import annotations

import keras
import numpy as np
import tensorflow as tf

from electra_tf.config import FinetuningConfig
from electra_tf.finetuning import length_grouping
from electra_tf.finetuning.settings import FinetuningFlags
from electra_tf.finetuning.starting_point import StartingPoint

# The settings only a classification head and pair tasks read, for the other
# kinds' `settings_not_read`.
CLASSIFICATION_ONLY = dict.fromkeys(
    ("pooling", "swap_pairs"), "it is for classification and regression"
)


class FinetuningTask:
    """One kind of fine-tuning: its data, model, dev score and outputs.

    Subclasses set the class attributes and implement the methods that raise
    `NotImplementedError`; the trainer calls them in this order: `build_model`,
    `training_examples`, `compile_arguments`, `evaluate` (after every epoch), and
    `write_outputs` for the best seed.
    """

    # The `--task` values that choose this kind (lower case).
    names: tuple[str, ...] = ()
    # Its configuration: `FinetuningConfig`, or a subclass adding its fields.
    config_class: type[FinetuningConfig] = FinetuningConfig
    # The kind's recipe beside the size's (`presets.RECIPES`), e.g. SQuAD's
    # 512-token windows.
    recipe_changes: dict = {}
    # Passes over the training data when `config.epochs` is 0.
    default_epochs: int = 3
    # `FinetuningConfig` fields this kind does not read, each with the reason;
    # they are neither logged nor recorded, and refused in `--hparams`.
    settings_not_read: dict[str, str] = {}
    # The best seed's Keras file, under the output directory.
    model_file: str = "model.keras"

    def __init__(self, data, config: FinetuningConfig, starting_point: StartingPoint):
        self.data = data
        self.config = config
        self.starting_point = starting_point

    # --- From the command line ---

    @classmethod
    def load_data(cls, flags: FinetuningFlags) -> tuple[object, dict]:
        """Reads the kind's data flags (refusing those it would ignore) and
        loads the data; returns it and what `metrics.json` records of where it
        came from (`{"data": path or "tfds", ...}`)."""
        raise NotImplementedError

    @classmethod
    def recipe(cls, size_recipe: FinetuningConfig) -> FinetuningConfig:
        """The kind's recipe for a model size: the size's (`presets.RECIPES`)
        as a `config_class`, with `recipe_changes`."""
        return cls.config_class(**size_recipe.to_dict()).override(**cls.recipe_changes)

    @classmethod
    def fit_recipe(
        cls, recipe: FinetuningConfig, changes: dict, architecture: dict
    ) -> FinetuningConfig:
        """The run's config: the recipe with `changes` (flags, `--hparams`)
        applied, fitted to the encoder's `architecture` where a kind needs it."""
        return recipe.override(**changes)

    # --- What a run records ---

    @property
    def name(self) -> str:
        """The run's name in logs, `metrics.json` and the default output
        directory: the kind's first name unless a kind says otherwise."""
        return self.names[0]

    @property
    def epochs(self) -> int:
        return self.config.epochs or self.default_epochs

    def settings(self) -> dict:
        """The config as logged and recorded: the settings this kind reads."""
        settings = self.config.to_dict()
        for name in self.settings_not_read:
            del settings[name]
        return settings

    def score_definition(self) -> str:
        """What the dev score that picks epochs and seeds is, in words."""
        raise NotImplementedError

    def facts(self) -> dict:
        """What `metrics.json` records about the data (e.g. `train_examples`)."""
        return {}

    # --- One seed's training ---

    def build_model(self) -> keras.Model:
        """A fresh model (a keras-hub `Task` with its preprocessor and a
        `backbone` encoder), after the seed is set."""
        raise NotImplementedError

    def training_examples(self, model: keras.Model) -> tuple[tuple, np.ndarray | None]:
        """The training examples as in-memory tensors, one a row (`(x, y)`
        in the layout `model.fit` takes), and their lengths as the model
        packs them (`model.preprocessor.sequence_lengths`), which
        `group_by_length` groups them by (None: never grouped)."""
        raise NotImplementedError

    def training_data(self, model: keras.Model, seed: int) -> tf.data.Dataset:
        """Training batches for `model.fit` (`length_grouping.batches`): the
        `training_examples` shuffled with `seed` anew every epoch, grouped by
        length with `group_by_length`."""
        elements, lengths = self.training_examples(model)
        config = self.config
        return length_grouping.batches(
            elements,
            config.batch_size,
            shuffle=True,
            seed=seed,
            lengths=lengths if config.group_by_length else None,
        )

    def compile_arguments(self) -> dict:
        """Arguments of `model.compile` beside the optimizer (loss, metrics):
        the config's `loss_reduction`, which every kind's model reduces its
        "auto" loss by."""
        return {"loss_reduction": self.config.loss_reduction}

    def evaluate(self, model: keras.Model, logs: dict) -> tuple[dict, float]:
        """Scores dev: `(dev results, score)`, higher is better; adds `val_*`
        entries to the epoch's `logs` (TensorBoard, `History`)."""
        raise NotImplementedError

    # --- The best seed ---

    def write_outputs(self, model: keras.Model, output_dir: str) -> dict:
        """Writes test predictions and the raw-text SavedModel
        (`<output_dir>/saved_model`); returns their paths for `metrics.json`."""
        raise NotImplementedError
