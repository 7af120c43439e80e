"""A fine-tuned tagger's test-split accuracy in Keras and as LiteRT float32
and dynamic-range int8 (`electra_tf.export.litert`, run with `ai_edge_litert`).

Every side reads the same windows (the tagger's preprocessor: words split
into WordPieces, windows over long sentences) and each word's tag at its
first piece; only the model that maps packed token ids to logits differs.
The score is token accuracy over the words of `--test-conll`, the metric
fine-tuning reports for POS tags.

    python -m bench.suite.litert_tagging --tagger runs/pos/tagger.keras \\
        --test-conll electra_tf/assets/tasks/brown_pos/test.conll
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tagger", required=True, help="A fine-tuned tagger.keras.")
    parser.add_argument("--test-conll", required=True)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--output", default="bench/results/litert_tagging.json")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    import keras
    import numpy as np
    import tensorflow as tf
    from ai_edge_litert.interpreter import Interpreter

    from bench.result_file import write_result
    from bench.run_info import run_info
    from electra_tf.export.litert import ENCODER_INPUTS, SIGNATURE, litert_model
    from electra_tf.finetuning.tagging_data import read_conll
    from electra_tf.models.dynamic_padding import trim_padding

    tagger = keras.models.load_model(args.tagger, compile=False)
    test = read_conll(args.test_conll)
    tags = list(tagger.preprocessor.tags)
    runners = {"keras_float32": None}
    for quantization in ("float32", "dynamic_int8"):
        interpreter = Interpreter(model_content=litert_model(tagger, quantization))
        runners[f"litert_{quantization}"] = interpreter.get_signature_runner(SIGNATURE)
    right = dict.fromkeys(runners, 0)
    agree = dict.fromkeys(runners, 0)
    total = 0
    for start in range(0, len(test.words), args.batch_size):
        words = tf.ragged.constant(test.words[start : start + args.batch_size])
        gold = test.tags[start : start + args.batch_size]
        windows = tagger.preprocessor.windows(words)
        inputs = trim_padding({key: windows[key] for key in ENCODER_INPUTS})
        index = tf.stack(
            [windows["word_window"].flat_values, windows["word_position"].flat_values],
            axis=1,
        ).numpy()
        flat_gold = np.array([tags.index(tag) for row in gold for tag in row])
        total += len(flat_gold)
        predicted = {}
        for name, runner in runners.items():
            if runner is None:
                logits = np.asarray(tagger(inputs, training=False), np.float32)
            else:
                packed = {
                    key: np.asarray(value, np.int32) for key, value in inputs.items()
                }
                logits = runner(**packed)["logits"]
            predicted[name] = logits[index[:, 0], index[:, 1]].argmax(-1)
            right[name] += int((predicted[name] == flat_gold).sum())
        for name in runners:
            agree[name] += int((predicted[name] == predicted["keras_float32"]).sum())
    rows = {
        name: {
            "test_accuracy": right[name] / total,
            "same_tag_as_keras": agree[name] / total,
        }
        for name in runners
    }
    print(f"{args.tagger} on {args.test_conll}: {total} words")
    for name, row in rows.items():
        print(
            f"{name:<22} accuracy {row['test_accuracy']:.4f}  "
            f"same tag as Keras {row['same_tag_as_keras']:.4f}"
        )
    write_result(
        args.output,
        {
            **run_info(__file__),
            "tagger": args.tagger,
            "test_conll": args.test_conll,
            "words": total,
            "results": rows,
        },
    )


if __name__ == "__main__":
    main()
