"""`resolve_configs`: flags, the preset and --hparams become the configs in one pass."""

import pytest

from electra_tf.config import ConfigError, TrainingConfig
from electra_tf.presets import get_preset
from electra_tf.pretraining.settings import PretrainingFlags, resolve_configs


def _flags(**values):
    """Flags with their precision resolved, as `pretrain` gives them
    (`auto` is resolved per machine before the configs)."""
    return PretrainingFlags(**{"precision": "float32", **values})


def test_the_demo_is_tiny_with_a_narrow_generator_for_its_steps():
    configs = resolve_configs(_flags(), jit_compile=True)
    tiny = get_preset("tiny")
    assert configs.model == tiny.model.override(
        generator_hidden_size=0.0625, initializer_range=0.1, dropout=0.0
    )
    assert configs.model.generator_hidden_dim == 4
    assert configs.pretraining == tiny.pretraining.override(max_seq_length=64)
    assert configs.optimizer == tiny.optimizer.override(total_steps=5000)
    training = configs.training
    assert (training.train_steps, training.batch_size) == (5000, 64)
    assert (training.checkpoint_every, training.jit_compile) == (100, True)
    assert training.model_dir == "runs/pretrain"


def test_flags_override_the_preset_and_hparams_override_the_flags():
    flags = _flags(
        preset="small",
        steps=60,
        batch_size=8,
        learning_rate=1e-3,
        max_seq_length=64,
        objective="mlm",
        precision="mixed_bfloat16",
        hparams='{"mask_prob": 0.2, "learning_rate": 2e-3, "train_steps": 30,'
        ' "checkpoint_every": 10}',
    )
    configs = resolve_configs(flags, jit_compile=False)
    assert configs.model == get_preset("small").model
    assert configs.pretraining.max_seq_length == 64
    assert configs.pretraining.objective == "mlm"
    assert configs.pretraining.mask_prob == 0.2
    # --hparams wins over --learning-rate; --steps sets both step counts.
    assert configs.optimizer.learning_rate == 2e-3
    assert configs.optimizer.total_steps == 60
    # train_steps and checkpoint_every change together, in one pass.
    assert (configs.training.train_steps, configs.training.checkpoint_every) == (
        30,
        10,
    )
    assert configs.training.precision == "mixed_bfloat16"
    assert configs.training.jit_compile is False


def test_a_run_shorter_than_the_checkpoint_interval_checkpoints_at_its_end():
    short = resolve_configs(_flags(steps=30), jit_compile=False).training
    assert (short.train_steps, short.checkpoint_every) == (30, 30)
    given = _flags(steps=30, checkpoint_every=10)
    assert resolve_configs(given, jit_compile=False).training.checkpoint_every == 10
    # The rule is the config's own, so it holds wherever a run is configured.
    assert TrainingConfig(train_steps=7).checkpoint_every == 7


def test_the_data_add_the_vocabulary_size_and_the_patterns():
    configs = resolve_configs(_flags(steps=10), jit_compile=False)
    ready = configs.for_data(4785, "d/train-*", "d/eval-*")
    assert ready.model.vocabulary_size == 4785
    assert (ready.training.train_data, ready.training.eval_data) == (
        "d/train-*",
        "d/eval-*",
    )
    assert ready.pretraining == configs.pretraining


@pytest.mark.parametrize(
    "flags, message",
    [
        (_flags(preset="huge"), "Unknown preset 'huge'"),
        (_flags(hparams="{not json"), "--hparams is not valid JSON"),
        (_flags(hparams="[1]"), "--hparams must be a JSON object"),
        (_flags(hparams='{"mask_probability": 1}'), "'mask_probability'"),
        (
            _flags(hparams='{"vocabulary_size": 10}'),
            "vocabulary_size is the vocabulary's",
        ),
        (
            _flags(hparams='{"train_steps": 133}'),
            "must be a multiple of checkpoint_every",
        ),
    ],
)
def test_bad_settings_raise_config_errors(flags, message):
    with pytest.raises(ConfigError, match=message):
        resolve_configs(flags, jit_compile=False)
