"""What the generator and discriminator models have in common."""

from __future__ import annotations

import keras

from electra_tf.models.encoder import standalone_encoder

# The encoder's inputs, in the order every model and signature lists them.
ENCODER_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def encoder_inputs(*extra: str) -> dict:
    """Symbolic int32 [batch, length] inputs: the encoder's, then `extra`."""
    return {
        name: keras.Input(shape=(None,), dtype="int32", name=name)
        for name in ENCODER_INPUTS + extra
    }


class ElectraTower(keras.Model):
    """A functional model around an `ElectraEncoder`, serialised by its encoder.

    Subclasses build their functional graph in `__init__(encoder, **kwargs)`;
    the config is the encoder (nested with `keras.layers.serialize`) and the name.
    """

    def get_config(self):
        return {"encoder": keras.layers.serialize(self.encoder), "name": self.name}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.layers.deserialize(config["encoder"])
        return cls(**config)


def standalone_tower(tower: ElectraTower) -> ElectraTower:
    """A copy of `tower` on a `standalone_encoder` copy of its encoder.

    What export and conversion write for a tower whose encoder shares or
    disentangles its embeddings: the same weights, in ordinary tables.
    """
    copy = type(tower)(standalone_encoder(tower.encoder), name=tower.name)
    # The same layers in the same order: the weights match one to one, the
    # token table then gets the folded one.
    copy.set_weights(tower.get_weights())
    copy.encoder.token_embedding.embeddings.assign(
        tower.encoder.token_embedding.embeddings
    )
    return copy
