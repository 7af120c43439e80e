"""One pre-training unit: a run of one variant and seed, keeping its encoder
at each kept step (`pretrain_unit`)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import time

from bench.result_file import write_result
from bench.run_info import commit, machine
from bench.studies.paper import design
from bench.studies.paper.units import kept_steps, pretraining_key_parts

KEPT_RECORD = "kept.json"  # beside a kept encoder: its step, FLOPs and held-out scores
# Pre-training is deterministic on the CPU; this allows float round-off in
# the held-out metrics only.
REBUILD_TOLERANCE = 1e-4


def pretrain_unit(args, setup, key, data, store, recorded=None) -> dict:
    """Pre-trains run `key`, keeping its encoder at each kept step.

    With `recorded` (the unit's record, whose encoders are gone from disk) the
    run is rebuilt in a run directory of its own, stopping also at the first
    recorded evaluation, and compared with the record at every evaluation:
    pre-training on the CPU is deterministic (tests/pretraining/
    test_pretrain_run.py), so a rebuild that departs from it is refused there.
    """
    import keras
    import tensorflow as tf

    from electra_tf.config import TrainingConfig
    from electra_tf.pretraining.run import run_pretraining

    name, pseed = pretraining_key_parts(key)
    variant = next(v for v in design.make_variants(args) if v.name == name)
    configs = design.variant_configs(design.setup_configs(args, data), variant, pseed)
    total = setup["total_steps"][name]
    optimizer = configs["optimizer"].override(total_steps=total)
    rebuild = "-rebuild" if recorded is not None else ""
    model_dir = pathlib.Path(args.out_dir) / "runs" / f"{name}-p{pseed}{rebuild}"
    resolved = design.resolve_precision(setup, TrainingConfig.jit_compile)
    stops = keep = kept_steps(setup, name, pseed)
    began = time.perf_counter()
    if rebuild and recorded["held_out_history"]:
        # Compared before anything is kept.
        stops = sorted({*keep, recorded["held_out_history"][0]["step"]})
    kept = {}
    for step in stops:
        encoder = f"{name}-p{pseed}-s{step}"
        target = pathlib.Path(args.out_dir) / "encoders" / encoder
        if step not in keep:
            target = None  # a stop to compare with the record, nothing kept
        elif (target / KEPT_RECORD).exists():
            # Kept before the unit was killed: the run has moved past `step`,
            # and its checkpoints no longer hold that encoder.
            kept[str(step)] = json.loads((target / KEPT_RECORD).read_text())
            continue
        training = TrainingConfig(
            model_dir=str(model_dir),
            train_data=data["train"],
            eval_data=data["eval"],
            train_steps=step,
            batch_size=args.batch_size,
            checkpoint_every=args.checkpoint_every,
            keep_checkpoints=2,
            eval_every_checkpoints=max(1, total // args.checkpoint_every // 12),
            eval_steps=args.eval_steps,
            data_seed=pseed,
            precision=resolved.precision,
            jit_compile=resolved.jit_compile,
        )
        started = time.perf_counter()
        arguments = (configs["model"], configs["pretraining"], optimizer)
        arguments += (training, data["vocabulary"], tf.distribute.get_strategy())
        held_out = run_pretraining(*arguments, verbose=0)
        keras.backend.clear_session()  # the next segment builds its own model
        if held_out.get("step") != step:
            # `run_pretraining` exports whatever the run holds; past `step`
            # that is a later encoder, which must not be kept under this name.
            raise SystemExit(
                f"error: {model_dir} is at step {held_out.get('step')}, not {step}, "
                f"and {target} was not kept; its encoder at step {step} is gone "
                "(rerun this unit in a new --out-dir)"
            )
        if recorded is not None:
            compare_with_record(key, held_out_history(model_dir), recorded)
        if target is None:
            continue
        kept[str(step)] = {
            "encoder": encoder,
            "flops": step * args.batch_size * setup["flops_per_sequence"][name],
            "held_out": held_out,
            "seconds": round(time.perf_counter() - started, 1),
        }
        temporary = target.with_name(target.name + ".tmp")
        shutil.rmtree(temporary, ignore_errors=True)
        shutil.copytree(model_dir / "export" / "discriminator", temporary)
        # Inside the encoder's directory, so that the two arrive together.
        write_result(temporary / KEPT_RECORD, kept[str(step)])
        shutil.rmtree(target, ignore_errors=True)
        os.replace(temporary, target)
        print(f"[{key}] kept {encoder}: {held_out}", flush=True)
    record = {
        "variant": name,
        "objective": variant.objective,
        "pretraining_seed": pseed,
        "overrides": variant.overrides(),
        "total_steps": total,
        "kept": kept,
        "held_out_history": held_out_history(model_dir),
    }
    if recorded is None:
        return record
    # The record stays the first run's (its times, its commit and machine,
    # None if it predates their recording); the rebuild is noted beside it.
    return {
        "machine": None,
        **recorded,
        "rebuilt": {
            "commit": commit(),
            "machine": machine(),
            "date": time.strftime("%Y-%m-%d"),
            "seconds": round(time.perf_counter() - began, 1),
            "evaluations_compared": len(record["held_out_history"]),
        },
    }


def compare_with_record(key: str, history: list[dict], recorded: dict) -> None:
    """Refuses a rebuild of `key` whose held-out evaluations so far differ
    from the record's."""
    before = {point["step"]: point for point in recorded["held_out_history"]}
    for point in history:
        old = before.get(point["step"])
        if old is None:
            raise SystemExit(
                f"error: rebuilding {key}: it evaluated at step {point['step']}, "
                "which the record has no evaluation at (another setup?)"
            )
        for metric, value in old.items():
            if not abs(point.get(metric, float("nan")) - value) <= REBUILD_TOLERANCE:
                raise SystemExit(
                    f"error: rebuilding {key}: at step {point['step']} {metric} is "
                    f"{point.get(metric)}, the record's {value}; this is another "
                    "run, not that one, and its encoders were not kept (another "
                    "--out-dir runs it as a run of its own)"
                )


def held_out_history(model_dir: pathlib.Path) -> list[dict[str, float]]:
    """Every held-out evaluation of a run, in step order, from its TensorBoard
    logs (the run writes no other record)."""
    import tensorflow as tf

    history: dict[int, dict[str, float]] = {}
    for path in sorted((model_dir / "logs" / "validation").glob("events.out.*")):
        for event in tf.compat.v1.train.summary_iterator(str(path)):
            for value in event.summary.value:
                if value.tag.startswith("epoch_"):
                    number = float(tf.make_ndarray(value.tensor))
                    history.setdefault(event.step, {})[value.tag[6:]] = number
    return [{"step": step, **metrics} for step, metrics in sorted(history.items())]
