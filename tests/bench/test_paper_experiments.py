"""bench/studies/paper_experiments.py: the study's plan, resume and merge logic
(with a stubbed runner), its statistics, and the protocol's order: the epoch
is chosen on dev before the test split is read at all."""

import argparse
import json
import pathlib
import shutil
import types

import numpy as np
import pytest

from bench.studies import paper_experiments as study
from bench.studies.paper import (
    design,
    finetuning,
    intervals,
    plots,
    pretraining,
)
from bench.studies.paper import report as reporting
from bench.studies.paper import units as planning

# What a no-pre-training unit's StartingPoint needs (never built here: the
# units' training is stubbed).
_NO_PRETRAINING = {"model": "the preset's model config", "vocabulary": "its vocabulary"}


def _setup(**changes):
    setup = {
        "preset": "cpu",
        "batch_size": 64,
        "budget_flops": 1e9,
        "tasks": ["pos"],
        "pretraining_seeds": [1, 2],
        "variant_seeds": {"electra": [1, 2], "mlm": [1, 2]},
        "finetune_seeds": [1, 2],
        "curve_seeds": 1,
        "kept_steps": {"electra": [50, 100], "mlm": [70, 140]},
        "total_steps": {"electra": 100, "mlm": 140},
        "flops_per_sequence": {"electra": 2.0, "mlm": 1.0},
        "max_epochs": {"pos": 5},
        "patience": {"pos": 1},
    }
    return {**setup, **changes}


def test_plan_puts_whole_comparisons_before_the_next_pretraining_seed():
    units = planning.plan_units(_setup())
    order = [u.key for u in sorted(units, key=lambda u: u.priority)]
    first_p2 = order.index("pretrain.electra.p2")
    # Everything of pre-training seed 1 at its final step comes first ...
    for key in (
        "pretrain.electra.p1",
        "pretrain.mlm.p1",
        "finetune.pos.electra-p1-s100.f2",
        "finetune.pos.mlm-p1-s140.f2",
        "finetune.pos.none-p1.f2",
    ):
        assert order.index(key) < first_p2, key
    # ... the baseline before any pre-training of its seed ...
    assert order.index("finetune.pos.none-p1.f1") < order.index("pretrain.electra.p1")
    # ... the curve points (one seed) after the finals, and only one seed.
    assert "finetune.pos.electra-p1-s50.f1" in order
    assert "finetune.pos.electra-p1-s50.f2" not in order
    assert order.index("finetune.pos.electra-p1-s50.f1") > order.index(
        "finetune.pos.electra-p1-s100.f2"
    )
    # Pre-training units need nothing; fine-tuning needs its run.
    by_key = {u.key: u for u in units}
    assert by_key["pretrain.mlm.p2"].needs is None
    assert by_key["finetune.pos.mlm-p2-s70.f1"].needs == "pretrain.mlm.p2"
    assert by_key["finetune.pos.none-p2.f1"].needs is None


def test_plan_finishes_the_first_task_over_every_pretraining_seed_first():
    order = [
        u.key
        for u in sorted(
            planning.plan_units(_setup(tasks=["pos", "sentiment"])),
            key=lambda u: u.priority,
        )
    ]
    first_sentiment = min(i for i, k in enumerate(order) if ".sentiment." in k)
    for key in ("pretrain.mlm.p2", "finetune.pos.mlm-p2-s140.f2"):
        assert order.index(key) < first_sentiment, key
    assert order.index("finetune.pos.electra-p2-s50.f1") < first_sentiment
    assert order.index("finetune.sentiment.none-p1.f1") < order.index(
        "finetune.sentiment.none-p2.f1"
    )


def test_variants_with_fewer_pretraining_seeds_plan_fewer_runs():
    setup = _setup(variant_seeds={"electra": [1, 2], "mlm": [1]})
    keys = {u.key for u in planning.plan_units(setup)}
    assert "pretrain.mlm.p1" in keys and "pretrain.mlm.p2" not in keys
    assert "pretrain.electra.p2" in keys


def test_a_variant_with_fewer_seeds_runs_with_the_last_seed_of_the_others_after_it():
    setup = _setup(
        variant_seeds={"electra": [1, 2, 3], "mlm": [1, 2, 3], "electric": [1]},
        kept_steps={"electra": [100], "mlm": [140], "electric": [90]},
    )
    order = [
        u.key for u in sorted(planning.plan_units(setup), key=lambda u: u.priority)
    ]
    # Not ahead of the headline comparisons' seeds ...
    assert order.index("pretrain.mlm.p3") < order.index("pretrain.electric.p1")
    assert order.index("finetune.pos.mlm-p3-s140.f2") < order.index(
        "finetune.pos.electric-p1-s90.f1"
    )
    # ... and its fine-tuning before the next rank's (here: none left).
    assert order.index("finetune.pos.electric-p1-s90.f1") > order.index(
        "finetune.pos.mlm-p2-s140.f2"
    )


def test_rows_with_fewer_seeds_run_in_the_order_given_not_by_name():
    setup = _setup(
        variant_seeds={"electra": [1, 2], "mlm": [1, 2], "electric": [1], "all": [1]},
        kept_steps={"electra": [100], "mlm": [140], "electric": [90], "all": [80]},
    )
    order = [
        u.key for u in sorted(planning.plan_units(setup), key=lambda u: u.priority)
    ]
    assert order.index("pretrain.electric.p1") < order.index("pretrain.all.p1")
    assert order.index("finetune.pos.electric-p1-s90.f2") < order.index(
        "finetune.pos.all-p1-s80.f1"
    )


def test_electric_and_gdes_are_variants_with_their_overrides():
    args = study.parse_args(["--objectives", "electra,electric", "--gdes"])
    variants = {v.name: v.overrides() for v in design.make_variants(args)}
    assert variants == {
        "electra": {"objective": "electra"},
        "electric": {"objective": "electric"},
        "electra_gdes": {"objective": "electra", "embedding_sharing": "gdes"},
    }


def test_named_recipes_are_variants_with_any_config_fields_and_electras_flops():
    recipes = '{"ramp": {"disc_weight_ramp_steps": 50, "weight_decay": 0.01}, '
    recipes += '"wide": {"generator_hidden_size": 1.0}}'
    args = study.parse_args(
        ["--objectives", "electra", "--variants", recipes, "--electra-steps", "1000"]
        + ["--checkpoint-every", "100", "--fractions", "1"]
    )
    variants = {v.name: v.overrides() for v in design.make_variants(args)}
    assert variants["ramp"] == {
        "objective": "electra",
        "disc_weight_ramp_steps": 50,
        "weight_decay": 0.01,
    }
    vocabulary = types.SimpleNamespace(size=1000, md5=lambda: "md5")
    data = {"vocabulary": vocabulary, "max_seq_length": 128, "train": "train-*"}
    setup = design.make_setup(args, data)
    # Each recipe reaches the configs it names ...
    base = design.setup_configs(args, data)
    ramp = design.variant_configs(base, design.make_variants(args)[1], 3)
    assert ramp["pretraining"].disc_weight_ramp_steps == 50
    assert ramp["optimizer"].weight_decay == 0.01 and ramp["pretraining"].seed == 3
    # ... and costs ELECTRA's FLOPs: a wider generator gets fewer steps.
    assert setup["total_steps"]["ramp"] == setup["total_steps"]["electra"] == 1000
    assert setup["total_steps"]["wide"] < 1000
    assert setup["variant_overrides"]["wide"]["generator_hidden_size"] == 1.0
    for bad in ('{"electra": {}}', '{"x": 1}'):
        with pytest.raises(SystemExit, match="--variants"):
            design.make_variants(study.parse_args(["--variants", bad]))


def test_several_learning_rates_make_units_and_the_report_chooses_on_dev():
    setup = _setup(finetune_learning_rates=[3e-4, 1e-3])
    keys = {u.key for u in planning.plan_units(setup)}
    assert "finetune.pos.electra-p1-s100.lr0.0003.f2" in keys
    assert "finetune.pos.none-p2.lr0.001.f1" in keys
    key = "finetune.pos.electra_generator_0.5-p1-s100.lr0.0003.f2"
    assert planning.finetuning_key_parts(key) == (
        "pos",
        "electra_generator_0.5-p1-s100",
        2,
    )
    assert planning.finetuning_learning_rate(key) == 3e-4
    assert planning.finetuning_learning_rate("finetune.pos.none-p1.f1") is None
    # The rate with the better mean dev score is chosen; test is reported at
    # it even where another rate tests better.
    records = {}
    for rate, dev, test in ((3e-4, 0.80, 0.95), (1e-3, 0.85, 0.90)):
        for fseed in (1, 2):
            key = planning.finetuning_key("pos", "none-p1", fseed, rate)
            records[key] = _run("none-p1", fseed, test, dev=dev, rate=rate)
    # Each pre-training run chooses on its own runs: run 2 prefers the other.
    for rate, dev, test in ((3e-4, 0.90, 0.80), (1e-3, 0.85, 0.70)):
        key = planning.finetuning_key("pos", "none-p2", 1, rate)
        records[key] = _run("none-p2", 1, test, dev=dev, rate=rate)
    row = reporting.summarise(setup, records)["pos"]["none@0"]
    assert row["learning_rate"] == {"1": 1e-3, "2": 3e-4}
    assert row["finetuning_runs"] == 3
    assert row["test_mean_per_pretraining_run"] == {
        "1": pytest.approx(0.90),
        "2": pytest.approx(0.80),
    }
    assert row["learning_rates"]["1"]["0.0003"] == {"dev_mean": 0.80, "runs": 2}
    table = reporting.markdown(setup, {"pos": {"none@0": row}}, {})
    assert "| 0.001 (0.0003: 0.8000, 0.001: 0.8500); 0.0003 (0.0003: 0.9000, " in table


def test_other_seeds_run_at_the_rate_their_swept_seeds_chose(tmp_path, monkeypatch):
    setup = _setup(
        finetune_learning_rates=[3e-4, 1e-3], learning_rate_seeds=[1], tasks=["pos"]
    )
    units = {u.key: u for u in planning.plan_units(setup)}
    chosen = units["finetune.pos.none-p1.lrchosen.f2"]
    assert "finetune.pos.none-p1.lr0.0003.f2" not in units
    assert chosen.after == (
        "finetune.pos.none-p1.lr0.0003.f1",
        "finetune.pos.none-p1.lr0.001.f1",
    )
    store = planning.Store(tmp_path)
    ready = {u.key for u in planning.ready_units(list(units.values()), store, set())}
    assert chosen.key not in ready and chosen.after[0] in ready
    for key, dev in zip(chosen.after, (0.7, 0.8)):
        store.write(key, _run("none-p1", 1, 0.5, dev=dev))
    ready = {u.key for u in planning.ready_units(list(units.values()), store, set())}
    assert chosen.key in ready
    assert planning.chosen_rate(setup, chosen.key, store, "accuracy") == (
        1e-3,
        {3e-4: [0.7], 1e-3: [0.8]},
    )
    # The report compares the rates on seed 1 alone, as the unit chose: the
    # chosen rate's worse seed 2 does not move the choice.
    records = {
        "a": _run("none-p1", 1, 0.5, dev=0.7, rate=3e-4),
        "b": _run("none-p1", 1, 0.6, dev=0.8, rate=1e-3),
        "c": _run("none-p1", 2, 0.6, dev=0.5, rate=1e-3),
    }
    row = reporting.summarise(setup, {f"finetune.{k}": r for k, r in records.items()})
    row = row["pos"]["none@0"]
    assert row["learning_rate"] == {"1": 1e-3} and row["finetuning_runs"] == 2
    assert row["learning_rates"]["1"]["0.001"] == {"dev_mean": 0.8, "runs": 2}


def test_learning_rate_runs_choose_the_rate_for_their_variants_other_runs(tmp_path):
    setup = _setup(
        finetune_learning_rates=[3e-4, 1e-3],
        learning_rate_seeds=[1],
        learning_rate_runs=[1],
        pretraining_seeds=[1, 2],
    )
    units = {u.key: u for u in planning.plan_units(setup)}
    # Run 2 sweeps no rate: all its seeds wait for run 1's seed-1 sweep.
    assert not any(".lr0." in key and "-p2" in key for key in units)
    sweep = ("finetune.pos.electra-p1-s100.lr0.0003.f1",)
    sweep += ("finetune.pos.electra-p1-s100.lr0.001.f1",)
    for fseed in (1, 2):
        assert units[f"finetune.pos.electra-p2-s100.lrchosen.f{fseed}"].after == sweep
    assert units["finetune.pos.none-p2.lrchosen.f1"].after == (
        "finetune.pos.none-p1.lr0.0003.f1",
        "finetune.pos.none-p1.lr0.001.f1",
    )
    # Run 1 itself: seed 1 at every rate, seed 2 at the rate its seed 1 chose.
    assert units["finetune.pos.electra-p1-s100.lrchosen.f2"].after == sweep
    store = planning.Store(tmp_path)
    for key, dev in zip(sweep, (0.9, 0.8)):
        store.write(key, _run("electra-p1-s100", 1, 0.5, dev=dev))
    chosen = "finetune.pos.electra-p2-s100.lrchosen.f1"
    assert planning.chosen_rate(setup, chosen, store, "accuracy")[0] == 3e-4
    # Without the setting, every run chooses its own (the studies before it).
    del setup["learning_rate_runs"]
    units = {u.key for u in planning.plan_units(setup)}
    assert "finetune.pos.electra-p2-s100.lr0.001.f1" in units


def test_learning_rate_runs_must_be_runs_of_every_arm_and_need_several_rates():
    vocabulary = types.SimpleNamespace(size=1000, md5=lambda: "md5")
    data = {"vocabulary": vocabulary, "max_seq_length": 128, "train": "train-*"}
    common = ["--objectives", "electra,mlm", "--pretraining-seeds", "1,2"]
    common += ["--electra-steps", "1000", "--checkpoint-every", "100"]
    rates = ["--finetune-learning-rates", "3e-4,1e-3"]
    args = study.parse_args(common + rates + ["--learning-rate-runs", "1"])
    assert design.make_setup(args, data)["learning_rate_runs"] == [1]
    for extra, message in (
        (["--learning-rate-runs", "1"], "needs --finetune-learning-rates"),
        (rates + ["--learning-rate-runs", "3"], "not pre-training seeds of electra"),
        (
            rates + ["--learning-rate-runs", "2", "--seeds-of", "mlm:1"],
            "not pre-training seeds of mlm$",
        ),
    ):
        with pytest.raises(SystemExit, match=message):
            design.make_setup(study.parse_args(common + extra), data)


def test_a_study_in_a_new_directory_carries_on_from_its_report(tmp_path):
    setup = _setup()
    records = {
        "pretrain.electra.p1": {
            "variant": "electra",
            "kept": {},
            "held_out_history": [{"step": 100, "rtd_auc": 0.6}],
        },
        "finetune.pos.none-p1.f1": _run("none-p1", 1, 0.8),
    }
    header = {"command": "x"}
    reporting.write_files(tmp_path / "report", setup, records, header, {}, {})
    out_dir = tmp_path / "new"
    store = planning.Store(out_dir)
    study.adopt_report(out_dir, store, str(tmp_path / "report"))
    assert store.all() == records
    assert json.loads((out_dir / "setup.json").read_text()) == setup
    # A directory with a study of its own keeps it.
    store.write("finetune.pos.none-p1.f2", {"x": 1})
    (out_dir / "units" / "finetune.pos.none-p1.f1.json").unlink()
    study.adopt_report(out_dir, store, str(tmp_path / "report"))
    assert not store.done("finetune.pos.none-p1.f1")


def _study_with_electra_run_1(out_dir):
    store = planning.Store(out_dir)
    store.write("pretrain.electra.p1", {"kept": {}, "commit": "abc", "machine": "m"})
    for fseed in (1, 2):
        store.write(f"finetune.pos.electra-p1-s100.f{fseed}", {"seed": fseed})
        store.write(f"finetune.pos.none-p1.f{fseed}", {"seed": fseed})
    store.write("finetune.pos.electra-p2-s100.f1", {"seed": 1})
    store.write("pretrain.electra.p2", {"kept": {}})
    return store


def test_a_run_set_aside_leaves_the_study_with_its_fine_tuning_units(tmp_path):
    store = _study_with_electra_run_1(tmp_path)
    study.set_aside(store, "pretrain.electra.p1")
    aside = study._set_aside_store(store)
    assert sorted(aside.all()) == [
        "finetune.pos.electra-p1-s100.f1",
        "finetune.pos.electra-p1-s100.f2",
        "pretrain.electra.p1",
    ]
    # Run 2 and no pre-training's run 1 stay; the run is now to be run again.
    assert sorted(store.all()) == [
        "finetune.pos.electra-p2-s100.f1",
        "finetune.pos.none-p1.f1",
        "finetune.pos.none-p1.f2",
        "pretrain.electra.p2",
    ]
    # Given again once the new run is recorded, the flag leaves the new records.
    store.write("pretrain.electra.p1", {"kept": {}, "commit": "new"})
    study.set_aside(store, "pretrain.electra.p1")
    assert store.read("pretrain.electra.p1")["commit"] == "new"
    assert aside.read("pretrain.electra.p1")["commit"] == "abc"


@pytest.mark.parametrize(
    "runs, message",
    [
        ("electra.p1", "not a pre-training run"),
        ("pretrain.electra", "not a pre-training run"),
        ("pretrain.electra.p3", "no unit of it is recorded"),
    ],
)
def test_set_aside_names_a_run_it_cannot_set_aside(tmp_path, runs, message):
    store = _study_with_electra_run_1(tmp_path)
    before = store.all()
    with pytest.raises(SystemExit, match=f"--set-aside {runs}: {message}"):
        study.set_aside(store, runs)
    assert store.all() == before  # nothing moved


def test_set_aside_refuses_while_the_old_runs_checkpoints_or_encoders_are_there(
    tmp_path,
):
    store = _study_with_electra_run_1(tmp_path)
    for path in (
        tmp_path / "encoders" / "electra-p1-s100",
        tmp_path / "runs" / "electra-p1",
    ):
        path.mkdir(parents=True)
        with pytest.raises(SystemExit, match=f"{path} is the old run's"):
            study.set_aside(store, "pretrain.electra.p1")
        assert store.done("pretrain.electra.p1")
        path.rmdir()


def test_the_report_keeps_runs_set_aside_apart_and_carries_them_on(tmp_path):
    pytest.importorskip("matplotlib")
    store = planning.Store(tmp_path / "study")
    setup = _setup(tasks=["pos"])
    history = [{"step": 100, "rtd_auc": 0.6}]
    record = {"kept": {}, "held_out_history": history, "commit": "c1", "machine": "m1"}
    store.write("pretrain.electra.p1", record)
    for fseed in (1, 2):
        store.write(f"finetune.pos.none-p1.f{fseed}", _run("none-p1", fseed, 0.8))
        store.write(
            f"finetune.pos.electra-p1-s100.f{fseed}",
            _run("electra-p1-s100", fseed, 0.9),
        )
    study.set_aside(store, "pretrain.electra.p1")
    output = tmp_path / "report"
    study.write_report(argparse.Namespace(output=str(output)), setup, store)
    written = json.loads(output.with_suffix(".json").read_text())
    assert sorted(written["set_aside"]) == [
        "finetune.pos.electra-p1-s100.f1",
        "finetune.pos.electra-p1-s100.f2",
        "pretrain.electra.p1",
    ]
    assert "electra@100" not in written["summary"]["pos"]  # out of every table
    assert written["summary"]["pos"]["none@0"]["finetuning_runs"] == 2
    text = output.with_suffix(".md").read_text()
    assert (
        "`pretrain.electra.p1` and 2 fine-tuning unit(s), run at commit c1 on m1"
        in text
    )
    # A new directory carries the set-aside records on, still apart.
    new = planning.Store(tmp_path / "new")
    study.adopt_report(tmp_path / "new", new, str(output))
    assert sorted(new.all()) == ["finetune.pos.none-p1.f1", "finetune.pos.none-p1.f2"]
    assert study._set_aside_store(new).all() == written["set_aside"]
    # And so does a report rewritten from the report.
    again = tmp_path / "again"
    study.main(
        ["--report-from", str(output.with_suffix(".json")), "--output", str(again)]
    )
    assert (
        json.loads(again.with_suffix(".json").read_text())["set_aside"]
        == (written["set_aside"])
    )


def test_generators_get_electras_steps_and_objectives_its_flops():
    # Figure 3 compares generators at equal discriminator steps, Table 5
    # objectives at equal pre-training FLOPs.
    args = study.parse_args(
        ["--objectives", "electra,mlm", "--generator-sizes", "0.5"]
        + ["--uniform-generator", "--electra-steps", "1000"]
        + ["--checkpoint-every", "100", "--fractions", "0.5,1"]
    )
    vocabulary = types.SimpleNamespace(size=1000, md5=lambda: "md5")
    data = {"vocabulary": vocabulary, "max_seq_length": 128, "train": "train-*"}
    setup = design.make_setup(args, data)
    steps, flops = setup["total_steps"], setup["flops_per_sequence"]
    assert steps["electra_generator_0.5"] == steps["electra"] == 1000
    assert steps["electra_uniform_generator"] == 1000
    assert setup["kept_steps"]["electra_generator_0.5"] == [500, 1000]
    assert flops["electra_generator_0.5"] > flops["electra"]
    assert steps["mlm"] != 1000
    # MLM's steps cost ELECTRA's FLOPs, to the nearest --checkpoint-every.
    budget = setup["budget_flops"]
    assert abs(steps["mlm"] * 64 * flops["mlm"] - budget) <= 50 * 64 * flops["mlm"]


def test_unit_keys_of_generator_variants_split_back_into_their_parts():
    # A generator's width is in its variant's name, dot and all.
    setup = _setup(
        variant_seeds={"electra_generator_0.25": [1]},
        kept_steps={"electra_generator_0.25": [50, 100]},
        total_steps={"electra_generator_0.25": 100},
        flops_per_sequence={"electra_generator_0.25": 2.0},
        pretraining_seeds=[1],
    )
    units = {u.key: u for u in planning.plan_units(setup)}
    assert planning.pretraining_key_parts("pretrain.electra_generator_0.25.p1") == (
        "electra_generator_0.25",
        1,
    )
    key = "finetune.pos.electra_generator_0.25-p1-s100.f2"
    assert units[key].needs == "pretrain.electra_generator_0.25.p1"
    assert planning.finetuning_key_parts(key) == (
        "pos",
        "electra_generator_0.25-p1-s100",
        2,
    )
    assert planning.finetuning_key_parts("finetune.pos.none-p3.f1") == (
        "pos",
        "none-p3",
        1,
    )


class _Stub:
    """A runner that 'runs' a unit by recording it, or fails on request."""

    def __init__(self, store, fail=()):
        self.store, self.fail, self.started = store, set(fail), []

    def __call__(self, key, slot):
        # A fine-tuning unit must never start before its encoder exists.
        unit = next(u for u in planning.plan_units(_setup()) if u.key == key)
        if unit.needs:
            assert self.store.done(unit.needs), f"{key} started before {unit.needs}"
        self.started.append(key)
        if key not in self.fail:
            if key.startswith("pretrain."):
                _keep_encoders(self.store, key, _setup())
            self.store.write(key, {"unit": key})
        return types.SimpleNamespace(poll=lambda: 1 if key in self.fail else 0)


def _keep_encoders(store, key, setup):
    """What a pre-training unit leaves on disk: its kept encoders."""
    name, pseed = planning.pretraining_key_parts(key)
    for step in planning.kept_steps(setup, name, pseed):
        encoder = store.directory.parent / "encoders" / f"{name}-p{pseed}-s{step}"
        encoder.mkdir(parents=True, exist_ok=True)
        (encoder / "config.json").write_text("{}")


def _args(tmp_path, jobs=2, pretrain_alone=False):
    return argparse.Namespace(
        jobs=jobs, output=str(tmp_path / "report"), pretrain_alone=pretrain_alone
    )


@pytest.fixture
def quiet_scheduler(monkeypatch):
    """`schedule` with no report written and no pause between polls."""
    monkeypatch.setattr(study, "write_report", lambda *a: None)
    monkeypatch.setattr(study.time, "sleep", lambda s: None)


def test_schedule_runs_every_unit_once_and_a_rerun_redoes_nothing(
    tmp_path, quiet_scheduler
):
    store = planning.Store(tmp_path)
    setup = _setup()
    runner = _Stub(store)
    study.schedule(_args(tmp_path), setup, store, launch=runner)
    expected = {u.key for u in planning.plan_units(setup)}
    assert sorted(runner.started) == sorted(expected)
    again = _Stub(store)
    study.schedule(_args(tmp_path), setup, store, launch=again)
    assert again.started == []


def test_schedule_resumes_with_what_is_missing(tmp_path, quiet_scheduler):
    store = planning.Store(tmp_path)
    setup = _setup()
    done = ["pretrain.electra.p1", "finetune.pos.electra-p1-s100.f1"]
    _keep_encoders(store, "pretrain.electra.p1", setup)
    for key in done:
        store.write(key, {"unit": key})
    runner = _Stub(store)
    study.schedule(_args(tmp_path), setup, store, launch=runner)
    assert not set(done) & set(runner.started)
    assert len(runner.started) == len(planning.plan_units(setup)) - len(done)


def test_a_failed_unit_is_reported_not_retried_and_blocks_its_dependants(
    tmp_path, quiet_scheduler, capsys
):
    store = planning.Store(tmp_path)
    runner = _Stub(store, fail={"pretrain.mlm.p1"})
    study.schedule(_args(tmp_path), _setup(), store, launch=runner)
    assert runner.started.count("pretrain.mlm.p1") == 1
    assert not any(k.startswith("finetune.pos.mlm-p1") for k in runner.started)
    output = capsys.readouterr().out
    assert "unit pretrain.mlm.p1 failed (exit code 1)" in output
    assert "not done" in output


class _Timed(_Stub):
    """A runner whose units run for a few polls, noting what ran beside each."""

    def __init__(self, store):
        super().__init__(store)
        self.live, self.beside, self.slots = set(), {}, {}

    def __call__(self, key, slot):
        super().__call__(key, slot)
        self.slots[key] = slot
        self.beside[key] = set(self.live)
        for other in self.live:
            self.beside[other].add(key)
        self.live.add(key)
        polls = iter([None, None])

        def poll():
            code = next(polls, 0)
            if code == 0:
                self.live.discard(key)
            return code

        return types.SimpleNamespace(poll=poll)


def test_pretrain_alone_runs_each_pre_training_with_nothing_beside_it(
    tmp_path, quiet_scheduler
):
    store = planning.Store(tmp_path)
    setup = _setup()
    runner = _Timed(store)
    study.schedule(_args(tmp_path, pretrain_alone=True), setup, store, launch=runner)
    assert sorted(runner.started) == sorted(u.key for u in planning.plan_units(setup))
    pretraining = [k for k in runner.started if k.startswith("pretrain.")]
    assert pretraining and all(not runner.beside[k] for k in pretraining)
    assert all(runner.slots[k] is None for k in pretraining)
    # Fine-tuning units do run two at a time, each in a slot of its own.
    tuning = [k for k in runner.started if not k.startswith("pretrain.")]
    assert any(runner.beside[k] for k in tuning)
    assert {runner.slots[k] for k in tuning} == {0, 1}
    # Without the flag the same study runs a pre-training run beside another unit.
    store = planning.Store(tmp_path / "shared")
    runner = _Timed(store)
    study.schedule(_args(tmp_path), setup, store, launch=runner)
    assert any(runner.beside[k] for k in runner.started if k.startswith("pretrain."))


def test_a_restarted_schedule_waits_for_the_units_left_running_in_their_slots(
    tmp_path, monkeypatch, capsys
):
    import subprocess
    import sys

    monkeypatch.setattr(study, "write_report", lambda *a: None)
    store = planning.Store(tmp_path)
    left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (store.directory / "pretrain.electra.p1.running").write_text(str(left.pid))
    stub = _Stub(store)
    beside = []

    def runner(key, slot):
        # While the left unit runs, its slot (0, pre-training's) stays taken.
        if slot == 0 and store.busy("pretrain.electra.p1"):
            beside.append(key)
        return stub(key, slot)

    runner.started = stub.started
    sleeps = iter(range(1000))

    def sleep(seconds):
        if next(sleeps) == 20:  # the left unit ends, recorded
            _keep_encoders(store, "pretrain.electra.p1", _setup())
            store.write("pretrain.electra.p1", {"unit": "pretrain.electra.p1"})
            left.kill()
            left.wait()

    monkeypatch.setattr(study.time, "sleep", sleep)
    try:
        study.schedule(_args(tmp_path), _setup(), store, launch=runner)
    finally:
        left.kill()
        left.wait()
    assert beside == []
    assert "pretrain.electra.p1" not in runner.started
    assert runner.started[0] == "finetune.pos.none-p1.f1"
    expected = {u.key for u in planning.plan_units(_setup())} - {"pretrain.electra.p1"}
    assert sorted(runner.started) == sorted(expected)
    output = capsys.readouterr().out
    assert "unit pretrain.electra.p1 running already, in slot 0" in output
    assert "unit pretrain.electra.p1 done" in output


def test_a_running_unit_holds_the_slot_pick_unit_gives_its_kind():
    assert study.slot_for("pretrain.mlm.p2", set(), jobs=2) == 0
    assert study.slot_for("finetune.pos.none-p1.f1", set(), jobs=2) == 1
    assert study.slot_for("finetune.pos.none-p1.f2", {1}, jobs=3) == 2
    assert study.slot_for("finetune.pos.none-p1.f2", {1}, jobs=2) == 0
    assert study.slot_for("pretrain.mlm.p2", {0, 1}, jobs=2) is None
    assert study.slot_for("finetune.pos.none-p1.f1", set(), jobs=1) == 0


def test_a_unit_records_the_commit_it_started_with_and_its_machine(
    tmp_path, monkeypatch
):
    store = planning.Store(tmp_path)
    commits = iter(["started", "moved on"])
    monkeypatch.setattr(study, "commit", lambda: next(commits))
    monkeypatch.setattr(study, "machine", lambda: "a CPU (AVX-512), 2 cores")
    monkeypatch.setattr(study, "finetune_unit", lambda *a: {"test": 1.0})
    study.run_one(None, None, "finetune.pos.none-p1.f1", None, store)
    record = store.read("finetune.pos.none-p1.f1")
    assert record["commit"] == "started"
    assert record["machine"] == "a CPU (AVX-512), 2 cores"


def test_another_setup_in_the_same_directory_is_refused_more_seeds_are_not(
    tmp_path,
):
    design.check_setup(tmp_path, _setup())
    design.check_setup(tmp_path, _setup(finetune_seeds=[1, 2, 3]))
    with pytest.raises(SystemExit, match="differs in preset"):
        design.check_setup(tmp_path, _setup(preset="small"))
    with pytest.raises(SystemExit, match=r"total_steps\[electra\]"):
        design.check_setup(tmp_path, _setup(total_steps={"electra": 200, "mlm": 140}))


def test_a_study_is_one_precision_and_old_records_were_float32(tmp_path):
    design.check_setup(tmp_path, _setup())  # a setup from before --precision
    design.check_setup(tmp_path, _setup(precision="float32"))
    with pytest.raises(SystemExit, match="differs in precision"):
        design.check_setup(tmp_path, _setup(precision="mixed_bfloat16"))


def test_units_train_in_the_studys_precision_with_graph_mode_for_bf16_on_a_cpu(
    monkeypatch,
):
    from electra_tf import precision

    bf16_cpu = precision.Hardware("cpu", frozenset({"avx512_bf16"}))
    monkeypatch.setattr(precision, "detect_hardware", lambda: bf16_cpu)
    resolved = design.resolve_precision(_setup(precision="mixed_bfloat16"), True)
    assert resolved.to_dict() == {"precision": "mixed_bfloat16", "jit_compile": False}
    resolved = design.resolve_precision(_setup(), True)
    assert resolved.to_dict() == {"precision": "float32", "jit_compile": True}


def test_a_task_can_join_a_study_but_a_tasks_data_cannot_change(tmp_path):
    dirs = {"pos": "data/brown_pos", "sentiment": "data/rt_polarity"}
    design.check_setup(tmp_path, _setup(task_dirs=dirs))
    design.check_setup(tmp_path, _setup(task_dirs={**dirs, "party": "data/party"}))
    with pytest.raises(SystemExit, match=r"task_dirs\[sentiment\]"):
        design.check_setup(tmp_path, _setup(task_dirs={**dirs, "sentiment": "other"}))


def test_the_party_task_needs_its_directory_named():
    args = study.parse_args(["--tasks", "pos,party"])
    with pytest.raises(SystemExit, match="--tasks party needs --party-dir"):
        design.task_dirs(args, ["pos", "party"])
    args = study.parse_args(["--party-dir", "data/party"])
    assert design.task_dirs(args, ["party", "pos"]) == {
        "party": "data/party",
        "pos": args.pos_dir,
    }


def test_store_writes_whole_files_and_reads_them_back(tmp_path):
    store = planning.Store(tmp_path)
    store.write("finetune.pos.none-p1.f1", {"test": {"accuracy": 0.5}})
    assert store.done("finetune.pos.none-p1.f1")
    assert store.all() == {"finetune.pos.none-p1.f1": {"test": {"accuracy": 0.5}}}
    assert not list(store.directory.glob("*.tmp"))


def _run(encoder, fseed, test, dev=0.5, task="pos", rate=1e-3):
    return {
        "task": task,
        "encoder": encoder,
        "finetune_seed": fseed,
        "config": {"learning_rate": rate},
        "test": {"accuracy": test},
        "dev": {"dev": {"accuracy": dev}},
        "best_epoch": 2,
        "epochs": [
            {"score": dev - 0.1, "train": {"accuracy": 0.6}},
            {"score": dev, "train": {"accuracy": 0.7}},
            {"score": dev - 0.05, "train": {"accuracy": 0.8}},
        ],
        "stopped_early": True,
    }


def test_summary_groups_runs_by_pretraining_run_and_compares_with_electra():
    setup = _setup(tasks=["pos"])
    records = {
        "pretrain.electra.p1": {
            "variant": "electra",
            "kept": {
                "100": {"encoder": "electra-p1-s100", "flops": 9.0, "held_out": {}}
            },
        },
        "pretrain.electra.p2": {
            "variant": "electra",
            "kept": {
                "100": {"encoder": "electra-p2-s100", "flops": 9.0, "held_out": {}}
            },
        },
    }
    for pseed in (1, 2):
        for fseed in (1, 2):
            key = f"finetune.pos.electra-p{pseed}-s100.f{fseed}"
            records[key] = _run(f"electra-p{pseed}-s100", fseed, 0.9 + 0.01 * pseed)
            records[key]["commit"] = f"commit{pseed}"
            key = f"finetune.pos.none-p{pseed}.f{fseed}"
            records[key] = _run(f"none-p{pseed}", fseed, 0.79 + 0.01 * pseed)
    summary = reporting.summarise(setup, records)["pos"]
    electra = summary["electra@100"]
    assert electra["pretraining_runs"] == 2 and electra["finetuning_runs"] == 4
    assert electra["test_mean"] == pytest.approx(0.915)
    assert electra["test_mean_per_pretraining_run"] == {
        "1": pytest.approx(0.91),
        "2": pytest.approx(0.92),
    }
    assert electra["flops"] == 9.0
    assert summary["none@0"]["test_mean"] == pytest.approx(0.805)
    compared = intervals.comparisons(setup, {"pos": summary})["pos"]["electra - none"]
    assert compared["difference"] == pytest.approx(0.11)
    for interval in (compared["bootstrap"], compared["t_interval"]):
        assert 0.0 < interval["low"] <= compared["difference"] <= interval["high"]
    table = reporting.markdown(
        setup, {"pos": summary}, {"pos": {"electra - none": compared}}
    )
    assert "| ELECTRA | 100 |" in table and "0.9100, 0.9200" in table
    # Each row names the code its units ran and their machines.
    row = next(line for line in table.splitlines() if line.startswith("| ELECTRA"))
    assert row.endswith("| 0.001 | commit1 x2, commit2 x2 | not recorded |")
    # This setup counts no executed FLOPs for ELECTRA: unknown, not zero;
    # no pre-training executes none.
    assert row.startswith("| ELECTRA | 100 | 9 | - |")
    none = next(line for line in table.splitlines() if line.startswith("| no pre"))
    assert none.startswith("| no pre-training | 0 | 0 | 0 |")
    setup["executed_flops_per_sequence"] = {"electra": 2.0}
    summary = reporting.summarise(setup, records)["pos"]
    assert summary["electra@100"]["executed_flops"] == 100 * setup["batch_size"] * 2


def test_a_recipe_study_compares_each_recipe_with_no_pretraining_and_mlm():
    setup = _setup(tasks=["pos"])
    setup["kept_steps"] = {"mlm": [100], "mask": [100], "decay": [100]}
    records = {}
    for arm, score in (("mlm", 0.96), ("mask", 0.95), ("decay", 0.94)):
        for pseed in (1, 2):
            records[f"pretrain.{arm}.p{pseed}"] = {
                "variant": arm,
                "kept": {
                    "100": {
                        "encoder": f"{arm}-p{pseed}-s100",
                        "flops": 9.0,
                        "held_out": {},
                    }
                },
            }
            for fseed in (1, 2):
                encoder = f"{arm}-p{pseed}-s100"
                run = _run(encoder, fseed, score + 0.001 * (pseed + fseed))
                records[f"finetune.pos.{encoder}.f{fseed}"] = run
    for pseed in (1, 2):
        for fseed in (1, 2):
            run = _run(f"none-p{pseed}", fseed, 0.92 + 0.001 * (pseed + fseed))
            records[f"finetune.pos.none-p{pseed}.f{fseed}"] = run
    summary = {"pos": reporting.summarise(setup, records)["pos"]}
    compared = intervals.comparisons(setup, summary)["pos"]
    # No arm named ELECTRA: each recipe against each baseline, and MLM
    # against no pre-training, nothing else.
    assert set(compared) == {
        "mask - none",
        "mask - mlm",
        "decay - none",
        "decay - mlm",
        "mlm - none",
    }
    assert compared["mlm - none"]["difference"] == pytest.approx(0.04)
    assert compared["mask - none"]["difference"] == pytest.approx(0.03)
    assert compared["decay - mlm"]["difference"] == pytest.approx(-0.02)
    assert compared["mask - none"]["bootstrap"]["low"] > 0
    assert compared["decay - mlm"]["bootstrap"]["high"] < 0
    table = reporting.markdown(setup, summary, {"pos": compared})
    assert "mask - none: +0.0300, 95% two-level bootstrap [" in table


def test_late_gain_is_what_the_last_three_epochs_added_to_the_best_dev_score():
    def epochs(*scores):
        return [{"score": x} for x in scores]

    assert reporting.late_gain(epochs(0.5, 0.8, 0.81, 0.82, 0.83)) == pytest.approx(
        0.03
    )
    assert reporting.late_gain(epochs(0.5, 0.8, 0.79, 0.78, 0.77)) == 0.0
    assert reporting.late_gain(epochs(0.5, 0.6, 0.9)) == 0.0  # too short to say


# Made-up scores: three pre-training runs of three fine-tuning seeds against
# two runs of two and four seeds (runs of unequal size), with spread both
# between and within runs.
ARM_A = {1: [0.90, 0.86, 0.93], 2: [0.84, 0.88, 0.85], 3: [0.95, 0.91, 0.89]}
ARM_B = {7: [0.80, 0.87], 8: [0.83, 0.78, 0.90, 0.81]}


def _loop_bootstrap(a, b, samples, seed):
    """The two-level bootstrap written out as a plain loop over resamples."""
    rng = np.random.default_rng(seed)
    differences = []
    for _ in range(samples):
        means = []
        for arm in (a, b):
            runs = list(arm.values())
            drawn = [runs[i] for i in rng.integers(len(runs), size=len(runs))]
            means.append(np.mean([np.mean(rng.choice(r, len(r))) for r in drawn]))
        differences.append(means[0] - means[1])
    return np.percentile(differences, [2.5, 97.5])


def test_two_level_bootstrap_agrees_with_a_plain_loop_and_counts_both_levels():
    found = intervals.two_level_bootstrap(ARM_A, ARM_B, samples=20000, seed=3)
    low, high = _loop_bootstrap(ARM_A, ARM_B, samples=20000, seed=4)
    # Two independent Monte Carlo runs: the bounds agree to their noise.
    assert found["low"] == pytest.approx(low, abs=0.003)
    assert found["high"] == pytest.approx(high, abs=0.003)
    # Resampling only the runs (one level) gives a visibly narrower interval.
    run_means_only = {
        arm: {run: [np.mean(scores)] for run, scores in groups.items()}
        for arm, groups in (("a", ARM_A), ("b", ARM_B))
    }
    one_level = intervals.two_level_bootstrap(
        run_means_only["a"], run_means_only["b"], samples=20000, seed=3
    )
    assert one_level["high"] - one_level["low"] < 0.85 * (high - low)
    # The draws are the seed's: the same seed, the same interval.
    assert intervals.two_level_bootstrap(ARM_A, ARM_B, seed=3) == (
        intervals.two_level_bootstrap(ARM_A, ARM_B, seed=3)
    )


def test_welch_interval_is_the_hand_formula_over_run_means():
    from scipy import stats

    a = [np.mean(s) for s in ARM_A.values()]
    b = [np.mean(s) for s in ARM_B.values()]
    va, vb = np.var(a, ddof=1) / len(a), np.var(b, ddof=1) / len(b)
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = stats.t.ppf(0.975, df) * np.sqrt(va + vb)
    found = intervals.welch_interval(ARM_A, ARM_B)
    difference = np.mean(a) - np.mean(b)
    assert found["df"] == pytest.approx(df)
    assert found["low"] == pytest.approx(difference - half)
    assert found["high"] == pytest.approx(difference + half)


def test_comparison_gives_both_intervals_or_says_which_it_cannot():
    both = intervals.compare(ARM_A, ARM_B, samples=2000)
    mean_a = np.mean([np.mean(s) for s in ARM_A.values()])
    mean_b = np.mean([np.mean(s) for s in ARM_B.values()])
    assert both["difference"] == pytest.approx(mean_a - mean_b)
    assert both["pretraining_runs"] == [3, 2] and both["scores"] == [9, 6]
    assert both["t_interval"] == intervals.welch_interval(ARM_A, ARM_B)
    line = intervals.interval_text("electra - mlm", both)
    assert "95% two-level bootstrap [" in line and "Welch t over run means [" in line
    # One pre-training run a side: a bootstrap over its seeds, no t-interval.
    one_run = intervals.compare(ARM_A, {1: [0.95, 0.94, 0.96]}, samples=2000)
    assert one_run["pretraining_runs"] == [3, 1] and one_run["t_interval"] is None
    bounds = one_run["bootstrap"]
    assert bounds["low"] < one_run["difference"] < bounds["high"]
    line = intervals.interval_text("electra - gdes", one_run)
    assert "fine-tuning seeds only for gdes" in line and "no t-interval" in line
    # One score a side: resampling could only return the point, so no interval.
    single = intervals.compare(ARM_A, {1: [0.95]})
    assert single["bootstrap"] is None and single["t_interval"] is None
    line = intervals.interval_text("electra - replace_mlm", single)
    assert "no interval (replace_mlm: one pre-training run, one seed)" in line
    assert "bootstrap" not in line


def test_rt_polarity_electra_minus_no_pretraining_t_interval_includes_zero():
    """The committed second study's rt_polarity runs (issue 48: about
    [-0.028, +0.002])."""
    path = pathlib.Path(__file__).parents[2] / "bench/results"
    written = json.loads((path / "paper_experiments_seeds456.json").read_text())
    summary = {"sentiment": written["summary"]["sentiment"]}
    compared = intervals.comparisons(written["setup"], summary)["sentiment"]
    t_interval = compared["electra - none"]["t_interval"]
    assert t_interval["low"] == pytest.approx(-0.0277, abs=5e-5)
    assert t_interval["high"] == pytest.approx(0.0016, abs=5e-5)
    # The committed report is this code's.
    assert written["comparisons"]["sentiment"] == compared


def test_test_split_is_scored_once_after_training_with_the_trained_model():
    events = []

    def train():
        events.append("train")
        return "model-at-best-dev-epoch", {"best_epoch": 2, "dev": {"dev": {}}}

    def score_test(model):
        events.append(("test", model))
        return {"accuracy": 0.7}

    results = finetuning.select_on_dev_then_test(train, score_test)
    assert events == ["train", ("test", "model-at-best-dev-epoch")]
    assert results["test"] == {"accuracy": 0.7} and results["best_epoch"] == 2


def test_the_tagging_unit_reads_test_tags_only_after_fine_tuning(tmp_path, monkeypatch):
    """Fails if the test file is opened before the epoch is chosen."""
    from electra_tf.finetuning import tagging, tagging_data, trainer

    pos_dir = pathlib.Path(__file__).parents[2] / "tests/fixtures/brown_pos"
    reads, trained = [], []
    real_read = tagging_data.read_conll

    def read_conll(path, labelled=True):
        reads.append((pathlib.Path(path).name, bool(trained)))
        return real_read(path, labelled)

    class Tagger:
        def predict_tags(self, words, batch_size):
            return [["NOUN"] * len(w) for w in words]

    def finetune_seed(task, seed, verbose):
        trained.append(seed)
        return Tagger(), {"best_epoch": 1, "dev": {"dev": {"accuracy": 0.3}}}

    monkeypatch.setattr(tagging_data, "read_conll", read_conll)
    monkeypatch.setattr(tagging, "read_conll", read_conll)
    monkeypatch.setattr(trainer, "finetune_seed", finetune_seed)
    args = argparse.Namespace(pos_train_sentences=0)
    results = finetuning.finetune_tagging(
        args,
        str(pos_dir),
        config=types.SimpleNamespace(eval_batch_size=8),
        pretrained=None,
        base={"model": _NO_PRETRAINING["model"]},
        data={"vocabulary": _NO_PRETRAINING["vocabulary"]},
        seed=3,
    )
    assert ("test.conll", False) not in reads
    assert ("test.conll", True) in reads
    assert trained == [3]
    assert 0.0 < results["test"]["accuracy"] < 1.0


def test_report_files_are_written_from_unit_records(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    store = planning.Store(tmp_path)
    setup = _setup(tasks=["pos"])
    store.write(
        "pretrain.electra.p1",
        {"kept": {"100": {"encoder": "electra-p1-s100", "flops": 9.0, "held_out": {}}}},
    )
    for fseed in (1, 2):
        store.write(
            f"finetune.pos.electra-p1-s100.f{fseed}",
            _run("electra-p1-s100", fseed, 0.9),
        )
        store.write(f"finetune.pos.none-p1.f{fseed}", _run("none-p1", fseed, 0.8))
    # A run still going: its newest checkpoint and kept encoders are reported.
    checkpoints = tmp_path / "runs" / "mlm-p2" / "checkpoints"
    checkpoints.mkdir(parents=True)
    (checkpoints / "checkpoint").write_text('model_checkpoint_path: "ckpt-300"\n')
    (checkpoints / "ckpt-300.index").write_bytes(b"")
    (tmp_path / "encoders" / "mlm-p2-s70").mkdir(parents=True)
    output = tmp_path / "report"
    study.write_report(argparse.Namespace(output=str(output)), setup, store)
    report = json.loads(output.with_suffix(".json").read_text())
    progress = report["in_progress"]["pretrain.mlm.p2"]
    assert progress["step"] == 300 and progress["total_steps"] == 140
    assert progress["kept_encoders"] == ["mlm-p2-s70"]
    assert "pretrain.electra.p1" not in report["in_progress"]  # recorded whole
    assert report["summary"]["pos"]["electra@100"]["finetuning_runs"] == 2
    # The training score is the chosen (best dev) epoch's, not the last's.
    assert report["summary"]["pos"]["electra@100"]["train_mean"] == 0.7
    assert {"command", "date", "machine", "versions"} <= set(report)
    assert (tmp_path / "report_pos.png").stat().st_size > 0
    assert "ELECTRA" in output.with_suffix(".md").read_text()


def test_a_report_rewritten_from_a_report_is_the_same_report(tmp_path):
    """--report-from: the units' directory gone, the report's own records
    give back every figure; only the header (this command) differs."""
    pytest.importorskip("matplotlib")
    store = planning.Store(tmp_path / "study")
    setup = _setup(tasks=["pos"])
    for pseed in (1, 2):
        encoder = f"electra-p{pseed}-s100"
        kept = {"100": {"encoder": encoder, "flops": 9.0, "held_out": {}}}
        history = [{"step": 100, "rtd_auc": 0.6 + pseed / 100}]
        record = {"kept": kept, "held_out_history": history, "variant": "electra"}
        store.write(f"pretrain.electra.p{pseed}", record)
        for fseed in (1, 2):
            run = _run(encoder, fseed, 0.9 + pseed / 100 + fseed / 1000)
            store.write(f"finetune.pos.{encoder}.f{fseed}", run)
            run = _run(f"none-p{pseed}", fseed, 0.8 + pseed / 100 - fseed / 1000)
            store.write(f"finetune.pos.none-p{pseed}.f{fseed}", run)
    first = tmp_path / "first"
    study.write_report(argparse.Namespace(output=str(first)), setup, store)
    shutil.rmtree(tmp_path / "study")
    second, third = tmp_path / "second", tmp_path / "third"
    for source, output in ((first, second), (second, third)):
        arguments = ["--report-from", str(source.with_suffix(".json"))]
        assert study.main([*arguments, "--output", str(output)]) == 0
    header = {"command", "commit", "date", "machine", "versions", "units_from"}
    written = [json.loads(p.with_suffix(".json").read_text()) for p in (first, third)]
    assert written[0]["comparisons"]["pos"]["electra - none"]["t_interval"]
    assert [{k: v for k, v in w.items() if k not in header} for w in written] == [
        {k: v for k, v in written[0].items() if k not in header}
    ] * 2
    # Rewritten twice, it still names the study's own command.
    assert written[1]["units_from"]["command"] == written[0]["command"]
    assert written[1]["units_from"]["report"] == str(first.with_suffix(".json"))
    for path in (second, third):
        assert (
            path.with_suffix(".md").read_text() == first.with_suffix(".md").read_text()
        )
    assert (tmp_path / "third_pos.png").stat().st_size > 0
    # Not a report: one line naming the file.
    (tmp_path / "other.json").write_text('{"summary": {}}')
    with pytest.raises(SystemExit, match=r"other.json: not a paper_experiments report"):
        study.main(
            ["--report-from", str(tmp_path / "other.json")]
            + ["--output", str(tmp_path / "unwritten")]
        )
    assert not list(tmp_path.glob("unwritten*"))


def test_held_out_score_is_each_runs_auc_or_its_objectives_accuracy():
    electra = {"held_out": {"2": {"rtd_auc": 0.7312, "mlm_accuracy": 0.1}}}
    electra["held_out"]["1"] = {"rtd_auc": 0.7331, "mlm_accuracy": 0.1}
    assert reporting.held_out_score(electra) == "AUC 0.733, 0.731"
    mlm = {"held_out": {"1": {"mlm_accuracy": 0.4461}}}
    assert reporting.held_out_score(mlm) == "MLM accuracy 0.446"
    assert reporting.held_out_score({"held_out": {}}) == "-"  # no pre-training


def test_generators_are_drawn_against_their_width_beside_electras_own(
    tmp_path, monkeypatch
):
    pytest.importorskip("matplotlib")
    assert plots.generator_width(_setup(), "electra") == 0.03125  # the cpu preset's
    assert (
        plots.generator_width(_setup(hparams={"generator_hidden_size": 0.5}), "electra")
        == 0.5
    )
    assert plots.generator_width(_setup(), "electra_generator_0.25") == 0.25
    assert plots.generator_width(_setup(), "electra_uniform_generator") is None
    names = ["electra", "electra_generator_0.25", "electra_uniform_generator"]
    setup = _setup(
        variant_seeds={name: [1] for name in names},
        kept_steps={name: [100] for name in names},
        total_steps={name: 100 for name in names},
        flops_per_sequence={name: 2.0 for name in names},
        pretraining_seeds=[1],
    )
    store = planning.Store(tmp_path)
    for name in names:
        encoder = f"{name}-p1-s100"
        record = {"encoder": encoder, "flops": 9.0, "held_out": {}}
        store.write(f"pretrain.{name}.p1", {"kept": {"100": record}})
        store.write(f"finetune.pos.{encoder}.f1", _run(encoder, 1, 0.9))
    store.write("finetune.pos.none-p1.f1", _run("none-p1", 1, 0.8))
    drawn = {}
    monkeypatch.setattr(
        plots,
        "plot",
        lambda task, points, path: drawn.setdefault(path.name, points),
    )
    study.write_report(
        argparse.Namespace(output=str(tmp_path / "report")), setup, store
    )
    assert (tmp_path / "report_pos_generators.png").stat().st_size > 0
    assert set(drawn) == {"report_pos.png"}


def test_the_classification_unit_reads_test_labels_only_after_fine_tuning(
    tmp_path, monkeypatch
):
    """Fails if test.tsv is opened before the epoch is chosen."""
    from electra_tf.finetuning import glue_readers, trainer

    task_dir = tmp_path / "sentiment"
    task_dir.mkdir()
    for split, rows in (("train", 4), ("dev", 2), ("test", 3)):
        lines = ["sentence\tlabel"] + [f"words {i}\t{i % 2}" for i in range(rows)]
        (task_dir / f"{split}.tsv").write_text("\n".join(lines) + "\n")
    reads, trained = [], []
    real_read = glue_readers.read_glue_tsv

    def read_glue_tsv(task, split, data_dir):
        reads.append((split, bool(trained)))
        return real_read(task, split, data_dir)

    class Classifier:
        def evaluate(self, dataset, verbose, return_dict):
            labels = [int(y) for _, batch in dataset for y in batch.numpy()]
            return {"accuracy": sum(y == 0 for y in labels) / len(labels)}

    def finetune_seed(task, seed, verbose):
        assert len(task.data.train) == 4 and not task.data.test
        trained.append(seed)
        return Classifier(), {"best_epoch": 1, "dev": {"dev": {"accuracy": 0.5}}}

    monkeypatch.setattr(glue_readers, "read_glue_tsv", read_glue_tsv)
    monkeypatch.setattr(trainer, "finetune_seed", finetune_seed)
    results = finetuning.finetune_classification(
        str(task_dir),
        config=types.SimpleNamespace(eval_batch_size=8),
        pretrained=None,
        base={"model": _NO_PRETRAINING["model"]},
        data={"vocabulary": _NO_PRETRAINING["vocabulary"]},
        seed=2,
    )
    assert ("test", False) not in reads and ("test", True) in reads
    assert trained == [2]
    assert results["test"]["accuracy"] == pytest.approx(2 / 3)


def test_with_two_slots_slot_0_keeps_pretraining_while_others_fine_tune():
    units = planning.plan_units(_setup())
    store_done = {"pretrain.electra.p1", "pretrain.mlm.p1"}
    ready = sorted(
        (
            u
            for u in units
            if u.key not in store_done and (u.needs in store_done or u.needs is None)
        ),
        key=lambda u: u.priority,
    )
    # In plan order the fine-tuning of seed 1 comes before seed 2's run ...
    assert ready[0].key.startswith("finetune.")
    # ... but slot 0 starts the next pre-training run and slot 1 fine-tunes.
    assert study.pick_unit(ready, 0, jobs=2).key == "pretrain.electra.p2"
    assert study.pick_unit(ready, 1, jobs=2).key == ready[0].key
    # One slot keeps plan order; a slot whose kind has nothing takes the other.
    assert study.pick_unit(ready, 0, jobs=1).key == ready[0].key
    fine_tuning_only = [u for u in ready if u.key.startswith("finetune.")]
    assert study.pick_unit(fine_tuning_only, 0, jobs=2) == fine_tuning_only[0]
    assert study.pick_unit([], 1, jobs=2) is None


def test_only_curve_pretraining_seeds_keep_and_fine_tune_early_encoders():
    setup = _setup(curve_pretraining_seeds=[2])
    keys = {u.key for u in planning.plan_units(setup)}
    assert "finetune.pos.electra-p2-s50.f1" in keys
    assert "finetune.pos.electra-p1-s50.f1" not in keys
    assert {"finetune.pos.electra-p1-s100.f1", "finetune.pos.electra-p1-s100.f2"} < keys
    assert planning.kept_steps(setup, "mlm", 1) == [140]
    assert planning.kept_steps(setup, "mlm", 2) == [70, 140]
    # A setup from before the flag keeps curves on every seed.
    assert planning.kept_steps(_setup(), "mlm", 1) == [70, 140]


class _Killed(Exception):
    pass


def _stub_pretraining(monkeypatch, tmp_path, kill_at=None):
    """`run_pretraining` as a run directory that remembers its step, exports
    the weights it holds (here: the step as text) and can be killed."""
    from electra_tf.pretraining import run as pretraining_run

    state = {"step": 0, "kill_at": kill_at}

    def run_pretraining(model, pretraining, optimizer, training, *a, **k):
        if state["kill_at"] is not None and training.train_steps > state["kill_at"]:
            state["step"], state["kill_at"] = state["kill_at"], None
            raise _Killed
        state["step"] = max(state["step"], training.train_steps)
        export = pathlib.Path(training.model_dir) / "export" / "discriminator"
        export.mkdir(parents=True, exist_ok=True)
        (export / "weights").write_text(str(state["step"]))
        return {"rtd_auc": 0.5, "step": state["step"]}

    monkeypatch.setattr(pretraining_run, "run_pretraining", run_pretraining)
    optimizer = types.SimpleNamespace(override=lambda **k: None)
    configs = {"model": None, "pretraining": None, "optimizer": optimizer}
    monkeypatch.setattr(design, "setup_configs", lambda args, data: configs)
    monkeypatch.setattr(design, "variant_configs", lambda base, v, s: configs)
    monkeypatch.setattr(pretraining, "held_out_history", lambda model_dir: [])
    args = study.parse_args(
        ["--out-dir", str(tmp_path), "--batch-size", "64", "--checkpoint-every", "10"]
        + ["--eval-steps", "1", "--objectives", "electra", "--hparams", "{}"]
    )
    data = {"train": "train-*", "eval": "eval-*", "vocabulary": None}
    return state, args, data


def test_a_resumed_pretraining_unit_keeps_each_encoder_at_its_own_step(
    tmp_path, monkeypatch
):
    # Killed at step 75, on its way from the encoder kept at 50 to 100.
    state, args, data = _stub_pretraining(monkeypatch, tmp_path, kill_at=75)
    setup = _setup()
    with pytest.raises(_Killed):
        pretraining.pretrain_unit(args, setup, "pretrain.electra.p1", data, None)
    record = pretraining.pretrain_unit(args, setup, "pretrain.electra.p1", data, None)
    encoders = tmp_path / "encoders"
    assert (encoders / "electra-p1-s50" / "weights").read_text() == "50"
    assert (encoders / "electra-p1-s100" / "weights").read_text() == "100"
    assert {s: k["held_out"]["step"] for s, k in record["kept"].items()} == {
        "50": 50,
        "100": 100,
    }


def test_a_run_past_a_step_it_has_not_kept_is_refused_not_kept_under_that_name(
    tmp_path, monkeypatch
):
    state, args, data = _stub_pretraining(monkeypatch, tmp_path)
    state["step"] = 75  # a run directory from before encoders were recorded
    with pytest.raises(SystemExit, match="is at step 75, not 50"):
        pretraining.pretrain_unit(args, _setup(), "pretrain.electra.p1", data, None)
    assert not (tmp_path / "encoders" / "electra-p1-s50").exists()


def test_a_recorded_run_whose_encoders_are_gone_runs_again_before_their_units(
    tmp_path,
):
    store = planning.Store(tmp_path)
    setup = _setup()
    units = planning.plan_units(setup)
    for key in ("pretrain.electra.p1", "finetune.pos.electra-p1-s100.f1"):
        store.write(key, {"unit": key})

    def ready():
        return {u.key for u in planning.ready_units(units, store, set())}

    # Seed 1's encoders are gone (a lost scratch directory): its fine-tuning
    # still to run waits, and the recorded run is due again.
    assert "pretrain.electra.p1" in ready()
    assert not {k for k in ready() if k.startswith("finetune.pos.electra-p1")}
    # Rebuilt, the encoders are back: the run is not due, its units are.
    _keep_encoders(store, "pretrain.electra.p1", setup)
    assert "pretrain.electra.p1" not in ready()
    assert "finetune.pos.electra-p1-s100.f2" in ready()
    assert "finetune.pos.electra-p1-s100.f1" not in ready()  # recorded
    # With every unit on it recorded, a run whose encoders are gone stays done.
    for unit in units:
        if unit.needs == "pretrain.mlm.p1":
            store.write(unit.key, {"unit": unit.key})
    store.write("pretrain.mlm.p1", {"unit": "pretrain.mlm.p1"})
    assert "pretrain.mlm.p1" not in ready()


def _history_of(state, scale=1.0):
    """Held-out evaluations every 20 steps up to the run's step."""
    return lambda model_dir: [
        {"step": s, "rtd_auc": scale * s / 1000}
        for s in range(20, state["step"] + 1, 20)
    ]


def test_a_rebuilt_run_is_compared_with_its_record_and_keeps_it(tmp_path, monkeypatch):
    state, args, data = _stub_pretraining(monkeypatch, tmp_path)
    monkeypatch.setattr(pretraining, "held_out_history", _history_of(state))
    setup = _setup()
    recorded = pretraining.pretrain_unit(args, setup, "pretrain.electra.p1", data, None)
    recorded = {"unit": "pretrain.electra.p1", "commit": "first", **recorded}
    shutil.rmtree(tmp_path / "encoders")
    state["step"] = 0  # the rebuild's own run directory starts from scratch
    rebuilt = pretraining.pretrain_unit(
        args, setup, "pretrain.electra.p1", data, None, recorded
    )
    # The first run's record, its machine unknown (recorded before units
    # named theirs); the rebuild's own beside it.
    assert {k: v for k, v in rebuilt.items() if k != "rebuilt"} == {
        "machine": None,
        **recorded,
    }
    assert rebuilt["rebuilt"]["machine"] == pretraining.machine()
    assert rebuilt["rebuilt"]["evaluations_compared"] == 5
    encoders = tmp_path / "encoders"
    assert (encoders / "electra-p1-s100" / "weights").read_text() == "100"
    # The first evaluation is a stop of its own; nothing is kept there.
    assert sorted(p.name for p in encoders.iterdir()) == [
        "electra-p1-s100",
        "electra-p1-s50",
    ]


def test_a_rebuild_that_departs_from_its_record_is_refused_at_the_first_evaluation(
    tmp_path, monkeypatch
):
    state, args, data = _stub_pretraining(monkeypatch, tmp_path)
    recorded = {"held_out_history": _history_of({"step": 100})(None)}
    steps = []
    original = pretraining.compare_with_record
    monkeypatch.setattr(
        pretraining,
        "compare_with_record",
        lambda key, history, record: (
            steps.append(state["step"]) or original(key, history, record)
        ),
    )
    monkeypatch.setattr(pretraining, "held_out_history", _history_of(state, scale=1.01))
    message = r"at step 20 rtd_auc is 0.0202\d*, the record's 0.02; this is another run"
    with pytest.raises(SystemExit, match=message):
        pretraining.pretrain_unit(
            args, _setup(), "pretrain.electra.p1", data, None, recorded
        )
    assert steps == [20]  # stopped at the first evaluation, not the budget's end
    assert not (tmp_path / "encoders").exists()
    # Within round-off it is the same run.
    monkeypatch.setattr(
        pretraining, "held_out_history", _history_of(state, scale=1 + 1e-6)
    )
    state["step"] = 0
    pretraining.pretrain_unit(
        args, _setup(), "pretrain.electra.p1", data, None, recorded
    )


def test_a_unit_another_live_process_runs_is_not_started_again(tmp_path, monkeypatch):
    import subprocess
    import sys

    store = planning.Store(tmp_path)
    units = planning.plan_units(_setup())
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (store.directory / "pretrain.electra.p1.running").write_text(str(other.pid))
        assert store.busy("pretrain.electra.p1")
        ready = {u.key for u in planning.ready_units(units, store, set())}
        assert "pretrain.electra.p1" not in ready and "pretrain.mlm.p1" in ready
    finally:
        other.kill()
        other.wait()
    # Its process gone (killed with the unit unfinished), the unit is free.
    assert not store.busy("pretrain.electra.p1")
    assert "pretrain.electra.p1" in {
        u.key for u in planning.ready_units(units, store, set())
    }
    # This process's own claim does not block it; a finished unit lets go.
    store.claim("pretrain.mlm.p1")
    assert not store.busy("pretrain.mlm.p1")
    monkeypatch.setattr(study, "finetune_unit", lambda *a: {})
    study.run_one(None, None, "finetune.pos.none-p1.f1", None, store)
    assert not (store.directory / "finetune.pos.none-p1.f1.running").exists()
    assert store.done("finetune.pos.none-p1.f1")


def test_a_pos_training_sample_is_the_same_sentences_in_file_order_every_time():
    from electra_tf.finetuning.tagging_data import TaggedSentences

    words = tuple((f"w{i}",) for i in range(50))
    sentences = TaggedSentences(
        words, tuple(("NOUN",) for _ in words), "train.conll", tuple(range(1, 51))
    )
    sample = finetuning.sample_sentences(sentences, 20)
    assert sample == finetuning.sample_sentences(sentences, 20)
    indices = [int(w[0][1:]) for w in sample.words]
    assert len(set(indices)) == 20 and indices == sorted(indices)
    assert indices != list(range(20))  # drawn from the whole file, not its head
    assert sample.lines == tuple(i + 1 for i in indices)
    with pytest.raises(SystemExit, match="exceeds the 50 sentences of train.conll"):
        finetuning.sample_sentences(sentences, 51)


def test_weight_scales_reads_a_kept_encoders_matrices_block_by_block(tmp_path):
    import keras

    from electra_tf.models.encoder import ElectraEncoder
    from tests.helpers import TINY_ENCODER

    encoder = ElectraEncoder(**{**TINY_ENCODER, "num_layers": 2})
    # Block 2's attention scaled up: the scales must follow the blocks' order.
    for weight in encoder.weights:
        if "transformer_layer_1/" in weight.path and "attention" in weight.path:
            weight.assign(weight * 3.0)
    encoder.save_weights(tmp_path / "model.weights.h5")
    scales = reporting.weight_scales(tmp_path)

    def rms(paths):
        values = [
            keras.ops.convert_to_numpy(w).ravel()
            for w in encoder.weights
            if len(w.shape) >= 2 and paths(w.path)
        ]
        return float(np.sqrt(np.mean(np.square(np.concatenate(values)))))

    assert len(scales["attention"]) == len(scales["feed_forward"]) == 2
    assert scales["attention"][1] == pytest.approx(
        rms(lambda p: "transformer_layer_1/" in p and "attention_layer/" in p)
    )
    assert scales["attention"][1] > 2 * scales["attention"][0]
    assert scales["feed_forward"][0] == pytest.approx(
        rms(lambda p: "transformer_layer_0/" in p and "feedforward_" in p)
    )
    assert scales["token_embeddings"] == pytest.approx(
        rms(lambda p: "token_embedding" in p)
    )


def test_weight_scales_of_encoders_gone_from_disk_are_kept_from_the_last_report(
    tmp_path, monkeypatch
):
    store = planning.Store(tmp_path)
    store.write("pretrain.mlm.p1", {"kept": {}})
    previous = tmp_path / "report.json"
    # electra's run 1 is not recorded (set aside): its old encoder's figure goes.
    earlier = {"mlm-p1-s2000": "old", "mlm-p1-s750": "old", "electra-p1-s100": "old"}
    previous.write_text(json.dumps({"encoder_weights": earlier}))
    kept = tmp_path / "encoders" / "mlm-p1-s2000"
    kept.mkdir(parents=True)
    (kept / "model.weights.h5").write_bytes(b"")
    monkeypatch.setattr(
        reporting, "weight_scales", lambda path: f"measured {path.name}"
    )
    scales = reporting.encoder_weights(store, previous)
    # The encoder on disk is measured again; the lost one keeps its figure.
    assert scales == {"mlm-p1-s750": "old", "mlm-p1-s2000": "measured mlm-p1-s2000"}
    assert list(scales) == ["mlm-p1-s750", "mlm-p1-s2000"]  # by step, not by name
    assert reporting.encoder_weights(store, tmp_path / "none.json") == {
        "mlm-p1-s2000": "measured mlm-p1-s2000"
    }


def test_runs_column_says_when_pretraining_runs_have_different_seed_counts():
    from bench.studies.paper.report import _runs

    def runs(*seeds_per_run):
        return [
            {"pretraining_seed": p, "finetune_seed": f}
            for p, count in enumerate(seeds_per_run, 1)
            for f in range(1, count + 1)
        ]

    assert _runs(runs(3, 3, 3)) == "3 x 3"
    # 3 + 1 is not "2 x 2".
    assert _runs(runs(3, 1)) == "2 (4 fine-tuning runs)"
    assert _runs(runs(3, 2)) == "2 (5 fine-tuning runs)"


def test_the_report_records_the_checksums_of_what_the_study_read(tmp_path):
    import hashlib

    task = tmp_path / "pos"
    task.mkdir()
    (task / "train.conll").write_text("a\tDET\n\n")
    (task / "README.md").write_text("not read by the study")
    corpus = tmp_path / "brown.txt.gz"
    corpus.write_bytes(b"text")
    data = tmp_path / "data"
    data.mkdir()
    (data / "stats.json").write_text(json.dumps({"input_files": [str(corpus)]}))
    setup = {"task_dirs": {"pos": str(task)}, "data": str(data / "train-*")}
    found = design.input_checksums(setup)
    assert found == {
        str(path): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in (task / "train.conll", data / "stats.json", corpus)
    }


def test_a_tagging_unit_builds_its_tagger_from_a_tagging_config(monkeypatch):
    """The tagging units' config is the product's `TaggingConfig` (its
    segment_id read by the tagger), recorded with the unit."""
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.finetuning import trainer

    repo = pathlib.Path(__file__).parents[2]
    pos_dir = str(repo / "tests/fixtures/brown_pos")
    built = []

    def finetune_seed(task, seed, verbose):
        built.append(task.build_model())
        return None, {"best_epoch": 1, "dev": {"dev": {"accuracy": 0.3}}}

    monkeypatch.setattr(trainer, "finetune_seed", finetune_seed)
    monkeypatch.setattr(
        finetuning, "select_on_dev_then_test", lambda train, _: train()[1]
    )
    args = study.parse_args(
        ["--preset", "tiny", "--tasks", "pos", "--pos-dir", pos_dir]
    )
    vocabulary = Vocabulary.from_file(repo / "electra_tf/assets/demo_vocab.txt")
    data = {"vocabulary": vocabulary, "max_seq_length": 32}
    setup = {"task_dirs": {"pos": pos_dir}, "precision": "float32"}
    record = finetuning.finetune_unit(args, setup, "finetune.pos.none-p1.f1", data)
    assert record["config"]["segment_id"] == 0
    assert len(built) == 1 and built[0].count_params() > 0
