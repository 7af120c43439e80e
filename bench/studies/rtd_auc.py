"""Held-out replaced-token-detection AUC of a run, with a confidence interval.

Loads the newest checkpoint of a `pretrain/run.py` run (or several runs),
corrupts the held-out shards with the run's own generator exactly as
evaluation does, and reports the discriminator's AUC:

* over every real token (what `rtd_auc` in TensorBoard measures), and
* over the tokens masking may pick (without [CLS] / [SEP], which are never
  replaced, so any trained discriminator ranks them low for free),

each with a 95% bootstrap interval over held-out examples, next to the same
numbers for the run's untrained initial weights (same seed). A rise from the
untrained value whose interval excludes 0.5 is the evidence that replaced token
detection is being learned.

With `--oracles N`, it also asks how much signal the run's replacements leave
at all, with lookup tables instead of a network: N training batches are
corrupted by the trained generator (as training does), and the rate of
replacement is counted per token, per (previous token, token) and per
(token, next token); each table's held-out AUC over maskable tokens is what a
detector knowing only that much would reach. A table far above the
discriminator says the signal is there and the network has not learned it.

    python -m bench.studies.rtd_auc runs/pretrain
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

from bench.result_file import write_result

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def maskable(batch, vocabulary) -> np.ndarray:
    """Real tokens other than [CLS] and [SEP] (the ones masking may pick)."""
    special = np.isin(
        np.asarray(batch["token_ids"]), [vocabulary.cls_id, vocabulary.sep_id]
    )
    return (np.asarray(batch["padding_mask"]) > 0) & ~special


def auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve (Mann-Whitney U with tied ranks averaged)."""
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    # Average ranks over ties.
    boundaries = np.flatnonzero(np.diff(sorted_scores)) + 1
    starts = np.concatenate([[0], boundaries])
    ends = np.concatenate([boundaries, [len(scores)]])
    for start, end in zip(starts, ends):
        ranks[order[start:end]] = (start + end + 1) / 2.0
    positives = labels.astype(bool)
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def bootstrap(per_example, rng, rounds=1000):
    """AUC and 95% interval, resampling whole examples."""
    labels = np.concatenate([e[0] for e in per_example])
    scores = np.concatenate([e[1] for e in per_example])
    values = []
    for _ in range(rounds):
        pick = rng.integers(0, len(per_example), len(per_example))
        y = np.concatenate([per_example[i][0] for i in pick])
        s = np.concatenate([per_example[i][1] for i in pick])
        values.append(auc(y, s))
    low, high = np.percentile(values, [2.5, 97.5])
    return auc(labels, scores), float(low), float(high)


def _load_run(run_dir: str, trained: bool):
    """(pretrainer with the run's initial or newest weights, vocabulary, config)."""
    import keras
    import tensorflow as tf

    from electra_tf.config import ModelConfig, OptimizerConfig, PretrainingConfig
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.pretraining.checkpoint import restore_weights
    from electra_tf.pretraining.run import build_pretrainer

    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    pretraining = PretrainingConfig.from_dict(config["pretraining"])
    # Paths in config.json are as the run was given them: relative ones are
    # relative to where it was launched (run this from there, as for the demo).
    vocabulary = Vocabulary.from_file(os.path.expanduser(config["vocabulary"]))
    keras.utils.set_random_seed(pretraining.seed)  # the run's initial weights
    model = build_pretrainer(
        ModelConfig.from_dict(config["model"]),
        pretraining,
        OptimizerConfig.from_dict(config["optimizer"]),
        vocabulary,
        jit_compile=False,
    )
    checkpoint = tf.train.latest_checkpoint(os.path.join(run_dir, "checkpoints"))
    if trained:
        restore_weights(model, checkpoint)
    config["checkpoint"] = checkpoint if trained else "initial weights"
    return model, vocabulary, config


def _trained_model(run_dir: str):
    return _load_run(run_dir, trained=True)


def evaluate(run_dir: str, trained: bool, batches: int, rng) -> dict:
    from electra_tf.data.input_pipeline import make_pretraining_dataset

    model, vocabulary, config = _load_run(run_dir, trained)
    training = config["training"]
    resolve = os.path.expanduser
    dataset = make_pretraining_dataset(
        resolve(training["eval_data"]),
        training["batch_size"],
        config["pretraining"]["max_seq_length"],
        training=False,
    )
    every, pickable = [], []
    for batch in dataset.take(batches):
        outputs = model(batch, training=False)
        labels = outputs["is_replaced"].numpy()
        scores = outputs["rtd_logits"].numpy()
        real = batch["padding_mask"].numpy() > 0
        keep = maskable(batch, vocabulary)
        for row in range(len(real)):
            every.append((labels[row][real[row]], scores[row][real[row]]))
            pickable.append((labels[row][keep[row]], scores[row][keep[row]]))
    return {
        "checkpoint": config["checkpoint"],
        "examples": len(every),
        "auc_all_tokens": bootstrap(every, rng),
        "auc_maskable_tokens": bootstrap(pickable, rng),
    }


def lookup_table_aucs(run_dir: str, batches: int, held_out_batches: int) -> dict:
    """Held-out AUCs of replacement-rate tables fit on training corruptions."""
    import tensorflow as tf

    model, vocabulary, config = _trained_model(run_dir)
    training = config["training"]
    length = config["pretraining"]["max_seq_length"]
    from electra_tf.data.input_pipeline import make_pretraining_dataset

    def contexts(pattern, count, is_training):
        dataset = make_pretraining_dataset(
            os.path.expanduser(pattern),
            training["batch_size"],
            length,
            training=is_training,
        )
        rows = []
        for index, batch in enumerate(dataset.take(count)):
            # Training corruptions vary by step; evaluation's are fixed.
            step = tf.constant(index) if is_training else None
            outputs = model(batch, training=False, step=step)
            ids = outputs["corrupted_ids"].numpy()
            keep = maskable(batch, vocabulary)
            ids = ids.astype(np.int64)
            previous = np.pad(ids, ((0, 0), (1, 0)))[:, :-1]
            following = np.pad(ids, ((0, 0), (0, 1)))[:, 1:]
            rows.append(
                (
                    previous[keep],
                    ids[keep],
                    following[keep],
                    outputs["is_replaced"].numpy()[keep],
                    outputs["rtd_logits"].numpy()[keep],
                )
            )
        return [np.concatenate(column) for column in zip(*rows)]

    train = contexts(training["train_data"], batches, True)
    held_out = contexts(training["eval_data"], held_out_batches, False)
    base_rate = float(train[3].mean())
    size = np.int64(vocabulary.size)

    def table_auc(keys_train, keys_held_out):
        # Replacement rate per key, shrunk towards the base rate (5
        # pseudo-counts); keys never seen in training get the base rate.
        unique, inverse = np.unique(keys_train, return_inverse=True)
        replaced = np.bincount(inverse, weights=train[3])
        rate = (replaced + 5 * base_rate) / (np.bincount(inverse) + 5)
        position = np.minimum(np.searchsorted(unique, keys_held_out), len(unique) - 1)
        found = unique[position] == keys_held_out
        return auc(held_out[3], np.where(found, rate[position], base_rate))

    previous, token, following = 0, 1, 2
    return {
        "training_tokens": int(len(train[3])),
        "held_out_tokens": int(len(held_out[3])),
        "discriminator": auc(held_out[3], held_out[4]),
        "token": table_auc(train[token], held_out[token]),
        "previous_and_token": table_auc(
            train[previous] * size + train[token],
            held_out[previous] * size + held_out[token],
        ),
        "token_and_next": table_auc(
            train[token] * size + train[following],
            held_out[token] * size + held_out[following],
        ),
    }


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", help="pretrain/run.py model directories.")
    parser.add_argument(
        "--batches",
        type=int,
        default=7,
        help="Held-out batches (the demo's eval shard holds 7 of 32).",
    )
    parser.add_argument(
        "--oracles",
        type=int,
        default=0,
        help="Also fit replacement-rate lookup tables on this many training "
        "batches corrupted by the trained generator (0: skip).",
    )
    parser.add_argument("--output", default="bench/results/rtd_auc.json")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    results = {}
    print(f"{'run':<28}{'weights':<10}{'AUC all tokens':>26}{'AUC maskable':>26}")
    for run in args.runs:
        results[run] = {}
        for trained in (False, True):
            row = evaluate(run, trained, args.batches, rng)
            results[run]["trained" if trained else "initial"] = row
            cells = [
                f"{v:.3f} [{lo:.3f}, {hi:.3f}]"
                for v, lo, hi in (row["auc_all_tokens"], row["auc_maskable_tokens"])
            ]
            name = "trained" if trained else "initial"
            print(f"{run:<28}{name:<10}{cells[0]:>26}{cells[1]:>26}")
        if args.oracles:
            tables = lookup_table_aucs(run, args.oracles, args.batches)
            results[run]["lookup_tables"] = tables
            print(
                f"{run}: held-out AUC over maskable tokens of "
                + ", ".join(
                    f"{name} {value:.3f}"
                    for name, value in tables.items()
                    if isinstance(value, float)
                )
            )
    from bench.run_info import run_info

    write_result(args.output, {**run_info(__file__), "runs": results})


if __name__ == "__main__":
    main()
