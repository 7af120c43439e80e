"""What `pretrain/convert.py` runs: `convert` dispatches one of `CONVERSIONS`,
and `write_pretraining_checkpoint` puts converted weights where our tools take
them: a checkpoint for `pretrain/run.py --init-checkpoint` (which reads the
stored step as the learning-rate schedule's offset), its `config.json` (with
`run_flags`, the `pretrain/run.py` flags of the architecture), the vocabulary
and the exports of `export_pretrained` (the keras-hub preset
`export/discriminator/` is what `finetune/run.py --pretrained` takes).

It sits above `pretraining/` (reads our checkpoints) and `export/` (writes the
exports), which do not import `conversion/`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib

import keras
import tensorflow as tf

from electra_tf.config import ConfigError, ModelConfig
from electra_tf.conversion import hf as hf_conversion
from electra_tf.conversion.hf import save_hf_pretrainer
from electra_tf.conversion.original_layout import (
    has_generator,
    pretrainer_from_tensors,
)
from electra_tf.conversion.tf1 import (
    load_tf1_discriminator,
    load_tf1_pretrainer,
    read_tf1_checkpoint,
)
from electra_tf.data.vocabulary import Vocabulary, check_vocabulary_fits
from electra_tf.errors import ConversionError
from electra_tf.export.pretrained import export_encoder, export_pretrained
from electra_tf.models.encoder import standalone_encoder
from electra_tf.models.keras_hub_preset import (
    load_keras_hub_preset,
    preset_vocabulary,
    save_keras_hub_preset,
)
from electra_tf.presets import PRESETS, get_preset
from electra_tf.pretraining.checkpoint import load_pretraining_checkpoint
from electra_tf.pretraining.pretrainer import ElectraPretrainer


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
    vocabulary: Vocabulary | None = None,
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
    if vocabulary is not None:
        # Checked before anything is written.
        check_vocabulary_fits(
            vocabulary.size,
            pretrainer.model_config.vocabulary_size,
            error=ConversionError,
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
            f.write(vocabulary.to_text())
        exports = export_pretrained(
            pretrainer, vocabulary, os.path.join(output_dir, "export")
        )
        paths.update({f"export_{name}": path for name, path in exports.items()})
    with tf.io.gfile.GFile(paths["config"], "w") as f:
        json.dump(
            {
                "model": pretrainer.model_config.to_dict(),
                "pretraining": pretrainer.pretraining_config.to_dict(),
                "vocabulary": paths.get("vocabulary", ""),
                "lowercase": vocabulary.lowercase if vocabulary else True,
                "source": source,
                "step": step,
                "run_flags": flags,
            },
            f,
            indent=2,
        )
    return paths


CONVERSIONS = (
    "hf-to-electra",
    "tf1-to-electra",
    "keras-hub-to-electra",
    "electra-to-hf",
    "electra-to-keras-hub",
)


def convert(
    command: str,
    output: str,
    *,
    overwrite: bool = False,
    vocab: str | None = None,
    lowercase: bool = True,
    **source,
) -> tuple[dict[str, str], str | None]:
    """Runs one of `CONVERSIONS`; returns the written paths and, for a new
    pre-training checkpoint, the `pretrain/run.py` flags of its architecture.

    `source` holds the command's inputs: `discriminator`, `generator`
    (hf-to-electra); `checkpoint`, `num_heads`, `preset` (tf1-to-electra);
    `preset` (keras-hub-to-electra); `checkpoint`, `config` (electra-to-*).
    `vocab` replaces the source's vocabulary; `lowercase=False` keeps case.

    Raises:
        ConfigError: `output` is a file, or not empty without `overwrite`, or
            no vocabulary where one is needed.
        ConversionError: weights that do not fit, tensor by tensor.
    """
    output_path = pathlib.Path(output)
    if output_path.exists() and not output_path.is_dir():
        raise ConfigError(f"--output {output} is a file")
    if output_path.is_dir() and any(output_path.iterdir()) and not overwrite:
        raise ConfigError(
            f"--output {output} is not empty; pass --overwrite to write into it"
        )
    handlers = {
        "hf-to-electra": _hf_to_electra,
        "tf1-to-electra": _tf1_to_electra,
        "keras-hub-to-electra": _keras_hub_to_electra,
        "electra-to-hf": _electra_to_hf,
        "electra-to-keras-hub": _electra_to_keras_hub,
    }
    return handlers[command](output, _VocabularyChoice(vocab, lowercase), **source)


@dataclasses.dataclass(frozen=True)
class _VocabularyChoice:
    path: str | None
    lowercase: bool

    def resolve(self, tokens, lowercase) -> Vocabulary | None:
        """The vocabulary of `path`, else the source's `tokens` (if any)."""
        if self.path:
            return Vocabulary.from_file(self.path, self.lowercase)
        if tokens is None:
            return None
        return Vocabulary(
            tuple(tokens), "the source's vocabulary", lowercase and self.lowercase
        )


def _hf_to_electra(output, vocabulary, *, discriminator, generator=None):
    if generator is None:
        checkpoint = hf_conversion.HfCheckpoint(discriminator)
        encoder = hf_conversion.load_hf_encoder(discriminator)
        vocabulary = vocabulary.resolve(checkpoint.vocabulary, checkpoint.lowercase)
        if vocabulary is None:
            raise _no_vocabulary(discriminator)
        return export_encoder(encoder, vocabulary, os.path.join(output, "export")), None
    pair = hf_conversion.read_hf_pretraining_pair(discriminator, generator)
    vocabulary = vocabulary.resolve(pair.vocabulary, pair.lowercase)
    pretrainer = pretrainer_from_tensors(
        pair.tensors, pair.model_config, pair.source, **_special_ids(vocabulary)
    )
    paths = write_pretraining_checkpoint(
        pretrainer, output, 0, vocabulary, source=pair.source
    )
    return paths, run_flags(pretrainer.model_config)


def _tf1_to_electra(output, vocabulary, *, checkpoint, num_heads=0, preset=None):
    vocabulary = vocabulary.resolve(None, True)
    tf1_checkpoint = read_tf1_checkpoint(checkpoint)
    if not tf1_checkpoint.tensors:
        example = tf1_checkpoint.ignored[0] if tf1_checkpoint.ignored else "none"
        raise ConversionError(
            f"{tf1_checkpoint.path} is not an original (TF1) ELECTRA checkpoint: "
            f"none of its {len(tf1_checkpoint.ignored)} tensors is under electra/ "
            f"or generator/ (e.g. {example}); one of our checkpoints converts "
            "with electra-to-hf or electra-to-keras-hub"
        )
    if not has_generator(tf1_checkpoint.tensors):
        if vocabulary is None:
            raise _no_vocabulary(checkpoint)
        discriminator = load_tf1_discriminator(tf1_checkpoint.path, num_heads)
        export = os.path.join(output, "export")
        return export_encoder(discriminator.encoder, vocabulary, export), None
    model_config = None
    if preset:
        model_config = get_preset(preset).model
        if vocabulary is not None:
            model_config = model_config.override(vocabulary_size=vocabulary.size)
    pretrainer, tf1_checkpoint = load_tf1_pretrainer(
        tf1_checkpoint.path,
        model_config=model_config,
        num_heads=num_heads,
        **_special_ids(vocabulary),
    )
    paths = write_pretraining_checkpoint(
        pretrainer,
        output,
        tf1_checkpoint.step,
        vocabulary,
        source=tf1_checkpoint.path,
    )
    return paths, run_flags(pretrainer.model_config)


def _keras_hub_to_electra(output, vocabulary, *, preset):
    encoder = load_keras_hub_preset(preset)
    vocabulary = preset_vocabulary(preset)
    return export_encoder(encoder, vocabulary, os.path.join(output, "export")), None


def _electra_to_hf(output, vocabulary, *, checkpoint, config=None, encoder_only=False):
    loaded = load_pretraining_checkpoint(checkpoint, config)
    if encoder_only:
        encoder = loaded.pretrainer.discriminator_encoder
        if encoder.disentangles_embeddings:
            encoder = standalone_encoder(encoder)
        directory = os.path.join(output, "discriminator")
        hf_conversion.save_hf_encoder(encoder, directory, loaded.vocabulary)
        return {"discriminator": directory}, None
    return save_hf_pretrainer(loaded.pretrainer, output, loaded.vocabulary), None


def _electra_to_keras_hub(output, vocabulary, *, checkpoint, config=None):
    loaded = load_pretraining_checkpoint(checkpoint, config)
    if loaded.vocabulary is None:
        raise _no_vocabulary(checkpoint)
    save_keras_hub_preset(
        loaded.pretrainer.discriminator_encoder, loaded.vocabulary, output
    )
    return {"preset": output}, None


def _special_ids(vocabulary):
    return {} if vocabulary is None else vocabulary.special_token_ids()


def _no_vocabulary(source):
    return ConfigError(f"{source} comes without a vocabulary: pass --vocab vocab.txt")
