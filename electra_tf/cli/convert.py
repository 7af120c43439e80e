"""Convert ELECTRA checkpoints: `python pretrain/convert.py COMMAND [flags]`.

  hf-to-electra         Hugging Face ElectraForPreTraining (+ ElectraForMaskedLM)
                        directories -> ours
  tf1-to-electra        an original google-research/electra TF1 checkpoint -> ours
  keras-hub-to-electra  a keras-hub ElectraBackbone preset -> our encoder
  electra-to-hf         one of our checkpoints -> Hugging Face directories
  electra-to-keras-hub  one of our checkpoints -> a keras-hub preset

"Ours", from a generator + discriminator: `ckpt-<step>` for
`pretrain/run.py --init-checkpoint` (TF1's global_step is kept as the
schedule offset), `config.json` (with the run.py flags of the architecture),
`vocab.txt` and `export/` (the keras-hub preset `export/discriminator` is what
`finetune/run.py --pretrained` takes). From a discriminator or encoder alone:
`export/` with the preset, `encoder.keras` and the TF-Hub style SavedModels.

Weights that do not fit are listed tensor by tensor; nothing is overwritten
unless --overwrite is given.
"""

from __future__ import annotations

import argparse
import logging
import os
import pathlib
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[1]

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name, help_text):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--output", required=True, help="Directory to write.")
        sub.add_argument(
            "--overwrite",
            action="store_true",
            help="Write into --output even if it is not empty.",
        )
        return sub

    def vocabulary_flags(sub):
        sub.add_argument(
            "--vocab",
            help="vocab.txt of the model (default: the one the source has, if any; "
            "without a vocabulary only the checkpoint is written).",
        )
        sub.add_argument(
            "--no-lowercase",
            action="store_true",
            help="Cased vocabulary (default: the source's setting, else lower-case).",
        )

    hf = command("hf-to-electra", "Hugging Face ELECTRA directories to ours.")
    hf.add_argument(
        "--discriminator",
        required=True,
        help="ElectraForPreTraining directory (config.json + model.safetensors); "
        "an ElectraModel directory also works without --generator.",
    )
    hf.add_argument(
        "--generator",
        help="ElectraForMaskedLM directory; with it, the pair becomes a checkpoint "
        "that pre-training continues from.",
    )
    vocabulary_flags(hf)

    tf1 = command("tf1-to-electra", "An original TF1 ELECTRA checkpoint to ours.")
    tf1.add_argument(
        "--checkpoint",
        required=True,
        help="Checkpoint prefix (e.g. electra_small/model.ckpt-1000000) or its "
        "directory.",
    )
    tf1.add_argument(
        "--num-heads",
        type=int,
        default=0,
        help="Attention heads of the discriminator (default: max(1, hidden // 64), "
        "the original's rule, right for every released model).",
    )
    tf1.add_argument(
        "--preset",
        help="Load into this preset's architecture instead of the one the shapes "
        "give (a mismatch is listed tensor by tensor).",
    )
    vocabulary_flags(tf1)

    hub_in = command("keras-hub-to-electra", "A keras-hub ELECTRA preset to ours.")
    hub_in.add_argument("--preset", required=True, help="keras-hub preset directory.")

    for name, help_text in (
        ("electra-to-hf", "One of our checkpoints to Hugging Face directories."),
        ("electra-to-keras-hub", "One of our checkpoints to a keras-hub preset."),
    ):
        sub = command(name, help_text)
        sub.add_argument(
            "--checkpoint",
            required=True,
            help="A checkpoint prefix of ours (runs/x/checkpoints/ckpt-1000, a "
            "converted ckpt-<step>) or a directory (its newest checkpoint).",
        )
        sub.add_argument(
            "--config",
            help="The run's config.json (default: next to the checkpoint or one "
            "directory up).",
        )
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")

    # Imported here so that --help answers without loading TensorFlow.
    from electra_tf.config import ConfigError
    from electra_tf.data.vocabulary import VocabularyError
    from electra_tf.errors import ConversionError

    try:
        return _run(args)
    except ConversionError as error:
        print(f"error: {error.one_line()}", file=sys.stderr)
        return 2
    except (ConfigError, VocabularyError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _check_output(args):
    from electra_tf.config import ConfigError

    output = pathlib.Path(args.output)
    if output.exists() and not output.is_dir():
        raise ConfigError(f"--output {output} is a file")
    if output.is_dir() and any(output.iterdir()) and not args.overwrite:
        raise ConfigError(
            f"--output {output} is not empty; pass --overwrite to write into it"
        )


def _vocabulary(args, found):
    """(tokens or None, lowercase) from --vocab or what the source had."""
    from electra_tf.data.vocabulary import Vocabulary

    if args.vocab:
        return Vocabulary.from_file(args.vocab).tokens, not args.no_lowercase
    tokens, lowercase = found
    if tokens is not None:
        tokens = Vocabulary(tuple(tokens), "the source's vocabulary").tokens
    return tokens, lowercase and not args.no_lowercase


def _report(paths, flags=None):
    for name, path in sorted(paths.items()):
        print(f"{name}: {path}")
    if flags:
        print(
            f"continue pre-training with: pretrain/run.py {flags} --init-checkpoint "
            f"{paths['checkpoint']}"
        )


def _run(args) -> int:
    _check_output(args)
    handlers = {
        "hf-to-electra": _hf_to_electra,
        "tf1-to-electra": _tf1_to_electra,
        "keras-hub-to-electra": _keras_hub_to_electra,
        "electra-to-hf": _electra_to_hf,
        "electra-to-keras-hub": _electra_to_keras_hub,
    }
    handlers[args.command](args)
    return 0


def _hf_to_electra(args):
    from electra_tf.conversion import hf as hf_conversion
    from electra_tf.conversion.original_layout import pretrainer_from_tensors
    from electra_tf.export.pretrained import export_encoder
    from electra_tf.pretraining.checkpoint import (
        run_flags,
        write_pretraining_checkpoint,
    )

    if args.generator is None:
        checkpoint = hf_conversion.HfCheckpoint(args.discriminator)
        encoder = hf_conversion.load_hf_encoder(args.discriminator)
        tokens, lowercase = _vocabulary(
            args, (checkpoint.vocabulary, checkpoint.lowercase)
        )
        if tokens is None:
            raise _no_vocabulary(args.discriminator)
        _report(
            export_encoder(
                encoder,
                tokens,
                os.path.join(args.output, "export"),
                lowercase=lowercase,
            )
        )
        return
    pair = hf_conversion.read_hf_pretraining_pair(args.discriminator, args.generator)
    tokens, lowercase = _vocabulary(args, (pair.vocabulary, pair.lowercase))
    ids = _special_ids(tokens)
    pretrainer = pretrainer_from_tensors(
        pair.tensors, pair.model_config, pair.source, **ids
    )
    paths = write_pretraining_checkpoint(
        pretrainer, args.output, 0, tokens, lowercase, source=pair.source
    )
    _report(paths, run_flags(pretrainer.model_config))


def _tf1_to_electra(args):
    from electra_tf.conversion.original_layout import has_generator
    from electra_tf.conversion.tf1 import (
        load_tf1_discriminator,
        load_tf1_pretrainer,
        read_tf1_checkpoint,
    )
    from electra_tf.export.pretrained import export_encoder
    from electra_tf.presets import get_preset
    from electra_tf.pretraining.checkpoint import (
        run_flags,
        write_pretraining_checkpoint,
    )

    tokens, lowercase = _vocabulary(args, (None, True))
    checkpoint = read_tf1_checkpoint(args.checkpoint)
    if not has_generator(checkpoint.tensors):
        if tokens is None:
            raise _no_vocabulary(args.checkpoint)
        discriminator = load_tf1_discriminator(checkpoint.path, args.num_heads)
        _report(
            export_encoder(
                discriminator.encoder,
                tokens,
                os.path.join(args.output, "export"),
                lowercase=lowercase,
            )
        )
        return
    model_config = None
    if args.preset:
        model_config = get_preset(args.preset).model
        if tokens is not None:
            model_config = model_config.override(vocabulary_size=len(tokens))
    pretrainer, checkpoint = load_tf1_pretrainer(
        checkpoint.path,
        model_config=model_config,
        num_heads=args.num_heads,
        **_special_ids(tokens),
    )
    paths = write_pretraining_checkpoint(
        pretrainer,
        args.output,
        checkpoint.step,
        tokens,
        lowercase,
        source=checkpoint.path,
    )
    _report(paths, run_flags(pretrainer.model_config))


def _keras_hub_to_electra(args):
    import keras_hub

    from electra_tf.conversion.keras_hub import load_keras_hub_preset
    from electra_tf.export.pretrained import export_encoder

    encoder = load_keras_hub_preset(args.preset)
    tokenizer = keras_hub.models.ElectraTokenizer.from_preset(args.preset)
    _report(
        export_encoder(
            encoder,
            tokenizer.get_vocabulary(),
            os.path.join(args.output, "export"),
            lowercase=tokenizer.lowercase,
        )
    )


def _electra_to_hf(args):
    from electra_tf.conversion.hf import save_hf_pretrainer
    from electra_tf.pretraining.checkpoint import load_pretraining_checkpoint

    loaded = load_pretraining_checkpoint(args.checkpoint, args.config)
    tokens = loaded.vocabulary.tokens if loaded.vocabulary else None
    _report(
        save_hf_pretrainer(loaded.pretrainer, args.output, tokens, loaded.lowercase)
    )


def _electra_to_keras_hub(args):
    from electra_tf.conversion.keras_hub import save_keras_hub_preset
    from electra_tf.pretraining.checkpoint import load_pretraining_checkpoint

    loaded = load_pretraining_checkpoint(args.checkpoint, args.config)
    if loaded.vocabulary is None:
        raise _no_vocabulary(args.checkpoint)
    save_keras_hub_preset(
        loaded.pretrainer.discriminator_encoder,
        loaded.vocabulary.tokens,
        args.output,
        lowercase=loaded.lowercase,
    )
    _report({"preset": args.output})


def _special_ids(tokens):
    if tokens is None:
        return {}
    index = {token: i for i, token in enumerate(tokens)}
    return dict(
        pad_token_id=index["[PAD]"],
        cls_token_id=index["[CLS]"],
        sep_token_id=index["[SEP]"],
        mask_token_id=index["[MASK]"],
    )


def _no_vocabulary(source):
    from electra_tf.config import ConfigError

    return ConfigError(f"{source} comes without a vocabulary: pass --vocab vocab.txt")


if __name__ == "__main__":
    sys.exit(main())
