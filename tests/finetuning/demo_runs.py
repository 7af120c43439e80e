"""The bundled demos and fixtures fine-tuned through the command line with fixed
seeds: the reference that `test_demo_runs.py` compares a changed fine-tuning
package with.

Every kind and path of `finetune/run.py` on tiny models and a short schedule:
GLUE SST-2 (the bundled rt_polarity excerpt, 256 sentences drawn, two seeds),
MNLI (the fixture: two dev and three test splits), MRPC from a pre-trained
preset (a seeded tiny encoder saved as one, `reinit_layers` 1, pairs swapped),
your own CSV files (rt_polarity rows, with a test file), the Brown POS fixture
as your own files (tagging: the 15 training sentences the demo bundled before
its 2,000; random, and from the preset with `reinit_layers` 1), and the SQuAD
fixture (2.0 from random initialisation, 1.1 from the preset). What is
recorded per run: `metrics.json`'s per-seed epochs (train and dev metrics,
scores), best epochs, medians and best seed, and the predictions files it wrote.

The numbers are those of one machine and one TensorFlow build (recorded in
`demo_runs.json`): a float may differ in its last bits elsewhere. Record them
afresh before changing the package, on the machine that checks the change:

    python -m tests.finetuning.demo_runs --write tests/finetuning/demo_runs.json
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import pathlib
import platform
import subprocess
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[2]
GLUE = str(REPO / "tests" / "fixtures" / "glue")
SQUAD = str(REPO / "tests" / "fixtures" / "squad")
BROWN = REPO / "tests" / "fixtures" / "brown_pos"
RT_POLARITY = REPO / "electra_tf" / "assets" / "tasks" / "rt_polarity"
DEMO_VOCABULARY = str(REPO / "electra_tf" / "assets" / "demo_vocab.txt")
RECORD = pathlib.Path(__file__).with_name("demo_runs.json")
# Floats are compared to this (absolute or relative) tolerance.
TOLERANCE = 1e-6
# The SQuAD fixture's settings: 64-token windows, a small head.
SQUAD_HPARAMS = (
    '{"doc_stride": 32, "max_query_length": 16, "head_hidden_dim": 16, "beam_size": 8}'
)


def cases(folder: pathlib.Path) -> dict[str, list[str]]:
    """Each run's flags (without --output-dir); writes their inputs to `folder`."""
    preset = str(write_preset(folder / "preset"))
    own = write_own_csv(folder / "own")
    # Random initialisation, one seed (a later --seeds wins: argparse's last).
    random = ["--pretrained", "none", "--vocab", DEMO_VOCABULARY, "--seeds", "1"]
    brown = [f"--{s}-file={BROWN / s}.conll" for s in ("train", "dev", "test")]
    return {
        "sst2_excerpt": [
            *random,
            "--task",
            "sst2",
            "--seeds",
            "1,2",
            "--epochs",
            "1",
            "--train-examples",
            "256",
        ],
        "mnli_fixture": [
            *random,
            "--task",
            "mnli",
            "--data-dir",
            GLUE,
            "--epochs",
            "2",
            "--batch-size",
            "2",
        ],
        "mrpc_fixture_preset": [
            "--pretrained",
            preset,
            "--seeds",
            "1",
            "--task",
            "mrpc",
            "--data-dir",
            GLUE,
            "--epochs",
            "2",
            "--batch-size",
            "2",
            "--hparams",
            '{"reinit_layers": 1}',
        ],
        "own_csv": [
            *random,
            "--train-file",
            own["train"],
            "--dev-file",
            own["dev"],
            "--test-file",
            own["test"],
            "--text-columns",
            "sentence",
            "--label-column",
            "label",
            "--epochs",
            "1",
        ],
        "brown_pos": [*random, "--task", "tagging", *brown, "--epochs", "2"],
        "brown_pos_preset": [
            "--pretrained",
            preset,
            "--seeds",
            "1",
            "--task",
            "tagging",
            *brown,
            "--epochs",
            "1",
            "--hparams",
            '{"reinit_layers": 1}',
        ],
        "squad2_fixture": [
            *random,
            "--task",
            "squad2",
            "--data-dir",
            SQUAD,
            "--epochs",
            "2",
            "--batch-size",
            "16",
            "--max-seq-length",
            "64",
            "--hparams",
            SQUAD_HPARAMS,
        ],
        "squad1_fixture_preset": [
            "--pretrained",
            preset,
            "--seeds",
            "1",
            "--task",
            "squad1",
            "--data-dir",
            SQUAD,
            "--epochs",
            "1",
            "--batch-size",
            "16",
            "--max-seq-length",
            "64",
            "--hparams",
            SQUAD_HPARAMS,
        ],
    }


def write_preset(path: pathlib.Path) -> pathlib.Path:
    """A tiny encoder drawn with seed 0, saved as a keras-hub preset."""
    import keras

    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.models.encoder import ElectraEncoder
    from electra_tf.models.keras_hub_preset import save_keras_hub_preset
    from electra_tf.presets import get_preset

    vocabulary = Vocabulary.from_file(DEMO_VOCABULARY)
    keras.utils.set_random_seed(0)
    config = get_preset("tiny").model.override(vocabulary_size=vocabulary.size)
    encoder = ElectraEncoder.discriminator_from_config(config)
    save_keras_hub_preset(encoder, vocabulary, path)
    return path


def write_own_csv(folder: pathlib.Path) -> dict[str, str]:
    """rt_polarity rows as CSV files: 200 to train on, 100 dev, 20 to predict
    (with an id column, which the predictions file keeps)."""
    folder.mkdir(parents=True)
    with open(RT_POLARITY / "train.tsv", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    splits = {"train": rows[:200], "dev": rows[200:300], "test": rows[300:320]}
    paths = {}
    for split, split_rows in splits.items():
        paths[split] = str(folder / f"{split}.csv")
        with open(paths[split], "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            if split == "test":
                writer.writerow(["id", "sentence"])
                writer.writerows([i, text] for i, (text, _) in enumerate(split_rows))
            else:
                writer.writerow(["sentence", "label"])
                writer.writerows(split_rows)
    return paths


def outcome(output_dir: pathlib.Path) -> dict:
    """What a run is compared on: its metrics and the predictions it wrote."""
    metrics = json.loads((output_dir / "metrics.json").read_text())
    files = {}
    for path in sorted(output_dir.rglob("*")):
        relative = path.relative_to(output_dir).as_posix()
        if not path.is_file() or relative == "metrics.json":
            continue
        if relative.startswith(("submission/", "predictions/")):
            files[relative] = path.read_text(encoding="utf-8")
        elif relative in ("predictions.json", "null_odds.json"):
            files[relative] = json.loads(path.read_text(encoding="utf-8"))
    return {
        "seeds": metrics["seeds"],
        "median": metrics["median"],
        "best_seed": metrics["best_seed"],
        "files": files,
    }


def run_all(folder: pathlib.Path, names=None) -> dict:
    """Runs the cases (all, or `names`) with the command line; their outcomes."""
    from electra_tf.cli.finetune import main

    results = {}
    for name, argv in cases(folder).items():
        if names and name not in names:
            continue
        output_dir = folder / "runs" / name
        status = main([*argv, "--output-dir", str(output_dir)])
        if status != 0:
            raise RuntimeError(f"{name}: finetune exited with {status}")
        results[name] = outcome(output_dir)
    return results


def differences(expected, actual, where="") -> list[str]:
    """Where two outcomes differ: floats beyond `TOLERANCE`, anything else at all."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        found = []
        if set(expected) != set(actual):
            found.append(f"{where}: keys {sorted(expected)} != {sorted(actual)}")
        for key in sorted(set(expected) & set(actual)):
            found += differences(expected[key], actual[key], f"{where}/{key}")
        return found
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{where}: {len(expected)} items != {len(actual)}"]
        found = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            found += differences(e, a, f"{where}[{i}]")
        return found
    if isinstance(expected, float) or isinstance(actual, float):
        if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
            if math.isclose(expected, actual, rel_tol=TOLERANCE, abs_tol=TOLERANCE):
                return []
        return [f"{where}: {expected!r} != {actual!r}"]
    return [] if expected == actual else [f"{where}: {expected!r} != {actual!r}"]


def machine() -> dict:
    import keras
    import tensorflow as tf

    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    return {
        "commit": commit,
        "cpu": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "keras": keras.__version__,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", help="Write the outcomes (and the machine) here.")
    parser.add_argument("--compare", help="Compare the outcomes with this record.")
    parser.add_argument("--cases", help="Comma-separated case names (default: all).")
    args = parser.parse_args(argv)
    names = args.cases.split(",") if args.cases else None
    with tempfile.TemporaryDirectory() as folder:
        results = run_all(pathlib.Path(folder), names)
    if args.write:
        record = {"machine": machine(), "runs": results}
        pathlib.Path(args.write).write_text(json.dumps(record, indent=1) + "\n")
    if args.compare:
        expected = json.loads(pathlib.Path(args.compare).read_text())["runs"]
        found = []
        for name, outcome_ in results.items():
            found += differences(expected[name], outcome_, name)
        print("\n".join(found) or f"{len(results)} runs as recorded")
        return 1 if found else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
