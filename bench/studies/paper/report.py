"""The study's report (`write_files`): per task and encoder every run's test
and dev score (`summarise`) and ELECTRA against every other arm, from the unit
records or from an earlier report, which carries every record."""

from __future__ import annotations

import collections
import json
import pathlib
import statistics

from bench.result_file import write_result
from bench.studies.paper import plots
from bench.studies.paper.design import TASKS, is_generator_ablation, label
from bench.studies.paper.intervals import LEVEL, SAMPLES, comparisons, interval_text
from bench.studies.paper.units import (
    best_rate,
    encoder_parts,
    of_run,
    pretraining_key,
)

# How many final epochs `late_gain` looks back over.
LATE_EPOCHS = 3
# The held-out figure that says how far each objective's pre-training got, in
# order of preference: RTD AUC for every discriminator (ELECTRA 15%'s over
# the masked positions only), else the identity accuracy the objective
# trains (All-Tokens MLM's over every position, most of them copies).
HELD_OUT_SCORES = (
    ("rtd_auc", "AUC"),
    ("all_tokens_mlm_accuracy", "all-tokens accuracy"),
    ("replace_mlm_accuracy", "replace-MLM accuracy"),
    ("mlm_accuracy", "MLM accuracy"),
)


def _executed(flops) -> str:
    """Executed FLOPs, or "-" for an arm this invocation did not name: its
    per-sequence count comes from the study's setup, which knows only the
    arms it runs (a report rewritten with every arm gives them all)."""
    return "-" if flops is None else f"{flops:.3g}"


def summarise(setup: dict, records: dict[str, dict]) -> dict:
    """Per task and encoder group, every run's test and dev score."""
    kept = {}  # encoder: (paper FLOPs, executed FLOPs, held-out scores)
    per_sequence = setup.get("executed_flops_per_sequence", {})
    for key, record in records.items():
        if not key.startswith("pretrain."):
            continue
        rate = per_sequence.get(record.get("variant"))
        for step, k in record["kept"].items():
            executed = None if rate is None else int(step) * setup["batch_size"] * rate
            kept[k["encoder"]] = (k["flops"], executed, k["held_out"])
    summary = {}
    for task in setup["tasks"]:
        metric = TASKS[task].metric
        rows = {}
        for key, run in records.items():
            if not key.startswith("finetune.") or run["task"] != task:
                continue
            variant, pseed, step = encoder_parts(run["encoder"])
            flops, executed, held_out = kept.get(run["encoder"], (0.0, 0.0, {}))
            chosen = run["epochs"][run["best_epoch"] - 1]
            rows.setdefault((variant, step), []).append(
                {
                    "pretraining_seed": pseed,
                    "finetune_seed": run["finetune_seed"],
                    "learning_rate": run["config"]["learning_rate"],
                    "test": run["test"][metric],
                    "dev": run["dev"]["dev"][metric],
                    "best_epoch": run["best_epoch"],
                    "train": chosen.get("train", {}).get(metric),
                    "epochs_run": len(run["epochs"]),
                    "late_dev_gain": late_gain(run["epochs"]),
                    "stopped_early": run.get("stopped_early", False),
                    "flops": flops,
                    "executed_flops": executed,
                    "held_out": held_out,
                    # The code the unit started with, and its machine (None
                    # in units recorded before units named theirs).
                    "commit": run.get("commit"),
                    "machine": run.get("machine"),
                }
            )
        summary[task] = {
            f"{variant}@{step}": _describe(variant, step, points)
            for (variant, step), points in sorted(rows.items())
        }
    return summary


def chosen_learning_rate(points: list[dict]) -> tuple[list[dict], dict]:
    """The runs at the learning rate whose mean dev score is best over the
    fine-tuning seeds every rate ran (`units.best_rate`, as the units at the
    chosen rate chose it), and each rate's dev mean over those seeds: a study
    that fine-tunes at several rates chooses on dev and reports test at the
    chosen rate, over all its seeds."""
    by_rate = collections.defaultdict(list)
    for point in points:
        by_rate[point["learning_rate"]].append(point)
    shared = set.intersection(
        *({p["finetune_seed"] for p in runs} for runs in by_rate.values())
    )
    dev = {
        rate: [p["dev"] for p in runs if p["finetune_seed"] in shared]
        for rate, runs in sorted(by_rate.items())
    }
    rates = {
        f"{rate:g}": {"dev_mean": statistics.fmean(v), "runs": len(by_rate[rate])}
        for rate, v in dev.items()
    }
    return by_rate[best_rate(dev)], rates


def _describe(variant, step, points) -> dict:
    # Each pre-training run's encoder gets the rate chosen on its own dev runs.
    chosen, rates = [], {}
    for pseed in sorted({p["pretraining_seed"] for p in points}):
        runs = [p for p in points if p["pretraining_seed"] == pseed]
        runs, rates[str(pseed)] = chosen_learning_rate(runs)
        chosen += runs
    points = chosen
    tests = [p["test"] for p in points]
    by_run = collections.defaultdict(list)
    for p in points:
        by_run[p["pretraining_seed"]].append(p["test"])
    trained = [p["train"] for p in points]
    return {
        "variant": variant,
        "step": step,
        "flops": points[0]["flops"],
        "executed_flops": points[0]["executed_flops"],
        "held_out": {
            str(p["pretraining_seed"]): p["held_out"] for p in points if p["held_out"]
        },
        "runs": sorted(
            points, key=lambda p: (p["pretraining_seed"], p["finetune_seed"])
        ),
        "pretraining_runs": len(by_run),
        "finetuning_runs": len(points),
        "test_mean": statistics.fmean(tests),
        "test_std": statistics.stdev(tests) if len(tests) > 1 else 0.0,
        "test_mean_per_pretraining_run": {
            str(s): statistics.fmean(v) for s, v in sorted(by_run.items())
        },
        "dev_mean": statistics.fmean(p["dev"] for p in points),
        # How well the runs fit their training data (at the chosen epoch):
        # an encoder that is a poor start shows here as well as on dev.
        "train_mean": None if None in trained else statistics.fmean(trained),
        "best_epoch_is_last": sum(
            p["best_epoch"] == p["epochs_run"] and not p["stopped_early"]
            for p in points
        ),
        "late_dev_gain_mean": statistics.fmean(p["late_dev_gain"] for p in points),
        # Per pre-training run: the chosen rate, and every rate's dev mean.
        "learning_rate": {
            str(p["pretraining_seed"]): p["learning_rate"] for p in points
        },
        "learning_rates": rates,
    }


def late_gain(epochs: list[dict]) -> float:
    """What a run's last `LATE_EPOCHS` epochs added to its best dev score. With
    the learning rate decayed to zero over the maximum epochs, the last epoch is
    often the best by a hair; a small late gain says the run had converged."""
    scores = [e["score"] for e in epochs]
    if len(scores) <= LATE_EPOCHS:
        return 0.0
    return max(scores) - max(scores[:-LATE_EPOCHS])


def runs_in_progress(setup, store) -> dict:
    """How far each pre-training run not yet recorded has come."""
    import tensorflow as tf

    from bench.studies.paper.pretraining import held_out_history

    found = {}
    out_dir = store.directory.parent
    for name, pseeds in setup["variant_seeds"].items():
        for pseed in pseeds:
            key = pretraining_key(name, pseed)
            model_dir = out_dir / "runs" / f"{name}-p{pseed}"
            if store.done(key) or not model_dir.exists():
                continue
            latest = tf.train.latest_checkpoint(str(model_dir / "checkpoints"))
            kept = (out_dir / "encoders").glob(f"{name}-p{pseed}-s*")
            found[key] = {
                "step": int(latest.rsplit("-", 1)[1]) if latest else 0,
                "total_steps": setup["total_steps"][name],
                "kept_encoders": sorted(
                    p.name for p in kept if not p.name.endswith(".tmp")
                ),
                "held_out_history": held_out_history(model_dir),
            }
    return found


def records_from_report(report: dict) -> dict[str, dict]:
    """The unit records a report was written from."""
    histories = report["held_out_histories"]
    records = {
        key: {**record, "held_out_history": histories[key]}
        for key, record in report["pretraining"].items()
    }
    return {**records, **report["finetuning_runs"]}


def write_files(
    output, setup, records, header, in_progress, weights, set_aside=None
) -> None:
    """`<output>.json` (`header` first), `<output>.md` and the plots;
    `set_aside`: the records of runs set aside, kept apart from the study's."""
    summary = summarise(setup, records)
    compared = comparisons(setup, summary)
    output = pathlib.Path(output)
    pretraining = {k: r for k, r in records.items() if k.startswith("pretrain.")}
    report = {
        **header,
        "setup": setup,
        "pretraining": {
            k: {key: v for key, v in r.items() if key != "held_out_history"}
            for k, r in pretraining.items()
        },
        "held_out_histories": {
            k: r.get("held_out_history") for k, r in pretraining.items()
        },
        "in_progress": in_progress,
        "encoder_weights": weights,
        "summary": summary,
        "comparisons": compared,
        "finetuning_runs": {
            k: r for k, r in records.items() if k.startswith("finetune.")
        },
        "set_aside": set_aside or {},
    }
    write_result(output.with_suffix(".json"), report)
    text = markdown(setup, summary, compared, weights) + set_aside_note(set_aside)
    output.with_suffix(".md").write_text(text)
    plots.draw(setup, summary, output)


def set_aside_note(set_aside: dict | None) -> str:
    """The markdown lines naming each run set aside: its units, where and when
    they ran (their records are in the report's `set_aside`)."""
    if not set_aside:
        return ""
    lines = [
        "",
        "### Set aside",
        "",
        "Runs set aside to be run again from scratch (their records are in the "
        "JSON report's `set_aside`, left out of every table above):",
        "",
    ]
    runs = sorted(k for k in set_aside if k.startswith("pretrain."))
    for run in runs:
        units = [k for k in set_aside if of_run(k, run)]
        record = set_aside[run]
        lines.append(
            f"- `{run}` and {len(units) - 1} fine-tuning unit(s), run at commit "
            f"{record.get('commit')} on {record.get('machine')}"
        )
    return "\n".join(lines) + "\n"


def encoder_weights(store, previous_report: pathlib.Path) -> dict:
    """Weight scales of every kept encoder on disk, and from the previous report
    for encoders no longer there (a scratch directory can be lost between
    sessions while its records live on in the report)."""
    measured = {
        path.name: weight_scales(path)
        for path in (store.directory.parent / "encoders").glob("*")
        if (path / "model.weights.h5").exists()
    }
    if previous_report.exists():
        earlier = json.loads(previous_report.read_text()).get("encoder_weights", {})
        # Only of runs still recorded: a run set aside and run again has new encoders.
        recorded = {
            name: scales
            for name, scales in earlier.items()
            if store.done(pretraining_key(*encoder_parts(name)[:2]))
        }
        measured = {**recorded, **measured}

    def by_step(name):  # electra-p2-s750 before electra-p2-s1500
        run, _, step = name.rpartition("-s")
        return (run, int(step)) if step.isdigit() else (name, 0)

    return {name: measured[name] for name in sorted(measured, key=by_step)}


def weight_scales(encoder_dir: pathlib.Path) -> dict:
    """Root-mean-square of a kept encoder's token embeddings and, per block, its
    attention and feed-forward kernels: beside the fresh initialisation's scale,
    what pre-training and its weight decay did to the start fine-tuning gets."""
    import h5py
    import numpy as np

    embeddings, blocks = [None], {"attention": {}, "feed_forward": {}}

    def visit(name, item):
        if not isinstance(item, h5py.Dataset) or item.ndim < 2:
            return
        if "reversible_embedding" in name:
            embeddings.append(np.asarray(item))
        # Blocks are "transformer_encoder[_N]" in encoders saved before the
        # encoder had its own layer class, "electra_transformer_layer[_N]" since.
        block = next((p for p in name.split("/") if "transformer" in p), "")
        kind = "attention" if "_self_attention_layer/" in name else "feed_forward"
        if block and ("_self_attention_layer/" in name or "_feedforward_" in name):
            blocks[kind].setdefault(block, []).append(np.asarray(item).ravel())

    with h5py.File(encoder_dir / "model.weights.h5", "r") as weights:
        weights.visititems(visit)

    def rms(values):
        return float(np.sqrt(np.mean(np.square(values))))

    def depth(block):  # transformer_encoder, transformer_encoder_1, ...
        tail = block.rsplit("_", 1)[1]
        return int(tail) if tail.isdigit() else 0

    return {
        "token_embeddings": None if embeddings[-1] is None else rms(embeddings[-1]),
        **{
            kind: [rms(np.concatenate(found[b])) for b in sorted(found, key=depth)]
            for kind, found in blocks.items()
        },
    }


def markdown(setup, summary, compared, encoder_weights=None) -> str:
    joined = {
        k: ", ".join(f"{t} {e}" for t, e in setup[k].items())
        for k in ("max_epochs", "patience")
    }
    lines = [
        f"Budget {setup['budget_flops']:.3g} pre-training FLOPs per run (the "
        f"paper's count; {setup['preset']} preset, batch {setup['batch_size']}). "
        "Test score of the epoch chosen on dev: mean ± standard deviation over "
        "every (pre-training run, fine-tuning seed); per pre-training run in "
        f"brackets. Fine-tuning: up to {joined['max_epochs']} epochs, early "
        f"stopping on dev with patience {joined['patience']}."
        + (
            f" POS trains on {setup['pos_train_sentences']:,} sentences sampled "
            "from its training split, the same for every run."
            if setup.get("pos_train_sentences")
            else ""
        )
        + (
            " Other generators (paper Figure 3) train for ELECTRA's steps, "
            "each at its own FLOPs."
            if any(is_generator_ablation(n) for n in setup["total_steps"])
            else ""
        )
        + " Held-out pre-training score at the encoder's step: RTD AUC for "
        "discriminators (ELECTRA 15%'s over the masked positions only), else the "
        "accuracy of the tokens the objective predicts (All-Tokens MLM's over "
        "every position, most of them copies). Code and machine: the commits "
        "the row's fine-tuning units started with (`+changes`: with "
        "uncommitted changes) and the machines they recorded.",
        "",
        "ELECTRA minus another arm, and every other pre-trained arm minus no "
        "pre-training and MLM (with no ELECTRA arm, MLM minus no pre-training "
        "too; each arm: the mean of its pre-training "
        f"runs' means), with {LEVEL:.0%} intervals, both unpaired (the arms' "
        "runs are independent): a two-level bootstrap (each arm on its own, "
        "its pre-training runs drawn with replacement, then each drawn run's "
        f"fine-tuning scores; {SAMPLES:,} resamples, percentile interval) and "
        "Welch's t-interval over the pre-training-run means "
        "(`scipy.stats.ttest_ind`, `equal_var=False`), the latter only where "
        "both arms have two or more pre-training runs. With three runs an arm "
        "the bootstrap is the narrower: it resamples three run means (2/3 of "
        "their sample variance) and takes no t quantile for so few.",
        "",
    ]
    for task, points in summary.items():
        lines += [
            f"### {task}",
            "",
            "| encoder | step | FLOPs (paper) | FLOPs (executed) | runs | test | "
            f"per pre-training run | held-out pre-training score per run | dev | "
            f"train | best epoch last | last {LATE_EPOCHS} epochs' dev gain | "
            "fine-tuning rate (dev mean at each) | code | machine |",
            "|---|---:|---:|---:|---:|---|---|---|---:|---:|---:|---:|---|---|---|",
        ]
        for p in points.values():
            per_run = _values(p["test_mean_per_pretraining_run"].values())
            lines.append(
                f"| {label(p['variant'])} | {p['step']} | {p['flops']:.3g} | "
                f"{_executed(p['executed_flops'])} | {_runs(p['runs'])} | "
                f"{p['test_mean']:.4f} ± {p['test_std']:.4f} | {per_run} | "
                f"{held_out_score(p)} | {p['dev_mean']:.4f} | "
                f"{_score(p.get('train_mean'))} | {p['best_epoch_is_last']} of "
                f"{p['finetuning_runs']} | {p['late_dev_gain_mean']:+.4f} | "
                f"{_rates(p)} | {_counted(p['runs'], 'commit')} | "
                f"{_counted(p['runs'], 'machine')} |"
            )
        for name, interval in compared.get(task, {}).items():
            lines += ["", f"{name}: {interval_text(name, interval)}"]
        lines.append("")
    if encoder_weights:
        from electra_tf.presets import get_preset

        std = setup["hparams"].get(
            "initializer_range", get_preset(setup["preset"]).model.initializer_range
        )
        lines += [
            "### Encoder weights (root mean square)",
            "",
            f"The `none` runs start from a truncated normal of standard deviation "
            f"{std:g} (root mean square ~{0.88 * std:.4f}).",
            "",
            "| encoder | token embeddings | attention, per block | "
            "feed-forward, per block |",
            "|---|---:|---|---|",
        ]
        for name, scales in encoder_weights.items():
            lines.append(
                f"| {name} | {_score(scales['token_embeddings'])} | "
                f"{_values(scales['attention'])} | {_values(scales['feed_forward'])} |"
            )
        lines.append("")
    return "\n".join(lines)


def held_out_score(point: dict) -> str:
    """ "AUC 0.733, 0.731" : each pre-training run's held-out score at the
    point's step (`HELD_OUT_SCORES`), in pre-training seed order."""
    runs = [point["held_out"][seed] for seed in sorted(point["held_out"], key=int)]
    for key, name in HELD_OUT_SCORES:
        if runs and all(key in run for run in runs):
            return f"{name} " + ", ".join(f"{run[key]:.3f}" for run in runs)
    return "-"


def _runs(runs) -> str:
    """ "3 x 3" (pre-training runs x fine-tuning seeds each), or
    "2 (4 fine-tuning runs)" while some run has fewer seeds than another."""
    per_run = collections.Counter(run["pretraining_seed"] for run in runs)
    counts = set(per_run.values())
    if len(counts) == 1:
        return f"{len(per_run)} x {counts.pop()}"
    return f"{len(per_run)} ({len(runs)} fine-tuning runs)"


def _counted(runs, field: str) -> str:
    """The distinct values of `field` over `runs`, each with its count when
    there are several: "6e32694 x3, c025947 x2"; None as "not recorded"."""
    counts = collections.Counter(run.get(field) or "not recorded" for run in runs)
    if len(counts) == 1:
        return next(iter(counts))
    return ", ".join(f"{value} x{count}" for value, count in counts.items())


def _rates(point: dict) -> str:
    """ "0.001 (0.0003: 0.9012, 0.001: 0.9120)": each pre-training run's chosen
    rate, with each rate's dev mean where there were several; runs separated
    by semicolons, runs described alike once."""
    described = []
    for pseed, rate in point["learning_rate"].items():
        rates = point["learning_rates"][pseed]
        each = ", ".join(f"{r}: {v['dev_mean']:.4f}" for r, v in rates.items())
        described.append(f"{rate:g}" + (f" ({each})" if len(rates) > 1 else ""))
    return "; ".join(dict.fromkeys(described))


def _score(value) -> str:
    return "-" if value is None else f"{value:.4f}"


def _values(values) -> str:
    return ", ".join(f"{v:.4f}" for v in values)
