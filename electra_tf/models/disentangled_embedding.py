"""DeBERTaV3's gradient-disentangled token embedding (GDES)."""

from __future__ import annotations

import keras
from keras import ops


class _Untracked:
    """Holds a layer out of Keras' sight: it belongs to (and is saved by) another
    model, and tracking it here would save it twice."""

    def __init__(self, layer):
        self.layer = layer


@keras.saving.register_keras_serializable(package="electra_tf")
class DisentangledEmbedding(keras.layers.ReversibleEmbedding):
    """A token table `stop_gradient(base) + residual`, the residual starting at 0.

    DeBERTaV3 (He, Gao and Chen, 2023), "gradient-disentangled embedding
    sharing": the discriminator reads the generator's table, but its loss
    trains only the residual, so the MLM and RTD losses no longer pull one
    table in two directions. The layer's one weight is the residual (named
    `embeddings`, as an `Embedding`'s is, so the layer has the same weights
    as a plain table); `embeddings` is the sum, used for the lookup and, when
    called with `reverse=True`, for the tied output projection.

    Args:
        base: the `ReversibleEmbedding` (the generator's) to add to; built.
        Other arguments as `keras.layers.ReversibleEmbedding`'s, tied.
    """

    def __init__(self, base, input_dim, output_dim, **kwargs):
        super().__init__(
            input_dim,
            output_dim,
            embeddings_initializer="zeros",
            tie_weights=True,
            **kwargs,
        )
        self._base = _Untracked(base)

    @property
    def base(self):
        """The layer whose table, gradient stopped, this one adds to."""
        return self._base.layer

    @property
    def residual(self):
        """The variable this layer trains: the table minus the base's."""
        return self._embeddings

    @property
    def embeddings(self):
        return ops.add(ops.stop_gradient(self.base.embeddings), self._embeddings)

    def save_own_variables(self, store):
        # The residual: Keras' own method would save `embeddings`, the sum,
        # which loading then assigns to the residual.
        if self.built:
            store["0"] = self._embeddings

    def get_config(self):
        raise NotImplementedError(
            "A DisentangledEmbedding adds to another model's table and is not "
            "serialisable on its own; save the ElectraPretrainer that owns both."
        )
