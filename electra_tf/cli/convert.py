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
import sys

from electra_tf.cli import command_line, load_library

# The flags that are not a conversion's source (see `convert`).
_COMMON = ("command", "output", "overwrite", "vocab", "no_lowercase")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name, help_text, vocabulary=False):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--output", required=True, help="Directory to write.")
        sub.add_argument(
            "--overwrite",
            action="store_true",
            help="Write into --output even if it is not empty.",
        )
        if vocabulary:
            sub.add_argument(
                "--vocab",
                help="vocab.txt of the model (default: the "
                "one the source has, if any; without a vocabulary "
                "only the checkpoint is written).",
            )
            sub.add_argument(
                "--no-lowercase",
                action="store_true",
                help="Cased vocabulary (default: the source's, else lower-case).",
            )
        return sub.add_argument

    # A table of flags, one call each: kept as written.
    # fmt: off
    add = command("hf-to-electra", "Hugging Face ELECTRA directories to ours.", True)
    add("--discriminator", required=True, help="ElectraForPreTraining directory "
        "(config.json + model.safetensors); an ElectraModel directory also works "
        "without --generator.")
    add("--generator", help="ElectraForMaskedLM directory; with it, the pair "
        "becomes a checkpoint that pre-training continues from.")
    add = command("tf1-to-electra", "An original TF1 ELECTRA checkpoint to ours.",
                  True)
    add("--checkpoint", required=True, help="Checkpoint prefix (e.g. "
        "electra_small/model.ckpt-1000000) or its directory.")
    add("--num-heads", type=int, default=0, help="Attention heads of the "
        "discriminator (default: max(1, hidden // 64), the original's rule, right "
        "for every released model).")
    add("--preset", help="Load into this preset's architecture instead of the one "
        "the shapes give (a mismatch is listed tensor by tensor).")
    add = command("keras-hub-to-electra", "A keras-hub ELECTRA preset to ours.")
    add("--preset", required=True, help="keras-hub preset directory.")
    for name, help_text in (
        ("electra-to-hf", "One of our checkpoints to Hugging Face directories."),
        ("electra-to-keras-hub", "One of our checkpoints to a keras-hub preset."),
    ):
        add = command(name, help_text)
        add("--checkpoint", required=True, help="A checkpoint prefix of ours "
            "(runs/x/checkpoints/ckpt-1000, a converted ckpt-<step>) or a "
            "directory (its newest checkpoint).")
        add("--config", help="The run's config.json (default: next to the "
            "checkpoint or one directory up).")
        if name == "electra-to-hf":
            add("--encoder-only", action="store_true", help="Write only the "
                "discriminator's encoder, as an ElectraModel (output/"
                "discriminator): what an Electric run converts to.")
    # fmt: on
    return parser.parse_args(argv)


@command_line(parse_args)
def main(args) -> int:
    options = vars(args)
    paths, flags = load_library("electra_tf.conversion.convert").convert(
        args.command,
        args.output,
        overwrite=args.overwrite,
        vocab=options.get("vocab"),
        lowercase=not options.get("no_lowercase", False),
        **{k: v for k, v in options.items() if k not in _COMMON},
    )
    for name, path in sorted(paths.items()):
        print(f"{name}: {path}")
    if flags:
        print(
            f"continue pre-training with: pretrain/run.py {flags} --init-checkpoint "
            f"{paths['checkpoint']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
