"""What pre-training buys: `python finetune/demo.py`, after `python pretrain/run.py`.

Fine-tunes the pre-training demo's export (`runs/pretrain/export/discriminator`)
and the same architecture and vocabulary without pre-training (freshly
initialised, what `finetune/run.py --pretrained none --preset <export>` trains)
on the bundled Brown POS excerpt (`electra_tf/assets/tasks/brown_pos`: 2,000
training sentences), each with seeds 1, 2 and 3, then prints both: per seed,
mean, standard deviation and range of token accuracy on dev (which chose each
run's epoch) and on test (scored once, after), then what that buys and what
the project measured at the `cpu` preset per objective. Writes
`runs/finetune/tagging_demo/comparison.json`. `--data-dir` compares on your
own CoNLL files (train.conll, dev.conll, and a labelled test.conll).
"""

from __future__ import annotations

import argparse
import logging
import shlex
import sys

from electra_tf.cli import command_line, flags_from, load_library
from electra_tf.config import FinetuningConfig
from electra_tf.finetuning.settings import FinetuningFlags
from electra_tf.presets import DEMO_RECIPE, RECIPES


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    # Defaults: FinetuningFlags' (`flags_from`), else the demo recipe's, else
    # the recipe's for the encoder's width. One call a flag.
    # fmt: off
    add = parser.add_argument
    add("--pretrained", help="The pre-trained encoder, a keras-hub preset "
        f"(default: {FinetuningFlags.pretrained}).")
    add("--data-dir", help="train.conll, dev.conll and test.conll (with tags). "
        "Default: the bundled Brown POS excerpt.")
    add("--output-dir", help="Default: runs/finetune/tagging_demo.")
    add("--seeds", help=f"One run per seed and arm (default {FinetuningFlags.seeds}).")
    add("--epochs", type=int, help=f"Default: {DEMO_RECIPE['epochs']}.")
    add("--learning-rate", type=float,
        help=f"Peak LR. Default: {DEMO_RECIPE['learning_rate']}.")
    add("--layerwise-decay", type=float,
        help=f"Default: the recipe's ({RECIPES['tiny'].layerwise_decay} for tiny).")
    add("--batch-size", type=int, help=f"Default: {FinetuningConfig.batch_size}.")
    add("--max-seq-length", type=int,
        help=f"Default: {DEMO_RECIPE['max_seq_length']}.")
    add("--hparams", help="JSON object of FinetuningConfig fields.")
    add("--jit", choices=["auto", "on", "off"],
        help=f"XLA (default {FinetuningFlags.jit}); auto = on GPUs and TPUs only.")
    # fmt: on
    return parser.parse_args(argv)


@command_line(parse_args)
def main(args) -> int:
    flags = flags_from(FinetuningFlags, args)
    gain = load_library("electra_tf.finetuning.pretraining_gain")
    path, result = gain.run_tagging_demo(flags, command=shlex.join(sys.argv))
    print(gain.format_comparison(result))
    logging.info("Written to %s", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
