"""`--precision` and `--jit` resolved from the hardware (`electra_tf.precision`),
with mocked CPU flags and device kinds; float16 refused on a CPU through both
command lines, before anything is written. No model is trained here."""

import dataclasses
import pathlib

import pytest

import electra_tf.finetuning.finetune
import electra_tf.pretraining.run
from electra_tf.cli import finetune as finetune_cli
from electra_tf.cli import pretrain as pretrain_cli
from electra_tf.config import ConfigError
from electra_tf.finetuning.settings import FinetuningFlags
from electra_tf.precision import (
    MIN_CPU_BFLOAT16_WIDTH,
    Hardware,
    Resolved,
    detect_hardware,
    isa_flags,
    read_cpu_flags,
    resolve_precision,
)
from electra_tf.pretraining.settings import PretrainingFlags

REPO = pathlib.Path(__file__).resolve().parents[1]
ZEN4 = Hardware("cpu", frozenset({"avx2", "avx512f", "avx512_bf16"}))
SAPPHIRE_RAPIDS = Hardware("cpu", frozenset({"avx2", "avx512f", "amx_bf16"}))
AVX2_ONLY = Hardware("cpu", frozenset({"avx2", "fma"}))
A100 = Hardware("gpu", frozenset({"avx2"}), (8, 0))
T4 = Hardware("gpu", frozenset({"avx2"}), (7, 5))
TPU = Hardware("tpu", frozenset({"avx2"}))


@pytest.mark.parametrize(
    "hardware, jit_when_float32, expected",
    [
        # Native bfloat16 on the CPU: bf16 in graph mode (oneDNN), whatever
        # float32 would have used.
        (ZEN4, True, Resolved("mixed_bfloat16", False)),
        (SAPPHIRE_RAPIDS, False, Resolved("mixed_bfloat16", False)),
        # No native bfloat16: exactly float32's settings (pre-training's
        # XLA, fine-tuning's graph mode), never slower than before.
        (AVX2_ONLY, True, Resolved("float32", True)),
        (AVX2_ONLY, False, Resolved("float32", False)),
        (A100, True, Resolved("mixed_bfloat16", True)),
        (T4, True, Resolved("float32", True)),
        (Hardware("gpu"), True, Resolved("float32", True)),  # capability unknown
        (TPU, True, Resolved("mixed_bfloat16", True)),
    ],
)
def test_auto_follows_the_hardware(hardware, jit_when_float32, expected):
    resolved = resolve_precision(
        "auto", "auto", hardware, jit_when_float32=jit_when_float32
    )
    assert resolved == expected


def test_auto_keeps_narrow_encoders_float32_on_a_cpu_only():
    def auto(hardware, width):
        return resolve_precision(
            "auto", "auto", hardware, jit_when_float32=True, width=width
        ).precision

    for hardware in (ZEN4, SAPPHIRE_RAPIDS):
        assert auto(hardware, 64) == "float32"
        assert auto(hardware, MIN_CPU_BFLOAT16_WIDTH) == "mixed_bfloat16"
        assert auto(hardware, 256) == "mixed_bfloat16"
    assert auto(AVX2_ONLY, 256) == "float32"
    # Accelerators: the width does not matter.
    assert auto(A100, 64) == auto(TPU, 64) == "mixed_bfloat16"
    # Given explicitly, bfloat16 is kept at any width.
    assert resolve_precision(
        "mixed_bfloat16", "auto", ZEN4, jit_when_float32=True, width=64
    ) == Resolved("mixed_bfloat16", False)


def test_explicit_choices_are_kept():
    # bfloat16 on any CPU: graph mode unless --jit on.
    assert resolve_precision(
        "mixed_bfloat16", "auto", AVX2_ONLY, jit_when_float32=True
    ) == Resolved("mixed_bfloat16", False)
    assert resolve_precision("float32", "auto", ZEN4, jit_when_float32=True) == (
        Resolved("float32", True)
    )
    assert resolve_precision("auto", "on", ZEN4, jit_when_float32=False) == (
        Resolved("mixed_bfloat16", True)
    )
    assert resolve_precision("auto", "off", TPU, jit_when_float32=True) == (
        Resolved("mixed_bfloat16", False)
    )
    assert resolve_precision("mixed_float16", "auto", T4, jit_when_float32=True) == (
        Resolved("mixed_float16", True)
    )


def test_float16_on_a_cpu_and_unknown_values_are_refused():
    for hardware in (ZEN4, AVX2_ONLY):
        with pytest.raises(ConfigError, match="mixed_float16 needs a GPU"):
            resolve_precision("mixed_float16", "auto", hardware, jit_when_float32=True)
    with pytest.raises(ConfigError, match="--precision must be one of"):
        resolve_precision("bfloat16", "auto", ZEN4, jit_when_float32=True)
    with pytest.raises(ConfigError, match="--jit must be auto, on or off"):
        resolve_precision("auto", "yes", ZEN4, jit_when_float32=True)


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: AMD EPYC\n"
        "flags\t\t: fpu avx2 avx512f avx512_bf16\n\nprocessor\t: 1\n"
        "flags\t\t: fpu\n"
    )
    flags = read_cpu_flags(str(cpuinfo))
    assert flags == {"fpu", "avx2", "avx512f", "avx512_bf16"}
    assert Hardware("cpu", flags).native_bfloat16
    assert read_cpu_flags(str(tmp_path / "missing")) == frozenset()
    recorded = isa_flags(flags)
    assert recorded["avx512_bf16"] and not recorded["amx_bf16"]


def test_this_host_without_accelerators_is_a_cpu(monkeypatch):
    monkeypatch.setattr(
        electra_tf.precision, "read_cpu_flags", lambda: frozenset({"avx2"})
    )
    assert detect_hardware() == Hardware("cpu", frozenset({"avx2"}))


def _one_line_error(main, argv, capsys):
    assert main(argv) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("error: ")
    return line


def test_float16_on_a_cpu_is_one_line_before_pretraining_writes(
    capsys, monkeypatch, tmp_path
):
    monkeypatch.setattr(electra_tf.pretraining.run, "detect_hardware", lambda s: ZEN4)
    model_dir = tmp_path / "run"
    argv = ["--model-dir", str(model_dir), "--precision", "mixed_float16"]
    line = _one_line_error(pretrain_cli.main, argv, capsys)
    assert "--precision mixed_float16 needs a GPU" in line
    assert not model_dir.exists()  # no data, checkpoint or export written


def _pretraining_resolution(flags, monkeypatch):
    """What `pretrain(flags)` resolves on a Zen 4 CPU (stopped right after
    the resolution: nothing is built)."""

    class Resolved(Exception):
        pass

    def stop(resolved, *args):
        raise Resolved(resolved)

    module = electra_tf.pretraining.run
    monkeypatch.setattr(module, "detect_hardware", lambda strategy: ZEN4)
    monkeypatch.setattr(module, "log_resolved", stop)
    with pytest.raises(Resolved) as caught:
        module.pretrain(flags)
    return caught.value.args[0]


@pytest.mark.parametrize(
    "preset, hparams, expected",
    [
        ("demo", "{}", "float32"),  # 64 wide
        ("demo", '{"hidden_dim": 128}', "mixed_bfloat16"),
        ("cpu", "{}", "mixed_bfloat16"),
        ("small", "{}", "mixed_bfloat16"),
    ],
)
def test_pretraining_auto_weighs_the_models_width(
    preset, hparams, expected, monkeypatch, tmp_path
):
    """The default (`auto`) with the width after --hparams reaches the
    resolution (stopped right after it: nothing is built)."""
    flags = PretrainingFlags(preset=preset, hparams=hparams, model_dir=str(tmp_path))
    assert _pretraining_resolution(flags, monkeypatch).precision == expected


def test_pretraining_auto_keeps_a_resumed_runs_precision(monkeypatch, tmp_path):
    """A `cpu`-preset run recorded in float32 (e.g. before `auto` was the
    default) resumes in float32 on a bfloat16 CPU, not refused as another
    run; given explicitly, a precision is taken as given."""
    (tmp_path / "config.json").write_text('{"training": {"precision": "float32"}}')
    for given, expected in (("auto", "float32"), ("mixed_bfloat16", "mixed_bfloat16")):
        flags = PretrainingFlags(preset="cpu", model_dir=str(tmp_path), precision=given)
        assert _pretraining_resolution(flags, monkeypatch).precision == expected


def test_float16_on_a_cpu_is_one_line_before_finetuning_writes(
    capsys, monkeypatch, tmp_path
):
    monkeypatch.setattr(electra_tf.finetuning.finetune, "detect_hardware", lambda: ZEN4)
    output_dir = tmp_path / "run"
    for argv in (
        ["--pretrained", "none", "--data-dir", str(REPO / "tests/fixtures/glue")],
        ["--task", "tagging", "--pretrained", "none"],
        ["--task", "squad1", "--pretrained", "none"]
        + ["--data-dir", str(REPO / "tests/fixtures/squad")],
    ):
        argv += ["--output-dir", str(output_dir), "--precision", "mixed_float16"]
        line = _one_line_error(finetune_cli.main, argv, capsys)
        assert "--precision mixed_float16 needs a GPU" in line, argv
        assert not output_dir.exists()
    # The same through --hparams.
    argv = [
        *("--task", "tagging", "--pretrained", "none"),
        *(
            "--output-dir",
            str(output_dir),
            "--hparams",
            '{"precision": "mixed_float16"}',
        ),
    ]
    assert "mixed_float16 needs a GPU" in _one_line_error(
        finetune_cli.main, argv, capsys
    )


@pytest.mark.parametrize(
    "hardware, preset, expected",
    [
        (ZEN4, "cpu", Resolved("mixed_bfloat16", False)),
        # 64 wide: float32 also where bfloat16 is native.
        (ZEN4, "tiny", Resolved("float32", False)),
        (AVX2_ONLY, "cpu", Resolved("float32", False)),
    ],
)
def test_finetuning_auto_reaches_the_config_and_the_log(
    hardware, preset, expected, caplog, monkeypatch, tmp_path
):
    """Every kind's config gets the default (`auto`) precision and XLA choice
    resolved, weighing the encoder's width (the run itself stubbed: no model
    is built)."""
    module = electra_tf.finetuning.finetune
    monkeypatch.setattr(module, "detect_hardware", lambda: hardware)
    given = {}
    monkeypatch.setattr(
        module, "run_finetuning", lambda task, *a, **k: given.update(task=task) or {}
    )
    caplog.set_level("INFO", logger="electra_tf.precision")
    base = FinetuningFlags(pretrained="none", preset=preset, seeds="1")
    for flags in (
        dataclasses.replace(base, data_dir=str(REPO / "tests/fixtures/glue")),
        dataclasses.replace(base, task="tagging"),
        dataclasses.replace(
            base, task="squad1", data_dir=str(REPO / "tests/fixtures/squad")
        ),
    ):
        flags = dataclasses.replace(flags, output_dir=str(tmp_path / str(flags.task)))
        module.finetune(flags)
        config = given["task"].config
        assert Resolved(config.precision, config.jit_compile) == expected
        assert given["task"].settings()["precision"] == expected.precision
    assert f"precision {expected.precision} (--precision auto), XLA off" in caplog.text


def test_a_keras_hub_export_of_a_bfloat16_encoder_is_float32(tmp_path):
    """The preset pre-training exports (what fine-tuning and keras-hub users
    load) records float32, whatever policy the encoder trained under."""
    import json

    import keras

    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.models.keras_hub_preset import (
        load_keras_hub_preset,
        save_keras_hub_preset,
    )
    from tests.finetuning.test_task_kinds import START

    config, vocabulary = START.model_config, START.vocabulary
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        encoder = ElectraEncoder.discriminator_from_config(config)
        assert encoder.dtype_policy.name == "mixed_bfloat16"
        save_keras_hub_preset(encoder, vocabulary, tmp_path / "preset")
    finally:
        keras.mixed_precision.set_global_policy(previous)
    stored = json.loads((tmp_path / "preset" / "config.json").read_text())
    assert stored["config"]["dtype"]["config"]["name"] == "float32"
    loaded = load_keras_hub_preset(str(tmp_path / "preset"))
    assert loaded.dtype_policy.name == "float32"


def test_pretraining_puts_the_callers_dtype_policy_back(tmp_path, monkeypatch):
    """A run's models are built under its policy; an in-process caller (a
    study, a test) gets its own back, also when the run fails."""
    import keras
    import tensorflow as tf

    from electra_tf.config import TrainingConfig
    from electra_tf.presets import get_preset
    from electra_tf.pretraining import run

    seen = []

    def train(*args, **kwargs):
        seen.append(keras.mixed_precision.global_policy().name)
        raise RuntimeError("stopped inside the run")

    monkeypatch.setattr(run, "_train_and_export", train)
    preset = get_preset("tiny")
    training = TrainingConfig(
        model_dir=str(tmp_path), batch_size=8, precision="mixed_bfloat16"
    )
    before = keras.mixed_precision.global_policy().name
    with pytest.raises(RuntimeError, match="stopped inside the run"):
        run.run_pretraining(
            preset.model,
            preset.pretraining,
            preset.optimizer,
            training,
            vocabulary=None,
            strategy=tf.distribute.get_strategy(),
        )
    assert seen == ["mixed_bfloat16"]
    assert keras.mixed_precision.global_policy().name == before
