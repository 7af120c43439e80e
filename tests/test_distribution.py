"""tf.distribute, XLA and precision: the paths a GPU, TPU or multi-host run takes.

Checked on CPU: a mirrored step equals a single-device step, with dropout
too; two worker
processes under MultiWorkerMirroredStrategy (driving `pretrain/run.py`) end
with identical weights; the train step compiles with XLA with the TPU run's
flags; bfloat16 tracks float32; float16 scales its loss; accumulated
micro-batches equal one large batch.
"""

import contextlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import keras
import numpy as np
import pytest
import tensorflow as tf

from electra_tf.optimization.optimizer import ElectraAdam
from tests.helpers import (
    CLS,
    MASK,
    PAD,
    SEP,
    SUBPROCESS_TIMEOUT,
    TINY_VOCABULARY_SIZE,
    make_pretrainer,
    random_batch,
)

HERE = pathlib.Path(__file__).parent
REPO = HERE.parent
FIXTURES = HERE / "fixtures"
# A 2-worker job must finish well within this, or it is killed (never hangs).
WORKER_TIMEOUT = 420


@pytest.mark.slow
def test_mirrored_two_replicas_match_one_device():
    result = subprocess.run(
        [sys.executable, "-m", "tests.mirrored_step_check"],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        cwd=REPO,  # where `tests` is a package
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["max_update"] > 1e-3  # the step did move the weights
    assert figures["max_difference"] < 1e-5, figures
    # With dropout 0.1 (HashedDropout keys masks by the global example index)
    # the replicas drop what one device drops; other masks would differ.
    assert figures["dropout_max_difference"] < 1e-5, figures
    assert figures["dropout_other_masks_difference"] > 1e-3, figures
    assert figures["dropout_states_equal"], figures
    # mixed_float16 on 2 replicas: the loss-scale optimizer's skip-or-apply
    # verdict is all-reduced, so the replicas neither hang nor diverge.
    assert figures["float16_finite"], figures
    assert figures["float16_update"] > 1e-4, figures
    assert figures["float16_replica_difference"] == 0.0, figures
    assert figures["float16_scale"] < 2.0**15, figures  # overflowing steps skipped


# --- MultiWorkerMirroredStrategy: two real worker processes -----------------


def _free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("localhost", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@pytest.fixture(scope="module")
def multi_worker_data(tmp_path_factory):
    """4 train and 2 eval shards (each of the 2 hosts reads its own files)."""
    from electra_tf.data.tfrecord_writer import build_pretraining_data
    from electra_tf.data.vocabulary import BUNDLED_VOCABULARY, Vocabulary

    data_dir = tmp_path_factory.mktemp("multi_worker_data")
    build_pretraining_data(
        [str(FIXTURES / "corpus_excerpt.txt"), str(FIXTURES / "pydoc_sentences.txt")],
        Vocabulary.from_file(BUNDLED_VOCABULARY),
        str(data_dir),
        max_seq_length=32,
        num_shards=4,
        num_eval_shards=2,
        eval_fraction=0.3,
        overwrite=True,
        progress=False,
    )
    return data_dir


def _run_workers(data_dir, model_dir, steps, output_dir):
    """`pretrain/run.py --strategy multi_worker` in 2 processes on localhost.

    Returns each worker's (return code, output, final weights).
    """
    workers = [f"localhost:{port}" for port in _free_ports(2)]
    processes, logs = [], []
    try:
        for index in range(2):
            tf_config = {
                "cluster": {"worker": workers},
                "task": {"type": "worker", "index": index},
            }
            log = open(output_dir / f"worker{index}.log", "w+")  # noqa: SIM115
            logs.append(log)
            processes.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "tests.multi_worker_check",
                        str(output_dir / f"weights{index}.npz"),
                        "--strategy",
                        "multi_worker",
                        "--data",
                        str(data_dir / "train-*"),
                        "--model-dir",
                        str(model_dir),
                        "--steps",
                        str(steps),
                        "--checkpoint-every",
                        "2",
                        "--batch-size",
                        "8",
                        "--max-seq-length",
                        "32",
                        # One learning-rate schedule (zero at step 6) for
                        # every run, so that a resumed run can equal a
                        # straight one.
                        "--hparams",
                        '{"eval_steps": 2, "total_steps": 6}',
                    ],
                    env={**os.environ, "TF_CONFIG": json.dumps(tf_config)},
                    cwd=REPO,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
        deadline = time.monotonic() + WORKER_TIMEOUT
        for process in processes:
            process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    results = []
    for index, (process, log) in enumerate(zip(processes, logs)):
        log.seek(0)
        output = log.read()
        log.close()
        path = output_dir / f"weights{index}.npz"
        weights = dict(np.load(path)) if path.exists() else None
        results.append((process.returncode, output, weights))
    return results


@pytest.fixture(scope="module")
def multi_worker_run(multi_worker_data, tmp_path_factory):
    model_dir = tmp_path_factory.mktemp("multi_worker_run")
    output_dir = tmp_path_factory.mktemp("multi_worker_output")
    workers = _run_workers(multi_worker_data, model_dir, 4, output_dir)
    return model_dir, workers


def _max_difference(a, b):
    assert a.keys() == b.keys()
    return max(float(np.abs(a[k] - b[k]).max()) for k in a if k != "step")


@pytest.mark.slow
def test_multi_worker_two_processes_train_identically(multi_worker_run):
    model_dir, workers = multi_worker_run
    for code, output, _ in workers:
        assert code == 0, output[-3000:]
    chief, other = workers[0][2], workers[1][2]
    assert int(chief["step"]) == int(other["step"]) == 4
    assert _max_difference(chief, other) == 0.0

    # The chief's last checkpoint holds the weights both workers ended with.
    reader = tf.train.load_checkpoint(str(model_dir / "checkpoints" / "ckpt-4"))
    saved = [
        reader.get_tensor(
            f"optimizer/_trainable_variables/{i}/.ATTRIBUTES/VARIABLE_VALUE"
        )
        for i in range(len(chief) - 1)
    ]
    assert (
        max(float(np.abs(saved[i] - chief[f"w{i}"]).max()) for i in range(len(saved)))
        == 0.0
    )
    # Every 2 steps a checkpoint (only the chief's stays), an evaluation and
    # TensorBoard scalars, as `fit` writes them; the held-out results and
    # the export at the end.
    checkpoints = tf.train.get_checkpoint_state(str(model_dir / "checkpoints"))
    assert [os.path.basename(p) for p in checkpoints.all_model_checkpoint_paths] == [
        "ckpt-2",
        "ckpt-4",
    ]
    assert not list(model_dir.glob("workertemp_*"))
    for sub in ("train", "validation", "extra"):
        assert list((model_dir / "logs" / sub).glob("events.out.tfevents.*")), sub
    results = json.loads((model_dir / "eval_results.json").read_text())
    assert results["step"] == 4 and np.isfinite(results["loss"])
    assert (model_dir / "export" / "saved_model" / "saved_model.pb").exists()


@pytest.mark.slow
def test_multi_worker_resume_matches_uninterrupted(
    multi_worker_data, multi_worker_run, tmp_path_factory
):
    """Restarting both workers continues from the chief's checkpoint (step 4),
    at the same data position and random draws as a run that never stopped."""
    model_dir, _ = multi_worker_run
    resumed = _run_workers(
        multi_worker_data, model_dir, 6, tmp_path_factory.mktemp("resumed")
    )
    straight = _run_workers(
        multi_worker_data,
        tmp_path_factory.mktemp("straight_run"),
        6,
        tmp_path_factory.mktemp("straight"),
    )
    for code, output, _ in resumed + straight:
        assert code == 0, output[-3000:]
    assert "Resumed from" in resumed[0][1] and "ckpt-4" in resumed[0][1]
    assert int(resumed[0][2]["step"]) == 6
    assert _max_difference(resumed[0][2], resumed[1][2]) == 0.0
    assert _max_difference(resumed[0][2], straight[0][2]) < 1e-6


# --- TPU: the strategy, and the train step under XLA ------------------------


def test_jit_auto_compiles_single_device_runs():
    import types

    from electra_tf.distribution import (
        DistributionError,
        accelerators_present,
        resolve_jit_compile,
    )

    two_replicas = types.SimpleNamespace(num_replicas_in_sync=2)
    assert resolve_jit_compile("auto") is True
    assert resolve_jit_compile("auto", two_replicas) is accelerators_present()
    assert resolve_jit_compile("auto", on_cpu=False) is accelerators_present()
    assert resolve_jit_compile("on", two_replicas) is True
    assert resolve_jit_compile("off") is False
    with pytest.raises(DistributionError, match="auto, on or off"):
        resolve_jit_compile("yes")


def test_tpu_strategy_without_a_tpu_names_the_flag():
    script = (
        "from electra_tf.distribution import DistributionError, make_strategy\n"
        "for name in ('local', 'no-such-tpu'):\n"
        "    try:\n"
        "        make_strategy('tpu', tpu=name)\n"
        "    except DistributionError as error:\n"
        "        print(error)\n"
        "    else:\n"
        "        print('no error')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        cwd=REPO,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    local, named = result.stdout.strip().splitlines()[-2:]
    assert "--tpu=local" in local and "TPU build of TensorFlow" in local, local
    assert "--tpu=no-such-tpu" in named and "--tpu-zone" in named, named


@contextlib.contextmanager
def _policy(name):
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(previous)


def _tiny(dropout=None):
    from electra_tf.presets import get_preset

    preset = get_preset("tiny")
    model = preset.model.override(vocabulary_size=TINY_VOCABULARY_SIZE)
    if dropout is not None:
        model = model.override(dropout=dropout)
    return model, preset.pretraining.override(max_seq_length=32)


def _tiny_vocabulary():
    """A vocabulary of the tests' tiny size with the special ids of conftest."""
    from electra_tf.data.vocabulary import Vocabulary

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert [specials.index(t) for t in ("[PAD]", "[CLS]", "[SEP]", "[MASK]")] == [
        PAD,
        CLS,
        SEP,
        MASK,
    ]
    return Vocabulary(
        tuple(specials + [f"t{i}" for i in range(TINY_VOCABULARY_SIZE - 5)])
    )


def test_train_step_compiles_with_xla_as_on_tpu():
    """The TPU run's flags: XLA, mixed_bfloat16, steps_per_execution > 1, static
    batch shapes (drop_remainder), dropout on. mixed_bfloat16 compiles under
    XLA on this CPU too, so nothing is downgraded to float32 here."""
    batches = [random_batch(8, 32, seed=s) for s in range(4)]
    dataset = (
        tf.data.Dataset.from_tensor_slices(
            {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
        )
        .batch(8, drop_remainder=True)
        .repeat()
    )
    assert all(spec.shape == (8, 32) for spec in dataset.element_spec.values())
    from electra_tf.config import OptimizerConfig
    from electra_tf.pretraining.run import build_pretrainer

    with _policy("mixed_bfloat16"):
        # As pretrain/run.py builds it: the warm-up x decay schedule, decoupled
        # weight decay with its exclusions, global-norm clipping.
        model = build_pretrainer(
            *_tiny(),
            OptimizerConfig(learning_rate=1e-3, warmup_steps=1, total_steps=100),
            _tiny_vocabulary(),
            jit_compile=True,
            steps_per_execution=2,
        )
        assert model.jit_compile and model.optimizer.weight_decay == 0.01
        start = [w.numpy() for w in model.trainable_weights]
        history = model.fit(dataset, steps_per_epoch=2, epochs=1, verbose=0)
        assert int(model.optimizer.iterations.numpy()) == 2
        assert np.isfinite(history.history["loss"][0])
        moved = max(
            float(np.abs(w.numpy() - s).max())
            for w, s in zip(model.trainable_weights, start)
        )
        assert moved > 1e-4
        # The proof that the whole step (masking, both towers, sampling, losses,
        # clipping, the Adam update) lowers to XLA: its HLO module.
        step = tf.function(model.train_step, jit_compile=True)
        batch = next(iter(dataset))
        hlo = step.experimental_get_compiler_ir(batch)(stage="hlo")
        assert "HloModule" in hlo and "bf16" in hlo


# --- Precision ------------------------------------------------------------------


def _fit_per_step_losses(model, batches, steps):
    dataset = tf.data.Dataset.from_tensor_slices(
        {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
    )
    dataset = dataset.batch(len(batches[0]["token_ids"]), drop_remainder=True).repeat()
    # One step per Keras epoch: the metrics restart, so each value is one step's.
    history = model.fit(dataset, steps_per_epoch=1, epochs=steps, verbose=0)
    return np.array(history.history["loss"])


@pytest.mark.slow
def test_bfloat16_losses_track_float32():
    steps = 24
    batches = [random_batch(8, 32, seed=100 + s) for s in range(3)]
    losses = {}
    weights = None
    for precision in ("float32", "mixed_bfloat16"):
        with _policy(precision):
            keras.utils.set_random_seed(0)
            model = make_pretrainer(*_tiny(dropout=0.0))
            # The recipe's clipping: without it a float32 run on these random
            # batches was seen to spike (loss 216 at step 17), and two chaotic
            # trajectories cannot be compared.
            model.compile(
                optimizer=ElectraAdam(learning_rate=2e-3, global_clipnorm=1.0),
                jit_compile=False,
            )
            if weights is None:
                weights = model.get_weights()
            else:
                model.set_weights(weights)  # float32 variables under both policies
            # In a graph, as `fit` runs it (keras-hub's MaskedLMHead fails when
            # called eagerly under a mixed policy).
            outputs = tf.function(model)(batches[0], training=False)
            for name in ("loss", "mlm_logits", "rtd_logits"):
                assert outputs[name].dtype == tf.float32, (precision, name)
            losses[precision] = _fit_per_step_losses(model, batches, steps)
    full, half = losses["float32"], losses["mixed_bfloat16"]
    # The first step starts from the same weights and draws: only bfloat16's
    # rounding (8 bits of mantissa, ~0.4%) separates the two losses.
    np.testing.assert_allclose(half[0], full[0], rtol=0.005)
    # Later steps cannot agree step by step: once rounding flips one sampled
    # replacement, the labels differ and the two runs take different (equally
    # good) paths; a step's loss was seen 7.6% apart. What must hold is that
    # the curves follow each other: each third of the run has the same mean
    # loss within 8%, while training moves it by ~30%. Seen: at most 2.6% on
    # the Xeon; on the AVX-512 EPYC the middle third 4.8% apart, and 5.2%
    # once the bfloat16 block computed its GELU in float32 (the first step
    # still equal to 0.005%, the last third 0.2-2.5%).
    for window in range(3):
        part = slice(8 * window, 8 * window + 8)
        np.testing.assert_allclose(half[part].mean(), full[part].mean(), rtol=0.08)
    for run in (full, half):
        assert run[-6:].mean() < run[:6].mean() - 0.5, run


def test_float16_scales_the_loss_and_trains():
    from electra_tf.config import OptimizerConfig
    from electra_tf.optimization.optimizer import ElectraLossScaleOptimizer
    from electra_tf.pretraining.run import build_pretrainer

    vocabulary = _tiny_vocabulary()
    with _policy("mixed_float16"):
        model_config, pretraining_config = _tiny()
        model = build_pretrainer(
            model_config,
            pretraining_config,
            OptimizerConfig(learning_rate=1e-3, warmup_steps=0, total_steps=100),
            vocabulary,
            jit_compile=False,
        )
        assert isinstance(model.optimizer, ElectraLossScaleOptimizer)
        assert model.discriminator_encoder.compute_dtype == "float16"
        start = [w.numpy() for w in model.trainable_weights]
        # Dynamic loss scaling: steps whose scaled float16 gradients overflow
        # are skipped while the scale halves from 2**15, then updates resume.
        losses = _fit_per_step_losses(model, [random_batch(8, 32, seed=5)], 8)
        assert np.isfinite(losses).all(), losses
        scale = float(model.optimizer.dynamic_scale.numpy())
        skipped = round(np.log2(2.0**15 / scale))
        assert 0 < skipped < 8, scale
        assert int(model.optimizer.iterations.numpy()) == 8 - skipped
        moved = max(
            float(np.abs(w.numpy() - s).max())
            for w, s in zip(model.trainable_weights, start)
        )
        assert moved > 1e-4


# --- Gradient accumulation ----------------------------------------------------


@pytest.mark.slow
def test_accumulated_micro_batches_equal_one_large_batch():
    """2 updates of batch 8 == 2 x 2 micro-batches of 4 with accumulation 2.

    Every example is full-length, so each micro-batch has as many real tokens
    (and masked slots) as the other: Keras averages the micro-batches' mean
    gradients, which equals the large batch's mean gradient only then. With
    uneven counts it weights each micro-batch equally rather than each token.
    """
    batches = [random_batch(8, 32, seed=40 + s) for s in range(2)]
    for batch in batches:
        batch["padding_mask"][:] = 1
        batch["token_ids"][:, -1] = SEP
    examples = {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
    weights = None
    results = {}
    for accumulation, batch_size in ((None, 8), (2, 4)):
        model = make_pretrainer(*_tiny(dropout=0.0))
        # A clip norm the gradient exceeds: clipping must also see the sum.
        model.compile(
            optimizer=ElectraAdam(
                learning_rate=1e-2,
                global_clipnorm=0.5,
                gradient_accumulation_steps=accumulation,
            ),
            jit_compile=False,
        )
        if weights is None:
            weights = model.get_weights()
        else:
            model.set_weights(weights)
        dataset = tf.data.Dataset.from_tensor_slices(examples).batch(batch_size)
        model.fit(dataset, epochs=1, verbose=0)
        assert int(model.optimizer.iterations.numpy()) == 2
        results[accumulation] = model.get_weights()
    moved = max(float(np.abs(a - b).max()) for a, b in zip(results[None], weights))
    difference = max(
        float(np.abs(a - b).max()) for a, b in zip(results[None], results[2])
    )
    assert moved > 1e-3
    assert difference < 1e-5, difference
