"""`pretrain/run.py` end to end: resume after SIGKILL, exports, bad flags."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

REPO = pathlib.Path(__file__).parents[1]
CORPUS = REPO / "electra_tf" / "assets" / "corpus" / "brown.txt.gz"
ARGS = [
    "--corpus",
    str(CORPUS),
    "--vocab",
    str(REPO / "electra_tf" / "assets" / "vocab.txt"),
    "--steps",
    "30",
    "--checkpoint-every",
    "10",
    "--batch-size",
    "8",
    "--max-seq-length",
    "64",
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
    result = subprocess.run(
        _command(model_dir, *extra), capture_output=True, text=True, timeout=600
    )
    return result


def _weights(model_dir):
    path = tf.train.latest_checkpoint(str(pathlib.Path(model_dir) / "checkpoints"))
    reader = tf.train.load_checkpoint(path)
    names = sorted(
        n for n in reader.get_variable_to_shape_map() if n.startswith("model/")
    )
    return path, {n: reader.get_tensor(n) for n in names}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("uninterrupted")
    result = _run(model_dir)
    assert result.returncode == 0, result.stderr[-3000:]
    return model_dir


def test_killed_run_resumes_and_matches_uninterrupted(uninterrupted, tmp_path):
    process = subprocess.Popen(
        _command(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    first = tmp_path / "checkpoints" / "ckpt-10.index"
    deadline = time.time() + 300
    while not first.exists() and time.time() < deadline and process.poll() is None:
        time.sleep(0.05)
    assert first.exists(), "the run never wrote its first checkpoint"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    latest = tf.train.latest_checkpoint(str(tmp_path / "checkpoints"))
    assert latest.endswith(("ckpt-10", "ckpt-20")), latest

    result = _run(tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Resumed from" in result.stderr
    resumed_path, resumed = _weights(tmp_path)
    reference_path, reference = _weights(uninterrupted)
    assert resumed_path.endswith("ckpt-30") and reference_path.endswith("ckpt-30")
    # Same step, same learning rate, same data and draws: the same weights.
    # (CPU kernels are deterministic here; allow float round-off only.)
    for name, value in reference.items():
        np.testing.assert_allclose(
            resumed[name], value, rtol=1e-5, atol=1e-6, err_msg=name
        )
    results = json.loads((tmp_path / "eval_results.json").read_text())
    assert results["step"] == 30


def test_exports_load_in_a_fresh_process(uninterrupted):
    export = uninterrupted / "export"
    script = f"""
import tensorflow as tf, tensorflow_text  # noqa: F401  (only TF and TF Text)
model = tf.saved_model.load({str(export / "saved_model")!r})
detect = model.signatures["detect_replaced_tokens_text"]
out = detect(text=tf.constant(["the jury said", ""]))
p = out["replaced_probability"].numpy()
assert p.shape[0] == 2 and ((p >= 0) & (p <= 1)).all()
print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0 and "ok" in result.stdout, result.stderr[-2000:]
    import keras_hub

    backbone = keras_hub.models.ElectraBackbone.from_preset(
        str(export / "discriminator")
    )
    assert backbone.vocab_size == 30522


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
            [
                "--batch-size",
                "7",
                "--strategy",
                "default",
                "--hparams",
                '{"train_steps": 35}',
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
        timeout=300,
    )
    assert result.returncode == 2
    assert "missing.txt" in result.stderr.strip().splitlines()[-1]
