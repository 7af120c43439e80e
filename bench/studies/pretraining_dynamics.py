"""How the discriminator leaves the base rate: held-out AUC against step, per variant.

Each variant is one `pretrain/run.py` run on the same TFRecords, with its own
`--hparams` on top of the shared ones, evaluated on the held-out shards every
`--eval-every` steps. The curves come from the runs' own TensorBoard logs
(held-out `rtd_auc`, `rtd_loss`, `replaced_fraction`, `mlm_accuracy`,
`sampled_accuracy` at each evaluation) and the health monitor's findings from
their logs. Runs are resumable: rerunning the same command continues each
unfinished variant from its newest checkpoint and skips finished ones.

Variant sets (`--study`):

* `generator`: generator width 1/16 (the demo's), 1/8, 1/4, 1/2 and 1 of the
  discriminator's (`generator_hidden_size`), the paper's Figure 3 question at
  CPU scale;
* `warmup`: warm-up lengths (`--warmups`);
* `custom`: `--variants '{"name": {"hparam": value}, ...}'`.

Written: `<output>.json` (run info, settings, every evaluation of every
variant, health findings) and `<output>.png` (held-out AUC and generator MLM
accuracy against step, one line per variant).

    python -m bench.studies.pretraining_dynamics --data 'runs/pretrain/data/train-*' \\
        --study generator --steps 3000 --eval-every 250 \\
        --out-dir /tmp/dynamics --output bench/results/pretraining_dynamics_generator
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import pathlib
import re
import subprocess
import sys

from bench.result_file import write_result
from bench.run_info import run_info

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

GENERATOR_SIZES = {"1/16": 0.0625, "1/8": 0.125, "1/4": 0.25, "1/2": 0.5, "1": 1.0}
METRICS = (
    "rtd_auc",
    "rtd_loss",
    "replaced_fraction",
    "mlm_accuracy",
    "sampled_accuracy",
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", required=True, help="Training TFRecords (train-*).")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument(
        "--hparams", default="{}", help="JSON overrides shared by every variant."
    )
    parser.add_argument(
        "--study", choices=("generator", "warmup", "custom"), default="generator"
    )
    parser.add_argument(
        "--warmups", default="100,500,1000,2000", help="Warm-up steps (--study warmup)."
    )
    parser.add_argument(
        "--variants", default="{}", help="JSON {name: hparams} (--study custom)."
    )
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--out-dir", required=True, help="Run directories (resumable).")
    parser.add_argument("--output", required=True, help="Report path without suffix.")
    parser.add_argument(
        "--keep-from",
        help="An earlier report (.json) with the same preset, hparams, steps and "
        "eval-every: its variants are kept as recorded, not rerun (their run "
        "directories may be gone), and the study adds the ones it lacks.",
    )
    args = parser.parse_args(argv)
    if args.steps % args.eval_every:
        parser.error("--steps must be a multiple of --eval-every")
    for flag in ("hparams", "variants"):
        try:
            setattr(args, flag, json.loads(getattr(args, flag)))
        except json.JSONDecodeError as error:
            parser.error(f"--{flag} is not valid JSON: {error}")
    return args


def variants(args) -> dict[str, dict]:
    if args.study == "generator":
        return {
            f"generator {name}": {"generator_hidden_size": size}
            for name, size in GENERATOR_SIZES.items()
        }
    if args.study == "warmup":
        return {
            f"warm-up {steps}": {"warmup_steps": int(steps)}
            for steps in args.warmups.split(",")
        }
    if not args.variants:
        raise SystemExit("--study custom needs --variants")
    return args.variants


def held_out_curve(model_dir: str) -> list[dict]:
    """Every held-out evaluation logged by a run, by optimizer step."""
    import tensorflow as tf

    by_step: dict[int, dict] = {}
    for path in sorted(glob.glob(os.path.join(model_dir, "logs", "validation", "ev*"))):
        for event in tf.compat.v1.train.summary_iterator(path):
            for value in event.summary.value:
                name = value.tag.removeprefix("epoch_")
                if name in METRICS:
                    by_step.setdefault(event.step, {})[name] = round(
                        float(tf.make_ndarray(value.tensor)), 5
                    )
    return [{"step": step, **values} for step, values in sorted(by_step.items())]


def health_findings(log_path: str) -> list[str]:
    if not os.path.exists(log_path):
        return []
    with open(log_path, errors="replace") as log:
        return [
            line.split("Training health ", 1)[1].strip()
            for line in log
            if "Training health " in line
        ]


def run_variant(args, name: str, hparams: dict) -> dict:
    slug = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")
    model_dir = os.path.join(args.out_dir, slug)
    log_path = model_dir + ".log"
    os.makedirs(args.out_dir, exist_ok=True)
    command = [
        sys.executable,
        str(REPO / "pretrain" / "run.py"),
        "--data",
        args.data,
        "--preset",
        args.preset,
        "--model-dir",
        model_dir,
        "--steps",
        str(args.steps),
        "--checkpoint-every",
        str(args.eval_every),
        "--hparams",
        json.dumps({**args.hparams, **hparams}),
    ]
    with open(log_path, "a") as log:
        result = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT)
    if result.returncode:
        raise SystemExit(f"variant {name!r} failed; see {log_path}")
    return {
        "hparams": hparams,
        "model_dir": model_dir,
        "evaluations": held_out_curve(model_dir),
        "health": health_findings(log_path),
    }


def plot(report: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (auc_axis, mlm_axis) = plt.subplots(1, 2, figsize=(11, 4.2))
    for name, result in report["variants"].items():
        steps = [e["step"] for e in result["evaluations"]]
        auc_axis.plot(
            steps, [e["rtd_auc"] for e in result["evaluations"]], "o-", label=name
        )
        mlm_axis.plot(
            steps, [e["mlm_accuracy"] for e in result["evaluations"]], "o-", label=name
        )
    auc_axis.axhline(0.5, color="grey", linewidth=0.8)
    auc_axis.set(xlabel="step", ylabel="held-out RTD AUC", title="discriminator")
    mlm_axis.set(xlabel="step", ylabel="held-out MLM accuracy", title="generator")
    auc_axis.legend()
    figure.suptitle(
        f"{report['setup']['preset']} {json.dumps(report['setup']['hparams'])}",
        fontsize=9,
    )
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def save(report: dict, output: str) -> None:
    """`<output>.json` and `<output>.png` as the report stands."""
    write_result(output + ".json", report)
    plot(report, output + ".png")


def kept_report(path: str, setup: dict) -> dict:
    """The earlier report at `path`; one line naming it if it cannot be read or
    was run with other settings (its curves would not compare)."""
    try:
        with open(path) as file:
            earlier = json.load(file)
        differ = [
            key
            for key in ("preset", "hparams", "steps", "eval_every")
            if earlier["setup"][key] != setup[key]
        ]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise SystemExit(
            f"--keep-from {path}: not a report of this study ({error})"
        ) from None
    if differ:
        raise SystemExit(
            f"--keep-from {path}: its {', '.join(differ)} differ from this run's"
        )
    return earlier


def main(argv=None) -> int:
    args = parse_args(argv)
    report = {
        "run": run_info(__file__),
        "setup": {
            "data": args.data,
            "preset": args.preset,
            "hparams": args.hparams,
            "steps": args.steps,
            "eval_every": args.eval_every,
            "study": args.study,
        },
        "variants": {},
    }
    if args.keep_from:
        earlier = kept_report(args.keep_from, report["setup"])
        report["kept_from"] = {"report": args.keep_from, "run": earlier["run"]}
        report["variants"].update(earlier["variants"])
        # Written now too, so that a study with nothing left to run still
        # gets its merged report.
        save(report, args.output)
    for name, hparams in variants(args).items():
        if name in report["variants"]:
            continue
        report["variants"][name] = run_variant(args, name, hparams)
        save(report, args.output)
        last = report["variants"][name]["evaluations"][-1:]
        print(name, last)
    return 0


if __name__ == "__main__":
    sys.exit(main())
