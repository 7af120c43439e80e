"""What a pre-trained encoder's frozen features know about a sentence task.

Encodes the training and dev sentences of a task in SST-2's layout (default:
the bundled rt_polarity excerpt) with a keras-hub ELECTRA preset, once with
its pre-trained weights and once with random weights of the same shape, and
fits a logistic regression (scikit-learn) on two sentence vectors: the
`[CLS]` output (what ELECTRA's classification head reads) and the mean of the
token outputs. Dev accuracy of each, against the dev majority class. Answers
"does the encoder carry the task's signal before fine-tuning touches it?",
separately from how fine-tuning then uses it.

And how far fine-tuning can move each start: per layer, the weight `[CLS]`
puts on itself and the entropy of its attention (uniform: log of the
length), over the dev sentences; the rms of the token embeddings; and, for
one batch of training sentences under a new head, the norm of each weight's
gradient relative to the weight's own norm (the token embeddings', and the
median over the encoder's kernels). Every layer is followed by a LayerNorm, so
a weight twice as large moves its output half as much for the same Adam
step.

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


def encoder_inputs(classifier, sentences):
    """The classifier's preprocessed `sentences`: the encoder's input dict."""
    inputs = classifier.preprocessor(sentences)
    return inputs[0] if isinstance(inputs, tuple) else inputs


def sentence_vectors(classifier, sentences, batch_size=256):
    """`[CLS]` outputs and mean-pooled token outputs of the encoder."""
    cls_vectors, mean_vectors = [], []
    for start in range(0, len(sentences), batch_size):
        inputs = encoder_inputs(classifier, sentences[start : start + batch_size])
        hidden = np.asarray(classifier.backbone(inputs)["sequence_output"])
        mask = np.asarray(inputs["padding_mask"], dtype=np.float32)[..., None]
        cls_vectors.append(hidden[:, 0])
        mean_vectors.append((hidden * mask).sum(1) / mask.sum(1))
    return np.concatenate(cls_vectors), np.concatenate(mean_vectors)


def cls_attention(encoder, inputs):
    """Per layer: the mean weight `[CLS]` puts on itself, and its entropy."""
    import keras

    from bench.studies.attention_probe import attention_weights

    layers = encoder.transformer_layers
    layer_inputs = keras.Model(encoder.inputs, [layer.input[0] for layer in layers])
    mask = np.asarray(inputs["padding_mask"]).astype(bool)
    rows = []
    for layer, x in zip(layers, layer_inputs(inputs)):
        cls = attention_weights(layer, x, mask)[:, :, 0, :]  # [batch, head, key]
        entropy = -(cls * np.log(cls + 1e-12)).sum(-1)
        rows.append(
            {
                "cls_on_itself": round(float(cls[:, :, 0].mean()), 3),
                "cls_entropy": round(float(entropy.mean()), 3),
                "uniform_entropy": round(float(np.log(mask.sum(1)).mean()), 3),
            }
        )
    return rows


def relative_gradients(classifier, sentences, labels):
    """|gradient| / |weight| of the token embeddings and the encoder's kernels."""
    import keras
    import tensorflow as tf

    inputs = encoder_inputs(classifier, sentences)
    with tf.GradientTape() as tape:
        logits = classifier(inputs, training=False)
        loss = keras.losses.sparse_categorical_crossentropy(
            labels, logits, from_logits=True
        )
        loss = tf.reduce_mean(loss)
    variables = classifier.backbone.trainable_variables
    gradients = tape.gradient(loss, variables)
    ratios = {}
    for variable, gradient in zip(variables, gradients):
        gradient = tf.convert_to_tensor(gradient)
        ratios[variable.path] = float(tf.norm(gradient) / tf.norm(variable))
    embedding = classifier.backbone.token_embedding.embeddings
    rms = float(np.sqrt(np.mean(embedding.numpy() ** 2)))
    kernels = [r for path, r in ratios.items() if path.endswith("kernel")]
    return {
        "token_embedding_rms": round(rms, 4),
        "token_embedding_relative_gradient": float(f"{ratios[embedding.path]:.3g}"),
        "median_kernel_relative_gradient": float(f"{np.median(kernels):.3g}"),
    }


def main(argv=None):
    args = parse_args(argv)
    import keras
    from sklearn.linear_model import LogisticRegression

    from bench.preset_argument import preset_or_exit
    from bench.run_info import run_info
    from electra_tf.models.text_classifier import ElectraTextClassifier

    preset_or_exit(args.pretrained)
    train_x, train_y = read_split(os.path.join(args.task_dir, "train.tsv"))
    dev_x, dev_y = read_split(os.path.join(args.task_dir, "dev.tsv"))
    majority = max(np.mean(dev_y), 1 - np.mean(dev_y))
    results, starts = {}, {}
    for weights in ("pre-trained", "random"):
        keras.utils.set_random_seed(0)  # the head's (and random weights') draw
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
        starts[weights] = {
            "cls_attention": cls_attention(
                classifier.backbone, encoder_inputs(classifier, dev_x[:256])
            ),
            **relative_gradients(classifier, train_x[:256], train_y[:256]),
        }
        print(f"{weights:12s} {json.dumps(starts[weights])}")
    print(f"dev majority class {majority:.3f}")
    report = {
        "run": run_info(__file__),
        "setup": vars(args),
        "dev_majority": round(float(majority), 4),
        "dev_accuracy": results,
        "fine_tuning_start": starts,
    }
    os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
    with open(args.output, "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
