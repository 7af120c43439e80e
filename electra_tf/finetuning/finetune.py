"""`finetune(flags)`: what `finetune/run.py` runs, the task chosen from its flags.

A GLUE task (`classification.run_finetuning`), the user's own files (`custom_data`, then
the same run) or CoNLL tagging (`tagging.run_tagging`). It sits above those
modules, which share `run`'s recipe pieces, so none of them imports it.
(SQuAD has its own entry point, `question_answering.finetune_squad_from_flags`.)
"""

from __future__ import annotations

import dataclasses
import logging
import os

from electra_tf.config import ConfigError
from electra_tf.distribution import resolve_jit_compile
from electra_tf.finetuning.classification import (
    build_classifier,
    load_task_data,
    run_finetuning,
)
from electra_tf.finetuning.custom_data import load_custom_data
from electra_tf.finetuning.glue_readers import GlueExamples
from electra_tf.finetuning.glue_tasks import get_task
from electra_tf.finetuning.settings import (
    DEMO_DATA,
    DEMO_TAGGING,
    FinetuningFlags,
    check_demo_pretrained,
    check_output_dir,
    parse_seeds,
    random_init_model,
    refuse_flags_that_do_not_apply,
    refuse_train_examples,
    resolve_finetuning_config,
    settings_that_apply,
)
from electra_tf.finetuning.tagging import (
    build_token_classifier,
    load_tagging_data,
    load_tfds_tagging_data,
    run_tagging,
)
from electra_tf.finetuning.tagging_data import TFDS_TAGGING
from electra_tf.models.keras_hub_preset import preset_architecture

logger = logging.getLogger(__name__)


def finetune(flags: FinetuningFlags) -> tuple[str, dict]:
    """Runs `finetune/run.py` with `flags`: returns the output directory and the
    summary of the run (`run_finetuning`, or `run_tagging` for `--task tagging`).

    The data: a GLUE task (`--data-dir`, `--tfds`, or the demo excerpt as
    SST-2), the user's own files (`--train-file`, `--dev-file`; see
    `electra_tf.finetuning.custom_data`), or CoNLL files for `--task tagging`
    (`--tfds`: CoNLL-2003 NER from tensorflow-datasets; neither: the bundled
    Brown POS excerpt).

    Raises `ElectraError` subclasses for everything a user can fix.
    """
    tagging = (flags.task or "").lower() == "tagging"
    custom = bool(flags.train_file) and not tagging
    if custom and flags.task:
        raise ConfigError(
            f"--task {flags.task} reads GLUE data (--data-dir, --tfds); your own "
            "--train-file needs no --task (or --task tagging for CoNLL files)"
        )
    if (flags.train_file or flags.dev_file) and not (
        flags.train_file and flags.dev_file
    ):
        raise ConfigError("--train-file and --dev-file go together")
    if custom and (flags.data_dir or flags.tfds):
        raise ConfigError("--train-file and --data-dir/--tfds: choose one")
    if tagging and flags.data_dir:
        raise ConfigError(
            "--task tagging reads CoNLL files (--train-file, --dev-file) or "
            f"--tfds ({TFDS_TAGGING}), not --data-dir"
        )
    if tagging and flags.tfds and (flags.train_file or flags.test_file):
        raise ConfigError("--task tagging: --tfds or your own files, choose one")
    if tagging:
        refuse_train_examples(flags)
    refuse_flags_that_do_not_apply(
        flags, "tagging" if tagging else "custom" if custom else "glue"
    )
    seeds = parse_seeds(flags.seeds)
    task = tags = None
    if tagging and flags.tfds:
        data = load_tfds_tagging_data()
        tags, name, data_source = data.tags, "tagging", data.train.source
    elif tagging:
        test_file = flags.test_file
        if not flags.train_file:  # the demo excerpt
            test_file = os.path.join(DEMO_TAGGING, "test.conll")
        data = load_tagging_data(
            flags.train_file or os.path.join(DEMO_TAGGING, "train.conll"),
            flags.dev_file or os.path.join(DEMO_TAGGING, "dev.conll"),
            test_file,
        )
        tags, name, data_source = data.tags, "tagging", data.train.source
    elif custom:
        task, data = load_custom_data(
            flags.train_file,
            flags.dev_file,
            flags.test_file,
            text_columns=[c.strip() for c in (flags.text_columns or "text").split(",")],
            label_column=flags.label_column or "label",
            label_type=flags.label_type or "auto",
        )
        name, data_source = task.name, flags.train_file
    else:
        task = get_task(flags.task or "sst2")
        # Data: --data-dir, --tfds, or the demo excerpt (as SST-2).
        data_dir = flags.data_dir
        if not data_dir and not flags.tfds:
            if task.name != "sst2":
                raise ConfigError(
                    f"no --data-dir or --tfds for {task.name}: the built-in demo "
                    "data is for sst2 only"
                )
            data_dir = DEMO_DATA
        data = load_task_data(task, data_dir, use_tfds=flags.tfds)
        name, data_source = task.name, "tfds" if flags.tfds else data_dir
    if flags.train_examples is not None:  # not tagging: refused above
        data = dataclasses.replace(
            data, train=_draw(data.train, flags.train_examples, flags.sample_seed)
        )
    # Model: a pre-trained preset, or random initialisation.
    pretrained = None if flags.pretrained.lower() == "none" else flags.pretrained
    model_config = vocabulary = None
    if pretrained is None:
        model_config, vocabulary = random_init_model(flags)
        hidden_dim = model_config.hidden_dim
    else:
        check_demo_pretrained(pretrained)
        architecture = preset_architecture(pretrained)
        hidden_dim = architecture["hidden_dim"]
    # XLA on CPUs is measured to pay off for pre-training, not for fine-tuning.
    jit_compile = resolve_jit_compile(flags.jit, on_cpu=False)
    size, config = resolve_finetuning_config(flags, hidden_dim, jit_compile=jit_compile)
    if pretrained is not None and config.reinit_layers > architecture["num_layers"]:
        raise ConfigError(
            f"reinit_layers is {config.reinit_layers}, but {pretrained} has "
            f"{architecture['num_layers']} transformer layers"
        )
    logger.info(
        "%s recipe for %s: %s", size, name, settings_that_apply(config, tagging)
    )
    output_dir = flags.output_dir or os.path.join("runs", "finetune", name)
    check_output_dir(output_dir, flags.overwrite)
    run_info = {"pretrained": pretrained or "none", "data": data_source, "recipe": size}
    if flags.train_examples is not None:
        run_info["sample_seed"] = flags.sample_seed

    if tagging:

        def make_tagger():
            return build_token_classifier(
                tags,
                config,
                pretrained,
                model_config=model_config,
                vocabulary=vocabulary,
            )

        summary = run_tagging(
            data, make_tagger, config, output_dir, seeds=seeds, run_info=run_info
        )
        return output_dir, summary

    def make_classifier():
        return build_classifier(
            task,
            config,
            pretrained,
            model_config=model_config,
            vocabulary=vocabulary,
        )

    summary = run_finetuning(
        task,
        data,
        make_classifier,
        config,
        output_dir,
        seeds=seeds,
        run_info=run_info,
    )
    return output_dir, summary


def _draw(train: GlueExamples, count: int, seed: int) -> GlueExamples:
    """`--train-examples` of `train`, or `ConfigError` naming the flag."""
    if not 0 < count <= len(train):
        raise ConfigError(
            f"--train-examples must be between 1 and the {len(train)} training "
            f"examples of {train.source or train.task.name}, got {count}"
        )
    return train.sample(count, seed)
