"""Is the tiny model's plateau ours or the architecture's? A copy probe on transformers.

    python -m bench.studies.hf_plateau --data 'runs/pretrain/data/train-*' \\
        --configs 0.02,0.1

Hugging Face's `ElectraForMaskedLM` (PyTorch, CPU) at the `tiny` preset's sizes is
trained on a task that needs context and nothing else: each real-text sequence from the
TFRecords is cut to `--length` tokens with every token written twice ("a a b b ..."),
and 15% of the positions show `[MASK]`. A model that looks one position to the left or
right predicts almost every masked token; a model that ignores context can only guess
the unigram distribution. If transformers' implementation also stays at unigram accuracy
for hundreds of steps, the plateau `bench/studies/rtd_plateau.py` shows for our `tiny`
discriminator is a property of that size and initialisation, not a bug of ours
(BENCHMARKS.md section 4).

Each configuration is `INIT[:EMBEDDING[:HIDDEN]]`: the initializer's standard deviation
(the original's `initializer_range`), and optionally the embedding and hidden widths
(default: `tiny`'s 32 and 64). Prints one table, writes `--output` JSON.
"""

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from bench.run_info import run_info


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", required=True, help="TFRecords of pretrain/build_data.py (glob)."
    )
    parser.add_argument(
        "--vocab", help="Their vocab.txt (default: vocab.txt beside the data)."
    )
    parser.add_argument(
        "--configs",
        default="0.02,0.1",
        help="Comma-separated INIT[:EMBEDDING[:HIDDEN]] (default: 0.02,0.1).",
    )
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--length", type=int, default=32, help="Sequence length.")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--report-every", type=int, default=100)
    parser.add_argument("--output", default="bench/results/hf_plateau.json")
    return parser.parse_args(argv)


def copy_batches(pattern, vocabulary, batch_size, length, seed):
    """Yield (input ids, labels) of the doubled-token task, from real text."""
    from electra_tf.data.input_pipeline import make_pretraining_dataset

    rng = np.random.default_rng(seed)
    source = make_pretraining_dataset(pattern, batch_size, 128, training=True)
    for batch in source:
        body = batch["token_ids"].numpy()[:, 1 : length // 2]
        body = np.repeat(body, 2, axis=1)
        ids = np.concatenate(
            [
                np.full((batch_size, 1), vocabulary.cls_id),
                body,
                np.full((batch_size, 1), vocabulary.sep_id),
            ],
            axis=1,
        )
        chosen = rng.random(ids.shape) < 0.15
        chosen[:, 0] = chosen[:, -1] = False
        inputs = np.where(chosen, vocabulary.mask_id, ids)
        labels = np.where(chosen, ids, -100)  # -100: transformers' "no label"
        yield inputs, labels


def train_one(args, vocabulary, init, embedding_dim, hidden_dim):
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.ElectraConfig(
        vocab_size=vocabulary.size,
        embedding_size=embedding_dim,
        hidden_size=hidden_dim,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=4 * hidden_dim,
        max_position_embeddings=128,
        hidden_act="gelu",
        layer_norm_eps=1e-12,
        initializer_range=init,
    )
    model = transformers.ElectraForMaskedLM(config)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=args.learning_rate, weight_decay=0.01, eps=1e-6
    )
    # The tiny preset's schedule: 100 warm-up steps, linear decay to 0 at step 2,000.
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda t: min(1.0, t / 100) * max(0.0, 1.0 - t / 2000)
    )
    batches = copy_batches(
        args.data, vocabulary, args.batch_size, args.length, seed=0
    )
    curve = []
    hits = count = 0
    for step in range(1, args.steps + 1):
        inputs, labels = next(batches)
        inputs = torch.tensor(inputs).long()
        labels = torch.tensor(labels).long()
        out = model(input_ids=inputs, labels=labels)
        optimizer.zero_grad()
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        with torch.no_grad():
            chosen = labels != -100
            hits += int((out.logits.argmax(-1)[chosen] == labels[chosen]).sum())
            count += int(chosen.sum())
        if step % args.report_every == 0:
            curve.append({"step": step, "masked_accuracy": round(hits / count, 4)})
            print(json.dumps({"init": init, **curve[-1]}), flush=True)
            hits = count = 0
    return curve


def main(argv=None):
    args = parse_args(argv)
    import torch

    from electra_tf.data.vocabulary import Vocabulary

    torch.set_num_threads(1)
    vocab_path = args.vocab or os.path.join(
        os.path.dirname(args.data.split(",")[0]), "vocab.txt"
    )
    vocabulary = Vocabulary.from_file(vocab_path)
    results = []
    for spec in args.configs.split(","):
        parts = [float(p) for p in spec.split(":")]
        init = parts[0]
        embedding_dim = int(parts[1]) if len(parts) > 1 else 32
        hidden_dim = int(parts[2]) if len(parts) > 2 else 64
        curve = train_one(args, vocabulary, init, embedding_dim, hidden_dim)
        results.append(
            {
                "init": init,
                "embedding_dim": embedding_dim,
                "hidden_dim": hidden_dim,
                "curve": curve,
            }
        )
    steps = [point["step"] for point in results[0]["curve"]]
    print("\nmasked-token training accuracy (mean over each interval)")
    print("init  E/H     " + " ".join(f"{s:>6}" for s in steps))
    for r in results:
        row = " ".join(f"{p['masked_accuracy']:6.3f}" for p in r["curve"])
        print(f"{r['init']:<5} {r['embedding_dim']}/{r['hidden_dim']:<5} {row}")
    with open(args.output, "w") as f:
        json.dump(
            {**run_info(__file__), "args": vars(args), "results": results},
            f,
            indent=1,
        )


if __name__ == "__main__":
    main()
