"""Each command's flag defaults have one home, its flags dataclass: the parsers
set none (`electra_tf.cli.flags_from`)."""

from electra_tf.cli import finetune, finetune_demo, flags_from, pretrain
from electra_tf.finetuning.settings import FinetuningFlags
from electra_tf.pretraining.settings import PretrainingFlags


def test_no_flags_are_the_flags_dataclasses_defaults():
    assert flags_from(FinetuningFlags, finetune.parse_args([])) == FinetuningFlags()
    demo = finetune_demo.parse_args([])
    assert flags_from(FinetuningFlags, demo) == FinetuningFlags()
    assert flags_from(PretrainingFlags, pretrain.parse_args([])) == PretrainingFlags()


def test_given_flags_replace_the_defaults():
    args = finetune.parse_args(["--seeds", "4", "--no-lowercase", "--jit", "off"])
    flags = flags_from(FinetuningFlags, args)
    assert (flags.seeds, flags.lowercase, flags.jit) == ("4", False, "off")
    args = pretrain.parse_args(["--model-dir", "x", "--precision", "mixed_float16"])
    flags = flags_from(PretrainingFlags, args)
    assert (flags.model_dir, flags.precision, flags.preset) == (
        "x",
        "mixed_float16",
        PretrainingFlags.preset,
    )
