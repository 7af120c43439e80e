"""The paper's experiments at CPU scale: downstream test score per pre-training FLOP.

One resumable command for the efficiency ablation (paper section 3.3, Table 5),
the generator sizes (Figure 3) and the compute curves (Figures 1 and 4). Every
variant (an objective, or ELECTRA with another generator) pre-trains the same
discriminator-sized model for the same training FLOPs, counted the paper's
way (`electra_tf/pretraining/flops.py`), once per pre-training seed; each run
keeps its encoder at several fractions of the budget; every kept encoder and
a freshly initialised one ("none") is fine-tuned on each task with several
fine-tuning seeds. Its parts are in `bench/studies/paper/`.

The protocol (BENCHMARKS.md, "The paper's experiments at CPU scale"):

* Selection on dev, figures on test. Each fine-tuning run trains up to
  `--max-epochs` with early stopping on dev (`--patience`), and restores its
  best dev epoch (`electra_tf.finetuning.best_epoch`); only then is the test
  split read and scored, once (`finetuning.select_on_dev_then_test`).
* Independent pre-training runs: `--pretraining-seeds` changes the
  initialisation, the masks and samples, and the order of the data.
* Budget: `--electra-steps` ELECTRA steps of `--preset` at `--batch-size`;
  every other objective gets the steps that cost the same FLOPs (Table 5),
  ELECTRA with another generator the same steps (Figure 3 compares
  generators at equal discriminator steps; its FLOPs are recorded).

Work is split into units, each done once and recorded as one JSON file under
`<out-dir>/units/` (written whole, then renamed): `pretrain.<variant>.p<seed>`
keeps an encoder at every kept step, and `finetune.<task>.<encoder>.f<seed>`
is one fine-tuning run. Rerunning the command skips recorded units and
resumes a killed pre-training run from its newest checkpoint. A recorded
run whose encoders are gone from disk while units still need them runs
again from its seed, compared with its record at every evaluation
(`pretraining.pretrain_unit`). `--jobs N` runs N units at a time, each in its
own process pinned to one core with one thread per pool; `--unit KEY` runs
one (what those processes do).

Written: `<output>.json` (every unit's record, the summaries, and ELECTRA
minus every other arm with an unpaired two-level bootstrap interval and a
Welch t-interval over pre-training-run means, `paper/intervals.py`; with
command, machine, date and versions), `<output>.md` (tables) and
`<output>_<task>.png` (test score against pre-training FLOPs), rewritten from
the unit files after every finished unit and by `--report`. The report
carries every unit's record, so `--report-from REPORT.json` rewrites it from
an earlier report alone (when the units' directory is gone).

Smoke run (2 pre-training runs, 5 fine-tuning units; 27 minutes on 2 cores
shared with other jobs, 2026-11-28; tests/bench/test_paper_experiments.py
runs its parts with training stubbed):

    python -m bench.studies.paper_experiments --preset tiny \\
        --corpus electra_tf/assets/corpus/brown.txt.gz --electra-steps 20 \\
        --checkpoint-every 10 --fractions 0.5,1 --pretraining-seeds 1 \\
        --finetune-seeds 1 --tasks pos --pos-train-sentences 200 \\
        --out-dir /tmp/paper --output /tmp/paper/report
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pathlib
import subprocess
import sys
import time

from bench.run_info import commit, machine, run_info
from bench.studies.paper import design, report
from bench.studies.paper.design import ASSETS, OBJECTIVES, TASKS
from bench.studies.paper.finetuning import finetune_unit
from bench.studies.paper.pretraining import pretrain_unit
from bench.studies.paper.units import Store, Unit, plan_units, ready_units, to_run

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    data = parser.add_argument_group("pre-training data")
    data.add_argument(
        "--data",
        help="TFRecord pattern (train-*) from pretrain/build_data.py; its vocab.txt "
        "and eval-* shards are used. Default: built from --corpus into "
        "<out-dir>/data.",
    )
    data.add_argument("--corpus", help="Raw text to build TFRecords from.")
    data.add_argument(
        "--vocab",
        default=str(ASSETS / "demo_vocab.txt"),
        help="WordPiece vocabulary for --corpus (default: the demo's, as the cpu "
        "preset's recipe).",
    )
    data.add_argument("--max-seq-length", type=int, default=64)
    model = parser.add_argument_group("model and budget")
    model.add_argument("--preset", default="cpu")
    model.add_argument(
        "--hparams", default="{}", help="JSON config overrides for every variant."
    )
    model.add_argument("--batch-size", type=int, default=64)
    model.add_argument(
        "--electra-steps",
        type=int,
        default=6000,
        help="Budget: this many ELECTRA steps; other objectives get equal FLOPs, "
        "other generators equal steps.",
    )
    model.add_argument(
        "--fractions",
        default="0.125,0.25,0.5,1",
        help="Fractions of the budget at which encoders are kept (the curves).",
    )
    model.add_argument("--checkpoint-every", type=int, default=250)
    model.add_argument("--eval-steps", type=int, default=20, help="Held-out batches.")
    model.add_argument("--pretraining-seeds", default="1,2,3")
    variants = parser.add_argument_group("variants")
    variants.add_argument(
        "--objectives",
        default="electra,mlm",
        help=f"Comma-separated, from {','.join(OBJECTIVES)} (default electra,mlm).",
    )
    variants.add_argument(
        "--generator-sizes",
        default="",
        help="Also ELECTRA with these generator widths (fractions of the "
        "discriminator's), e.g. 0.03125,0.0625,0.125,0.25,0.5,1.",
    )
    variants.add_argument(
        "--uniform-generator",
        action="store_true",
        help="Also ELECTRA with uniformly random replacements.",
    )
    variants.add_argument(
        "--gdes",
        action="store_true",
        help="Also ELECTRA with DeBERTaV3's gradient-disentangled embedding "
        "sharing (embedding_sharing gdes).",
    )
    variants.add_argument(
        "--seeds-of",
        default="",
        help="Variants given fewer pre-training seeds, as name:seeds;... "
        "(e.g. 'electra_generator_0.5:1'); default: every seed for each.",
    )
    finetune = parser.add_argument_group("fine-tuning")
    finetune.add_argument(
        "--tasks", default="pos,sentiment", help=f"From {','.join(TASKS)}."
    )
    finetune.add_argument(
        "--pos-dir",
        default=str(ASSETS / "tasks" / "brown_pos"),
        help="Brown POS tagging, train/dev/test.conll.",
    )
    finetune.add_argument(
        "--sentiment-dir",
        default=str(ASSETS / "tasks" / "rt_polarity"),
        help="rt_polarity in SST-2 layout with a labelled test.tsv.",
    )
    finetune.add_argument(
        "--party-dir",
        default="",
        help="The party task (SST-2 layout, labelled test.tsv), as "
        "bench/tasks/sotu_party.py (last in fd09c6a) built it; none is bundled.",
    )
    finetune.add_argument(
        "--pos-train-sentences",
        type=int,
        default=0,
        help="Fine-tune POS on this many training sentences, the same ones for "
        "every run (a seeded sample, in file order); default 0: all.",
    )
    finetune.add_argument("--finetune-seeds", default="1,2,3")
    finetune.add_argument(
        "--curve-seeds",
        type=int,
        default=1,
        help="Fine-tuning seeds at the kept encoders before the last (default 1; "
        "the last gets every --finetune-seeds).",
    )
    finetune.add_argument(
        "--curve-pretraining-seeds",
        default="",
        help="Pre-training seeds whose runs keep and fine-tune the encoders before "
        "the last (the compute curves); the others keep only their final "
        "encoder. Default: every --pretraining-seeds.",
    )
    finetune.add_argument(
        "--finetune-hparams",
        default='{"max_seq_length": 64, "pooling": "mean"}',
        help="JSON FinetuningConfig overrides on the recipe for the width.",
    )
    run = parser.add_argument_group("running")
    run.add_argument("--out-dir", default="runs/paper_experiments")
    run.add_argument("--output", default="bench/results/paper_experiments")
    run.add_argument("--jobs", type=int, default=1, help="Units at a time.")
    run.add_argument("--unit", help="Run this one unit (for --jobs).")
    run.add_argument("--report", action="store_true", help="Only rewrite the report.")
    run.add_argument(
        "--report-from",
        metavar="REPORT_JSON",
        help="Only rewrite the report, from this earlier report (which carries "
        "every unit's record) instead of <out-dir>; other flags but --output "
        "are not read.",
    )
    run.add_argument(
        "--threads", type=int, default=0, help="TensorFlow threads per pool."
    )
    return parser.parse_args(argv)


def run_one(args, setup, key, data, store) -> None:
    store.claim(key)
    # The code a unit ran is the code it started with (the checkout may move
    # on while it runs).
    started_at = commit()
    try:
        if key.startswith("pretrain."):
            # Recorded already (its encoders gone): rebuilt under that record.
            recorded = store.read(key) if store.done(key) else None
            record = pretrain_unit(args, setup, key, data, store, recorded)
        else:
            record = finetune_unit(args, setup, key, data)
        # Kernels round differently from one CPU to another (a rerun on
        # another machine is another run), so each unit names its own.
        ran = {"unit": key, "commit": started_at, "machine": machine()}
        store.write(key, {**ran, **record})
    finally:
        store.release(key)


def schedule(args, setup, store, launch=None) -> None:
    """Runs every unit not yet recorded, `--jobs` at a time.

    `launch(key, slot)` starts one unit and returns a handle with `poll()`
    (None while running, else the exit code); by default a process of this
    script pinned to core `slot`. A unit whose process fails is reported and
    not retried in this call. Units that live processes run already (left
    by a scheduler that was stopped) are waited for in the slots they would
    have taken, not started beside.
    """
    launch = launch or (lambda key, slot: _launch_process(key, slot, args.out_dir))
    units = plan_units(setup)
    running: dict[str, tuple] = {}
    for unit in units:
        if store.busy(unit.key):
            taken = {s for _, s in running.values()}
            slot = slot_for(unit.key, taken, args.jobs)
            if slot is not None:
                running[unit.key] = (_Adopted(store, unit.key), slot)
                print(f"unit {unit.key} running already, in slot {slot}", flush=True)
    failed: set[str] = set()
    while True:
        for key, (handle, _) in list(running.items()):
            code = handle.poll()
            if code is None:
                continue
            del running[key]
            if code != 0 or not store.done(key):
                failed.add(key)
                print(f"unit {key} failed (exit code {code})", flush=True)
            else:
                print(f"unit {key} done", flush=True)
                write_report(args, setup, store)
        free = [
            s for s in range(args.jobs) if s not in {s for _, s in running.values()}
        ]
        ready = [
            u for u in ready_units(units, store, set(running)) if u.key not in failed
        ]
        for slot in free:
            unit = pick_unit(ready, slot, args.jobs)
            if unit is None:
                break
            ready.remove(unit)
            running[unit.key] = (launch(unit.key, slot), slot)
            print(f"unit {unit.key} started on slot {slot}", flush=True)
        if not running:
            break
        time.sleep(2)
    write_report(args, setup, store)
    left = [u.key for u in units if not store.done(u.key)]
    if left:
        print(f"{len(left)} unit(s) not done: {', '.join(left[:5])}...", flush=True)


def pick_unit(ready: list[Unit], slot: int, jobs: int) -> Unit | None:
    """The unit a free slot takes next.

    Pre-training runs are the study's long serial chain (every fine-tuning
    unit waits on one), so with two or more slots, slot 0 takes them first
    and the other slots take fine-tuning first; either takes the other kind
    when its own has nothing ready. One slot takes units in plan order.
    """
    if not ready:
        return None
    if jobs > 1:
        wanted = [u for u in ready if _slot_kind(slot, u.key)]
        if wanted:
            return wanted[0]
    return ready[0]


def _slot_kind(slot: int, key: str) -> bool:
    """Whether unit `key` is of the kind slot `slot` takes first (with two
    or more slots): pre-training in slot 0, fine-tuning in the others."""
    return key.startswith("pretrain.") == (slot == 0)


def slot_for(key: str, taken: set[int], jobs: int) -> int | None:
    """The slot a unit already running holds: as `pick_unit` gives them,
    pre-training in slot 0 when there are two or more."""
    free = [s for s in range(jobs) if s not in taken]
    if jobs > 1:
        own = [s for s in free if _slot_kind(s, key)]
        free = own or free
    return free[0] if free else None


class _Adopted:
    """A handle on a unit another process runs: running while its claim is
    live, then 0 if it was recorded, 1 if its process ended without."""

    def __init__(self, store: Store, key: str):
        self.store, self.key = store, key

    def poll(self) -> int | None:
        if self.store.busy(self.key):
            return None
        return 0 if self.store.done(self.key) else 1


def _launch_process(key, slot, out_dir):
    argv = sys.argv[1:]
    command = [sys.executable, "-m", "bench.studies.paper_experiments", *argv]
    command += ["--unit", key, "--threads", "1", "--jobs", "1"]
    log = pathlib.Path(out_dir) / "logs" / f"{key}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    cores = sorted(os.sched_getaffinity(0))
    core = cores[slot % len(cores)]
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    with open(log, "a") as output:
        return subprocess.Popen(
            command,
            cwd=REPO,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=environment,
            preexec_fn=lambda: os.sched_setaffinity(0, {core}),
        )


def write_report(args, setup, store) -> None:
    """The report from the unit records in `store` (`report.write_files`)."""
    output = pathlib.Path(args.output)
    report.write_files(
        output,
        setup,
        store.all(),
        run_info(__file__),
        report.runs_in_progress(setup, store),
        report.encoder_weights(store, output.with_suffix(".json")),
    )


def report_from(path: str, output: str) -> None:
    """The report rewritten from an earlier one (`report.records_from_report`):
    its setup, unit records, runs in progress and encoder weights, with
    this command's header and the earlier report's under `units_from`."""
    try:
        earlier = json.loads(pathlib.Path(path).read_text())
        records = report.records_from_report(earlier)
    except OSError as error:
        raise SystemExit(f"error: --report-from {path}: {error.strerror}") from None
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise SystemExit(
            f"error: --report-from {path}: not a paper_experiments report ({error})"
        ) from None
    source = earlier.get("units_from") or {
        "report": path,
        **{k: earlier.get(k) for k in ("command", "commit", "date", "machine")},
    }
    report.write_files(
        output,
        earlier["setup"],
        records,
        {**run_info(__file__), "units_from": source},
        earlier.get("in_progress", {}),
        earlier.get("encoder_weights", {}),
    )


def main(argv=None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.report_from:
        report_from(args.report_from, args.output)
        return 0
    if args.jobs < 1:
        raise SystemExit(f"error: --jobs must be 1 or more, got {args.jobs}")
    out_dir = pathlib.Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.threads:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    from electra_tf.errors import ElectraError

    try:
        data = design.prepare_data(args)
        setup = design.make_setup(args, data)
    except ElectraError as error:
        raise SystemExit(f"error: {error}") from None
    store = Store(out_dir)
    if args.unit:
        run_one(args, setup, args.unit, data, store)
        return 0
    design.check_setup(out_dir, setup)
    if args.report:
        write_report(args, setup, store)
        return 0
    for name, total in setup["total_steps"].items():
        print(f"{name}: {total} steps, kept at {setup['kept_steps'][name]}", flush=True)
    if args.jobs == 1:
        units = plan_units(setup)
        for unit in units:
            if not store.busy(unit.key) and to_run(unit, units, store):
                print(f"unit {unit.key}", flush=True)
                run_one(args, setup, unit.key, data, store)
                write_report(args, setup, store)
    else:
        schedule(args, setup, store)
    print(pathlib.Path(args.output).with_suffix(".md").read_text(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
