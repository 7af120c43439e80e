"""`pretrain/run.py` end to end: resume after SIGKILL, exports, bad flags, and a
run under mixed_bfloat16 whose exports compute in float32."""

import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import time

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.models.keras_hub_preset import load_keras_hub_preset
from electra_tf.scoring.sentence_scorer import SentenceScorer
from scripts.tiny_run import tiny_hparams, tiny_run_flags
from tests.helpers import (
    SUBPROCESS_TIMEOUT,
    random_batch,
    reduced_policies,
    reduced_precision_ops,
)

REPO = pathlib.Path(__file__).parents[2]
CORPUS = REPO / "electra_tf" / "assets" / "corpus" / "brown.txt.gz"
# The tiny run the bad-input probe also starts, 30 steps, on the Brown corpus.
ARGS = [
    "--corpus",
    str(CORPUS),
    "--vocab",
    str(REPO / "electra_tf" / "assets" / "vocab.txt"),
    *tiny_run_flags(steps=30),
    *tiny_hparams(),
]


def _command(model_dir, *extra):
    return [
        sys.executable,
        str(REPO / "pretrain" / "run.py"),
        "--model-dir",
        str(model_dir),
        *ARGS,
        *extra,
    ]


def _run(model_dir, *extra):
    command = _command(model_dir, *extra)
    if "--data" in extra:  # which excludes ARGS' --corpus
        at = command.index("--corpus")
        del command[at : at + 2]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    return result


def _weights(model_dir):
    """Every tensor of the newest checkpoint by key, weights and optimizer state.

    Runs of the same program write the same keys. (A variable is keyed by its
    shortest path in the object graph, which for the weights is through the
    optimizer: `optimizer/_trainable_variables/N`.)
    """
    path = tf.train.latest_checkpoint(str(pathlib.Path(model_dir) / "checkpoints"))
    reader = tf.train.load_checkpoint(path)
    names = sorted(
        n
        for n in reader.get_variable_to_shape_map()
        if n != "_CHECKPOINTABLE_OBJECT_GRAPH"
    )
    assert any("_trainable_variables" in n for n in names), names[:5]
    return path, {n: reader.get_tensor(n) for n in names}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("uninterrupted")
    result = _run(model_dir)
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir


def _checkpoint_files(model_dir):
    directory = pathlib.Path(model_dir) / "checkpoints"
    return os.listdir(directory) if directory.exists() else []


def _latest_step(model_dir):
    path = tf.train.latest_checkpoint(str(pathlib.Path(model_dir) / "checkpoints"))
    return int(path.rsplit("-", 1)[1]) if path else 0


def _assert_loadable(model_dir):
    """The newest checkpoint reads back whole and finite (never half written)."""
    path = tf.train.latest_checkpoint(str(pathlib.Path(model_dir) / "checkpoints"))
    reader = tf.train.load_checkpoint(path)
    for name in reader.get_variable_to_shape_map():
        value = reader.get_tensor(name)
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert np.isfinite(value).all(), (path, name)


def _temp_checkpoints(model_dir):
    """TensorFlow's temporary checkpoint entries, with their modification times."""
    directory = pathlib.Path(model_dir) / "checkpoints"
    return {
        (name, (directory / name).stat().st_mtime_ns)
        for name in _checkpoint_files(model_dir)
        if "_temp" in name
    }


def _kill_once(model_dir, during_save, rng, log_path):
    """Starts the run and SIGKILLs it once it has made progress.

    `during_save`: kill as soon as TensorFlow's temporary checkpoint files
    appear (mid-write); otherwise a random moment (0-50 ms, a step or two)
    after a new checkpoint. The run's stderr goes to `log_path`.
    Returns (whether a kill landed, whether it left a half-written checkpoint
    behind, i.e. really landed mid-save).
    """
    before = _latest_step(model_dir)
    # A kill mid-save leaves its temporary files behind; only new ones count.
    stale = _temp_checkpoints(model_dir)
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            _command(model_dir), stdout=subprocess.DEVNULL, stderr=log
        )
        deadline = time.time() + 300
        try:
            while process.poll() is None and time.time() < deadline:
                if during_save:
                    if _temp_checkpoints(model_dir) - stale:
                        break
                    time.sleep(0.0005)
                else:
                    if _latest_step(model_dir) > before:
                        time.sleep(rng.uniform(0.0, 0.05))
                        break
                    time.sleep(0.01)
            killed = process.poll() is None
            if killed:
                os.kill(process.pid, signal.SIGKILL)
        finally:
            process.kill()
            process.wait()
    half_written = bool(_temp_checkpoints(model_dir) - stale)
    return killed, killed and half_written


@pytest.mark.slow
def test_killed_five_times_resumes_and_matches_uninterrupted(uninterrupted, tmp_path):
    """The run is SIGKILLed 5 times (the test fails with fewer), alternating a random
    moment 0-50 ms after a new checkpoint and the instant TensorFlow's temporary
    checkpoint files appear; at least one kill must leave a half-written `_temp`
    checkpoint behind. After every kill the newest complete checkpoint loads with
    finite values, and each restart logs `Resumed from .../ckpt-N` of it. The
    finished run's checkpoint is at step 30 like the uninterrupted run's, and every
    tensor of it (weights, Adam moments, step) is within rtol 1e-5, atol 1e-6 of
    that run's: CPU kernels are deterministic, the tolerance allows float round-off
    only."""
    rng = random.Random(0)
    model_dir = tmp_path / "run"
    kills = {"during_save": 0, "random": 0, "left_half_written": 0}
    attempts = 0
    while kills["during_save"] + kills["random"] < 5 and attempts < 15:
        during_save = attempts % 2 == 1
        attempts += 1
        before = _latest_step(model_dir)
        log_path = tmp_path / f"attempt_{attempts}.log"
        killed, half_written = _kill_once(model_dir, during_save, rng, log_path)
        if not killed:
            break  # the run finished before it could be killed
        kills["during_save" if during_save else "random"] += 1
        kills["left_half_written"] += half_written
        # Whatever the moment, the newest complete checkpoint reads back whole,
        # and the killed process had resumed from the one before it.
        _assert_loadable(model_dir)
        if before:
            resumed = f"Resumed from {model_dir}/checkpoints/ckpt-{before}"
            assert resumed in log_path.read_text(), (attempts, before)
    assert kills["during_save"] + kills["random"] >= 5, kills
    # At least one kill landed while a checkpoint was being written.
    assert kills["left_half_written"] >= 1, kills

    step_before = _latest_step(model_dir)
    assert step_before > 0
    result = _run(model_dir)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Resumed from {model_dir}/checkpoints/ckpt-{step_before}" in result.stderr
    resumed_path, resumed = _weights(model_dir)
    reference_path, reference = _weights(uninterrupted)
    assert resumed_path.endswith("ckpt-30") and reference_path.endswith("ckpt-30")
    # Same step, same learning rate, same data and draws: the same weights.
    # (CPU kernels are deterministic here; allow float round-off only.)
    for name, value in reference.items():
        np.testing.assert_allclose(
            resumed[name], value, rtol=1e-5, atol=1e-6, err_msg=name
        )
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["step"] == 30


@pytest.mark.slow
def test_init_checkpoint_starts_a_new_run_from_its_weights(uninterrupted, tmp_path):
    init = tf.train.latest_checkpoint(str(uninterrupted / "checkpoints"))
    # A learning rate of 1e-9 leaves the loaded weights (nearly) unchanged.
    result = _run(
        tmp_path,
        "--init-checkpoint",
        init,
        "--steps",
        "5",
        "--learning-rate",
        "1e-9",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "schedule offset 30" in result.stderr
    _, started = _weights(tmp_path)
    _, loaded = _weights(uninterrupted)
    assert _latest_step(tmp_path) == 5
    weights = [name for name in loaded if "_trainable_variables" in name]
    assert len(weights) > 40
    for name in weights:
        np.testing.assert_allclose(started[name], loaded[name], atol=1e-6, err_msg=name)
    # The Adam moments and the step counter start afresh.
    assert int(started["optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE"]) == 5


def test_resuming_with_another_model_is_refused_and_changes_nothing(
    uninterrupted, tmp_path
):
    import shutil

    model_dir = tmp_path / "run"
    shutil.copytree(uninterrupted, model_dir)
    config = (model_dir / "config.json").read_bytes()
    _, before = _weights(model_dir)
    result = _run(model_dir, "--hparams", '{"num_layers": 3}')
    assert result.returncode == 2, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: cannot resume from {model_dir}/checkpoints/ckpt-30")
    assert "its run was trained with num_layers 1, not 3" in last
    assert (model_dir / "config.json").read_bytes() == config
    _, after = _weights(model_dir)
    assert after.keys() == before.keys()
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)


@pytest.mark.parametrize(
    "extra, named",
    [
        # Another mask_prob trained a model whose config.json was rewritten.
        (
            tiny_hparams(mask_prob=0.3),
            "mask_prob 0.15, not 0.3",
        ),
        # Blamed "another preset or --hparams", after ~100 warning lines.
        (["--objective", "mlm"], "objective 'electra', not 'mlm'"),
        # Another batch size: the resumed data position would be wrong.
        (["--batch-size", "16"], "batch_size 8, not 16"),
    ],
)
def test_resuming_with_a_changed_setting_is_refused_naming_it(
    uninterrupted, tmp_path, extra, named
):
    """The run's config.json keeps saying what trained it; the error names the
    setting, the run's value and the new one, and comes before the model is
    built (no checkpoint warnings before it)."""
    import shutil

    model_dir = tmp_path / "run"
    shutil.copytree(uninterrupted, model_dir)
    config = (model_dir / "config.json").read_bytes()
    result = _run(model_dir, *extra)
    assert result.returncode == 2, result.stderr[-3000:]
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith(
        f"error: cannot resume from {model_dir}/checkpoints/ckpt-30: its run was "
        f"trained with {named} ({model_dir}/config.json)"
    ), lines[-1]
    # TensorFlow's start-up lines only (on main: ~100 restore warnings).
    assert not [line for line in lines if "checkpoint" in line.lower()][:-1], lines
    assert len(lines) < 30, lines
    assert (model_dir / "config.json").read_bytes() == config


def test_a_resumable_change_is_recorded_in_config_json(uninterrupted, tmp_path):
    """More steps resume the run; config.json records the change and the
    step it was made at, and keeps every other setting."""
    import shutil

    model_dir = tmp_path / "run"
    shutil.copytree(uninterrupted, model_dir)
    before = json.loads((model_dir / "config.json").read_text())
    extra = tiny_hparams(keep_checkpoints=1)
    result = _run(model_dir, *extra)
    assert result.returncode == 0, result.stderr[-3000:]
    after = json.loads((model_dir / "config.json").read_text())
    assert after["resumed"] == [
        {
            "step": 30,
            "changes": {
                "model_dir": [str(uninterrupted), str(model_dir)],
                "train_data": [
                    f"{uninterrupted}/data/train-*",
                    f"{model_dir}/data/train-*",
                ],
                "eval_data": [
                    f"{uninterrupted}/data/eval-*",
                    f"{model_dir}/data/eval-*",
                ],
                "keep_checkpoints": [3, 1],
            },
        }
    ]
    for section in ("model", "pretraining", "optimizer"):
        assert after[section] == before[section]


def test_shards_of_another_vocabulary_without_stats_are_refused(tmp_path):
    """Shards built with the demo vocabulary (4,691 tokens), copied without
    their stats.json and vocab.txt, given BERT's (30,522): every id is in
    range, so on main they trained silently; refused before training."""
    from electra_tf.cli import build_data

    built = tmp_path / "built"
    demo_vocabulary = REPO / "electra_tf" / "assets" / "demo_vocab.txt"
    code = build_data.main(
        ["--input", str(CORPUS), "--vocab", str(demo_vocabulary), "--output-dir"]
        + [str(built), "--max-seq-length", "64", "--num-shards", "2", "--no-progress"]
    )
    assert code == 0
    shards = tmp_path / "shards"
    shards.mkdir()
    for path in built.glob("train-*"):
        (shards / path.name).write_bytes(path.read_bytes())
    bert_vocabulary = REPO / "electra_tf" / "assets" / "vocab.txt"
    result = _run(tmp_path / "run", "--data", str(shards / "train-*"))
    assert result.returncode == 2, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        f"error: {shards}/train-00000-of-00002.tfrecord, record 0: starts with "
        f"token id 2, but [CLS] is 101 in {bert_vocabulary}: the data were built "
        "with another vocabulary; pass theirs with --vocab"
    )
    assert not (tmp_path / "run" / "checkpoints").exists()


@pytest.mark.slow
def test_fewer_steps_than_the_run_has_says_it_exports_the_later_step(
    uninterrupted, tmp_path
):
    import shutil

    model_dir = tmp_path / "run"
    shutil.copytree(uninterrupted, model_dir)
    _, before = _weights(model_dir)
    result = _run(model_dir, "--steps", "10")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"{model_dir} is at step 30, past train_steps 10: nothing to train" in (
        result.stderr
    )
    path, after = _weights(model_dir)
    assert path.endswith("ckpt-30")
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)


def test_non_finite_loss_stops_and_keeps_the_last_checkpoint(uninterrupted, tmp_path):
    import shutil

    model_dir = tmp_path / "run"
    shutil.copytree(uninterrupted, model_dir)
    _, before = _weights(model_dir)
    result = _run(model_dir, "--steps", "40", "--learning-rate", "1e30")
    assert result.returncode == 2, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: loss became nan"), last
    assert "ckpt-30" in last
    path, after = _weights(model_dir)
    assert path.endswith("ckpt-30")
    _assert_loadable(model_dir)
    for name, value in before.items():
        np.testing.assert_array_equal(after[name], value, err_msg=name)


def test_eval_results_record_the_precision_and_xla(uninterrupted):
    results = json.loads((uninterrupted / "eval_results.json").read_text())
    # As resolved from the flags: the default float32, and --jit off.
    assert (results["precision"], results["jit_compile"]) == ("float32", False)
    assert np.isfinite(results["rtd_loss"])


def test_exports_load_in_a_fresh_process(uninterrupted):
    """The discriminator's exports in a fresh process with only TensorFlow and TF Text:
    an empty string, a 100,000-character string, invalid UTF-8 and non-ASCII text in
    one batch are each answered, probabilities finite and in [0, 1], long text
    truncated to the sequence length."""
    export = uninterrupted / "export"
    script = f"""
import tensorflow as tf, tensorflow_text  # noqa: F401  (only TF and TF Text)
model = tf.saved_model.load({str(export / "saved_model")!r})
detect = model.signatures["detect_replaced_tokens_text"]
# Serving robustness: empty, very long, invalid UTF-8, non-ASCII, mixed lengths.
texts = [
    b"the jury said",
    b"",
    ("word " * 20000).encode(),
    b"\\xff\\xfe broken \\xc3\\x28 bytes",
    "caf\u00e9 na\u00efve \u6f22\u5b57 \U0001f600".encode(),
]
out = detect(text=tf.constant(texts))
p = out["replaced_probability"].numpy()
assert p.shape[0] == len(texts) and ((p >= 0) & (p <= 1)).all(), p
ids = out["token_ids"].numpy()
assert (ids[2] != 0).all()  # the long text fills the sequence: truncated, not dropped
print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-2000:]
    import keras_hub

    backbone = keras_hub.models.ElectraBackbone.from_preset(
        str(export / "discriminator")
    )
    assert backbone.vocab_size == 30522


@pytest.fixture(scope="module")
def bf16_run(tmp_path_factory):
    """A 10-step run under `--precision mixed_bfloat16` with `--jit auto`
    (graph mode on a CPU), and its weights in a float32 pre-trainer."""
    from electra_tf.pretraining.checkpoint import load_pretraining_checkpoint

    model_dir = tmp_path_factory.mktemp("bf16")
    result = _run(
        model_dir, "--precision", "mixed_bfloat16", "--jit", "auto", "--steps", "10"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert keras.mixed_precision.global_policy().name == "float32"
    return model_dir, load_pretraining_checkpoint(model_dir)


# Packed inputs in the vocabulary's range; `mask_positions` for the generator.
BF16_INPUTS = random_batch(batch_size=2, length=16, vocabulary_size=1000)
MASK_POSITIONS = np.array([[1, 4, 7], [2, 3, 9]], "int32")
# Float32 against float32 (graph against eager); bfloat16 is ~1e-2 off.
FLOAT32_TOLERANCE = dict(rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_bfloat16_pretraining_records_its_precision(bf16_run):
    model_dir, checkpoint = bf16_run
    config = json.loads((model_dir / "config.json").read_text())
    results = json.loads((model_dir / "eval_results.json").read_text())
    for recorded in (config["training"], results):
        assert (recorded["precision"], recorded["jit_compile"]) == (
            "mixed_bfloat16",
            False,
        )
    assert results["step"] == checkpoint.step == 10
    assert np.isfinite(results["loss"]) and np.isfinite(results["rtd_loss"])


@pytest.mark.slow
def test_bfloat16_pretraining_keras_exports_compute_in_float32(bf16_run):
    model_dir, checkpoint = bf16_run
    export = model_dir / "export"
    reference = checkpoint.pretrainer
    discriminator = keras.models.load_model(export / "discriminator.keras")
    generator = keras.models.load_model(export / "generator.keras")
    backbone = keras_hub.models.ElectraBackbone.from_preset(
        str(export / "discriminator")
    )
    for model in (discriminator, generator, backbone):
        assert reduced_policies(model) == {}, model.name
        assert {w.dtype for w in model.weights} == {"float32"}, model.name
    outputs = discriminator(BF16_INPUTS)
    assert outputs.dtype == "float32"
    np.testing.assert_allclose(
        outputs, reference.discriminator(BF16_INPUTS), **FLOAT32_TOLERANCE
    )
    generator_inputs = {**BF16_INPUTS, "mask_positions": MASK_POSITIONS}
    np.testing.assert_allclose(
        generator(generator_inputs),
        reference.generator(generator_inputs),
        **FLOAT32_TOLERANCE,
    )
    # The preset, as fine-tuning loads it.
    encoder = load_keras_hub_preset(str(export / "discriminator"))
    np.testing.assert_allclose(
        encoder(BF16_INPUTS)["sequence_output"],
        reference.discriminator_encoder(BF16_INPUTS)["sequence_output"],
        **FLOAT32_TOLERANCE,
    )


@pytest.mark.slow
def test_bfloat16_pretraining_saved_models_compute_in_float32(bf16_run):
    model_dir, checkpoint = bf16_run
    export = model_dir / "export"
    reference = checkpoint.pretrainer
    loaded = {
        name: tf.saved_model.load(str(export / name))
        for name in ("saved_model", "sentence_scorer", "hub/encoder")
    }
    for name, model in loaded.items():
        for signature_name, signature in model.signatures.items():
            assert reduced_precision_ops(signature) == set(), (name, signature_name)
    inputs = {name: tf.constant(value) for name, value in BF16_INPUTS.items()}
    detected = loaded["saved_model"].signatures["detect_replaced_tokens_ids"](**inputs)
    encoded = reference.discriminator_encoder(BF16_INPUTS)["sequence_output"]
    np.testing.assert_allclose(
        detected["replaced_probability"],
        tf.sigmoid(reference.discriminator(BF16_INPUTS)),
        **FLOAT32_TOLERANCE,
    )
    np.testing.assert_allclose(
        detected["sequence_output"], encoded, **FLOAT32_TOLERANCE
    )
    hub = loaded["hub/encoder"].signatures["serving_default"](
        input_word_ids=inputs["token_ids"],
        input_type_ids=inputs["segment_ids"],
        input_mask=inputs["padding_mask"],
    )
    np.testing.assert_allclose(hub["sequence_output"], encoded, **FLOAT32_TOLERANCE)
    vocabulary = checkpoint.vocabulary
    tokenizer = keras_hub.models.ElectraTokenizer(
        vocabulary=list(vocabulary.tokens), lowercase=vocabulary.lowercase
    )
    scorer = SentenceScorer(reference.generator, tokenizer, 64, method="mlm")
    texts = tf.constant(["the jury said", "a grand jury was told"])
    scored = loaded["sentence_scorer"].signatures["score_sentences"](text=texts)
    expected = scorer.score_sentences(texts)
    assert scored["score"].dtype == tf.float32
    np.testing.assert_allclose(
        scored["token_scores"], expected["token_scores"], **FLOAT32_TOLERANCE
    )


def _scalar_steps(directory, tag):
    steps = set()
    for path in pathlib.Path(directory).glob("events*"):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            steps |= {event.step for value in event.summary.value if value.tag == tag}
    return steps


def test_tensorboard_curves_and_the_health_base_rate_share_the_step_axis(
    uninterrupted,
):
    # Held-out and training curves, and the health monitor's base-rate
    # entropy, at the optimizer step of each evaluation (Keras alone would log
    # the epoch index 0, 1, 2, ...).
    logs = uninterrupted / "logs"
    steps = set(range(5, 31, 5))
    assert _scalar_steps(logs / "validation", "epoch_rtd_auc") == steps
    assert _scalar_steps(logs / "train", "epoch_rtd_loss") == steps
    assert _scalar_steps(logs / "base_rate", "epoch_rtd_loss") == steps


def test_a_corrupt_shard_is_named_or_skipped(uninterrupted, tmp_path):
    import shutil

    data = tmp_path / "data"
    shutil.copytree(uninterrupted / "data", data)
    shard = sorted(data.glob("train-*"))[1]
    damaged = bytearray(shard.read_bytes())
    damaged[len(damaged) // 2] ^= 0xFF
    shard.write_bytes(bytes(damaged))
    extra = ["--data", str(data / "train-*"), "--steps", "5"]

    result = _run(tmp_path / "plain", *extra)
    assert result.returncode == 2, result.stderr[-3000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: corrupt or truncated TFRecord"), last
    assert shard.name in last and "corrupted record" in last

    result = _run(tmp_path / "skipping", *extra, "--skip-corrupt-files")
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Skipping {shard}" in result.stderr


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--preset", "medium"], "Unknown preset 'medium'"),
        (
            ["--hparams", '{"mask_probability": 0.2}'],
            "Unknown hparam 'mask_probability'",
        ),
        (["--hparams", '{"mask_prob": 1.5}'], "mask_prob must be in \\(0, 1\\)"),
        (["--hparams", "{not json"], "--hparams is not valid JSON"),
        (
            ["--objective", "mlm", "--hparams", '{"uniform_generator": true}'],
            "uniform_generator needs an objective that samples replacements",
        ),
        (
            ["--strategy", "mirrored", "--devices", "/cpu:0,/gpu:3"],
            "--devices: /gpu:3 is not on this host \\(it has /cpu:0",
        ),
        (
            [
                "--batch-size",
                "7",
                "--strategy",
                "default",
                "--hparams",
                '{"train_steps": 133}',
            ],
            "must be a multiple of checkpoint_every",
        ),
    ],
)
def test_bad_flags_give_one_clear_line(tmp_path, extra, message):
    result = _run(tmp_path, *extra)
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ")
    import re

    assert re.search(message, last), last


@pytest.mark.parametrize(
    "extra, message",
    [
        # Each became the preset's default on main.
        (["--steps", "0"], "--steps must be positive, got 0"),
        (["--batch-size", "0"], "--batch-size must be positive, got 0"),
        (["--steps", "-10"], "--steps must be positive, got -10"),
        (["--learn-vocab-size", "0"], "--learn-vocab-size must be positive, got 0"),
        # --corpus was ignored.
        (["--data", "x/train-*", "--corpus", "y"], "--corpus and --data exclude"),
        # A ValueError traceback at train time, after building the data.
        (
            ["--max-seq-length", "1024"],
            "max_seq_length 1024 is longer than the 128 positions of preset 'demo'",
        ),
    ],
)
def test_flags_that_mean_nothing_or_do_not_fit_are_refused(tmp_path, extra, message):
    """ARGS give --corpus and a 64-token demo model; each flag is refused
    before any data are built."""
    result = _run(tmp_path, *extra)
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: {message}")
    assert not (tmp_path / "data").exists()


def test_data_that_is_not_tfrecords_says_what_data_takes(uninterrupted, tmp_path):
    """--data given raw text or a directory (on main: "vocabulary file not
    found")."""
    text = tmp_path / "corpus.txt"
    text.write_text("Some raw text.\nOne sentence a line.\n")
    result = _run(tmp_path / "a", "--data", str(text))
    last = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2
    assert last.startswith(
        "error: --data takes TFRecords built by electra-build-data (raw text goes "
        f"to --corpus): {text} is not a readable TFRecord file: corrupted record"
    ), last
    data = uninterrupted / "data"
    result = _run(tmp_path / "b", "--data", str(data))
    last = result.stderr.strip().splitlines()[-1]
    assert result.returncode == 2
    assert last == (
        f"error: --data {data} is a directory: --data takes TFRecord files as a "
        f"pattern, e.g. {data}/train-*"
    )


def test_data_smaller_than_one_batch_warn_that_every_batch_repeats_them(
    tmp_path, caplog
):
    """`--batch-size 64` on 4 short documents (before this warning: silent,
    every batch repeating the same few examples). The warning reads the
    data's `stats.json`, before the model is built; a batch the data fill
    gets none. The bad-input probe's `pretrain-batch-larger-than-data` runs
    the same through the console script."""
    from electra_tf.data.tfrecord_writer import build_pretraining_data
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.pretraining.run import _warn_if_smaller_than_a_batch

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("".join(f"Document {i} has one sentence.\n\n" for i in range(4)))
    vocabulary = Vocabulary.from_file(REPO / "electra_tf" / "assets" / "vocab.txt")
    data = tmp_path / "data"
    build_pretraining_data(
        [corpus], vocabulary, data, max_seq_length=64, num_shards=1,
        eval_fraction=0, progress=False,
    )  # fmt: skip
    examples = json.loads((data / "stats.json").read_text())["train_examples"]
    assert 0 < examples < 64
    with caplog.at_level("WARNING"):
        _warn_if_smaller_than_a_batch(str(data), 64)
        _warn_if_smaller_than_a_batch(str(data), examples)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warnings == [
        f"{data} holds {examples} training examples, fewer than one batch of 64: "
        "every batch repeats them; give more text or a smaller --batch-size"
    ]


def test_missing_corpus_names_it(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "pretrain" / "run.py"),
            "--model-dir",
            str(tmp_path),
            "--corpus",
            str(tmp_path / "missing.txt"),
        ],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert result.returncode == 2
    assert "missing.txt" in result.stderr.strip().splitlines()[-1]
