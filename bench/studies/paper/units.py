"""The study as units, each recorded as one JSON file (`Store`):
`pretrain.<variant>.p<seed>` keeps an encoder at every kept step,
`finetune.<task>.<encoder>.f<seed>` is one fine-tuning run."""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib

from bench.result_file import write_result


class Store:
    """One JSON file per finished unit under `<out-dir>/units/`, and a
    `<key>.running` file holding the pid of the process that runs it."""

    def __init__(self, out_dir: pathlib.Path):
        self.directory = out_dir / "units"
        self.directory.mkdir(parents=True, exist_ok=True)

    def path(self, key: str, suffix=".json") -> pathlib.Path:
        return self.directory / f"{key}{suffix}"

    def done(self, key: str) -> bool:
        return self.path(key).exists()

    def read(self, key: str) -> dict:
        return json.loads(self.path(key).read_text())

    def write(self, key: str, record: dict) -> None:
        write_result(self.path(key), record)

    def claim(self, key: str) -> None:
        self.path(key, ".running").write_text(str(os.getpid()))

    def release(self, key: str) -> None:
        self.path(key, ".running").unlink(missing_ok=True)

    def busy(self, key: str) -> bool:
        """Whether another live process runs `key` (a second scheduler on the
        same directory, or a unit left running by one that was stopped)."""
        try:
            pid = int(self.path(key, ".running").read_text())
            os.kill(pid, 0)
        except (OSError, ValueError):
            return False
        return pid != os.getpid()

    def all(self) -> dict[str, dict]:
        return {
            p.stem: json.loads(p.read_text()) for p in self.directory.glob("*.json")
        }


def pretraining_key(name: str, pseed: int) -> str:
    return f"pretrain.{name}.p{pseed}"


def of_run(key: str, run: str) -> bool:
    """Whether unit `key` is pre-training run `run` or fine-tunes one of its
    encoders (every kept step)."""
    if key.startswith("pretrain."):
        return key == run
    variant, pseed, _ = encoder_parts(finetuning_key_parts(key)[1])
    return (variant, pseed) == pretraining_key_parts(run)


def pretraining_key_parts(key: str) -> tuple[str, int]:
    """Split from the right: variant names hold dots (`electra_generator_0.25`)."""
    name, pseed = key.removeprefix("pretrain.").rsplit(".p", 1)
    return name, int(pseed)


# In place of a rate: the unit runs at the rate chosen on dev from the units of
# every rate at the study's `learning_rate_seeds` (of its variant's
# `learning_rate_runs`, where the study names them).
CHOSEN = "chosen"


def finetuning_key(task: str, encoder: str, fseed: int, rate=None) -> str:
    """`finetune.<task>.<encoder>.f<seed>`, with `.lr<rate>` (or `.lrchosen`)
    before the seed in a study that chooses the fine-tuning learning rate."""
    if rate is not None:
        encoder += f".lr{rate if rate == CHOSEN else format(rate, 'g')}"
    return f"finetune.{task}.{encoder}.f{fseed}"


def finetuning_key_parts(key: str) -> tuple[str, str, int]:
    """The task, encoder and fine-tuning seed of `finetune.<task>.<encoder>.f<seed>`."""
    task, rest = key.removeprefix("finetune.").split(".", 1)
    encoder, fseed = rest.rsplit(".f", 1)
    return task, encoder.split(".lr", 1)[0], int(fseed)


def finetuning_learning_rate(key: str) -> float | str | None:
    """The learning rate a key names (`.lr<rate>`), `CHOSEN`, else None."""
    _, rest = key.removeprefix("finetune.").split(".", 1)
    rate = rest.rsplit(".f", 1)[0].partition(".lr")[2]
    return rate if rate == CHOSEN else float(rate) if rate else None


def rate_units(setup: dict, key: str) -> list[str]:
    """The units whose dev scores choose the rate of `key`: its task and
    encoder at every rate and every seed of `learning_rate_seeds`; in a study
    with `learning_rate_runs`, the encoders of its variant's pre-training runs
    there, at the same step, in place of its own."""
    task, encoder, _ = finetuning_key_parts(key)
    variant, pseed, step = encoder_parts(encoder)
    runs = setup.get("learning_rate_runs")
    if runs and pseed not in runs:
        encoders = [encoder_name(variant, run, step) for run in runs]
    else:
        encoders = [encoder]
    return [
        finetuning_key(task, encoder, fseed, rate)
        for encoder in encoders
        for rate in setup["finetune_learning_rates"]
        for fseed in learning_rate_seeds(setup)
    ]


def best_rate(dev_scores: dict[float, list[float]]) -> float:
    """The rate whose dev scores have the best mean (ties: the first given)."""
    means = {rate: sum(v) / len(v) for rate, v in dev_scores.items()}
    return max(means, key=means.get)


def chosen_rate(setup: dict, key: str, store: Store, metric: str) -> tuple:
    """The rate a `CHOSEN` unit runs at, from its `rate_units`' dev scores,
    and those scores by rate."""
    dev_scores: dict[float, list[float]] = {}
    for unit in rate_units(setup, key):
        score = store.read(unit)["dev"]["dev"][metric]
        dev_scores.setdefault(finetuning_learning_rate(unit), []).append(score)
    return best_rate(dev_scores), dev_scores


def learning_rate_seeds(setup: dict) -> list[int]:
    """The fine-tuning seeds run at every rate (default: all of them); the
    others run at the chosen rate only."""
    return setup.get("learning_rate_seeds") or setup["finetune_seeds"]


def encoder_name(variant: str, pseed: int, step: int) -> str:
    """The inverse of `encoder_parts`."""
    return f"none-p{pseed}" if variant == "none" else f"{variant}-p{pseed}-s{step}"


def encoder_parts(encoder: str) -> tuple[str, int, int]:
    """`electra-p2-s6000`: ("electra", 2, 6000); `none-p3`: ("none", 3, 0)."""
    if encoder.startswith("none-"):
        return "none", int(encoder.split("-p")[1]), 0
    name_seed, step = encoder.rsplit("-s", 1)
    variant, pseed = name_seed.rsplit("-p", 1)
    return variant, int(pseed), int(step)


@dataclasses.dataclass(frozen=True)
class Unit:
    key: str
    needs: str | None  # the pre-training run whose record it needs, if any
    priority: tuple  # lower first among the ready ones
    after: tuple = ()  # units that must be recorded first (`rate_units`)


def plan_units(setup: dict) -> list[Unit]:
    """Every unit of the study, in the order they are best run: the first
    task's fine-tuning before any of the next's (a budget cut short leaves one
    task's comparison over every pre-training seed rather than two tasks' over
    one); within a task, a seed's no-pre-training runs first, then its runs
    and its final encoders' fine-tuning before the next seed's (curve points
    after them). A variant given fewer seeds (an ablation row) runs its seeds
    with the last of the others', after them."""
    units = []
    fseeds, tasks = setup["finetune_seeds"], setup["tasks"]
    most = max(len(seeds) for seeds in setup["variant_seeds"].values())
    for given, (name, pseeds) in enumerate(setup["variant_seeds"].items()):
        ablation = len(pseeds) < most
        for rank, pseed in enumerate(pseeds, start=most - len(pseeds)):
            run = pretraining_key(name, pseed)
            units.append(Unit(run, None, (0, rank, 0, ablation, given, name)))
            for step in kept_steps(setup, name, pseed):
                final = step == setup["kept_steps"][name][-1]
                for t, task in enumerate(tasks):
                    for fseed in fseeds if final else fseeds[: setup["curve_seeds"]]:
                        for rate in _rates(setup, fseed, pseed):
                            encoder = encoder_name(name, pseed, step)
                            key = finetuning_key(task, encoder, fseed, rate)
                            order = (t, rank, 1 if final else 2, ablation, given, key)
                            units.append(Unit(key, run, order, _after(setup, key)))
    # No pre-training, the baseline every comparison needs, sorts first in its
    # rank, so a study cut short has it (it used to wait for every
    # pre-training run of its rank).
    for rank, pseed in enumerate(setup["pretraining_seeds"]):
        for t, task in enumerate(tasks):
            for fseed in fseeds:
                for rate in _rates(setup, fseed, pseed):
                    key = finetuning_key(
                        task, encoder_name("none", pseed, 0), fseed, rate
                    )
                    order = (t, rank, 0, False, -1, key)
                    units.append(Unit(key, None, order, _after(setup, key)))
    return units


def _rates(setup: dict, fseed: int, pseed: int) -> list:
    """The rates seed `fseed` of pre-training run `pseed`'s encoder runs at:
    each of the study's, only the chosen one, or (a study of one rate) the
    recipe's, None."""
    rates = setup.get("finetune_learning_rates") or [None]
    runs = setup.get("learning_rate_runs")
    sweeps = fseed in learning_rate_seeds(setup) and (not runs or pseed in runs)
    return rates if sweeps or None in rates else [CHOSEN]


def _after(setup: dict, key: str) -> tuple:
    chosen = finetuning_learning_rate(key) == CHOSEN
    return tuple(rate_units(setup, key)) if chosen else ()


def kept_steps(setup: dict, name: str, pseed: int) -> list[int]:
    """Every planned step on a curve seed, else only the last."""
    steps = setup["kept_steps"][name]
    # Studies begun before the flag kept curves on every seed.
    curves = setup.get("curve_pretraining_seeds", setup["pretraining_seeds"])
    return steps if pseed in curves else steps[-1:]


def ready_units(units: list[Unit], store: Store, running: set[str]) -> list[Unit]:
    ready = [
        u
        for u in units
        if u.key not in running and not store.busy(u.key) and to_run(u, units, store)
    ]
    return sorted(ready, key=lambda u: u.priority)


def to_run(unit: Unit, units: list[Unit], store: Store) -> bool:
    """Whether `unit` can run now and is needed: not done, the units it comes
    after recorded and its encoder kept, or a recorded pre-training run whose
    encoders are gone from disk while a unit needs them (rebuilt:
    `pretraining.pretrain_unit`)."""
    if not store.done(unit.key):
        if not all(store.done(key) for key in unit.after):
            return False
        return unit.needs is None or _kept(store, unit)
    return unit.key.startswith("pretrain.") and any(
        u.needs == unit.key and not store.done(u.key) and not _kept(store, u)
        for u in units
    )


def _kept(store: Store, unit: Unit) -> bool:
    _, encoder, _ = finetuning_key_parts(unit.key)
    return (store.directory.parent / "encoders" / encoder / "config.json").exists()
