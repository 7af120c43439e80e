"""A `--pretrained` preset argument of a bench script, checked before any work."""

from __future__ import annotations


def preset_or_exit(preset: str) -> str:
    """`preset`, or exit with one line naming it if it is not a keras-hub preset.

    A local directory must hold a preset's `config.json` and `tokenizer.json`
    (`preset_architecture` checks); names and handles are left to keras-hub.
    """
    from electra_tf.models.keras_hub_preset import (
        PretrainedModelError,
        preset_architecture,
    )

    try:
        preset_architecture(preset)
    except (PretrainedModelError, FileNotFoundError) as error:
        raise SystemExit(f"error: --pretrained: {error}") from None
    return preset
