"""Has a pre-training checkpoint found position? Attention, position norms, gradients.

For each attention head of the discriminator (or, `--tower generator`, the
generator), over `--batches` held-out batches of the run's own eval data
corrupted as in training: the mean attention entropy (uniform: log of the
real length), the weight a token puts on itself, on the previous and on the
next token, and the largest weight. A previous-token head puts most of its
weight at offset -1; a head stuck on one token of the sequence has a large
maximum and no neighbour weight. Also: the norms of the used position
embedding rows against the token embeddings', and the global gradient norm of
one training batch (is clipping active?) with the rms gradient of the
attention kernels.

    python -m bench.studies.attention_probe runs/pretrain \\
        runs/pretrain/checkpoints/ckpt-1750
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", help="The run's --model-dir (its config.json).")
    parser.add_argument("checkpoint", help="A checkpoint of that run.")
    parser.add_argument("--tower", choices=("discriminator", "generator"))
    parser.add_argument("--batches", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=16)
    return parser.parse_args(argv)


def attention_weights(layer, x, mask):
    """A transformer layer's attention probabilities [batch, head, query, key].

    `x` is the layer's input [batch, length, hidden], `mask` the boolean
    padding mask [batch, length]; padded keys get no weight.
    """
    attention = layer._self_attention_layer
    x = np.asarray(x)
    q = np.einsum("bld,dhk->blhk", x, attention._query_dense.kernel.numpy())
    q += attention._query_dense.bias.numpy()
    k = np.einsum("bld,dhk->blhk", x, attention._key_dense.kernel.numpy())
    k += attention._key_dense.bias.numpy()
    scores = np.einsum("bqhk,bvhk->bhqv", q, k) / np.sqrt(q.shape[-1])
    scores = np.where(mask[:, None, None, :], scores, -1e9)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    return weights / weights.sum(-1, keepdims=True)


def attention_table(layers, inputs, mask):
    """Per head: (entropy, self, previous, next, max) means over real tokens."""
    rows = []
    for index, (layer, x) in enumerate(zip(layers, inputs)):
        weights = attention_weights(layer, x, mask)
        length = weights.shape[-1]
        entropy = -(weights * np.log(weights + 1e-12)).sum(-1)
        for head in range(weights.shape[1]):
            w = weights[:, head]
            rows.append(
                {
                    "layer": index,
                    "head": head,
                    "entropy": float(entropy[:, head][mask].mean()),
                    "uniform_entropy": float(np.log(mask.sum(1)).mean()),
                    "self": float((w * np.eye(length))[mask].sum(-1).mean()),
                    "previous": float((w * np.eye(length, k=-1))[mask].sum(-1).mean()),
                    "next": float((w * np.eye(length, k=1))[mask].sum(-1).mean()),
                    "max": float(w.max(-1)[mask].mean()),
                }
            )
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    import keras
    import tensorflow as tf

    from electra_tf.config import ModelConfig, OptimizerConfig, PretrainingConfig
    from electra_tf.data.input_pipeline import make_pretraining_dataset
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.pretraining.run import build_pretrainer

    with open(os.path.join(args.run, "config.json")) as f:
        config = json.load(f)
    model = ModelConfig.from_dict(config["model"])
    pretraining = PretrainingConfig.from_dict(config["pretraining"])
    vocabulary = config["vocabulary"]
    vocabulary = Vocabulary.from_file(
        vocabulary if isinstance(vocabulary, str) else vocabulary["path"]
    )
    pretrainer = build_pretrainer(
        model,
        pretraining,
        OptimizerConfig.from_dict(config["optimizer"]),
        vocabulary,
        jit_compile=False,
    )
    tf.train.Checkpoint(model=pretrainer).read(args.checkpoint).expect_partial()
    encoder = (
        pretrainer.generator.encoder
        if args.tower == "generator"
        else pretrainer.discriminator_encoder
    )
    layers = encoder.transformer_layers
    layer_inputs = keras.Model(encoder.inputs, [layer.input[0] for layer in layers])
    eval_data = make_pretraining_dataset(
        config["training"]["eval_data"],
        batch_size=args.batch_size,
        max_seq_length=pretraining.max_seq_length,
        training=False,
    )
    rows = []
    for batch in eval_data.take(args.batches):
        outputs = pretrainer(batch, training=False)
        inputs = {
            "token_ids": outputs["corrupted_ids"],
            "segment_ids": batch["segment_ids"],
            "padding_mask": batch["padding_mask"],
        }
        mask = np.asarray(batch["padding_mask"]).astype(bool)
        rows += attention_table(layers, layer_inputs(inputs), mask)
    for layer, head in sorted({(r["layer"], r["head"]) for r in rows}):
        mine = [r for r in rows if (r["layer"], r["head"]) == (layer, head)]
        means = {
            key: np.mean([r[key] for r in mine])
            for key in ("entropy", "uniform_entropy", "self", "previous", "next", "max")
        }
        print(
            f"layer {layer} head {head}: entropy {means['entropy']:.2f} (uniform "
            f"{means['uniform_entropy']:.2f}), self {means['self']:.3f}, previous "
            f"{means['previous']:.3f}, next {means['next']:.3f}, max {means['max']:.3f}"
        )

    positions = encoder.position_embedding.position_embeddings.numpy()
    used = np.linalg.norm(positions[1 : pretraining.max_seq_length], axis=1)
    tokens = np.linalg.norm(encoder.token_embedding.embeddings.numpy(), axis=1)
    print(
        f"position rows 1-{pretraining.max_seq_length - 1}: norm median "
        f"{np.median(used):.3f} (range {used.min():.3f}-{used.max():.3f}); "
        f"token embeddings: median {np.median(tokens):.3f}"
    )

    train = make_pretraining_dataset(
        config["training"]["train_data"],
        batch_size=config["training"]["batch_size"],
        max_seq_length=pretraining.max_seq_length,
    )
    batch = next(iter(train))
    with tf.GradientTape() as tape:
        loss = pretrainer(batch, training=True, step=tf.constant(7, tf.int64))["loss"]
    variables = pretrainer.trainable_variables
    gradients = [tf.convert_to_tensor(g) for g in tape.gradient(loss, variables)]
    norm = float(tf.linalg.global_norm(gradients))
    clip = config["optimizer"]["clip_norm"]
    print(f"global gradient norm {norm:.3f} (clip norm {clip})")
    for variable, gradient in zip(variables, gradients):
        if "query/kernel" in variable.path or "key/kernel" in variable.path:
            rms = float(tf.sqrt(tf.reduce_mean(gradient * gradient)))
            print(f"  {variable.path}: rms gradient {rms:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
