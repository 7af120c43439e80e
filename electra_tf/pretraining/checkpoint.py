"""Our pre-training checkpoints as the source and target of conversions.

`write_pretraining_checkpoint` puts converted weights where our tools take
them: a checkpoint for `pretrain/run.py --init-checkpoint` (which reads the
stored step as the learning-rate schedule's offset), its `config.json`, the
vocabulary and the exports of `export_pretrained` (the keras-hub preset
`export/discriminator/` is what `finetune/run.py --pretrained` takes).
`load_pretraining_checkpoint` reads one of ours back (a run's or a converted
one) to convert it onwards.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence

import keras
import tensorflow as tf

from electra_tf.config import ConfigError, ModelConfig, PretrainingConfig
from electra_tf.data.vocabulary import Vocabulary, VocabularyError
from electra_tf.errors import ConversionError
from electra_tf.export.pretrained import export_pretrained
from electra_tf.presets import PRESETS
from electra_tf.pretraining.pretrainer import ElectraPretrainer
from electra_tf.pretraining.run import checkpoint_step, restore_weights


def run_flags(model_config: ModelConfig) -> str:
    """`pretrain/run.py` flags that build `model_config`'s architecture.

    The preset differing in the fewest fields, plus `--hparams` for the
    rest (`vocabulary_size` comes from the vocabulary).

    >>> from electra_tf.presets import get_preset
    >>> run_flags(get_preset("small++").model.override(vocabulary_size=100))
    '--preset small++'
    """
    target = model_config.to_dict()
    target.pop("vocabulary_size")
    best = None
    for name, preset in PRESETS.items():
        base = preset.model.to_dict()
        changes = {k: v for k, v in target.items() if base[k] != v}
        if best is None or len(changes) < len(best[1]):
            best = (name, changes)
    name, changes = best
    flags = f"--preset {name}"
    if changes:
        flags += f" --hparams '{json.dumps(changes, sort_keys=True)}'"
    if PRESETS[name].pretraining.max_seq_length > model_config.max_sequence_length:
        flags += f" --max-seq-length {model_config.max_sequence_length}"
    return flags


def write_pretraining_checkpoint(
    pretrainer: ElectraPretrainer,
    output_dir,
    step: int = 0,
    vocabulary_tokens: Sequence[str] | None = None,
    lowercase: bool = True,
    source: str = "",
) -> dict[str, str]:
    """Writes converted weights as our tools take them.

    * `ckpt-<step>`: the weights, and `step` as the optimizer step, for
      `pretrain/run.py --init-checkpoint` (weights only; the schedule
      continues from `step`);
    * `config.json`: `model` and `pretraining` configs, `source`, `step` and
      `run_flags`, the `pretrain/run.py` flags of this architecture;
    * with a vocabulary: `vocab.txt` and `export/` (see `export_pretrained`).

    Returns the paths by name.
    """
    output_dir = os.fspath(output_dir)
    paths = {"config": os.path.join(output_dir, "config.json")}
    vocabulary = None
    if vocabulary_tokens is not None:
        # Checked before anything is written.
        vocabulary = Vocabulary(tuple(vocabulary_tokens), "the converted vocabulary")
        if vocabulary.size != pretrainer.model_config.vocabulary_size:
            raise ConversionError(
                f"the vocabulary has {vocabulary.size} tokens but the model has "
                f"{pretrainer.model_config.vocabulary_size} rows"
            )
    tf.io.gfile.makedirs(output_dir)
    # A bare optimizer carries the step under the key `checkpoint_step` reads.
    optimizer = keras.optimizers.Adam()
    optimizer.iterations.assign(step)
    prefix = os.path.join(output_dir, f"ckpt-{step}")
    paths["checkpoint"] = tf.train.Checkpoint(
        model=pretrainer, optimizer=optimizer
    ).write(prefix)
    flags = run_flags(pretrainer.model_config)
    if vocabulary is not None:
        paths["vocabulary"] = os.path.join(output_dir, "vocab.txt")
        with tf.io.gfile.GFile(paths["vocabulary"], "w") as f:
            f.write("".join(token + "\n" for token in vocabulary.tokens))
        exports = export_pretrained(
            pretrainer,
            vocabulary.tokens,
            os.path.join(output_dir, "export"),
            lowercase=lowercase,
        )
        paths.update({f"export_{name}": path for name, path in exports.items()})
    with tf.io.gfile.GFile(paths["config"], "w") as f:
        json.dump(
            {
                "model": pretrainer.model_config.to_dict(),
                "pretraining": pretrainer.pretraining_config.to_dict(),
                "vocabulary": paths.get("vocabulary", ""),
                "lowercase": lowercase,
                "source": source,
                "step": step,
                "run_flags": flags,
            },
            f,
            indent=2,
        )
    return paths


@dataclasses.dataclass
class PretrainingCheckpoint:
    """One of our checkpoints, loaded.

    Attributes:
        pretrainer: an `ElectraPretrainer` holding its weights.
        step: the optimizer step stored in it.
        vocabulary: the run's `Vocabulary`, or None if its file is gone.
        lowercase: whether the run lower-cased its text.
    """

    pretrainer: ElectraPretrainer
    step: int
    vocabulary: Vocabulary | None
    lowercase: bool


def _newest_checkpoint(directory: str) -> str | None:
    """A run's newest checkpoint, or a converted one (written without the
    `checkpoint` state file) with the highest step."""
    latest = tf.train.latest_checkpoint(directory)
    if latest is not None:
        return latest
    prefixes = [
        name.removesuffix(".index")
        for name in tf.io.gfile.glob(os.path.join(directory, "ckpt-*.index"))
    ]
    steps = {p: p.rsplit("-", 1)[1] for p in prefixes}
    numbered = [p for p, step in steps.items() if step.isdigit()]
    return max(numbered, key=lambda p: int(steps[p])) if numbered else None


def _find_config(checkpoint: str) -> str:
    folder = os.path.dirname(os.path.abspath(checkpoint))
    for candidate in (folder, os.path.dirname(folder)):
        path = os.path.join(candidate, "config.json")
        if tf.io.gfile.exists(path):
            return path
    raise ConfigError(
        f"no config.json next to {checkpoint} or one directory up (a run's "
        "model directory has one); pass its path"
    )


def load_pretraining_checkpoint(path, config_path=None) -> PretrainingCheckpoint:
    """Loads one of our pre-training checkpoints with its run's config.

    Args:
        path: a checkpoint prefix (`runs/x/checkpoints/ckpt-1000`, or a
            converted `ckpt-<step>`), or a directory whose newest checkpoint
            is taken (a run's `checkpoints/` or the model directory itself).
        config_path: the run's `config.json`; default: found next to the
            checkpoint or one directory up.

    Raises:
        ConfigError: naming what is missing or does not match.
    """
    path = os.fspath(path)
    if tf.io.gfile.isdir(path):
        latest = _newest_checkpoint(path) or _newest_checkpoint(
            os.path.join(path, "checkpoints")
        )
        if latest is None:
            raise ConfigError(f"no checkpoint in {path}")
        path = latest
    config_path = config_path or _find_config(path)
    with tf.io.gfile.GFile(config_path) as f:
        try:
            config = json.load(f)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{config_path} is not JSON: {error}") from error
    if "model" not in config:
        raise ConfigError(f"{config_path} has no model config")
    vocabulary = None
    ids = {}
    vocabulary_path = config.get("vocabulary") or ""
    if vocabulary_path and not os.path.isabs(vocabulary_path):
        # A converted checkpoint's config names its vocabulary relative to
        # where it was written; look beside the config too.
        beside = os.path.join(os.path.dirname(config_path), "vocab.txt")
        if not tf.io.gfile.exists(vocabulary_path) and tf.io.gfile.exists(beside):
            vocabulary_path = beside
    if vocabulary_path:
        try:
            vocabulary = Vocabulary.from_file(vocabulary_path)
        except VocabularyError:
            vocabulary = None
    if vocabulary is not None:
        ids = dict(
            pad_token_id=vocabulary.pad_id,
            cls_token_id=vocabulary.cls_id,
            sep_token_id=vocabulary.sep_id,
            mask_token_id=vocabulary.mask_id,
        )
    pretrainer = ElectraPretrainer(
        ModelConfig.from_dict(config["model"]),
        PretrainingConfig.from_dict(config.get("pretraining", {})),
        **ids,
    )
    restore_weights(pretrainer, path)
    return PretrainingCheckpoint(
        pretrainer=pretrainer,
        step=checkpoint_step(path),
        vocabulary=vocabulary,
        lowercase=bool(config.get("lowercase", True)),
    )
