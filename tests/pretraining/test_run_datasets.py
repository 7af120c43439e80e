"""The datasets `run_pretraining` trains and evaluates on."""

import tensorflow as tf

from electra_tf.config import PretrainingConfig, TrainingConfig
from electra_tf.pretraining.run import _datasets
from tests.helpers import write_pretraining_records

L = 8


def test_every_evaluation_reads_the_same_first_eval_steps_batches(tmp_path):
    write_pretraining_records(tmp_path / "train-0.tfrecord", 10, L, start=1)
    # 5 held-out records in batches of 2: the 3 batches wrap around.
    write_pretraining_records(tmp_path / "eval-0.tfrecord", 5, L, start=101)
    training = TrainingConfig(
        train_data=str(tmp_path / "train-*"),
        eval_data=str(tmp_path / "eval-*"),
        batch_size=2,
        eval_steps=3,
    )
    _, evaluation = _datasets(
        tf.distribute.get_strategy(),
        training,
        PretrainingConfig(max_seq_length=L),
        vocabulary_size=200,
    )

    def read():
        # At most 10: a repeating dataset would give 10.
        batches = evaluation.take(10)
        return [batch["token_ids"][:, 0].numpy().tolist() for batch in batches]

    # Exactly eval_steps batches: each evaluation's iterator ends with nothing
    # left reading, and the same batches come back.
    assert read() == [[101, 102], [103, 104], [105, 101]]
    assert read() == [[101, 102], [103, 104], [105, 101]]
