"""Latency of the raw-text classifier SavedModel, next to a transformers pipeline.

Ours: an `ElectraTextClassifier` of `--preset`'s size exported with
`electra_tf.export.classifier` and loaded back with `tf.saved_model.load`
in a process that imports only `tensorflow` and `tensorflow_text`, as a
server would (tokenisation, packing, encoder and head in one graph).
Peer: `transformers.pipeline("text-classification")` over an
`ElectraForSequenceClassification` of the same size with a `BertTokenizerFast`
on the same vocabulary, on PyTorch with all cores (`transformers`) and with one thread
(`transformers_1_thread`). Weights are random on both sides: latency does
not depend on them.

Each side runs in its own process; the requests alternate between them one
by one (a shared machine drifts; ratios within a run hold), and each side
times only its own call. Inputs are real sentences (the dev split of the
bundled rt_polarity excerpt), truncated at `--max-seq-length`. Batch-1 latency
is measured sentence by sentence; throughput on batches of `--batch-size`.

    python -m bench.suite.serving_latency --preset small
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

from bench.result_file import write_result
from bench.worker_process import WorkerDied, WorkerProcess

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ASSETS = REPO / "electra_tf" / "assets"
# The peer twice: with PyTorch's default of one thread per core, as a user
# gets it, and on one thread, which is faster when other jobs load the cores
# (its worker threads spin-wait for each other at every small op).
SERVERS = ("ours", "transformers", "transformers_1_thread")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="small")
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--sentences", type=int, default=300, help="Batch-1 requests per side."
    )
    parser.add_argument(
        "--batches", type=int, default=20, help="Throughput batches per side."
    )
    parser.add_argument(
        "--tsv",
        default=str(ASSETS / "tasks" / "rt_polarity" / "dev.tsv"),
        help="Sentences: a TSV with a `sentence` column.",
    )
    parser.add_argument("--output", default="bench/results/serving_latency.json")
    # Internal: one server's process.
    parser.add_argument("--worker", choices=SERVERS, help=argparse.SUPPRESS)
    parser.add_argument("--export-dir", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def read_sentences(path: str) -> list[str]:
    with open(path, encoding="utf-8", newline="") as f:
        return [row["sentence"] for row in csv.DictReader(f, delimiter="\t")]


def _model_config(preset_name: str):
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.presets import get_preset

    vocabulary = Vocabulary.from_file(ASSETS / "vocab.txt")
    model = get_preset(preset_name).model.override(vocabulary_size=vocabulary.size)
    return model, vocabulary


def export_ours(preset_name: str, max_seq_length: int, export_dir: str) -> None:
    """A randomly initialised `small` classifier as a raw-text SavedModel."""
    from electra_tf.config import FinetuningConfig
    from electra_tf.export.classifier import export_text_classifier
    from electra_tf.finetuning.classification import build_classifier
    from electra_tf.finetuning.glue_tasks import get_task
    from electra_tf.finetuning.starting_point import StartingPoint

    model, vocabulary = _model_config(preset_name)
    task = get_task("sst2")
    classifier = build_classifier(
        task,
        FinetuningConfig(max_seq_length=max_seq_length),
        StartingPoint(None, model, vocabulary),
    )
    export_text_classifier(
        classifier, export_dir, task.text_features, label_names=task.label_names
    )


def our_predict(export_dir: str):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the WordPiece op)

    serve = tf.saved_model.load(export_dir).signatures["serving_default"]

    def predict(sentences):
        return serve(sentence=tf.constant(sentences))["probabilities"].numpy()

    return predict


def peer_predict(preset_name: str, max_seq_length: int, threads: int):
    import torch
    import transformers

    from bench.hf_peer import bert_tokenizer, electra_configs

    torch.set_num_threads(threads)
    model, vocabulary = _model_config(preset_name)
    _, config = electra_configs(model, vocabulary.size, model.max_sequence_length)
    config.num_labels = 2
    classifier = transformers.ElectraForSequenceClassification(config).eval()
    tokenizer = bert_tokenizer(ASSETS / "vocab.txt")
    pipe = transformers.pipeline(
        "text-classification", model=classifier, tokenizer=tokenizer, device="cpu"
    )

    def predict(sentences):
        return pipe(
            sentences,
            batch_size=len(sentences),
            truncation=True,
            max_length=max_seq_length,
            top_k=None,
        )

    return predict


def worker(args) -> None:
    """Answers `[sentences]` lines with the seconds one call took."""
    if args.worker == "ours":
        predict = our_predict(args.export_dir)
    else:
        threads = 1 if args.worker == "transformers_1_thread" else os.cpu_count()
        predict = peer_predict(args.preset, args.max_seq_length, threads)
    for line in sys.stdin:
        sentences = json.loads(line)
        start = time.perf_counter()
        predict(sentences)
        print(json.dumps(time.perf_counter() - start), flush=True)


class Server:
    """One server in its own process, driven over a pipe."""

    def __init__(self, name, args, export_dir):
        self.name = name
        self.process = WorkerProcess(
            name,
            "bench.suite.serving_latency",
            [
                "--worker",
                name,
                "--preset",
                args.preset,
                "--max-seq-length",
                args.max_seq_length,
                "--export-dir",
                export_dir,
            ],
        )

    def seconds(self, sentences) -> float:
        """Seconds the server took to answer `sentences`; `WorkerDied` if it died."""
        self.process.send(json.dumps(sentences))
        while True:
            line = self.process.receive()
            try:
                return float(json.loads(line))
            except (ValueError, TypeError):  # a library printed something
                continue

    def stop(self):
        self.process.stop()


def _percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    sentences = read_sentences(args.tsv)
    with tempfile.TemporaryDirectory() as export_dir:
        export_ours(args.preset, args.max_seq_length, export_dir)
        servers = {name: Server(name, args, export_dir) for name in SERVERS}
        try:
            for server in servers.values():  # load, trace, warm caches
                for _ in range(3):
                    server.seconds(sentences[:1])
                    server.seconds(sentences[: args.batch_size])
            latency = {name: [] for name in servers}
            for index in range(args.sentences):
                sentence = [sentences[index % len(sentences)]]
                for name, server in servers.items():
                    latency[name].append(server.seconds(sentence))
            throughput = {name: [] for name in servers}
            span = max(1, len(sentences) - args.batch_size)
            for index in range(args.batches):
                start = (index * args.batch_size) % span
                batch = sentences[start : start + args.batch_size]
                for name, server in servers.items():
                    throughput[name].append(len(batch) / server.seconds(batch))
        except WorkerDied as error:
            sys.exit(f"error: {error}")
        finally:
            for server in servers.values():
                server.stop()

    batched = f"batch{args.batch_size}_sentences_per_second"
    rows = {
        name: {
            "batch1_p50_ms": 1e3 * statistics.median(latency[name]),
            "batch1_p95_ms": 1e3 * _percentile(latency[name], 0.95),
            batched: statistics.median(throughput[name]),
        }
        for name in servers
    }
    ratios = {
        name: rows["ours"]["batch1_p50_ms"] / rows[name]["batch1_p50_ms"]
        for name in SERVERS[1:]
    }
    print(
        f"{args.preset}, max length {args.max_seq_length}, {args.sentences} "
        f"batch-1 requests, {args.batches} batches of {args.batch_size}"
    )
    header = f"sent/s @{args.batch_size}"
    print(f"{'server':<22} {'p50 ms':>8} {'p95 ms':>8} {header:>12}")
    for name, row in rows.items():
        print(
            f"{name:<22} {row['batch1_p50_ms']:8.1f} {row['batch1_p95_ms']:8.1f} "
            f"{row[batched]:12.1f}"
        )
    for name, ratio in ratios.items():
        print(f"ours / {name} batch-1 p50: {ratio:.2f}")

    import torch  # noqa: F401  (imported for the versions in the report)
    import transformers  # noqa: F401

    from bench.run_info import run_info

    write_result(
        args.output,
        {
            **run_info(__file__),
            "preset": args.preset,
            "max_seq_length": args.max_seq_length,
            "batch_size": args.batch_size,
            "requests": args.sentences,
            "results": rows,
            "batch1_p50_ratio_ours_over": ratios,
        },
    )


if __name__ == "__main__":
    main()
