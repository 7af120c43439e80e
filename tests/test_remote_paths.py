"""A whole run on a non-local file system, as on a TPU with everything in gs://.

TensorFlow's `ram://` file system stands in for GCS: it is reached only through
`tf.io.gfile` (and Keras' remote-path handling), like `gs://`, so any code that
uses `os` or `open` on a run's paths writes a local `ram:` folder instead, or
fails. Data are built, read, checkpointed, logged and exported there.
"""

import os
import pathlib

import pytest
import tensorflow as tf

from electra_tf.config import (
    ModelConfig,
    OptimizerConfig,
    PretrainingConfig,
    TrainingConfig,
)
from electra_tf.data.tfrecord_writer import build_pretraining_data
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.pretraining.run import run_pretraining

REPO = pathlib.Path(__file__).parents[1]
ROOT = "ram://electra_remote_paths"


@pytest.mark.slow
def test_data_checkpoints_logs_and_exports_on_a_gfile_file_system(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # where a wrongly local write would land
    vocabulary = Vocabulary.from_file(str(REPO / "electra_tf/assets/vocab.txt"))
    build_pretraining_data(
        [str(REPO / "electra_tf/assets/corpus/brown.txt.gz")],
        vocabulary,
        f"{ROOT}/data",
        max_seq_length=32,
        num_shards=2,
        eval_fraction=0.05,
        progress=False,
    )
    model = ModelConfig(
        vocabulary_size=vocabulary.size,
        num_layers=1,
        hidden_dim=32,
        embedding_dim=16,
        max_sequence_length=32,
        generator_hidden_size=0.5,
    )
    training = TrainingConfig(
        model_dir=f"{ROOT}/run",
        train_data=f"{ROOT}/data/train-*",
        eval_data=f"{ROOT}/data/eval-*",
        train_steps=2,
        batch_size=4,
        checkpoint_every=1,
        eval_steps=1,
        jit_compile=False,
    )
    results = run_pretraining(
        model,
        PretrainingConfig(max_seq_length=32),
        OptimizerConfig(learning_rate=1e-3, warmup_steps=1, total_steps=2),
        training,
        vocabulary,
        tf.distribute.get_strategy(),
        verbose=0,
    )
    assert results["step"] == 2
    run = f"{ROOT}/run"
    assert tf.train.latest_checkpoint(f"{run}/checkpoints").endswith("ckpt-2")
    for path in (
        "config.json",
        "eval_results.json",
        "export/discriminator/config.json",
        "export/discriminator/model.weights.h5",
        "export/discriminator/assets/tokenizer/vocabulary.txt",
        "export/discriminator.keras",
        "export/generator.keras",
        "export/saved_model/saved_model.pb",
        "export/hub/encoder/saved_model.pb",
        "export/hub/preprocessing/saved_model.pb",
    ):
        assert tf.io.gfile.exists(f"{run}/{path}"), path
    assert tf.io.gfile.glob(f"{run}/logs/train/events.out.tfevents.*")
    # Nothing went to the local disk instead.
    assert not os.listdir(tmp_path), os.listdir(tmp_path)
