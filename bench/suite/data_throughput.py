"""Data-path throughput: tokenisation, the TFRecord builder, the input pipeline.

Three measurements on the same real text, in one run:

1. WordPiece tokens/s of the tokenizer the builder uses (keras-hub /
   tensorflow-text `FastWordpieceTokenizer`, traced, one process) next to
   Hugging Face `tokenizers` (Rust `BertWordPieceTokenizer`, `encode_batch`,
   its own threads), alternating round by round on the same sentences;
2. tokens/s of the whole builder (`build_pretraining_data`: read, tokenise,
   pack, serialize, write) with `--processes` worker processes;
3. examples/s of the input pipeline (`make_pretraining_dataset`) reading what
   the builder wrote, next to the examples/s one training step of `--preset`
   consumes on this machine (a few real steps, no XLA).

    python -m bench.suite.data_throughput --corpus ../shared/data/corpus
"""

from __future__ import annotations

import argparse
import gzip
import os
import pathlib
import statistics
import tempfile
import time

from bench.result_file import write_result
from bench.run_info import run_info

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _sentences(corpus_dir: str) -> list[str]:
    lines = []
    for path in sorted(pathlib.Path(corpus_dir).glob("*")):
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as f:
            lines.extend(line.strip() for line in f if line.strip())
    return lines


def _time_ours(tokenize, sentences, batch):
    import tensorflow as tf

    start = time.perf_counter()
    tokens = 0
    for i in range(0, len(sentences), batch):
        ragged = tokenize(tf.constant(sentences[i : i + batch]))
        tokens += int(ragged.flat_values.shape[0])
    return tokens, time.perf_counter() - start


def _time_hf(tokenizer, sentences, batch):
    start = time.perf_counter()
    tokens = 0
    for i in range(0, len(sentences), batch):
        encodings = tokenizer.encode_batch(
            sentences[i : i + batch], add_special_tokens=False
        )
        tokens += sum(len(e.ids) for e in encodings)
    return tokens, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", required=True, help="Directory of .txt/.gz text.")
    parser.add_argument("--vocab", default="electra_tf/assets/vocab.txt")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--sentences", type=int, default=200_000, help="Sentences per round (1, 2)."
    )
    parser.add_argument("--batch", type=int, default=1024, help="Sentences per call.")
    parser.add_argument("--processes", type=int, default=2, help="Builder workers.")
    parser.add_argument("--preset", default="small", help="Model for step rate (3).")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--output", default="bench/results/data_throughput.json")
    args = parser.parse_args()

    import tensorflow as tf
    from tokenizers import BertWordPieceTokenizer

    from electra_tf.data.input_pipeline import make_pretraining_dataset
    from electra_tf.data.tfrecord_writer import (
        build_pretraining_data,
        tokenize_function,
    )
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.presets import get_preset
    from electra_tf.pretraining.run import build_pretrainer

    vocabulary = Vocabulary.from_file(args.vocab)
    sentences = _sentences(args.corpus)[: args.sentences]
    ours = tokenize_function(vocabulary, True, True)
    hf = BertWordPieceTokenizer(args.vocab, lowercase=True, strip_accents=True)
    # Both must produce the same tokens, or the comparison means nothing.
    sample = sentences[:2000]
    ours_ids = ours(tf.constant(sample)).to_list()
    hf_ids = [e.ids for e in hf.encode_batch(sample, add_special_tokens=False)]
    agreement = sum(a == b for a, b in zip(ours_ids, hf_ids)) / len(sample)

    rates = {"ours": [], "hf_tokenizers": []}
    for _ in range(args.rounds):
        tokens, seconds = _time_ours(ours, sentences, args.batch)
        rates["ours"].append(tokens / seconds)
        tokens, seconds = _time_hf(hf, sentences, args.batch)
        rates["hf_tokenizers"].append(tokens / seconds)
    tokenize = {name: statistics.median(r) for name, r in rates.items()}

    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        stats = build_pretraining_data(
            [args.corpus],
            vocabulary,
            out,
            num_processes=args.processes,
            progress=False,
        )
        build_seconds = time.perf_counter() - start
        build_rate = stats["tokens"] / build_seconds

        dataset = make_pretraining_dataset(
            os.path.join(out, "train-*"), args.batch_size, 128
        )
        iterator = iter(dataset)
        for _ in range(20):  # warm up the shuffle buffer and prefetch
            next(iterator)
        batches = 300
        start = time.perf_counter()
        for _ in range(batches):
            next(iterator)
        pipeline_rate = batches * args.batch_size / (time.perf_counter() - start)

        preset = get_preset(args.preset)
        model = build_pretrainer(
            preset.model.override(vocabulary_size=vocabulary.size),
            preset.pretraining,
            preset.optimizer,
            vocabulary,
            jit_compile=False,
        )
        model.fit(dataset, steps_per_epoch=2, verbose=0, shuffle=False)  # trace
        steps = 5
        start = time.perf_counter()
        model.fit(dataset, steps_per_epoch=steps, verbose=0, shuffle=False)
        train_rate = steps * args.batch_size / (time.perf_counter() - start)

    results = {
        **run_info(__file__),
        "sentences": len(sentences),
        "token_agreement_with_hf": agreement,
        "tokenize_tokens_per_s": tokenize,
        "tokenize_ratio_ours_to_hf": tokenize["ours"] / tokenize["hf_tokenizers"],
        "builder_tokens_per_s": build_rate,
        "builder_processes": args.processes,
        "pipeline_examples_per_s": pipeline_rate,
        "train_examples_per_s": {args.preset: train_rate},
        "pipeline_to_training_ratio": pipeline_rate / train_rate,
    }
    rows = [
        ("tokenize, ours (tokens/s)", f"{tokenize['ours']:,.0f}"),
        ("tokenize, HF tokenizers (tokens/s)", f"{tokenize['hf_tokenizers']:,.0f}"),
        ("  ratio ours / HF", f"{results['tokenize_ratio_ours_to_hf']:.2f}"),
        ("  same tokens as HF (share of sentences)", f"{agreement:.3f}"),
        ("builder end to end (tokens/s)", f"{build_rate:,.0f}"),
        ("input pipeline (examples/s)", f"{pipeline_rate:,.0f}"),
        (f"training consumes, {args.preset} (examples/s)", f"{train_rate:,.1f}"),
    ]
    for name, value in [("measurement", "value"), *rows]:
        print(f"{name:<44}{value:>14}")
    write_result(args.output, results)


if __name__ == "__main__":
    main()
