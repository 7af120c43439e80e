"""Where a preset's token embeddings put opposite and similar words.

Cosine similarity, in a keras-hub ELECTRA preset's token embedding (centred on
the mean ordinary token, so that a shared offset does not count as
similarity), of antonym pairs ("good"/"bad"), synonym pairs ("good"/"fine")
and random pairs of alphabetic tokens. Distributional pre-training places
words by the contexts they occur in, and opposites share their contexts: if
antonyms sit as close as synonyms, the embeddings know a word's kind but not
its polarity, and a sentiment classifier has to pull the pairs apart
(BENCHMARKS.md section 16). Pairs with a word outside the vocabulary are
skipped and counted. Seconds on a CPU.

    python -m bench.studies.embedding_pairs \\
        --pretrained runs/pretrain/export/discriminator
"""

from __future__ import annotations

import argparse
import json
import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ANTONYMS = (
    ("good", "bad"),
    ("best", "worst"),
    ("better", "worse"),
    ("love", "hate"),
    ("beautiful", "ugly"),
    ("happy", "sad"),
    ("strong", "weak"),
    ("right", "wrong"),
    ("success", "failure"),
    ("rich", "poor"),
    ("pleasant", "unpleasant"),
    ("wise", "foolish"),
    ("true", "false"),
    ("friend", "enemy"),
    ("hot", "cold"),
)
SYNONYMS = (
    ("good", "fine"),
    ("bad", "evil"),
    ("great", "large"),
    ("happy", "glad"),
    ("sad", "unhappy"),
    ("beautiful", "lovely"),
    ("ugly", "hideous"),
    ("strong", "powerful"),
    ("weak", "feeble"),
    ("wrong", "false"),
    ("rich", "wealthy"),
    ("poor", "needy"),
    ("wise", "prudent"),
    ("foolish", "silly"),
    ("cold", "cool"),
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--pretrained", action="append", required=True, help="Preset dir; repeatable."
    )
    parser.add_argument("--random-pairs", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="bench/results/embedding_pairs.json")
    return parser.parse_args(argv)


def centred_unit_rows(embeddings: np.ndarray, ordinary: np.ndarray) -> np.ndarray:
    """Rows minus the mean ordinary row, scaled to unit length."""
    centred = embeddings - embeddings[ordinary].mean(axis=0)
    norms = np.linalg.norm(centred, axis=1, keepdims=True)
    return centred / np.maximum(norms, 1e-12)


def pair_cosines(unit_rows, ids: dict, pairs) -> dict:
    """Each in-vocabulary pair's cosine, their mean, and the pairs skipped."""
    kept = {
        f"{a}/{b}": float(unit_rows[ids[a]] @ unit_rows[ids[b]])
        for a, b in pairs
        if a in ids and b in ids
    }
    mean = float(np.mean(list(kept.values()))) if kept else None
    return {"mean": mean, "pairs": kept, "skipped": len(pairs) - len(kept)}


def main(argv=None):
    args = parse_args(argv)
    import keras_hub

    from bench.preset_argument import preset_or_exit
    from bench.run_info import run_info
    from electra_tf.data.vocabulary import SPECIAL_TOKENS

    for preset in args.pretrained:  # all of them before the first is read
        preset_or_exit(preset)
    report = {"run": run_info(__file__), "presets": {}}
    for preset in args.pretrained:
        backbone = keras_hub.models.ElectraBackbone.from_preset(preset)
        vocabulary = keras_hub.models.ElectraTokenizer.from_preset(
            preset
        ).get_vocabulary()
        ids = {token: i for i, token in enumerate(vocabulary)}
        special = {ids[token] for token in SPECIAL_TOKENS}
        ordinary = np.array([i for i in range(len(vocabulary)) if i not in special])
        embeddings = backbone.get_layer("token_embedding").get_weights()[0]
        unit_rows = centred_unit_rows(embeddings, ordinary)
        words = [t for t in vocabulary if t.isalpha() and len(t) > 3]
        draws = np.random.default_rng(args.seed).integers(
            0, len(words), (args.random_pairs, 2)
        )
        random_pairs = [(words[i], words[j]) for i, j in draws if i != j]
        result = {
            "antonyms": pair_cosines(unit_rows, ids, ANTONYMS),
            "synonyms": pair_cosines(unit_rows, ids, SYNONYMS),
            "random": pair_cosines(unit_rows, ids, random_pairs)["mean"],
        }
        report["presets"][preset] = result
        print(
            f"{preset}: antonyms {result['antonyms']['mean']:.3f} "
            f"({len(result['antonyms']['pairs'])} pairs), synonyms "
            f"{result['synonyms']['mean']:.3f} "
            f"({len(result['synonyms']['pairs'])}), random {result['random']:.3f}"
        )
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
