"""A control for embedding transfer: a preset whose token embeddings are shuffled.

Copies a keras-hub ELECTRA preset (our pre-training export
`<model_dir>/export/discriminator/` is one) with the rows of its token
embedding permuted among the ordinary tokens; the special tokens (`[PAD]`,
`[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`) keep theirs, and every other weight is
unchanged. The copy has the pre-trained embeddings' values, scale and
distribution, but no token keeps its own vector. Fine-tuning it beside the
original (`finetune/run.py --pretrained <copy>`, e.g. with
`--hparams '{"reinit_layers": 2}'` so that only the embeddings come from
pre-training) tells whether what the embeddings transfer is knowledge of
the tokens or merely a different starting scale (BENCHMARKS.md section 16).

    python -m bench.studies.shuffled_embeddings \\
        --pretrained runs/pretrain/export/discriminator --output runs/shuffled
"""

from __future__ import annotations

import argparse
import os
import shutil

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pretrained", required=True, help="keras-hub preset dir.")
    parser.add_argument("--output", required=True, help="New preset dir (absent).")
    parser.add_argument("--seed", type=int, default=0, help="Permutation seed.")
    return parser.parse_args(argv)


def shuffled_rows(count: int, keep, seed: int) -> np.ndarray:
    """A permutation of `range(count)` that fixes the ids in `keep`."""
    order = np.arange(count)
    movable = np.setdiff1d(order, np.asarray(sorted(keep)))
    order[movable] = np.random.default_rng(seed).permutation(movable)
    return order


def main(argv=None):
    args = parse_args(argv)
    import keras_hub

    from bench.preset_argument import preset_or_exit
    from electra_tf.data.vocabulary import SPECIAL_TOKENS

    preset_or_exit(args.pretrained)
    if os.path.exists(args.output):
        raise SystemExit(f"error: {args.output} exists; choose a new --output")
    backbone = keras_hub.models.ElectraBackbone.from_preset(args.pretrained)
    tokenizer = keras_hub.models.ElectraTokenizer.from_preset(args.pretrained)
    keep = [tokenizer.token_to_id(token) for token in SPECIAL_TOKENS]
    embedding = backbone.get_layer("token_embedding")
    weights = embedding.get_weights()
    order = shuffled_rows(weights[0].shape[0], keep, args.seed)
    weights[0] = weights[0][order]
    embedding.set_weights(weights)
    shutil.copytree(args.pretrained, args.output)  # tokenizer and assets
    backbone.save_to_preset(args.output)
    moved = int((order != np.arange(len(order))).sum())
    print(f"{args.output}: {moved} of {len(order)} token embeddings moved")


if __name__ == "__main__":
    main()
