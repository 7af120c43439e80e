"""The headline across tasks: figures carried over from the reports, never
recomputed, and bad arguments refused with one line naming the culprit."""

import json

import pytest

from bench.studies import paper_headline as headline
from bench.studies.paper import intervals


def _point(variant, step, scores_by_seed):
    runs = [
        {"pretraining_seed": seed, "finetune_seed": f, "test": score}
        for seed, scores in scores_by_seed.items()
        for f, score in enumerate(scores, 1)
    ]
    tests = [r["test"] for r in runs]
    return {
        "variant": variant,
        "step": step,
        "flops": 1e14 * step / 6000,
        "pretraining_runs": len(scores_by_seed),
        "finetuning_runs": len(runs),
        "test_mean": sum(tests) / len(tests),
        "test_std": 0.01,
        "test_mean_per_pretraining_run": {
            str(seed): sum(s) / len(s) for seed, s in scores_by_seed.items()
        },
        "runs": runs,
    }


def _report(tmp_path, name="report.json", arms=("electra", "mlm", "none"), drop=()):
    electra = {4: [0.70, 0.71, 0.72], 5: [0.73, 0.72, 0.71], 6: [0.70, 0.70, 0.71]}
    points = {
        # An earlier curve point of ELECTRA: the headline takes the final one.
        "electra@750": _point("electra", 750, {5: [0.50]}),
        "electra@6000": _point("electra", 6000, electra),
        "mlm@8500": _point("mlm", 8500, {4: [0.71, 0.72, 0.7], 5: [0.7, 0.7, 0.69]}),
        "none@0": _point("none", 0, {4: [0.74, 0.73, 0.73]}),
    }
    points = {k: p for k, p in points.items() if p["variant"] in arms and k not in drop}
    comparisons = {
        "electra - mlm": intervals.compare(
            {4: [0.70, 0.71]}, {4: [0.71, 0.72]}, samples=200
        ),
        "electra - none": intervals.compare(
            {4: [0.70, 0.71]}, {4: [0.74]}, samples=200
        ),
    }
    report = {
        "date": "2026-11-27",
        "setup": {
            "budget_flops": 2.16e14,
            "kept_steps": {"electra": [750, 6000], "mlm": [8500]},
            "max_epochs": {"sentiment": 10},
            "patience": {"sentiment": 2},
        },
        "summary": {"sentiment": points},
        "comparisons": {"sentiment": comparisons},
    }
    path = tmp_path / name
    path.write_text(json.dumps(report))
    return path


def _reference(tmp_path):
    path = tmp_path / "linear.json"
    path.write_text(
        json.dumps({"features": "words", "test_accuracy": 0.741, "dev_accuracy": 0.78})
    )
    return path


def test_headline_carries_each_reports_figures_and_intervals(tmp_path):
    report, reference = _report(tmp_path), _reference(tmp_path)
    output = tmp_path / "out" / "headline"
    code = headline.main(
        [
            f"--task=sentiment={report}",
            f"--reference=sentiment={reference}",
            f"--output={output}",
        ]
    )
    assert code == 0
    written = json.loads(output.with_suffix(".json").read_text())
    arms = written["tasks"]["sentiment"]["arms"]
    assert arms["electra"]["step"] == 6000  # the final point, not the curve's
    assert len(arms["electra"]["runs"]) == 9
    assert arms["mlm"]["pretraining_runs"] == 2
    assert written["tasks"]["sentiment"]["references"][0]["test_accuracy"] == 0.741
    table = output.with_suffix(".md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| sentiment"))
    assert f"{arms['electra']['test_mean']:.4f}" in row
    assert "3 x 3; runs 4, 5, 6" in row and "1 x 3; sets 4" in row
    assert "95% two-level bootstrap" in row  # electra - mlm: 2 scores a side
    assert "no interval (none: one pre-training run, one seed)" in row
    assert "words 0.7410" in row
    assert output.with_suffix(".png").stat().st_size > 0


@pytest.mark.parametrize(
    "arguments, culprit",
    [
        (["--task=sentiment"], "--task 'sentiment': expected TASK=PATH"),
        (["--task=pos={report}"], "no runs of task 'pos'"),
        (["--task=sentiment={missing}"], "missing.json: cannot read"),
        (
            ["--task=sentiment={report}", "--reference=party={report}"],
            "names a task not given by --task: party",
        ),
        (["--task=sentiment={partial}"], "has no runs of mlm, none"),
        # ELECTRA's final encoder not fine-tuned yet: its curve point is no stand-in.
        (["--task=sentiment={unfinished}"], "has no runs of electra"),
    ],
)
def test_bad_arguments_get_one_line_naming_the_culprit(
    tmp_path, capsys, arguments, culprit
):
    paths = {
        "report": _report(tmp_path),
        "partial": _report(tmp_path, "partial.json", arms=("electra",)),
        "unfinished": _report(tmp_path, "unfinished.json", drop=("electra@6000",)),
        "missing": tmp_path / "missing.json",
    }
    output = tmp_path / "headline"
    code = headline.main(
        [a.format(**paths) for a in arguments] + [f"--output={output}"]
    )
    assert code == 2
    error = capsys.readouterr().err.strip()
    assert culprit in error and len(error.splitlines()) == 1
    assert not output.with_suffix(".json").exists()


def test_a_rewritten_report_is_dated_by_its_units(tmp_path):
    path = _report(tmp_path)
    rewritten = json.loads(path.read_text())
    rewritten.update(date="2026-11-28", units_from={"date": "2026-11-20"})
    path.write_text(json.dumps(rewritten))
    output = tmp_path / "headline"
    assert headline.main([f"--task=sentiment={path}", f"--output={output}"]) == 0
    assert f"sentiment: `{path}` (2026-11-20)" in output.with_suffix(".md").read_text()
