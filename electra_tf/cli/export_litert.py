"""Export a fine-tuned model as LiteRT: `electra-export-litert MODEL.keras`.

Reads a `.keras` file fine-tuning or pre-training wrote (`classifier.keras`,
`tagger.keras`, `question_answerer.keras` in a fine-tuning run's output
directory; `export/discriminator.keras` of a pre-training run) and writes to
--output-dir `model_<quantization>.tflite` for each --quantization and the
tokenizer's `vocab.txt` and `tokenizer_config.json`. The models take the
packed `token_ids`, `segment_ids` and `padding_mask` (int32 [batch, length])
and give the Keras model's outputs (signature `predict_token_ids`); run them with
`ai_edge_litert.interpreter.Interpreter`. See `electra_tf.export.litert`.

Example:
  electra-export-litert runs/finetune/sst2/classifier.keras \\
      --output-dir runs/finetune/sst2/litert
"""

from __future__ import annotations

import argparse
import os
import sys

from electra_tf.cli import command_line, load_library
from electra_tf.config import QUANTIZATIONS


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="electra-export-litert",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", help="The .keras file to export.")
    parser.add_argument("--output-dir", required=True, help="Directory to write.")
    parser.add_argument(
        "--quantization",
        action="append",
        choices=QUANTIZATIONS,
        help="float32, dynamic_int8 (int8 weights) or full_int8 (int8 weights "
        "and activations; needs --calibration-file). Repeat for several; "
        "default: float32 and dynamic_int8.",
    )
    parser.add_argument(
        "--calibration-file",
        help="full_int8: UTF-8 text, one example a line as the model takes it: "
        "a sentence, or for a model of text pairs (premise and hypothesis) the "
        "two texts separated by a tab; e.g. the training file's text columns. "
        "The first 32 lines calibrate.",
    )
    parser.add_argument(
        "--vocab",
        help="vocab.txt of the model's tokenizer; needed when the model file "
        "has no preprocessor (discriminator.keras).",
    )
    parser.add_argument(
        "--no-lowercase",
        action="store_true",
        help="With --vocab: the tokenizer keeps case (default: lower-cases).",
    )
    return parser.parse_args(argv)


@command_line(parse_args)
def main(args) -> int:
    litert = load_library("electra_tf.export.litert")
    quantizations = args.quantization or ["float32", "dynamic_int8"]
    model = litert.load_task_model(args.model)
    tokenizer = litert.model_tokenizer(model)
    if args.vocab:
        if not os.path.isfile(args.vocab):
            raise litert.LiteRTExportError(f"--vocab {args.vocab}: no such file")
        tokenizer = load_library("keras_hub").models.ElectraTokenizer(
            vocabulary=args.vocab, lowercase=not args.no_lowercase
        )
    if tokenizer is None:
        raise litert.LiteRTExportError(f"{args.model} has no tokenizer: pass --vocab")
    for quantization in quantizations:
        litert.check_quantization(model, quantization)
    calibration = None
    if "full_int8" in quantizations:
        if not args.calibration_file:
            raise litert.LiteRTExportError("full_int8 needs --calibration-file")
        if getattr(model, "preprocessor", None) is None:
            raise litert.LiteRTExportError(
                f"{args.model} has no preprocessor to tokenize --calibration-file"
            )
        calibration = litert.calibration_batches(
            model.preprocessor, litert.read_calibration_file(args.calibration_file)
        )
    paths = litert.export_litert(
        model, args.output_dir, tokenizer, quantizations, calibration=calibration
    )
    for name, path in paths.items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
