"""The paper's headline comparison on every task at once: ELECTRA against
BERT-style MLM against no pre-training at equal pre-training FLOPs, one
panel per task, from the reports `paper_experiments --report` writes.

`--task` names a task and the report that holds its runs (repeat it, in the
order of the panels), `--reference` the `linear_baseline` result files drawn
beside a task. Nothing is recomputed: the figures, spreads and intervals are
the reports', gathered in `<output>.md`, `.json` and `.png`; BENCHMARKS.md
section 19 has the command.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from bench.result_file import write_result
from bench.run_info import run_info
from bench.studies.paper.design import is_final, label
from bench.studies.paper.intervals import interval_text

ARMS = ("electra", "mlm", "none")
HEADLINE = ("electra - mlm", "electra - none")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    add = parser.add_argument
    add("--task", action="append", required=True, metavar="TASK=REPORT")
    add("--reference", action="append", default=[], metavar="TASK=RESULT[,RESULT]")
    add("--output", required=True, help="Path without suffix: .json, .md, .png.")
    return parser.parse_args(argv)


def _pairs(values: list[str], flag: str) -> list[tuple[str, str]]:
    pairs = [value.partition("=") for value in values]
    for value, (task, sep, path) in zip(values, pairs):
        if not (sep and task and path):
            raise ValueError(f"{flag} {value!r}: expected TASK=PATH")
    return [(task, path) for task, _, path in pairs]


def _read(path: str) -> dict:
    try:
        return json.loads(pathlib.Path(path).read_text())
    except OSError as error:
        raise ValueError(f"{path}: cannot read ({error.strerror})") from None
    except json.JSONDecodeError as error:
        raise ValueError(
            f"{path}: not JSON ({error.msg}, line {error.lineno})"
        ) from None


def final_points(report: dict, task: str, path: str) -> dict[str, dict]:
    """Each headline arm's final encoder on `task`, as the report's own
    comparisons choose it (`is_final`): a study whose final encoders have
    not all been fine-tuned is refused, never shown at an earlier step."""
    points = report.get("summary", {}).get(task)
    if not points:
        raise ValueError(f"{path}: no runs of task {task!r}")
    finals = {
        point["variant"]: point
        for point in points.values()
        if point["variant"] in ARMS and is_final(report["setup"], point)
    }
    missing = [arm for arm in ARMS if arm not in finals]
    if missing:
        raise ValueError(f"{path}: task {task!r} has no runs of {', '.join(missing)}")
    return finals


def _arm(point: dict) -> dict:
    keys = ("step", "flops", "pretraining_runs", "finetuning_runs", "test_mean")
    keys += ("test_std", "test_mean_per_pretraining_run")
    run_keys = ("pretraining_seed", "finetune_seed", "test")
    runs = [{k: run[k] for k in run_keys} for run in point["runs"]]
    return {**{k: point[k] for k in keys}, "runs": runs}


def _reference(path: str) -> dict:
    result = _read(path)
    keys = ("features", "test_accuracy", "dev_accuracy")
    return {"result": path, **{k: result[k] for k in keys}}


def gather(tasks, references) -> dict:
    """Per task: every arm's runs and summary, the report's comparisons and
    where it came from, and the linear references."""
    cited = {}
    for task, path in references:
        cited.setdefault(task, []).extend(path.split(","))
    unknown = sorted(set(cited) - {task for task, _ in tasks})
    if unknown:
        raise ValueError(f"--reference names a task not given by --task: {unknown[0]}")
    found, reports = {}, {}  # two tasks may share one study's report
    for task, path in tasks:
        report = reports[path] = reports.get(path) or _read(path)
        finals = final_points(report, task, path)
        setup = report["setup"]
        found[task] = {
            "report": path,
            # A report rewritten by --report-from keeps its units' date.
            "report_date": (report.get("units_from") or report).get("date"),
            "budget": {
                "pretraining_flops": setup["budget_flops"],
                "max_epochs": setup["max_epochs"][task],
                "patience": setup["patience"][task],
                "pos_train_sentences": setup.get("pos_train_sentences")
                if task == "pos"
                else None,
            },
            "arms": {arm: _arm(point) for arm, point in finals.items()},
            "comparisons": {
                name: interval
                for name, interval in report["comparisons"].get(task, {}).items()
                if name in HEADLINE
            },
            "references": [_reference(path) for path in cited.get(task, [])],
        }
    return found


def markdown(found: dict) -> str:
    lines = [
        "Test accuracy of the epoch chosen on dev, at equal pre-training FLOPs "
        "(the paper's count): mean ± standard deviation over every (pre-training "
        "run, fine-tuning seed); in brackets, pre-training runs x fine-tuning seeds, "
        "then each pre-training run's (for no pre-training: each set of "
        "initialisations') seed and mean. Differences: ELECTRA minus the arm, "
        "with 95% intervals from an unpaired two-level bootstrap (pre-training "
        "runs, then their fine-tuning seeds) and Welch's t over pre-training-run "
        "means. Each task's figures come from the report named under it.",
        "",
        "| task | budget | ELECTRA | BERT-style MLM | no pre-training | "
        "ELECTRA - MLM | ELECTRA - none | linear reference |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task, entry in found.items():
        budget = entry["budget"]
        cells = [
            f"{budget['pretraining_flops']:.3g} FLOPs; up to {budget['max_epochs']} "
            f"epochs, patience {budget['patience']}"
            + (
                f", {budget['pos_train_sentences']:,} training sentences"
                if budget["pos_train_sentences"]
                else ""
            )
        ]
        for arm in ARMS:
            a = entry["arms"][arm]
            means = a["test_mean_per_pretraining_run"]
            cells.append(
                f"{a['test_mean']:.4f} ± {a['test_std']:.4f} ({a['pretraining_runs']} "
                f"x {a['finetuning_runs'] // a['pretraining_runs']}; "
                f"{'sets' if arm == 'none' else 'runs'} {', '.join(means)}: "
                + ", ".join(f"{v:.3f}" for v in means.values())
                + ")"
            )
        compared = entry["comparisons"]
        cells += [
            interval_text(n, compared[n]) if n in compared else "-" for n in HEADLINE
        ]
        references = [
            f"{r['features']} {r['test_accuracy']:.4f}" for r in entry["references"]
        ]
        cells.append(", ".join(references) or "-")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    lines.append("")
    for task, entry in found.items():
        lines.append(f"{task}: `{entry['report']}` ({entry['report_date']})")
    return "\n".join(lines) + "\n"


def plot(found: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    import numpy as np

    size = (3.6 * len(found), 4.2)
    figure, panels = plt.subplots(1, len(found), figsize=size, squeeze=False)
    for axes, (task, entry) in zip(panels[0], found.items()):
        for x, arm in enumerate(ARMS):
            a, color = entry["arms"][arm], f"C{x}"
            pseeds = [r["pretraining_seed"] for r in a["runs"]]
            seeds = sorted(set(pseeds))
            # Each pre-training run's seeds side by side, so the spread between
            # runs shows apart from that within one.
            offsets = (np.searchsorted(seeds, pseeds) - (len(seeds) - 1) / 2) * 0.12
            for offset, r in zip(offsets, a["runs"]):
                axes.scatter(x + offset, r["test"], s=10, alpha=0.5, color=color)
            mean, std = a["test_mean"], a["test_std"]
            axes.errorbar(x + 0.35, mean, yerr=std, marker="s", color=color, capsize=4)
        for number, reference in enumerate(entry["references"]):
            axes.axhline(
                reference["test_accuracy"],
                color="grey",
                linestyle=("--", ":")[number % 2],
                linewidth=1,
                label=f"linear, {reference['features']}",
            )
        axes.set_xticks(range(len(ARMS)), [label(arm) for arm in ARMS], fontsize=8)
        seeds = sorted(
            {r["pretraining_seed"] for r in entry["arms"]["electra"]["runs"]}
        )
        seeds = ", ".join(map(str, seeds))
        axes.set_title(f"{task} (pre-training seeds {seeds})", fontsize=10)
        axes.grid(alpha=0.3, axis="y")
        if entry["references"]:
            axes.legend(fontsize=7, loc="lower right")
    panels[0][0].set_ylabel("test accuracy (dots: runs; squares: mean ± sd)")
    title = "Equal pre-training FLOPs: runs grouped by pre-training run"
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        found = gather(
            _pairs(args.task, "--task"), _pairs(args.reference, "--reference")
        )
    except ValueError as error:
        print(f"paper_headline: {error}", file=sys.stderr)
        return 2
    output = pathlib.Path(args.output)
    write_result(output.with_suffix(".json"), {**run_info(__file__), "tasks": found})
    table = markdown(found)
    output.with_suffix(".md").write_text(table)
    plot(found, output.with_suffix(".png"))
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
