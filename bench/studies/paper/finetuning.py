"""One fine-tuning unit: a kept encoder (or a fresh one) fine-tuned on a task
with one seed, the epoch chosen on dev, then the test split scored once
(`select_on_dev_then_test`)."""

from __future__ import annotations

import dataclasses
import os.path
import pathlib
import time

from bench.studies.paper import design
from bench.studies.paper.units import (
    CHOSEN,
    chosen_rate,
    finetuning_key_parts,
    finetuning_learning_rate,
)


def select_on_dev_then_test(train_seed, score_test):
    """`train_seed()` returns the model at its best dev epoch and its results;
    only then does `score_test(model)` read the test split, so test data cannot
    take part in choosing the epoch."""
    model, results = train_seed()
    return {**results, "test": score_test(model)}


def finetune_unit(args, setup, key, data, store=None) -> dict:
    from electra_tf.distribution import resolve_jit_compile
    from electra_tf.presets import recipe_for_width

    task_name, encoder, fseed = finetuning_key_parts(key)
    task = design.TASKS[task_name]
    base = design.setup_configs(args, data)
    _, size_recipe = recipe_for_width(base["model"].hidden_dim)
    # The kind's own config class (tagging's segment_id), as the product's runs.
    recipe = _task_class(task.kind).recipe(size_recipe)
    # The product's choice (`--jit auto`): XLA on accelerators, graph mode on
    # a CPU. A unit's batches come in a dozen or more shapes, each an XLA
    # compilation in every new process: the recipe screen's fine-tuning units
    # on the bundled POS task took 257-441 s under XLA and 102-291 s in graph
    # mode (docs/research/recipe-study.md; the units record `jit_compile` and
    # their seconds).
    resolved = design.resolve_precision(
        setup, resolve_jit_compile("auto", on_cpu=False)
    )
    config = recipe.override(
        epochs=task.max_epochs,
        early_stopping_patience=task.patience,
        precision=resolved.precision,
        jit_compile=resolved.jit_compile,
    ).override(**design.as_json(args.finetune_hparams, "--finetune-hparams"))
    rate, chosen_from = finetuning_learning_rate(key), None
    if rate == CHOSEN:
        rate, chosen_from = chosen_rate(setup, key, store, task.metric)
    if rate is not None:
        config = config.override(learning_rate=rate)
    pretrained = None
    if not encoder.startswith("none-"):
        pretrained = str(pathlib.Path(args.out_dir) / "encoders" / encoder)
    # The no-pre-training runs draw their encoder from their own seed.
    seed = fseed if pretrained else 1000 * int(encoder.split("-p")[1]) + fseed
    where, started = setup["task_dirs"][task_name], time.perf_counter()
    if task.kind == "tagging":
        results = finetune_tagging(args, where, config, pretrained, base, data, seed)
    else:
        results = finetune_classification(where, config, pretrained, base, data, seed)
    return {
        "task": task_name,
        "encoder": encoder,
        "finetune_seed": fseed,
        "config": config.to_dict(),
        **({} if chosen_from is None else {"rate_chosen_from_dev": chosen_from}),
        "seconds": round(time.perf_counter() - started, 1),
        **results,
    }


def _task_class(kind: str):
    """The product's task class of a study task's kind."""
    from electra_tf.finetuning.classification import ClassificationTask
    from electra_tf.finetuning.tagging import TaggingTask

    return {"tagging": TaggingTask, "classification": ClassificationTask}[kind]


def _train(task_class, splits, config, pretrained, base, data, seed):
    from electra_tf.finetuning import trainer
    from electra_tf.finetuning.starting_point import StartingPoint

    start = StartingPoint(pretrained, base["model"], data["vocabulary"])
    task = task_class(splits, config, start)
    return task, lambda: trainer.finetune_seed(task, seed, verbose=0)


def finetune_tagging(args, directory, config, pretrained, base, data, seed) -> dict:
    from electra_tf.finetuning.tagging import TaggingTask, load_tagging_data
    from electra_tf.finetuning.tagging_data import read_conll

    def path(split):
        return os.path.join(directory, f"{split}.conll")

    splits = load_tagging_data(path("train"), path("dev"))
    if args.pos_train_sentences:
        train = sample_sentences(splits.train, args.pos_train_sentences)
        splits = dataclasses.replace(splits, train=train)
    task, train = _train(TaggingTask, splits, config, pretrained, base, data, seed)
    # The test split's metrics (`task.score`'s first part), read only now.
    return select_on_dev_then_test(
        train, lambda tagger: task.score(tagger, read_conll(path("test")))[0]
    )


def sample_sentences(sentences, count: int, seed: int = 0):
    """`count` of `sentences` drawn without replacement by a fixed seed, kept in
    file order: every run trains on the same ones, Brown's genres mixed as in
    the whole file."""
    import numpy as np

    if count > len(sentences):
        raise SystemExit(
            f"error: --pos-train-sentences {count} exceeds the {len(sentences)} "
            f"sentences of {sentences.source}"
        )
    chosen = np.sort(np.random.default_rng(seed).permutation(len(sentences))[:count])
    return dataclasses.replace(
        sentences,
        words=tuple(sentences.words[i] for i in chosen),
        tags=tuple(sentences.tags[i] for i in chosen),
        lines=tuple(sentences.lines[i] for i in chosen) if sentences.lines else (),
    )


def finetune_classification(directory, config, pretrained, base, data, seed) -> dict:
    from electra_tf.finetuning.classification import ClassificationTask
    from electra_tf.finetuning.glue_readers import TaskData, read_glue_tsv
    from electra_tf.finetuning.glue_tasks import get_task

    # The study's sentence tasks are in SST-2's layout, with labels in test.tsv.
    sst2 = dataclasses.replace(get_task("sst2"), test_splits=())
    train, dev = (read_glue_tsv(sst2, split, directory) for split in ("train", "dev"))
    splits = TaskData(train=train, dev={"dev": dev}, test={})
    _, train = _train(ClassificationTask, splits, config, pretrained, base, data, seed)

    def score_test(classifier):
        test = read_glue_tsv(sst2, "test", directory)
        batches = test.to_dataset(config.eval_batch_size)
        return classifier.evaluate(batches, verbose=0, return_dict=True)

    return select_on_dev_then_test(train, score_test)
