"""Serving latency: our raw-text SavedModels and LiteRT models next to the peer.

    python -m bench.suite.serving_latency --preset small

Default: an `ElectraTextClassifier` of `--preset`'s size, random weights,
exported by `electra_tf.export.classifier` and loaded with `tf.saved_model.load`
in a process importing only `tensorflow` and `tensorflow_text`, against
`transformers.pipeline("text-classification")` of the same size on all cores
and on one thread. Requests alternate between the processes one by one; inputs
are rt_polarity dev sentences (the bundled excerpt); batch 1 sentence by
sentence, throughput on batches of `--batch-size`.

With `--classifier PATH.keras` (a fine-tuned classifier), the compact-serving
comparison on one set of weights: our float32 SavedModel; LiteRT float32,
dynamic int8 and full int8 (calibrated on `--calibration-tsv`;
`electra_tf.export.litert`); the peer's `ElectraForSequenceClassification`
float32 and `quantize_dynamic` int8 (our encoder converted by
`electra_tf.conversion.hf`, with our head). One thread each, pinned to
`--core`; p50/p95 at batch 1 and 32, size on disk, accuracy on `--test-tsv`.
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
# The compact-serving comparison (`--classifier`).
COMPACT_SERVERS = (
    "saved_model",
    "litert_float32",
    "litert_int8",
    "litert_full_int8",
    "torch_float32",
    "torch_int8",
)


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
    parser.add_argument(
        "--classifier",
        help="A fine-tuned classifier .keras file: run the compact-serving "
        "comparison (SavedModel, LiteRT float32/int8, torch float32/int8).",
    )
    parser.add_argument(
        "--test-tsv", help="With --classifier: `sentence` and `label` columns."
    )
    parser.add_argument(
        "--calibration-tsv",
        help="With --classifier: sentences (a `sentence` column) whose first 32 "
        "calibrate the full-integer LiteRT model; default: the bundled "
        "rt_polarity training excerpt.",
    )
    parser.add_argument(
        "--core", type=int, default=1, help="With --classifier: the core to pin to."
    )
    # Internal: one server's process.
    parser.add_argument(
        "--worker", choices=SERVERS + COMPACT_SERVERS, help=argparse.SUPPRESS
    )
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


def compact_predict(name: str, export_dir: str, max_seq_length: int):
    """`predict(sentences) -> label ids` of one compact-serving server, on
    one thread."""
    import numpy as np

    directory = pathlib.Path(export_dir)
    if name == "saved_model":
        import tensorflow as tf
        import tensorflow_text  # noqa: F401

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        serve = tf.saved_model.load(str(directory / "saved_model")).signatures[
            "serving_default"
        ]
        return lambda s: serve(sentence=tf.constant(s))["label_id"].numpy()
    if name.startswith("litert"):
        import keras_hub
        from ai_edge_litert.interpreter import Interpreter

        config = json.loads(
            (directory / "litert" / "tokenizer_config.json").read_text()
        )
        tokenizer = keras_hub.models.ElectraTokenizer(
            vocabulary=str(directory / "litert" / "vocab.txt"),
            lowercase=config["lowercase"],
        )
        quantization = {
            "litert_float32": "float32",
            "litert_int8": "dynamic_int8",
            "litert_full_int8": "full_int8",
        }[name]
        model = Interpreter(
            model_path=str(directory / "litert" / f"model_{quantization}.tflite"),
            num_threads=1,
        )
        runner = model.get_signature_runner("predict_token_ids")

        def predict(sentences):
            rows = [
                [tokenizer.cls_token_id]
                + ids[: max_seq_length - 2]
                + [tokenizer.sep_token_id]
                for ids in tokenizer(sentences)
            ]
            token_ids = np.full(
                (len(rows), max(map(len, rows))), tokenizer.pad_token_id, np.int32
            )
            for i, row in enumerate(rows):
                token_ids[i, : len(row)] = row
            logits = runner(
                token_ids=token_ids,
                segment_ids=np.zeros_like(token_ids),
                padding_mask=(token_ids != tokenizer.pad_token_id).astype(np.int32),
            )["logits"]
            return logits.argmax(-1)

        return predict
    import torch

    from bench.hf_peer import bert_tokenizer

    torch.set_num_threads(1)
    model = peer_classifier(directory)
    if name == "torch_int8":
        model = torch.ao.quantization.quantize_dynamic(
            model, {torch.nn.Linear}, dtype=torch.qint8
        )
    config = json.loads((directory / "litert" / "tokenizer_config.json").read_text())
    tokenizer = bert_tokenizer(
        directory / "hf" / "vocab.txt", lowercase=config["lowercase"]
    )

    def predict(sentences):
        batch = tokenizer(
            sentences,
            truncation=True,
            max_length=max_seq_length,
            padding=True,
            return_tensors="pt",
        )
        with torch.inference_mode():
            return model(**batch).argmax(-1).numpy()

    return predict


def peer_classifier(directory):
    """The peer: transformers' `ElectraForSequenceClassification` with its
    classification head replaced by ours (one dense layer on the [CLS]
    state, or on the mean of the real tokens' states for `pooling="mean"`),
    the weights those `export_compact` wrote."""
    import json

    import numpy as np
    import torch
    import transformers

    directory = pathlib.Path(directory)
    head = np.load(directory / "head.npz")
    mean = json.loads((directory / "head.json").read_text())["pooling"] == "mean"

    class Classifier(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.electra = (
                transformers.ElectraForSequenceClassification.from_pretrained(
                    str(directory / "hf"), num_labels=2
                ).electra
            )
            self.out_proj = torch.nn.Linear(*head["kernel"].shape)
            with torch.no_grad():
                self.out_proj.weight.copy_(torch.from_numpy(head["kernel"].T.copy()))
                self.out_proj.bias.copy_(torch.from_numpy(head["bias"]))

        def forward(self, input_ids, attention_mask, token_type_ids):
            hidden = self.electra(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            ).last_hidden_state
            if mean:
                weights = attention_mask[..., None].to(hidden.dtype)
                pooled = (hidden * weights).sum(1) / weights.sum(1)
            else:
                pooled = hidden[:, 0]
            return self.out_proj(pooled)

    return Classifier().eval()


def worker(args) -> None:
    """Answers `[sentences]` lines with the seconds one call took, and a
    `{"score": tsv}` line (compact servers) with the accuracy on it."""
    if args.worker in COMPACT_SERVERS:
        os.sched_setaffinity(0, {args.core})
        predict = compact_predict(args.worker, args.export_dir, args.max_seq_length)
        for line in sys.stdin:
            request = json.loads(line)
            if isinstance(request, dict):
                rows = list(csv.DictReader(open(request["score"]), delimiter="\t"))
                right = 0
                for start in range(0, len(rows), 32):
                    chunk = rows[start : start + 32]
                    labels = predict([row["sentence"] for row in chunk])
                    right += sum(
                        int(label) == int(row["label"])
                        for label, row in zip(labels, chunk)
                    )
                print(json.dumps(right / len(rows)), flush=True)
                continue
            start = time.perf_counter()
            predict(request)
            print(json.dumps(time.perf_counter() - start), flush=True)
        return
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
                "--core",
                args.core,
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

    def score(self, tsv: str) -> float:
        """The server's accuracy on `tsv` (compact servers)."""
        return self.seconds({"score": tsv})

    def stop(self):
        self.process.stop()


def _percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def export_compact(
    classifier_path: str, export_dir: str, calibration_tsv: str | None = None
) -> dict:
    """The classifier's SavedModel, LiteRT models and Hugging Face copy in
    `export_dir`; their sizes on disk in bytes. The full-integer LiteRT
    model is calibrated on the first 32 sentences of `calibration_tsv`
    (default: the bundled rt_polarity training excerpt)."""
    import keras
    import numpy as np

    from electra_tf.conversion.hf import save_hf_encoder
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.export.classifier import export_text_classifier
    from electra_tf.export.litert import (
        calibration_batches,
        export_litert,
        model_tokenizer,
    )

    directory = pathlib.Path(export_dir)
    classifier = keras.models.load_model(classifier_path, compile=False)
    export_text_classifier(
        classifier,
        str(directory / "saved_model"),
        ("sentence",),
        label_names=("negative", "positive"),
    )
    tokenizer = model_tokenizer(classifier)
    calibration = read_sentences(
        calibration_tsv or str(ASSETS / "tasks" / "rt_polarity" / "train.tsv")
    )
    export_litert(
        classifier,
        str(directory / "litert"),
        tokenizer,
        quantizations=("float32", "dynamic_int8", "full_int8"),
        calibration=calibration_batches(classifier.preprocessor, calibration),
    )
    save_hf_encoder(
        classifier.backbone,
        directory / "hf",
        Vocabulary.from_file(
            directory / "litert" / "vocab.txt", lowercase=tokenizer.lowercase
        ),
    )
    kernel, bias = classifier.output_dense.get_weights()
    np.savez(directory / "head.npz", kernel=kernel, bias=bias)
    (directory / "head.json").write_text(json.dumps({"pooling": classifier.pooling}))

    def size(path):
        path = pathlib.Path(path)
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())

    sizes = {
        "saved_model": size(directory / "saved_model"),
        "litert_float32": size(directory / "litert" / "model_float32.tflite"),
        "litert_int8": size(directory / "litert" / "model_dynamic_int8.tflite"),
        "litert_full_int8": size(directory / "litert" / "model_full_int8.tflite"),
    }
    # The peer's weights as torch saves them (float32, and after quantize_dynamic).
    import torch

    model = peer_classifier(directory)
    torch.save(model.state_dict(), directory / "torch_float32.pt")
    quantized = torch.ao.quantization.quantize_dynamic(
        model, {torch.nn.Linear}, dtype=torch.qint8
    )
    torch.save(quantized.state_dict(), directory / "torch_int8.pt")
    sizes["torch_float32"] = size(directory / "torch_float32.pt")
    sizes["torch_int8"] = size(directory / "torch_int8.pt")
    return sizes


def compact_main(args):
    """The compact-serving comparison (`--classifier`)."""
    sentences = read_sentences(args.tsv)
    with tempfile.TemporaryDirectory() as export_dir:
        sizes = export_compact(args.classifier, export_dir, args.calibration_tsv)
        servers = {name: Server(name, args, export_dir) for name in COMPACT_SERVERS}
        try:
            scores = {name: s.score(args.test_tsv) for name, s in servers.items()}
            for server in servers.values():  # load, trace, warm caches
                for _ in range(3):
                    server.seconds(sentences[:1])
                    server.seconds(sentences[: args.batch_size])
            latency = {name: [] for name in servers}
            batched = {name: [] for name in servers}
            for index in range(args.sentences):
                sentence = [sentences[index % len(sentences)]]
                for name, server in servers.items():
                    latency[name].append(server.seconds(sentence))
            span = max(1, len(sentences) - args.batch_size)
            for index in range(args.batches):
                start = (index * args.batch_size) % span
                batch = sentences[start : start + args.batch_size]
                for name, server in servers.items():
                    batched[name].append(server.seconds(batch))
        except WorkerDied as error:
            sys.exit(f"error: {error}")
        finally:
            for server in servers.values():
                server.stop()
    rows = {
        name: {
            "batch1_p50_ms": 1e3 * statistics.median(latency[name]),
            "batch1_p95_ms": 1e3 * _percentile(latency[name], 0.95),
            f"batch{args.batch_size}_p50_ms": 1e3 * statistics.median(batched[name]),
            f"batch{args.batch_size}_p95_ms": 1e3 * _percentile(batched[name], 0.95),
            "size_mb": sizes[name] / 1e6,
            "test_accuracy": scores[name],
        }
        for name in COMPACT_SERVERS
    }
    print(
        f"{args.classifier}, max length {args.max_seq_length}, one thread on core "
        f"{args.core}, {args.sentences} batch-1 requests, {args.batches} batches "
        f"of {args.batch_size}"
    )
    b = args.batch_size
    print(
        f"{'server':<16} {'p50 ms':>8} {'p95 ms':>8} {f'p50@{b}':>9} "
        f"{f'p95@{b}':>9} {'MB':>7} {'test acc':>9}"
    )
    for name, row in rows.items():
        print(
            f"{name:<16} {row['batch1_p50_ms']:8.2f} {row['batch1_p95_ms']:8.2f} "
            f"{row[f'batch{b}_p50_ms']:9.1f} {row[f'batch{b}_p95_ms']:9.1f} "
            f"{row['size_mb']:7.1f} {row['test_accuracy']:9.4f}"
        )
    from bench.run_info import run_info

    write_result(
        args.output,
        {
            **run_info(__file__),
            "classifier": args.classifier,
            "test_tsv": args.test_tsv,
            "max_seq_length": args.max_seq_length,
            "batch_size": args.batch_size,
            "requests": args.sentences,
            "core": args.core,
            "threads": 1,
            "results": rows,
        },
    )


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        return worker(args)
    if args.classifier:
        return compact_main(args)
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
