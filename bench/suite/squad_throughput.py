"""Fine-tuning and answering throughput of `ElectraQuestionAnswerer` on this machine.

Trains a randomly initialised answerer of `--preset`'s size (the bundled BERT
vocabulary) with `model.fit` on the SQuAD-layout fixture
(`tests/fixtures/squad/train-v2.0.json`, repeated to `--questions`), then
answers the dev questions with `model.answer` (windows, encoder, span head
and span search). The training windows are made once, before the timed
epochs, as the run does. Reports questions and windows per second after a
warm-up epoch (tracing excluded), as JSON in `--output`.

    python -m bench.suite.squad_throughput --preset small --max-seq-length 384
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import time

from bench.result_file import write_result

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

FIXTURE = REPO / "tests" / "fixtures" / "squad"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="small")
    parser.add_argument("--max-seq-length", type=int, default=384)
    parser.add_argument("--doc-stride", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32, help="Windows.")
    parser.add_argument(
        "--questions", type=int, default=256, help="Training questions per epoch."
    )
    parser.add_argument("--epochs", type=int, default=2, help="Timed epochs.")
    parser.add_argument("--output", default="bench/results/squad_throughput.json")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    import keras
    import numpy as np

    from bench.run_info import run_info
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.finetuning import length_grouping
    from electra_tf.finetuning.question_answering import (
        QuestionAnsweringConfig,
        build_question_answerer,
        training_windows,
    )
    from electra_tf.finetuning.squad_data import load_squad_split
    from electra_tf.finetuning.starting_point import StartingPoint
    from electra_tf.finetuning.trainer import make_optimizer
    from electra_tf.presets import get_preset

    vocabulary = Vocabulary.from_file(REPO / "electra_tf" / "assets" / "vocab.txt")
    model_config = get_preset(args.preset).model.override(
        vocabulary_size=vocabulary.size
    )
    config = QuestionAnsweringConfig(
        max_seq_length=args.max_seq_length,
        doc_stride=args.doc_stride,
        batch_size=args.batch_size,
    )
    train = load_squad_split(2, "train", str(FIXTURE))
    dev = load_squad_split(2, "dev", str(FIXTURE))
    train = (train * (args.questions // len(train) + 1))[: args.questions]
    keras.utils.set_random_seed(1)
    model = build_question_answerer(
        2, config, StartingPoint(None, model_config, vocabulary)
    )
    window_data = training_windows(model.preprocessor, train)
    windows = len(window_data[0]["token_ids"])
    steps = -(-windows // config.batch_size)
    model.compile(
        optimizer=make_optimizer(
            config, model.backbone.num_layers, (args.epochs + 1) * steps
        )
    )
    dataset = length_grouping.batches(
        window_data, config.batch_size, shuffle=True, seed=1
    )
    model.fit(dataset, epochs=1, shuffle=False, verbose=0)  # warm-up: tracing
    start = time.perf_counter()
    model.fit(dataset, epochs=args.epochs, shuffle=False, verbose=0)
    train_seconds = time.perf_counter() - start

    questions = [e.question for e in dev] * 8
    contexts = [e.context for e in dev] * 8
    model.answer(questions[:32], contexts[:32])  # warm-up: tracing
    start = time.perf_counter()
    model.answer(questions, contexts, batch_size=32)
    answer_seconds = time.perf_counter() - start

    report = {
        **run_info(__file__),
        "preset": args.preset,
        "max_seq_length": args.max_seq_length,
        "doc_stride": args.doc_stride,
        "batch_size_windows": args.batch_size,
        "train_questions": len(train),
        "train_windows": windows,
        "fit_questions_per_second": args.epochs * len(train) / train_seconds,
        "fit_windows_per_second": args.epochs * windows / train_seconds,
        "answer_questions_per_second": len(questions) / answer_seconds,
        "parameters": int(np.sum([np.prod(v.shape) for v in model.trainable_weights])),
    }
    write_result(args.output, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
