"""What the generator and discriminator models have in common."""

from __future__ import annotations

import keras


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
