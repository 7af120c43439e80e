"""What a pre-trained encoder's frozen features know about a sentence task.

Encodes the training and dev sentences of a task in SST-2's layout (default:
the bundled rt_polarity excerpt) with a keras-hub ELECTRA preset, once with
its pre-trained weights and once with random weights of the same shape, and
fits a logistic regression (scikit-learn) on two sentence vectors: the
`[CLS]` output (what ELECTRA's classification head reads) and the mean of the
token outputs. Dev accuracy of each, against the dev majority class. Answers
"does the encoder carry the task's signal before fine-tuning touches it?",
separately from how fine-tuning then uses it.

    python -m bench.studies.feature_probe \\
        --pretrained runs/pretrain/export/discriminator
"""

from __future__ import annotations

import argparse
import csv
import json
import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

DEMO_TASK = os.path.join("electra_tf", "assets", "tasks", "rt_polarity")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pretrained", required=True, help="keras-hub preset dir.")
    parser.add_argument(
        "--task-dir", default=DEMO_TASK, help="train.tsv and dev.tsv (SST-2 layout)."
    )
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--output", default="bench/results/feature_probe.json")
    return parser.parse_args(argv)


def read_split(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [row["sentence"] for row in rows], np.array([int(r["label"]) for r in rows])


def sentence_vectors(classifier, sentences, batch_size=256):
    """`[CLS]` outputs and mean-pooled token outputs of the encoder."""
    cls_vectors, mean_vectors = [], []
    for start in range(0, len(sentences), batch_size):
        inputs = classifier.preprocessor(sentences[start : start + batch_size])
        inputs = inputs[0] if isinstance(inputs, tuple) else inputs
        outputs = classifier.backbone(inputs)
        hidden = np.asarray(outputs["sequence_output"])
        mask = np.asarray(inputs["padding_mask"], dtype=np.float32)[..., None]
        cls_vectors.append(hidden[:, 0])
        mean_vectors.append((hidden * mask).sum(1) / mask.sum(1))
    return np.concatenate(cls_vectors), np.concatenate(mean_vectors)


def main(argv=None):
    args = parse_args(argv)
    from sklearn.linear_model import LogisticRegression

    from bench.run_info import run_info
    from electra_tf.models.text_classifier import ElectraTextClassifier

    train_x, train_y = read_split(os.path.join(args.task_dir, "train.tsv"))
    dev_x, dev_y = read_split(os.path.join(args.task_dir, "dev.tsv"))
    majority = max(np.mean(dev_y), 1 - np.mean(dev_y))
    results = {}
    for weights in ("pre-trained", "random"):
        classifier = ElectraTextClassifier.from_preset(
            args.pretrained,
            num_classes=2,
            sequence_length=args.sequence_length,
            load_weights=weights == "pre-trained",
        )
        train_vectors = sentence_vectors(classifier, train_x)
        dev_vectors = sentence_vectors(classifier, dev_x)
        for name, train, dev in zip(("cls", "mean"), train_vectors, dev_vectors):
            probe = LogisticRegression(max_iter=2000).fit(train, train_y)
            accuracy = float(probe.score(dev, dev_y))
            results[f"{weights} {name}"] = round(accuracy, 4)
            print(f"{weights:12s} {name:5s} dev accuracy {accuracy:.3f}")
    print(f"dev majority class {majority:.3f}")
    report = {
        "run": run_info(__file__),
        "setup": vars(args),
        "dev_majority": round(float(majority), 4),
        "dev_accuracy": results,
    }
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
