"""`finetune(flags)`: what `finetune/run.py` runs, every kind of task alike.

The flags are read once, here: `--task` chooses the task kind
(`TASK_KINDS`), which reads its data flags (`load_data`); `StartingPoint`
reads the model's, `settings.resolve_finetuning_config` the recipe's. The
task (data, config, starting point) then goes to `trainer.run_finetuning`,
which sees no flags.
"""

from __future__ import annotations

import logging
import os

from electra_tf.distribution import resolve_jit_compile
from electra_tf.finetuning.classification import ClassificationTask
from electra_tf.finetuning.files import check_output_dir
from electra_tf.finetuning.glue_tasks import GLUE_TASKS, UnknownTaskError, get_task
from electra_tf.finetuning.question_answering import QuestionAnsweringTask
from electra_tf.finetuning.settings import (
    FinetuningFlags,
    parse_seeds,
    resolve_finetuning_config,
)
from electra_tf.finetuning.starting_point import StartingPoint
from electra_tf.finetuning.tagging import TaggingTask
from electra_tf.finetuning.task import FinetuningTask
from electra_tf.finetuning.trainer import run_finetuning
from electra_tf.precision import (
    check_precision,
    detect_hardware,
    log_resolved,
    resolve_precision,
)

# The kinds `--task` chooses from, by their `names`; any other `--task` (a GLUE
# task), or none, is classification's.
TASK_KINDS: tuple[type[FinetuningTask], ...] = (TaggingTask, QuestionAnsweringTask)

logger = logging.getLogger(__name__)


def task_kind(task: str | None) -> type[FinetuningTask]:
    """The kind whose `names` hold `--task` (any case; of `name/config`, the
    name); else classification."""
    name = (task or "").lower().split("/")[0]
    for kind in TASK_KINDS:
        if name in kind.names:
            return kind
    if task:
        try:
            get_task(task)
        except UnknownTaskError:
            others = [name for kind in TASK_KINDS for name in kind.names]
            raise UnknownTaskError(
                f"unknown --task {task!r}; choose a GLUE task "
                f"({', '.join(GLUE_TASKS)}), {', '.join(others)}, or no --task "
                "for your own classification or regression --train-file"
            ) from None
    return ClassificationTask


def configured_task(
    kind: type[FinetuningTask], data, start: StartingPoint, flags: FinetuningFlags
) -> tuple[str, FinetuningTask]:
    """A `kind` task on `data` from `start`, its config resolved from `flags`
    (`settings.resolve_finetuning_config`) and logged; and the recipe's size."""
    hardware = detect_hardware()
    resolved = resolve_precision(
        flags.precision,
        flags.jit,
        hardware,
        # XLA on CPUs is measured to pay off for pre-training, not for
        # fine-tuning (float32).
        jit_when_float32=resolve_jit_compile("auto", on_cpu=False),
        width=start.architecture["hidden_dim"],
    )
    log_resolved(resolved, flags.precision, flags.jit, hardware)
    size, config = resolve_finetuning_config(
        flags,
        kind,
        start.architecture,
        jit_compile=resolved.jit_compile,
        precision=resolved.precision,
    )
    # `--hparams '{"precision": ...}'` is checked as the flag is.
    check_precision(config.precision, hardware)
    start.check_reinit_layers(config.reinit_layers)
    task = kind(data, config, start)
    logger.info("%s recipe for %s: %s", size, task.name, task.settings())
    return size, task


def finetune(flags: FinetuningFlags) -> tuple[str, dict]:
    """Runs `finetune/run.py` with `flags` (the data: the kind's `load_data`):
    returns the output directory and the run's summary (`metrics.json`).

    Raises `ElectraError` subclasses for everything a user can fix.
    """
    kind = task_kind(flags.task)
    seeds = parse_seeds(flags.seeds)
    data, data_info = kind.load_data(flags)
    start = StartingPoint.from_flags(flags)
    size, task = configured_task(kind, data, start, flags)
    output_dir = flags.output_dir or os.path.join("runs", "finetune", task.name)
    check_output_dir(output_dir, flags.overwrite)
    run_info = {"pretrained": start.name, **data_info, "recipe": size}
    return output_dir, run_finetuning(task, output_dir, seeds, run_info)
