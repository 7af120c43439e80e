"""A saved task model that comes back compiled (`CompileOnLoad`).

Keras' `load_model` does not call a `compile` that a model class overrides
(it cannot know the override takes the saved arguments): it warns, leaves
the model uncompiled and skips the optimizer's saved state. keras-hub's tasks
override `compile` to fill in "auto" defaults, and so do ours. Those
overrides pass explicit arguments through unchanged, and the saved
configuration holds only explicit ones (the optimizer, loss and metrics the
model was compiled with), so replaying it through `compile` is what the
model was: `classifier.keras` or `tagger.keras` loads ready to evaluate or
train on, its optimizer's step and moments with it.
"""

from __future__ import annotations

import keras


class CompileOnLoad:
    """Mixin for a `keras.Model` whose `compile` only fills in defaults."""

    def compile_from_config(self, config):
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            # The optimizer's variables exist before the saved ones load.
            self.optimizer.build(self.trainable_variables)
