"""The paper's experiments at CPU scale: downstream test score per pre-training FLOP.

The efficiency ablation (paper Table 5), the generator sizes (Figure 3) and the
compute curves (Figures 1 and 4) as one resumable study; the commands and the
headline are in BENCHMARKS.md section 19, the protocol in full and each
experiment's tables in docs/research/paper-experiments.md, the parts in
`bench/studies/paper/`.
Every unit (`pretrain.<variant>.p<seed>`, `finetune.<task>.<encoder>.f<seed>`) is
recorded as a JSON file under `<out-dir>/units/`; a rerun skips recorded units
and resumes a killed pre-training run from its newest checkpoint. `--jobs N` runs
N units at a time, each a process pinned to one core (with `--pretrain-alone`,
pre-training runs one at a time on every core, nothing beside them).
`<output>.json`, `.md` and `_<task>.png` are rewritten after every unit, by
`--report`, and from an earlier report alone by `--report-from`. Smoke run (27
minutes on 2 shared cores):

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
import types

from bench.result_file import write_result
from bench.run_info import commit, machine, run_info
from bench.studies.paper import design, report
from bench.studies.paper.design import ASSETS, OBJECTIVES, TASKS
from bench.studies.paper.finetuning import finetune_unit
from bench.studies.paper.pretraining import pretrain_unit
from bench.studies.paper.units import (
    Store,
    Unit,
    of_run,
    plan_units,
    pretraining_key_parts,
    ready_units,
    to_run,
)

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument_group("pre-training data").add_argument
    add("--data", help="TFRecords (train-*) from pretrain/build_data.py.")
    add("--corpus", help="Raw text to build TFRecords from, into <out-dir>/data.")
    add("--vocab", default=str(ASSETS / "demo_vocab.txt"), help="For --corpus.")
    add("--max-seq-length", type=int, default=64)
    add = parser.add_argument_group("model and budget").add_argument
    add("--preset", default="cpu")
    add("--hparams", default="{}", help="JSON config overrides for every variant.")
    add("--batch-size", type=int, default=64)
    add("--electra-steps", type=int, default=6000, help="The budget, in ELECTRA steps.")
    add("--fractions", default="0.125,0.25,0.5,1", help="Encoders kept at these.")
    add("--checkpoint-every", type=int, default=250)
    add("--eval-steps", type=int, default=20, help="Held-out batches.")
    add("--pretraining-seeds", default="1,2,3")
    add(
        "--precision",
        default="float32",
        choices=("float32", "mixed_bfloat16"),
        help="Of every unit, pre-training and fine-tuning (given, never auto).",
    )
    add = parser.add_argument_group("variants").add_argument
    add("--objectives", default="electra,mlm", help=f"From {','.join(OBJECTIVES)}.")
    add("--generator-sizes", default="", help="Also ELECTRA with these generators.")
    add("--uniform-generator", action="store_true", help="Also a uniform generator.")
    add("--gdes", action="store_true", help="Also ELECTRA with GDES sharing.")
    add(
        "--variants",
        default="",
        help="Also these recipes, as JSON {name: {config field: value}} (objective "
        "electra unless given); each gets ELECTRA's FLOPs.",
    )
    add("--seeds-of", default="", help="Fewer seeds, as 'name:seeds;...'.")
    add = parser.add_argument_group("fine-tuning").add_argument
    add("--tasks", default="pos,sentiment", help=f"From {','.join(TASKS)}.")
    add("--pos-dir", default=str(ASSETS / "tasks" / "brown_pos"))
    add("--sentiment-dir", default=str(ASSETS / "tasks" / "rt_polarity"))
    add("--party-dir", default="", help="bench/tasks/sotu_party.py's (fd09c6a).")
    add("--pos-train-sentences", type=int, default=0, help="A fixed sample; 0: all.")
    add("--finetune-seeds", default="1,2,3")
    add(
        "--finetune-learning-rates",
        default="",
        help="Fine-tune every encoder at each of these, the rate chosen per "
        "encoder on dev (default: the recipe's alone).",
    )
    add(
        "--learning-rate-seeds",
        default="",
        help="With --finetune-learning-rates: the fine-tuning seeds run at every "
        "rate, which choose it; the other seeds run at the chosen rate only "
        "(default: every seed at every rate).",
    )
    add(
        "--learning-rate-runs",
        default="",
        help="With --finetune-learning-rates: the pre-training seeds whose "
        "encoders run at every rate; a variant's other runs fine-tune at the "
        "rate those chose (default: each run's encoder chooses its own).",
    )
    add("--curve-seeds", type=int, default=1, help="Seeds at earlier encoders.")
    add("--curve-pretraining-seeds", default="", help="Runs keeping it (default all).")
    add(
        "--finetune-hparams",
        default='{"max_seq_length": 64, "pooling": "mean"}',
        help="JSON FinetuningConfig overrides.",
    )
    add = parser.add_argument_group("running").add_argument
    add("--out-dir", default="runs/paper_experiments")
    add("--output", default="bench/results/paper_experiments")
    add("--jobs", type=int, default=1, help="Units at a time.")
    add("--unit", help="Run this one unit (for --jobs).")
    add(
        "--pretrain-alone",
        action="store_true",
        help="With --jobs 2 or more: fine-tuning units fill the slots first, and a "
        "pre-training run starts only when nothing runs, then alone on every core "
        "(on a 2-core EPYC two pre-training runs side by side each took 2.5x as "
        "long a step: docs/research/recipe-study.md).",
    )
    add(
        "--set-aside",
        default="",
        metavar="RUNS",
        help="Pre-training runs (pretrain.<variant>.p<seed>, comma-separated) whose "
        "records, and their fine-tuning units', leave the study to be run again "
        "(an encoder lost and not rebuildable); the report keeps them apart.",
    )
    add("--report", action="store_true", help="Only rewrite the report.")
    add("--report-from", metavar="REPORT_JSON", help="Only rewrite it from that.")
    add("--threads", type=int, default=0, help="TensorFlow threads per pool.")
    return parser.parse_args(argv)


def run_one(args, setup, key, data, store) -> None:
    store.claim(key)
    started_at = commit()  # the checkout may move on while the unit runs
    try:
        if key.startswith("pretrain."):
            # Recorded already (its encoders gone): rebuilt under that record.
            recorded = store.read(key) if store.done(key) else None
            record = pretrain_unit(args, setup, key, data, store, recorded)
        else:
            record = finetune_unit(args, setup, key, data, store)
        # Kernels round differently from one CPU to another, so each unit names its own.
        ran = {"unit": key, "commit": started_at, "machine": machine()}
        store.write(key, {**ran, **record})
    finally:
        store.release(key)


def schedule(args, setup, store, launch=None) -> None:
    """Runs every unit not yet recorded, `--jobs` at a time; `launch(key, slot)`
    returns a handle whose `poll()` is None while running, else the exit code. A
    failed unit is not retried; units that live processes run already (left by a
    stopped scheduler) are waited for in the slots they would have taken."""
    launch = launch or (lambda key, slot: _launch_process(key, slot, args.out_dir))
    units = plan_units(setup)
    running: dict[str, tuple] = {}
    for unit in units:
        if store.busy(unit.key):
            slot = slot_for(unit.key, {s for _, s in running.values()}, args.jobs)
            if slot is not None:
                running[unit.key] = (_adopted(store, unit.key), slot)
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
        ready = [
            u for u in ready_units(units, store, set(running)) if u.key not in failed
        ]
        starts = starts_alone if args.pretrain_alone else starts_by_kind
        for unit, slot in starts(ready, running, args.jobs):
            running[unit.key] = (launch(unit.key, slot), slot)
            where = "alone" if slot is None else f"on slot {slot}"
            print(f"unit {unit.key} started {where}", flush=True)
        if not running:
            break
        time.sleep(2)
    write_report(args, setup, store)
    left = [u.key for u in units if not store.done(u.key)]
    if left:
        print(f"{len(left)} unit(s) not done: {', '.join(left[:5])}...", flush=True)


def starts_by_kind(ready: list[Unit], running: dict, jobs: int) -> list[tuple]:
    """The (unit, slot) pairs to start now: each free slot takes a unit of its
    kind first (`pick_unit`)."""
    taken = {slot for _, slot in running.values()}
    ready, pairs = list(ready), []
    for slot in range(jobs):
        if slot in taken:
            continue
        unit = pick_unit(ready, slot, jobs)
        if unit is None:
            break
        ready.remove(unit)
        pairs.append((unit, slot))
    return pairs


def starts_alone(ready: list[Unit], running: dict, jobs: int) -> list[tuple]:
    """`--pretrain-alone`: the (unit, slot) pairs to start now. Ready fine-tuning
    units take the free slots; a pre-training run starts only when nothing runs,
    in slot None (every core), and nothing starts beside it."""
    if any(key.startswith("pretrain.") for key in running):
        return []
    tuning = [u for u in ready if not u.key.startswith("pretrain.")]
    if tuning:
        taken = {slot for _, slot in running.values()}
        return list(zip(tuning, [s for s in range(jobs) if s not in taken]))
    return [(ready[0], None)] if ready and not running else []


def _first_kind(slot: int, key: str) -> bool:
    """With two or more slots, slot 0 takes pre-training first (the study's long
    serial chain: every fine-tuning unit waits on one), the others fine-tuning."""
    return key.startswith("pretrain.") == (slot == 0)


def pick_unit(ready: list[Unit], slot: int, jobs: int) -> Unit | None:
    """The unit a free slot takes next: its kind first (`_first_kind`), else any;
    one slot takes units in plan order."""
    wanted = [u for u in ready if jobs > 1 and _first_kind(slot, u.key)]
    return (wanted or ready or [None])[0]


def slot_for(key: str, taken: set[int], jobs: int) -> int | None:
    """The slot a unit already running holds, as `pick_unit` gives them."""
    free = [s for s in range(jobs) if s not in taken]
    own = [s for s in free if jobs > 1 and _first_kind(s, key)]
    return (own or free or [None])[0]


def _adopted(store: Store, key: str):
    """A unit another process runs: running while its claim is live, then 0 if
    recorded, 1 if its process ended without."""
    done = store.done
    return types.SimpleNamespace(
        poll=lambda: None if store.busy(key) else (0 if done(key) else 1)
    )


def _launch_process(key, slot, out_dir):
    """A unit's process, pinned to one core with one thread a pool; in slot None
    (`--pretrain-alone`) on every core with TensorFlow's own thread counts."""
    command = [sys.executable, "-m", "bench.studies.paper_experiments", *sys.argv[1:]]
    command += ["--unit", key, "--jobs", "1"]
    cores = sorted(os.sched_getaffinity(0))
    if slot is not None:
        command += ["--threads", "1"]
        cores = [cores[slot % len(cores)]]
    log = pathlib.Path(out_dir) / "logs" / f"{key}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as output:
        return subprocess.Popen(
            command,
            cwd=REPO,
            stdout=output,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            preexec_fn=lambda: os.sched_setaffinity(0, set(cores)),
        )


def write_report(args, setup, store) -> None:
    output = pathlib.Path(args.output)
    weights = report.encoder_weights(store, output.with_suffix(".json"))
    in_progress = report.runs_in_progress(setup, store)
    header = {**run_info(__file__), "inputs": design.input_checksums(setup)}
    aside = _set_aside_store(store).all()
    report.write_files(output, setup, store.all(), header, in_progress, weights, aside)


def report_from(path: str, output: str) -> None:
    """The report rewritten from an earlier one, with this command's header and
    the earlier report's under `units_from`."""
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
    header = {**run_info(__file__), "units_from": source}
    header["inputs"] = earlier.get("inputs", {})  # what the units read
    extras = [
        earlier.get(k, {}) for k in ("in_progress", "encoder_weights", "set_aside")
    ]
    report.write_files(output, earlier["setup"], records, header, *extras)


def adopt_report(out_dir: pathlib.Path, store: Store, output: str) -> None:
    """A study carried on in a new --out-dir (the scratch one was lost between
    sessions) takes its setup and unit records from its committed report:
    recorded units are skipped, and the setup check compares with the
    report's. Pre-training runs whose encoders are gone are rebuilt only
    where a fine-tuning unit still needs them."""
    path = pathlib.Path(output).with_suffix(".json")
    if (out_dir / "setup.json").exists() or not path.exists():
        return
    earlier = json.loads(path.read_text())
    write_result(out_dir / "setup.json", earlier["setup"])
    for key, record in report.records_from_report(earlier).items():
        if not store.done(key):
            store.write(key, record)
    aside = _set_aside_store(store)
    for key, record in earlier.get("set_aside", {}).items():
        aside.write(key, record)
    print(f"carried on from {path}: {len(store.all())} units recorded", flush=True)


def _set_aside_store(store: Store) -> Store:
    return Store(store.directory.parent / "set_aside")


def set_aside(store: Store, runs: str) -> None:
    """Moves the records of each run in `runs` (and of its fine-tuning units)
    out of the study, which then runs it again as a new run: an encoder lost
    with a session's scratch space cannot be rebuilt on another CPU (its
    kernels round differently), and one run's fine-tuning seeds must share one
    encoder. A run set aside already is left alone: its records now are the
    new run's."""
    aside = _set_aside_store(store)
    for run in filter(None, runs.split(",")):
        try:
            if not run.startswith("pretrain."):
                raise ValueError(run)
            name, pseed = pretraining_key_parts(run)
        except ValueError:
            raise SystemExit(
                f"error: --set-aside {run}: not a pre-training run "
                "(pretrain.<variant>.p<seed>)"
            ) from None
        if any(of_run(key, run) for key in aside.all()):
            continue
        out_dir = store.directory.parent
        left = [out_dir / "runs" / f"{name}-p{pseed}"]
        left += sorted((out_dir / "encoders").glob(f"{name}-p{pseed}-s*"))
        for path in filter(pathlib.Path.exists, left):
            raise SystemExit(
                f"error: --set-aside {run}: {path} is the old run's, which the new "
                "one would resume from or fine-tune; move it away first"
            )
        records = {k: r for k, r in store.all().items() if of_run(k, run)}
        if not records:
            raise SystemExit(f"error: --set-aside {run}: no unit of it is recorded")
        for key, record in records.items():
            aside.write(key, record)
            store.path(key).unlink()
        print(f"set aside {run}: {len(records)} units, to be run again", flush=True)


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
    adopt_report(out_dir, store, args.output)
    design.check_setup(out_dir, setup)
    set_aside(store, args.set_aside)
    if args.report:
        write_report(args, setup, store)
        return 0
    for name, total in setup["total_steps"].items():
        print(f"{name}: {total} steps, kept at {setup['kept_steps'][name]}", flush=True)
    if args.jobs > 1:
        schedule(args, setup, store)
    else:
        units = plan_units(setup)
        for unit in units:
            if not store.busy(unit.key) and to_run(unit, units, store):
                print(f"unit {unit.key}", flush=True)
                run_one(args, setup, unit.key, data, store)
                write_report(args, setup, store)
    print(pathlib.Path(args.output).with_suffix(".md").read_text(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
