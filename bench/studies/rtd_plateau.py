"""Is a flat discriminator a bug or the early RTD plateau? Held-out AUC over steps.

Trains a preset on TFRecords and evaluates, every `--steps / --evaluations`
steps, the discriminator's held-out AUC at detecting its own generator's
replacements, over the tokens masking can pick ([CLS] and [SEP], never
replaced, are left out: they would lift the AUC for free), and the
generator's held-out MLM accuracy. Variants (`--variants`):

* `ours`: `ElectraPretrainer` as `pretrain/run.py` builds it;
* `ours_uniform`: the same with `uniform_generator` (uniformly random
  replacements, mostly rare tokens, which any working discriminator learns to
  spot from the token alone);
* `transformers`: Hugging Face's ELECTRA on PyTorch at the same sizes, data,
  masking, loss weights and learning-rate schedule (`bench/hf_peer.py`, with
  `torch.optim.AdamW`), a second implementation to compare the curve with.

If `ours_uniform` rises, labels, corruption and the RTD loss work; if `ours`
and `transformers` stay at the same height, the plateau belongs to the
algorithm at this size and budget, not to our code.

    python -m bench.studies.rtd_plateau --data 'runs/pretrain/data/train-*' --steps 2000
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from bench.studies.rtd_auc import auc, maskable  # noqa: E402

VARIANTS = ("ours", "ours_uniform", "transformers")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="TFRecord pattern (train-*).")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument(
        "--hparams", default="{}", help="JSON overrides of the preset's configs."
    )
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--evaluations", type=int, default=8)
    parser.add_argument("--eval-batches", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument(
        "--variants",
        default="ours,ours_uniform,transformers",
        help=f"Comma-separated subset of {', '.join(VARIANTS)}.",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=0,
        help="Threads of TensorFlow's and PyTorch's pools (default 0: their "
        "own choice). 1 keeps the run to about one core of a shared machine.",
    )
    parser.add_argument("--output", default="bench/results/rtd_plateau.json")
    args = parser.parse_args(argv)
    if args.threads < 0:
        parser.error(f"--threads must be 0 or more, got {args.threads}")
    unknown = set(args.variants.split(",")) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    return args


def configs(args, vocabulary, length, uniform=False):
    from electra_tf.config import apply_hparams
    from electra_tf.presets import get_preset

    preset = get_preset(args.preset)
    chosen = apply_hparams(
        {
            "model": preset.model.override(vocabulary_size=vocabulary.size),
            "pretraining": preset.pretraining.override(
                max_seq_length=length, uniform_generator=uniform
            ),
            "optimizer": preset.optimizer.override(
                total_steps=args.steps, warmup_steps=max(1, args.steps // 10)
            ),
        },
        json.loads(args.hparams),
    )
    return chosen["model"], chosen["pretraining"], chosen["optimizer"]


class Ours:
    def __init__(self, args, vocabulary, length, uniform):
        from electra_tf.pretraining.run import build_pretrainer

        model, pretraining, optimizer = configs(args, vocabulary, length, uniform)
        self.model = build_pretrainer(
            model, pretraining, optimizer, vocabulary, jit_compile=False
        )

    def train(self, dataset, steps):
        self.model.fit(dataset, steps_per_epoch=steps, verbose=0, shuffle=False)

    def judge(self, batch):
        """(is_replaced, discriminator logits, generator correct, slot weights)."""
        outputs = self.model(batch, training=False)
        masked = outputs["masked"]
        predicted = np.argmax(outputs["mlm_logits"].numpy(), -1)
        correct = predicted == masked.target_ids.numpy()
        return (
            outputs["is_replaced"].numpy(),
            outputs["rtd_logits"].numpy(),
            correct,
            masked.weights.numpy(),
        )


class Transformers:
    def __init__(self, args, vocabulary, length):
        import torch

        from bench.hf_peer import HfElectraPretraining

        model, pretraining, optimizer = configs(args, vocabulary, length)
        torch.manual_seed(pretraining.seed)
        self.peer = HfElectraPretraining(
            model, pretraining, vocabulary, learning_rate=optimizer.learning_rate
        )
        # Our schedule: linear warm-up times linear decay.
        self.schedule = torch.optim.lr_scheduler.LambdaLR(
            self.peer.optimizer,
            lambda t: (
                min(1.0, t / optimizer.warmup_steps)
                * max(0.0, 1.0 - t / optimizer.total_steps)
            ),
        )

    def train(self, dataset, steps):
        for batch in dataset.take(steps).as_numpy_iterator():
            self.peer.train_step(batch)
            self.schedule.step()

    def judge(self, batch):
        import torch

        from bench.hf_peer import gumbel_max_sample

        peer = self.peer
        token_ids = torch.from_numpy(np.asarray(batch["token_ids"])).long()
        mask = torch.from_numpy(np.asarray(batch["padding_mask"])).long()
        segments = torch.from_numpy(np.asarray(batch["segment_ids"])).long()
        peer.generator.eval()
        peer.discriminator.eval()
        with torch.no_grad():
            masked_ids, _, chosen = peer._mask(token_ids, mask)
            logits = peer.generator(
                input_ids=masked_ids, attention_mask=mask, token_type_ids=segments
            ).logits
            sampled = gumbel_max_sample(logits)
            corrupted = torch.where(chosen, sampled, token_ids)
            scores = peer.discriminator(
                input_ids=corrupted, attention_mask=mask, token_type_ids=segments
            ).logits
        peer.generator.train()
        peer.discriminator.train()
        correct = (logits.argmax(-1) == token_ids).numpy()
        return (
            (corrupted != token_ids).numpy(),
            scores.numpy(),
            correct,
            chosen.numpy().astype("float32"),
        )


def evaluate(implementation, batches, vocabulary):
    labels, scores, correct, weights = [], [], [], []
    for batch in batches:
        replaced, logits, right, slots = implementation.judge(batch)
        keep = maskable(batch, vocabulary)
        labels.append(replaced[keep])
        scores.append(logits[keep])
        correct.append(right.ravel())
        weights.append(slots.ravel())
    correct, weights = np.concatenate(correct), np.concatenate(weights)
    labels = np.concatenate(labels)
    return {
        "rtd_auc_maskable": auc(labels, np.concatenate(scores)),
        "mlm_accuracy": float((correct * weights).sum() / weights.sum()),
        "replaced_fraction": float(labels.mean()),
    }


def main(argv=None):
    args = parse_args(argv)
    import tensorflow as tf

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
        if "transformers" in args.variants.split(","):
            import torch

            torch.set_num_threads(args.threads)
    from bench.run_info import run_info
    from electra_tf.data.input_pipeline import (
        describe_data,
        make_pretraining_dataset,
    )

    data_dir, vocabulary, length = describe_data(args.data)
    held_out = make_pretraining_dataset(
        os.path.join(data_dir, "eval-*"), args.batch_size, length, training=False
    )
    batches = [
        {k: v.numpy() for k, v in b.items()} for b in held_out.take(args.eval_batches)
    ]
    every = args.steps // args.evaluations
    results = {**run_info(__file__), "args": vars(args), "curves": {}}
    for name in args.variants.split(","):
        tf.keras.utils.set_random_seed(0)
        if name == "transformers":
            implementation = Transformers(args, vocabulary, length)
        else:
            implementation = Ours(args, vocabulary, length, name == "ours_uniform")
        train = make_pretraining_dataset(args.data, args.batch_size, length)
        curve = []
        for evaluation in range(1, args.evaluations + 1):
            # Every variant sees the same batches in the same order; each
            # chunk continues where the previous one stopped.
            chunk = train.skip((evaluation - 1) * every).take(every)
            implementation.train(chunk, every)
            point = {
                "step": evaluation * every,
                **evaluate(implementation, batches, vocabulary),
            }
            curve.append(point)
            print(name, json.dumps(point), flush=True)
        results["curves"][name] = curve
    with open(args.output, "w") as f:
        json.dump(results, f, indent=2)
    print(f"\n{'step':>6}" + "".join(f"{n:>28}" for n in results["curves"]))
    for index in range(args.evaluations):
        row = f"{(index + 1) * every:>6}"
        for curve in results["curves"].values():
            point = curve[index]
            auc_value, accuracy = point["rtd_auc_maskable"], point["mlm_accuracy"]
            row += f"{auc_value:>14.3f} (mlm {accuracy:.3f})"
        print(row)


if __name__ == "__main__":
    main()
