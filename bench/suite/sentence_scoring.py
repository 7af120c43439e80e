"""Sentence scoring: Electric's one-pass score against MLM pseudo-log-likelihood.

Two models of the same size pre-trained for the same training FLOPs score
minimal pairs (a held-out sentence against a corrupted copy of it); a method
is right on a pair when the original scores higher. Electric's discriminator
scores a sentence in one forward pass (-sum_t E(x)_t); the MLM model needs
one pass per token (`electra_tf.scoring`).

Pre-training, as README command 1 runs it (`pretrain(PretrainingFlags(...))`,
the `--preset` (default `demo`), its bundled corpus and 4,691-token
vocabulary, length 64, batch 64, a 100-step warm-up, linear decay to 0 at the
run's last step), on TFRecords built once under `<out-dir>/data`:
`--objective electric` for `--electric-steps` steps, and `--objective mlm`
for the steps of the same training FLOPs as the paper counts them
(`electra_tf/pretraining/flops.py`; rounded to a multiple of
`--checkpoint-every`). A rerun resumes or, for a finished run, only
re-evaluates and re-exports.

Minimal pairs, from held-out text: the sentences of `--held-out` (the
Brown Corpus; the bundled corpus holds every 5th of its documents) that do
not occur verbatim in the bundled excerpt, with 6-25 words and at most
`max_seq_length - 2` WordPiece tokens. They are shuffled with
`numpy.random.default_rng(--seed)`, which then draws everything else; each
sentence in turn gives one pair of the kind still short of `--pairs / 2`
(replacement first), or none if it has no eligible position:

* replacement: one word, drawn uniformly among the sentence's eligible words
  (lower-case ASCII letters only, one token of the vocabulary, seen at least
  `MIN_COUNT` times in the pre-training corpus), replaced by a word drawn
  uniformly from the `NEIGHBOURS` eligible words nearest to it in the
  pre-training corpus' frequency ranking (half above, half below). Both
  sentences have the same number of tokens, and a unigram model cannot tell
  them apart beyond the small difference in frequency;
* swap: two adjacent words (both lower-case ASCII letters, different),
  drawn uniformly, swapped: the same tokens in another order.

Word frequencies are counts of lower-cased whitespace-separated words in the
pre-training corpus (the bundled excerpt). Reported per method and kind:
accuracy (ties count half) with a 95% Wilson interval; sentences/s of
scoring all 2 x `--pairs` sentences in batches of 64 (MLM: 256 masked copies a
pass), the median of `--repeats` rounds (methods in turn, after one warm-up
batch each), wall clock. Also scored, for reading the figures: Electric's
cloze model (generator-sized, its exact pseudo-log-likelihood in one pass)
and a unigram model (summed log relative frequencies, add-one): about 0.5
on replacements, exactly 0.5 (all ties) on swaps, by construction.

    python -m bench.suite.sentence_scoring --electric-steps 300 \\
        --out-dir /tmp/sentence_scoring

Finished runs instead (`--electric-run` and `--mlm-run`: model directories
of `pretrain/run.py`, e.g. a study's runs at the `cpu` preset): nothing is
pre-trained; the two runs must have trained on the same TFRecords, and the
text comes from the corpus those were built from (the inputs, seed and
`eval_fraction` in their `stats.json`). The pairs' sentences are those of the
documents the build held out for evaluation (`is_held_out`), less any that
occur verbatim in a training document; word frequencies are counted over the
training documents. Each run's training FLOPs are reported as the paper
counts them; the script does not refuse unequal budgets, it records them.
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import math
import os
import pathlib
import statistics
import time

from bench.result_file import write_result
from bench.run_info import run_info

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

BUNDLED_CORPUS = REPO / "electra_tf" / "assets" / "corpus"
# A word needs this many occurrences in the pre-training corpus to be
# replaced or to replace: rarer words' frequency ranks are mostly ties.
MIN_COUNT = 5
# Candidates for a replacement: the eligible words ranked nearest by
# frequency, half above and half below.
NEIGHBOURS = 10
MIN_WORDS, MAX_WORDS = 6, 25
KINDS = ("replacement", "swap")
METHODS = ("electric", "mlm", "cloze", "unigram")
LABELS = {
    "electric": "Electric discriminator, one pass",
    "mlm": "MLM pseudo-log-likelihood, one pass per token",
    "cloze": "Electric's cloze model, one pass",
    "unigram": "unigram frequencies",
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="demo")
    parser.add_argument(
        "--electric-steps",
        type=int,
        default=300,
        help="Electric's pre-training steps; MLM gets the same training FLOPs.",
    )
    parser.add_argument(
        "--checkpoint-every",
        type=int,
        default=50,
        help="Steps between checkpoints and held-out evaluations; MLM's steps "
        "are rounded to a multiple of it (default 50).",
    )
    parser.add_argument(
        "--held-out",
        help="Text the pairs come from, one sentence a line: the whole Brown "
        "Corpus (brown.txt.gz); its sentences in the bundled excerpt are left "
        "out. Needed unless --electric-run and --mlm-run are given.",
    )
    parser.add_argument(
        "--electric-run",
        help="A finished --objective electric run's model directory: score "
        "its export instead of pre-training (with --mlm-run).",
    )
    parser.add_argument(
        "--mlm-run",
        help="A finished --objective mlm run's model directory, trained on "
        "the same TFRecords as --electric-run.",
    )
    parser.add_argument(
        "--pairs", type=int, default=1000, help="Pairs (half each kind)."
    )
    parser.add_argument("--seed", type=int, default=0, help="Seed of the pairs.")
    parser.add_argument("--repeats", type=int, default=3, help="Timed rounds.")
    parser.add_argument("--out-dir", default="runs/sentence_scoring")
    parser.add_argument("--output", default="bench/results/sentence_scoring.json")
    args = parser.parse_args(argv)
    if (args.electric_run is None) != (args.mlm_run is None):
        parser.error("give both --electric-run and --mlm-run, or neither")
    if args.electric_run is None and args.held_out is None:
        parser.error("--held-out is needed when the script pre-trains")
    return args


# === Minimal pairs ===
def read_lines(path) -> list[str]:
    """Non-empty stripped lines of a text file (plain or .gz)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def is_plain_word(word: str) -> bool:
    return word.isascii() and word.isalpha() and word.islower()


def word_counts(lines) -> collections.Counter:
    """Lower-cased whitespace-separated words and their counts."""
    counts = collections.Counter()
    for line in lines:
        counts.update(line.lower().split())
    return counts


def frequency_ranking(counts, vocabulary_tokens) -> list[str]:
    """Eligible words (plain, one token, >= MIN_COUNT), most frequent first."""
    tokens = set(vocabulary_tokens)
    eligible = [
        word
        for word, count in counts.items()
        if count >= MIN_COUNT and is_plain_word(word) and word in tokens
    ]
    return sorted(eligible, key=lambda word: (-counts[word], word))


def neighbours(ranking, rank: int) -> list[str]:
    """The NEIGHBOURS words ranked nearest to `ranking[rank]` (not itself)."""
    half = NEIGHBOURS // 2
    start = min(max(0, rank - half), max(0, len(ranking) - NEIGHBOURS - 1))
    window = ranking[start : start + NEIGHBOURS + 1]
    return [word for word in window if word != ranking[rank]][:NEIGHBOURS]


def corrupt(words, kind, rank_of, ranking, rng):
    """The corrupted word list, or None if `words` has no eligible position."""
    if kind == "replacement":
        positions = [i for i, word in enumerate(words) if word in rank_of]
        if not positions:
            return None
        i = positions[rng.integers(len(positions))]
        options = neighbours(ranking, rank_of[words[i]])
        return [*words[:i], options[rng.integers(len(options))], *words[i + 1 :]]
    positions = [
        i
        for i in range(len(words) - 1)
        if is_plain_word(words[i])
        and is_plain_word(words[i + 1])
        and words[i] != words[i + 1]
    ]
    if not positions:
        return None
    i = positions[rng.integers(len(positions))]
    return [*words[:i], words[i + 1], words[i], *words[i + 2 :]]


def minimal_pairs(sentences, ranking, pairs: int, seed: int) -> list[dict]:
    """`pairs` dicts {kind, original, corrupted}, half of each kind (see above)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rank_of = {word: rank for rank, word in enumerate(ranking)}
    wanted = {kind: pairs // 2 for kind in KINDS}
    wanted[KINDS[0]] += pairs % 2
    found = []
    for index in rng.permutation(len(sentences)):
        kind = next((k for k in KINDS if wanted[k]), None)
        if kind is None:
            break
        words = sentences[index].split(" ")
        corrupted = corrupt(words, kind, rank_of, ranking, rng)
        if corrupted is None:
            continue
        wanted[kind] -= 1
        found.append(
            {
                "kind": kind,
                "original": sentences[index],
                "corrupted": " ".join(corrupted),
            }
        )
    if any(wanted.values()):
        raise SystemExit(f"error: too few held-out sentences for {pairs} pairs")
    return found


def held_out_sentences(candidates, training_lines, tokenizer, max_tokens):
    """The `candidates` not in the training text, 6-25 words, that fit."""
    training = set(training_lines)
    lines = sorted(
        {
            line
            for line in candidates
            if line not in training and MIN_WORDS <= len(line.split(" ")) <= MAX_WORDS
        }
    )
    lengths = [len(ids) for ids in tokenizer.tokenize(lines)]
    return [line for line, length in zip(lines, lengths) if length <= max_tokens]


# === Figures ===
def wilson_interval(right: float, total: int) -> tuple[float, float]:
    """95% Wilson score interval of a proportion."""
    if total == 0:
        return (0.0, 1.0)
    z, p = 1.96, right / total
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    half /= 1 + z * z / total
    return (centre - half, centre + half)


def pair_accuracy(pairs, original_scores, corrupted_scores) -> dict:
    """Accuracy per kind and overall (ties half), with intervals and ties."""
    result = {}
    for kind in (*KINDS, "all"):
        chosen = [
            (a, b)
            for pair, a, b in zip(pairs, original_scores, corrupted_scores)
            if kind in ("all", pair["kind"])
        ]
        right = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a, b in chosen)
        low, high = wilson_interval(right, len(chosen))
        result[kind] = {
            "accuracy": right / len(chosen),
            "interval_95": [low, high],
            "ties": sum(a == b for a, b in chosen),
            "pairs": len(chosen),
        }
    return result


def unigram_scores(sentences, counts) -> list[float]:
    total, size = sum(counts.values()), len(counts) + 1
    # fsum: exact, so the same words in another order tie exactly.
    return [
        math.fsum(math.log((counts[w] + 1) / (total + size)) for w in s.lower().split())
        for s in sentences
    ]


# === Pre-training ===
def pretrain_both(args):
    """(text, runs): builds the data, pre-trains Electric and MLM at equal
    FLOPs; the text is the bundled corpus and `--held-out`'s lines."""
    import keras

    from electra_tf.data.preparation import prepare_pretraining_data
    from electra_tf.presets import get_preset
    from electra_tf.pretraining.flops import pretraining_flops
    from electra_tf.pretraining.run import pretrain
    from electra_tf.pretraining.settings import PretrainingFlags

    out = pathlib.Path(args.out_dir)
    preset = get_preset(args.preset)
    length = preset.pretraining.max_seq_length
    data = prepare_pretraining_data(str(out), length)
    model = preset.model.override(vocabulary_size=data.vocabulary.size)
    flops = {
        objective: pretraining_flops(
            model, preset.pretraining.override(objective=objective)
        )
        for objective in ("electric", "mlm")
    }
    every = args.checkpoint_every
    mlm_steps = every * max(
        1, round(args.electric_steps * flops["electric"] / flops["mlm"] / every)
    )
    runs = {}
    for objective, steps in (("electric", args.electric_steps), ("mlm", mlm_steps)):
        model_dir = out / objective
        print(f"[{objective}] pre-training {steps} steps in {model_dir}", flush=True)
        wall = time.perf_counter()
        held_out = pretrain(
            PretrainingFlags(
                data=data.train_data,
                preset=args.preset,
                objective=objective,
                model_dir=str(model_dir),
                steps=steps,
                checkpoint_every=every,
            )
        )
        keras.backend.clear_session()
        runs[objective] = {
            "steps": steps,
            "flops_per_sequence": flops[objective],
            "training_flops": steps * preset.batch_size * flops[objective],
            "held_out": held_out,
            "wall_seconds_this_call": time.perf_counter() - wall,
            "export": str(model_dir / "export"),
        }
    text = {
        "vocabulary": data.vocabulary,
        "sequence_length": length,
        "training_lines": [
            line
            for path in sorted(BUNDLED_CORPUS.glob("*.txt.gz"))
            for line in read_lines(path)
        ],
        "candidates": read_lines(args.held_out),
        "source": {"preset": args.preset, "held_out": args.held_out},
    }
    return text, runs


# === Finished runs ===
def read_run(model_dir) -> dict:
    """A finished run's config.json and eval_results.json, or one error line."""
    found = {}
    for name in ("config.json", "eval_results.json"):
        path = pathlib.Path(model_dir) / name
        if not path.is_file():
            raise SystemExit(f"error: {model_dir} is not a finished run: no {name}")
        found[name] = json.loads(path.read_text())
    return found


def finished_runs(args):
    """(text, runs) of `--electric-run` and `--mlm-run` (see the docstring)."""
    from electra_tf.config import ModelConfig, PretrainingConfig
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.pretraining.flops import pretraining_flops

    runs, configs = {}, {}
    for objective, model_dir in (
        ("electric", args.electric_run),
        ("mlm", args.mlm_run),
    ):
        found = read_run(model_dir)
        config = configs[objective] = found["config.json"]
        if config["pretraining"]["objective"] != objective:
            raise SystemExit(
                f"error: --{objective}-run {model_dir} was trained with "
                f"--objective {config['pretraining']['objective']}"
            )
        per_sequence = pretraining_flops(
            ModelConfig.from_dict(config["model"]),
            PretrainingConfig.from_dict(config["pretraining"]),
        )
        training = config["training"]
        runs[objective] = {
            "run": str(model_dir),
            "steps": training["train_steps"],
            "flops_per_sequence": per_sequence,
            "training_flops": training["train_steps"]
            * training["batch_size"]
            * per_sequence,
            "held_out": found["eval_results.json"],
            "export": str(pathlib.Path(model_dir) / "export"),
        }
    electric, mlm = configs["electric"], configs["mlm"]
    if electric["training"]["train_data"] != mlm["training"]["train_data"]:
        raise SystemExit(
            "error: --electric-run and --mlm-run trained on different data: "
            f"{electric['training']['train_data']} and "
            f"{mlm['training']['train_data']}"
        )
    sizes = ("num_layers", "hidden_dim", "embedding_dim", "num_heads")
    if any(electric["model"][k] != mlm["model"][k] for k in sizes):
        raise SystemExit(
            "error: --electric-run and --mlm-run differ in size: "
            + ", ".join(f"{k} {electric['model'][k]}/{mlm['model'][k]}" for k in sizes)
        )
    text = corpus_split(pathlib.Path(electric["training"]["train_data"]).parent)
    # Tokenise as the build did: its stats say whether it lower-cased.
    vocabulary = Vocabulary.from_file(electric["vocabulary"], text["lowercase"])
    return {
        **text,
        "vocabulary": vocabulary,
        "sequence_length": electric["pretraining"]["max_seq_length"],
    }, runs


def corpus_split(data_dir: pathlib.Path) -> dict:
    """The training and held-out lines of the corpus `data_dir` was built
    from, split by document as the build split it (`is_held_out`)."""
    from electra_tf.data.corpus import iter_documents
    from electra_tf.data.tfrecord_writer import is_held_out

    stats_path = data_dir / "stats.json"
    if not stats_path.is_file():
        raise SystemExit(f"error: no stats.json in {data_dir}: not a build's output")
    stats = json.loads(stats_path.read_text())
    training, held_out, documents = [], [], {}
    index = 0
    for name in stats["input_files"]:
        if not pathlib.Path(name).is_file():
            raise SystemExit(
                f"error: corpus file {name} (named by {stats_path}) not found "
                "from this directory"
            )
        held = 0
        for document in iter_documents(name):
            if is_held_out(index, stats["seed"], stats["eval_fraction"]):
                held_out.extend(document)
                held += 1
            else:
                training.extend(document)
            index += 1
        documents[name] = held
    if sum(documents.values()) != stats["eval_documents"]:
        raise SystemExit(
            f"error: {sum(documents.values())} held-out documents found, "
            f"{stats_path} counts {stats['eval_documents']}: not the same corpus"
        )
    return {
        "training_lines": training,
        "candidates": held_out,
        "source": {"data": str(data_dir), "held_out_documents": documents},
        "lowercase": stats["lowercase"],
    }


# === Scoring ===
def scorers(tokenizer, runs, sequence_length):
    import keras

    import electra_tf  # noqa: F401  (registers our classes for load_model)
    from electra_tf.scoring.sentence_scorer import SentenceScorer

    def load(objective, name):
        return keras.models.load_model(
            os.path.join(runs[objective]["export"], name), safe_mode=True
        )

    models = {
        "electric": load("electric", "discriminator.keras"),
        "mlm": load("mlm", "generator.keras"),
        "cloze": load("electric", "generator.keras"),
    }
    return {
        method: SentenceScorer(model, tokenizer, sequence_length, method=method)
        for method, model in models.items()
    }


def time_scoring(scorers, sentences, repeats):
    """({method: scores}, {method: [seconds per round]}), methods in turn."""
    from electra_tf.scoring.sentence_scorer import score_in_batches

    for scorer in scorers.values():  # trace outside the clock
        scorer.score(sentences[:64])
    scores, seconds = {}, {method: [] for method in scorers}
    for _ in range(repeats):
        for method, scorer in scorers.items():
            start = time.perf_counter()
            scored = score_in_batches(scorer.score_sentences, sentences)
            seconds[method].append(time.perf_counter() - start)
            scores[method] = scored["score"].tolist()
    return scores, seconds


def main(argv=None) -> int:
    args = parse_args(argv)
    info = run_info(__file__)
    text, runs = finished_runs(args) if args.electric_run else pretrain_both(args)
    vocabulary, sequence_length = text["vocabulary"], text["sequence_length"]
    tokenizer = vocabulary.tokenizer()
    counts = word_counts(text["training_lines"])
    ranking = frequency_ranking(counts, vocabulary.tokens)
    sentences = held_out_sentences(
        text["candidates"], text["training_lines"], tokenizer, sequence_length - 2
    )
    pairs = minimal_pairs(sentences, ranking, args.pairs, args.seed)
    texts = [p["original"] for p in pairs] + [p["corrupted"] for p in pairs]
    scores, seconds = time_scoring(
        scorers(tokenizer, runs, sequence_length), texts, args.repeats
    )
    scores["unigram"] = unigram_scores(texts, counts)
    methods = {}
    for method in METHODS:
        originals, corrupted = (
            scores[method][: len(pairs)],
            scores[method][len(pairs) :],
        )
        methods[method] = {
            "label": LABELS[method],
            "accuracy": pair_accuracy(pairs, originals, corrupted),
        }
        if method in seconds:
            methods[method].update(
                seconds_per_round=seconds[method],
                sentences_per_second=len(texts) / statistics.median(seconds[method]),
            )
    report = {
        **info,
        "setup": {
            **text["source"],
            "sequence_length": sequence_length,
            "vocabulary": vocabulary.path,
            "held_out_sentences": len(sentences),
            "eligible_words": len(ranking),
            "min_count": MIN_COUNT,
            "neighbours": NEIGHBOURS,
            "words_per_sentence": [MIN_WORDS, MAX_WORDS],
            "pairs": args.pairs,
            "seed": args.seed,
            "repeats": args.repeats,
        },
        "runs": runs,
        "methods": methods,
        "example_pairs": [
            pair
            for kind in KINDS
            for pair in [p for p in pairs if p["kind"] == kind][:3]
        ],
    }
    write_result(args.output, report)
    for method, result in methods.items():
        accuracy = {k: round(v["accuracy"], 3) for k, v in result["accuracy"].items()}
        speed = result.get("sentences_per_second")
        shown = f", {speed:.0f} sentences/s" if speed else ""
        print(f"{method}: {accuracy}{shown}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
