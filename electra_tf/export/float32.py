"""`float32_model`: the copy of a Keras model that every export writes.

A run under `--precision mixed_bfloat16` (or `mixed_float16`) builds its
layers with that dtype policy: float32 variables, bfloat16 computation. Saved
as they are, a `.keras` file keeps the policy in every layer's config and a
SavedModel traces the bfloat16 computation, so a reloaded or served model
computes in bfloat16, which a CPU without native bfloat16 emulates, slowly.
Exports compute in float32 instead. The copy goes through Keras' own format:
the model is saved (config, weights, assets such as a tokenizer's vocabulary,
the optimizer's state), every reduced-precision dtype policy in the config is
replaced by float32 (`float32_config`), and the model is loaded back under a
float32 global policy (for layers whose config names no policy). The
variables of a mixed policy are float32 already: the copy's weights are the
same values, bit for bit.

Keras 3 offers no dtype override for this: `keras.models.load_model` takes
none, and `keras.models.clone_model` with a `clone_function` rebuilds a
keras-hub style model (a functional model with its own `get_config`) as a
plain `Functional` model, without its class, preprocessor or weights.
"""

from __future__ import annotations

import json
import os
import tempfile
import zipfile

import keras

from electra_tf.distribution import precision_policy

# Dtype policies that compute below float32 (a serialized `DTypePolicy`'s
# name, or a layer config's `dtype` string); quantized policies are left alone.
REDUCED_POLICIES = ("mixed_bfloat16", "mixed_float16", "bfloat16", "float16")
_POLICY_CLASSES = ("DTypePolicy", "FloatDTypePolicy")


def float32_config(config):
    """`config` (a serialized Keras object, as in a `.keras` file's
    `config.json`) with every policy of `REDUCED_POLICIES` made float32."""
    if isinstance(config, list):
        return [float32_config(item) for item in config]
    if not isinstance(config, dict):
        return config
    inner = config.get("config")
    if (
        config.get("class_name") in _POLICY_CLASSES
        and isinstance(inner, dict)
        and inner.get("name") in REDUCED_POLICIES
    ):
        return {**config, "config": {**inner, "name": "float32"}}
    return {
        key: (
            "float32"
            if key == "dtype" and isinstance(value, str) and value in REDUCED_POLICIES
            else float32_config(value)
        )
        for key, value in config.items()
    }


def float32_model(model: keras.Model) -> keras.Model:
    """A copy of `model` whose layers all compute in float32 (see the module
    docstring); `model` itself when its config holds no reduced policy.

    The copy has `model`'s class, weights (the same float32 values), assets
    and, if `model` was compiled, its compile arguments and optimizer state.
    """
    # Checked on the layers first: a float32 model is returned without being
    # serialised (a subclass without `get_config` cannot be, and needs not).
    layers = model._flatten_layers(include_self=True)
    if all(layer.dtype_policy.name not in REDUCED_POLICIES for layer in layers):
        return model
    with tempfile.TemporaryDirectory() as directory:
        saved = os.path.join(directory, "model.keras")
        copy = os.path.join(directory, "float32.keras")
        model.save(saved)
        with zipfile.ZipFile(saved) as source, zipfile.ZipFile(copy, "w") as target:
            for item in source.infolist():
                entry = zipfile.ZipInfo(item.filename, item.date_time)
                entry.compress_type = item.compress_type
                if item.filename == "config.json":
                    stored = json.loads(source.read(item))
                    target.writestr(entry, json.dumps(float32_config(stored)))
                    continue
                entry.file_size = item.file_size  # zip64 beyond 2 GiB
                with source.open(item) as read, target.open(entry, "w") as write:
                    while chunk := read.read(1 << 24):
                        write.write(chunk)
        with precision_policy("float32"):
            return keras.models.load_model(copy, safe_mode=True)
