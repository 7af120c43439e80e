"""Fine-tuning throughput and MFU: ours next to transformers, per task kind.

    python -m bench.suite.finetune_throughput --preset small \\
        --tasks classification,tagging,qa --implementations ours,transformers

Per task, each implementation trains a randomly initialised `--preset` encoder
(the bundled BERT vocabulary) with a task head on real text, in a resident
worker process of its own: `ours` is what fine-tuning builds (`model.fit`,
`ElectraAdam` with layer-wise decay and clipping, XLA as `--jit` resolves it;
`ours_xla` / `ours_graph` force it); `transformers` is
`ElectraFor{SequenceClassification,TokenClassification,QuestionAnswering}` of
the same size as a typical user trains it (`AdamW`, a linear schedule,
clipping, `BertTokenizerFast` in the loop). Tasks: `classification`
(rt_polarity as SST-2) and `tagging` (Brown POS, each word's first piece
labelled) from `--task-dir`; `qa` (SQuAD 1.1 windows of the repository's
fixture, repeated, made once before training on both sides).

`--padding max_length` (the default) pads every batch to `--max-seq-length` on
both sides, so the ratio is one of step speed and MFU is meaningful.
`--padding longest` runs both as a user wanting speed would: batches grouped
by length (`length_grouping`, Hugging Face's `LengthGroupedSampler` made in
tf.data), each cut to its longest (ours trimmed in `fit`, the peer's
`padding="longest"`); each side then counts the positions of the batches it
times and of one whole epoch, and the headline `epoch_examples_per_second` is
an epoch's examples at the timed positions per second (MFU not reported).

For classification and tagging both sides train the same examples in the same
batches in the same order (`shared_batches`, drawn once by the parent): the
peer's own sampler puts its longest batch first and each side would otherwise
time a different sample of lengths, and a step's cost per position grows with
its length. QA's windows are made by each side (their counts differ), so each
shuffles its own.

`--precision` (float32, mixed_bfloat16 or auto, as `electra_tf.precision`
resolves it) applies to every implementation, or per implementation with a
suffix (`ours@mixed_bfloat16`, `transformers@float32`); the peer's bf16 runs
under `torch.autocast("cpu", dtype=torch.bfloat16)`. `vs_transformers` is
against the plain `transformers` row, `vs_transformers_same_precision` against
the peer at the same precision.

Per core: every worker on one thread, pinned to `--core`, the workers taking
turns (`--warmup-steps`, then `--rounds` of `--steps` timed steps). Each round a
worker measures a one-thread matmul peak at its precision; MFU counts the
encoder's executed FLOPs (`electra_tf.pretraining.flops`) x 3, heads left out
(under 3% at `small`), per wall-clock second (`MFU`) and per CPU-second (`MFU
CPU`, which another job on the core does not distort) over that peak. Medians
over rounds; writes `--output` (JSON with the command, date and machine).
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import os
import pathlib
import re
import shutil
import statistics
import sys
import tempfile
import time

from bench.result_file import write_result
from bench.suite.pretrain_throughput import BENCH_PRECISIONS, peaks_by_precision
from bench.worker_process import WorkerDied, WorkerProcess

REPO = pathlib.Path(__file__).resolve().parents[2]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

TASKS = ("classification", "tagging", "qa")
IMPLEMENTATIONS = ("ours", "ours_xla", "ours_graph", "transformers")
PEER = "transformers"
PADDINGS = ("max_length", "longest")
BUNDLED = REPO / "electra_tf" / "assets" / "tasks"
VOCABULARY = REPO / "electra_tf" / "assets" / "vocab.txt"
SQUAD_FIXTURE = REPO / "tests" / "fixtures" / "squad"
# Times the SQuAD fixture's questions are repeated (its 16 training
# questions, ~2 windows each at length 128, would not fill one batch).
SQUAD_REPEATS = 8


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--preset", default="small", help="tiny, small, base, large")
    parser.add_argument(
        "--tasks", default=",".join(TASKS), help=f"Comma-separated, of {TASKS}."
    )
    parser.add_argument(
        "--implementations",
        default="ours,transformers",
        help=f"Comma-separated subset of {', '.join(IMPLEMENTATIONS)}.",
    )
    parser.add_argument(
        "--jit",
        default="auto",
        choices=("auto", "on", "off"),
        help="XLA for `ours`, resolved as fine-tuning's --jit is.",
    )
    parser.add_argument(
        "--precision",
        default="float32",
        choices=BENCH_PRECISIONS,
        help="Every implementation's precision unless its name has @<precision>.",
    )
    parser.add_argument(
        "--task-dir",
        default=str(BUNDLED),
        help="Directory holding rt_polarity/ (SST-2 layout) and brown_pos/ "
        "(CoNLL) (default: the bundled excerpts).",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument(
        "--padding",
        default="max_length",
        choices=PADDINGS,
        help="max_length: every batch at --max-seq-length on both sides; "
        "longest: batches grouped by length and cut to their longest.",
    )
    parser.add_argument(
        "--doc-stride", type=int, default=64, help="qa: tokens between windows."
    )
    parser.add_argument(
        "--warmup-steps", type=int, default=2, help="Untimed steps per worker first."
    )
    parser.add_argument(
        "--steps", type=int, default=4, help="Timed steps per worker per round."
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--core",
        type=int,
        default=None,
        help="The CPU every worker is pinned to (default: the last one this "
        "process may use; -1: no pinning).",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="After the rounds, trace --steps more steps of each of ours "
        "(tf.profiler) and record each op group's share of the op time.",
    )
    parser.add_argument(
        "--output", default="bench/results/finetune_throughput_vs_peer.json"
    )
    # Internal: the worker of one implementation and task.
    parser.add_argument("--worker", choices=IMPLEMENTATIONS, help=argparse.SUPPRESS)
    parser.add_argument("--task", choices=TASKS, help=argparse.SUPPRESS)
    parser.add_argument("--batches-file", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _data_dir(args, name):
    return pathlib.Path(args.task_dir) / name


def _model_config(preset: str, vocabulary, dropout: float):
    from electra_tf.presets import get_preset

    return get_preset(preset).model.override(
        vocabulary_size=vocabulary.size, dropout=dropout
    )


def _recipe(args, model_config):
    from electra_tf.presets import recipe_for_width

    _, recipe = recipe_for_width(model_config.hidden_dim)
    return recipe.override(
        batch_size=args.batch_size, max_seq_length=args.max_seq_length
    )


def _qa_config(args):
    from electra_tf.finetuning.question_answering import QuestionAnsweringConfig

    return QuestionAnsweringConfig(
        max_seq_length=args.max_seq_length,
        max_query_length=min(64, args.max_seq_length // 2),
        doc_stride=args.doc_stride,
        batch_size=args.batch_size,
    )


def padding_of(task: str, args) -> str:
    """The padding `task` runs with: QA's windows are packed to full length
    by construction (a context fills its window), so always max_length."""
    return "max_length" if task == "qa" else args.padding


def _index_batches(args, lengths, count: int, total: int) -> list[list[int]]:
    """The first `total` batches of indices into `count` examples, shuffled
    and (unless padding to max_length) sorted by `lengths` in runs, as
    fine-tuning batches its examples, epoch after epoch."""
    import numpy as np

    from electra_tf.finetuning import length_grouping

    grouped = args.padding != "max_length" and lengths is not None
    batches = length_grouping.batches(
        np.arange(count),
        args.batch_size,
        shuffle=True,
        seed=1,
        lengths=lengths if grouped else None,
    )
    return [b.tolist() for b in batches.repeat().take(total).as_numpy_iterator()]


def _batches_needed(args, count: int) -> int:
    """The run's steps, or one epoch if longer (its positions are counted)."""
    steps = args.warmup_steps + args.rounds * args.steps
    return max(steps, -(-count // args.batch_size))


def shared_batches(task: str, args, lengths=None) -> list[list[int]]:
    """The index batches both sides train for `task` (classification or
    tagging), grouped by the lengths our preprocessor packs (`lengths`, else
    a model is built to learn them)."""
    if lengths is None:
        lengths = _our_task(task, args)[3]
    count = len(lengths)
    return _index_batches(args, lengths, count, _batches_needed(args, count))


def _batches_for(task: str, args, lengths=None) -> list[list[int]]:
    """`--batches-file`'s batches (the parent's `shared_batches`), else drawn
    here (a trainer made outside a benchmark run)."""
    if args.batches_file:
        return json.loads(pathlib.Path(args.batches_file).read_text())
    return shared_batches(task, args, lengths)


def _our_task(task: str, args):
    """`(model, config, elements, lengths)`: `task`'s model as fine-tuning
    builds it from a random `--preset` encoder, its recipe, its training
    examples (tensors, one a row) and their packed lengths (None for QA)."""
    import keras

    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.finetuning.starting_point import StartingPoint

    vocabulary = Vocabulary.from_file(VOCABULARY)
    keras.utils.set_random_seed(1)
    if task == "qa":
        from electra_tf.finetuning.question_answering import (
            build_question_answerer,
            training_windows,
        )

        config = _qa_config(args)
        model_config = _model_config(args.preset, vocabulary, config.encoder_dropout)
        model = build_question_answerer(
            1, config, StartingPoint(None, model_config, vocabulary)
        )
        windows = training_windows(model.preprocessor, _squad_examples())
        return model, config, windows, None
    model_config = _model_config(args.preset, vocabulary, 0.1)
    config = _recipe(args, model_config)
    starting_point = StartingPoint(None, model_config, vocabulary)
    if task == "classification":
        from electra_tf.finetuning.classification import build_classifier
        from electra_tf.finetuning.glue_readers import read_glue_tsv
        from electra_tf.finetuning.glue_tasks import get_task

        glue_task = get_task("sst2")
        examples = read_glue_tsv(
            glue_task, "train", str(_data_dir(args, "rt_polarity"))
        )
        model = build_classifier(glue_task, config, starting_point)
        elements = examples.elements
    else:
        from electra_tf.finetuning.tagging import (
            TaggingConfig,
            build_token_classifier,
            load_tagging_data,
        )

        config = TaggingConfig(**config.to_dict())

        directory = _data_dir(args, "brown_pos")
        data = load_tagging_data(directory / "train.conll", directory / "dev.conll")
        model = build_token_classifier(data.tags, config, starting_point)
        elements = data.train.elements(data.tag_ids)
    return model, config, elements, model.preprocessor.sequence_lengths(elements[0])


def _squad_examples():
    from electra_tf.finetuning.squad_data import load_squad_split

    return load_squad_split(1, "train", str(SQUAD_FIXTURE)) * SQUAD_REPEATS


def split_name(name: str, precision: str) -> tuple[str, str]:
    """`ours@mixed_bfloat16` -> ("ours", "mixed_bfloat16"); without a suffix
    the implementation runs at `precision`."""
    implementation, _, own = name.partition("@")
    return implementation, own or precision


def resolved_for(name: str, args):
    """`electra_tf.precision.Resolved`: the precision and XLA choice of
    implementation `name` (`ours`: `--jit`, forced for `ours_xla` /
    `ours_graph`, resolved as fine-tuning resolves it on this machine)."""
    from bench.suite.pretrain_throughput import resolved_precision

    implementation, precision = split_name(name, args.precision)
    forced = {"ours_xla": "on", "ours_graph": "off"}
    jit = forced.get(implementation, args.jit)
    return resolved_precision(precision, jit, on_cpu=False)


# --- The two trainers --------------------------------------------------------
# `serve(commands, reply)`: for each command ("warmup": `--warmup-steps`
# steps, "steps": `--steps` steps) train that many steps, then
# `reply({"wall": seconds, "cpu": CPU seconds})`.


def _clock():
    return time.perf_counter(), time.process_time()


def _since(start):
    return {
        "wall": time.perf_counter() - start[0],
        "cpu": time.process_time() - start[1],
    }


class OurTrainer:
    """One task's model as fine-tuning builds it, trained with `model.fit`.

    One `fit` over the repeated dataset serves every command: a callback
    counts steps and, at each command's last, replies and waits for the next
    one, so the train function is traced (and compiled) once and no timed
    step pays for a new `fit` (a new iterator refilling the shuffle buffer
    costs up to ~2 s). The input pipeline may prefetch a few batches while
    the worker waits its turn; tokenising a batch takes ~10 ms here, against
    seconds for a step.
    """

    def __init__(self, task: str, args, jit_compile: bool, total_steps: int):
        import keras_hub
        import tensorflow as tf

        from electra_tf.finetuning.trainer import make_optimizer

        self.steps = {"warmup": args.warmup_steps, "steps": args.steps}
        self.steps["profile"] = args.steps
        model, config, elements, lengths = _our_task(task, args)
        count = int(tf.shape(tf.nest.flatten(elements)[0])[0])
        if task == "qa":
            index_batches = _index_batches(
                args, None, count, _batches_needed(args, count)
            )
        else:
            index_batches = _batches_for(task, args, lengths)
        if args.padding == "max_length" and task != "qa":
            # keras-hub's own: the preprocessor's packed length, untrimmed.
            model.preprocess_samples = functools.partial(
                keras_hub.models.Task.preprocess_samples, model
            )
        model.compile(
            optimizer=make_optimizer(config, model.backbone.num_layers, total_steps),
            jit_compile=jit_compile,
        )
        self.model = model
        self.index_batches = index_batches
        # Drawn here, so that the positions of the timed ones are known;
        # still tokenised and trimmed inside `fit`.
        elements = tf.nest.map_structure(
            lambda v: v if isinstance(v, tf.RaggedTensor) else tf.constant(v),
            elements,
        )
        self.batches = [
            tf.nest.map_structure(lambda v, i=indices: tf.gather(v, i), elements)
            for indices in index_batches
        ]
        self.epoch_batches = -(-count // args.batch_size)
        self.counts = [tuple(map(int, self._count(*b))) for b in self.batches]
        self.dataset = tf.data.Dataset.from_generator(
            lambda: iter(self.batches),
            output_signature=tf.data.Dataset.from_tensor_slices(elements)
            .batch(args.batch_size)
            .element_spec,
        )

    def _count(self, *batch):
        """A batch's (positions, real tokens) as `fit` trims it."""
        import keras
        import tensorflow as tf

        x, _, _ = keras.utils.unpack_x_y_sample_weight(
            self.model.preprocess_samples(*batch)
        )
        mask = x["padding_mask"]
        return tf.size(mask), tf.reduce_sum(tf.cast(mask, tf.int32))

    def positions(self) -> dict:
        """The positions an epoch's steps compute, as `fit` trims them."""
        return position_means(self.counts[: self.epoch_batches])

    def serve(self, commands, reply) -> None:
        import keras
        import tensorflow as tf

        commands = iter(commands)
        steps = self.steps
        counts = iter(self.counts)

        class Turns(keras.callbacks.Callback):
            def next_turn(self) -> bool:
                command = next(commands, None)
                if command is None:
                    self.model.stop_training = True
                    return False
                self.trace = tempfile.mkdtemp() if command == "profile" else None
                if self.trace:
                    tf.profiler.experimental.start(self.trace)
                self.taken, self.start = steps[command], _clock()
                self.left = self.taken
                return True

            def on_train_batch_end(self, batch, logs=None):
                self.left -= 1
                if self.left == 0:
                    timing = _since(self.start)
                    if self.trace:
                        tf.profiler.experimental.stop()
                        timing["op_time"] = op_time_shares(self.trace, self.taken)
                        shutil.rmtree(self.trace)
                    taken = [next(counts) for _ in range(self.taken)]
                    reply({**timing, **position_sums(taken)})
                    self.next_turn()

        turns = Turns()
        if turns.next_turn():
            self.model.fit(
                self.dataset,
                steps_per_epoch=10**9,
                epochs=1,
                callbacks=[turns],
                verbose=0,
            )


# A profile's op groups: the first whose pattern is in an op's "name:type".
OP_GROUPS = {
    "matmul": "matmul",
    "optimizer": "adam|optimizer|clip",
    "dropout": "dropout",
    "layer norm": "layer_?norm",
    "softmax": "softmax",
    "feed-forward activation": "gelu|erf|intermediate",
    "loss and metrics": "loss|crossentropy|metric|accuracy",
}
# Host events that wrap ops rather than being one.
WRAPPER = r"^[^:]*$|^(ExecutorState|KernelAndDevice)|:(StatefulPartitionedCall|Run)$"


def op_time_shares(trace_dir: str, steps: int) -> dict:
    """Per op group (`OP_GROUPS`, else "other"): its share of the traced
    steps' op time, ms and ops a step. Ops of the train function only (the
    executor's threads): the input pipeline's run on tf.data's threads."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    trace = sorted(pathlib.Path(trace_dir).rglob("*.xplane.pb"))[-1]
    space.ParseFromString(trace.read_bytes())
    time, ops = collections.Counter(), collections.Counter()
    for plane in (p for p in space.planes if p.name == "/host:CPU"):
        lines = (x for x in plane.lines if x.name.startswith("tf_Compute"))
        for event in (e for line in lines for e in line.events):
            name = plane.event_metadata[event.metadata_id].name
            if not re.search(WRAPPER, name):
                matches = (g for g, p in OP_GROUPS.items() if re.search(p, name, re.I))
                group = next(matches, "other")
                time[group] += event.duration_ps / 1e9
                ops[group] += 1
    total = sum(time.values())
    return {
        g: {"share": ms / total, "ms_per_step": ms / steps, "ops": ops[g] / steps}
        for g, ms in time.most_common()
    }


def bert_tokenizer(lowercase: bool = True):
    """transformers' fast BERT tokenizer over the bundled vocabulary."""
    from bench.hf_peer import bert_tokenizer as peer_tokenizer

    return peer_tokenizer(VOCABULARY, lowercase)


def squad_windows(tokenizer, examples, length: int, doc_stride: int) -> dict:
    """The peer's SQuAD windows (torch tensors) with start and end token labels,
    as transformers' `run_qa.py` prepares them (its `stride` is the overlap
    between windows)."""
    import torch

    encoded = tokenizer(
        [e.question for e in examples],
        [e.context for e in examples],
        truncation="only_second",
        max_length=length,
        stride=min(doc_stride, length // 4),
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        padding="max_length",
    )
    starts, ends = [], []
    for i, offsets in enumerate(encoded["offset_mapping"]):
        example = examples[encoded["overflow_to_sample_mapping"][i]]
        text, begin = example.answers[0]
        end = begin + len(text)
        sequence_ids = encoded.sequence_ids(i)
        context = [k for k, s in enumerate(sequence_ids) if s == 1]
        start_token = end_token = 0  # [CLS]: the answer is not in this window
        if (
            context
            and offsets[context[0]][0] <= begin
            and offsets[context[-1]][1] >= end
        ):
            start_token = next(k for k in context if offsets[k][1] > begin)
            end_token = max(k for k in context if offsets[k][0] < end)
        starts.append(start_token)
        ends.append(end_token)
    return {
        "input_ids": torch.tensor(encoded["input_ids"]),
        "token_type_ids": torch.tensor(encoded["token_type_ids"]),
        "attention_mask": torch.tensor(encoded["attention_mask"]),
        "start_positions": torch.tensor(starts),
        "end_positions": torch.tensor(ends),
    }


class PeerTrainer:
    """The same task on transformers and PyTorch, as a typical user writes it."""

    def __init__(self, task: str, args, total_steps: int):
        import numpy as np
        import torch
        import transformers

        self.precision = args.precision

        from bench.hf_peer import electra_configs
        from electra_tf.data.vocabulary import Vocabulary

        torch.manual_seed(1)
        self.steps = {"warmup": args.warmup_steps, "steps": args.steps}
        vocabulary = Vocabulary.from_file(VOCABULARY)
        model_config = _model_config(args.preset, vocabulary, 0.1)
        recipe = _recipe(args, model_config)
        _, config = electra_configs(
            model_config, vocabulary.size, model_config.max_sequence_length
        )
        self.tokenizer = bert_tokenizer(vocabulary.lowercase)
        self.length = args.max_seq_length
        self.batch_size = args.batch_size
        self.task = task
        if task == "classification":
            from electra_tf.finetuning.glue_readers import read_glue_tsv
            from electra_tf.finetuning.glue_tasks import get_task

            examples = read_glue_tsv(
                get_task("sst2"), "train", str(_data_dir(args, "rt_polarity"))
            )
            self.texts = list(examples.texts[0])
            self.labels = np.asarray(examples.labels)
            config.num_labels = 2
            self.model = transformers.ElectraForSequenceClassification(config)
        elif task == "tagging":
            from electra_tf.finetuning.tagging import load_tagging_data

            directory = _data_dir(args, "brown_pos")
            data = load_tagging_data(directory / "train.conll", directory / "dev.conll")
            self.texts = [list(words) for words in data.train.words]
            self.labels = [
                [data.tag_ids[tag] for tag in tags] for tags in data.train.tags
            ]
            config.num_labels = len(data.tags)
            self.model = transformers.ElectraForTokenClassification(config)
        else:
            self.windows = squad_windows(
                self.tokenizer, _squad_examples(), self.length, args.doc_stride
            )
            self.model = transformers.ElectraForQuestionAnswering(config)
        self.count = len(self.windows["input_ids"]) if task == "qa" else len(self.texts)
        self.padding = padding_of(task, args)
        if task == "qa":
            order = np.random.default_rng(1).permutation(self.count)
            self.index_batches = [
                [
                    int(order[(k * self.batch_size + i) % self.count])
                    for i in range(self.batch_size)
                ]
                for k in range(_batches_needed(args, self.count))
            ]
        else:
            self.index_batches = _batches_for(task, args)
        self.position = 0
        self.optimizer = torch.optim.AdamW(
            self.model.parameters(),
            lr=recipe.learning_rate,
            weight_decay=recipe.weight_decay,
            eps=recipe.adam_epsilon,
        )
        self.schedule = transformers.get_linear_schedule_with_warmup(
            self.optimizer,
            int(recipe.warmup_fraction * total_steps),
            total_steps,
        )
        self.model.train()

    def _next_indices(self):
        indices = self.index_batches[self.position % len(self.index_batches)]
        self.position += 1
        return indices

    def _batch(self):
        import torch

        indices = self._next_indices()
        if self.task == "qa":
            return {name: value[indices] for name, value in self.windows.items()}
        texts = [self.texts[i] for i in indices]
        encoded = self.tokenizer(
            texts,
            is_split_into_words=self.task == "tagging",
            padding=self.padding,
            truncation=True,
            max_length=self.length,
            return_tensors="pt",
        )
        if self.task == "classification":
            labels = torch.tensor([int(self.labels[i]) for i in indices])
        else:  # the first piece of each word carries its tag
            labels = torch.full(encoded["input_ids"].shape, -100)
            for row, i in enumerate(indices):
                previous = None
                for position, word in enumerate(encoded.word_ids(row)):
                    if word is not None and word != previous:
                        labels[row, position] = self.labels[i][word]
                    previous = word
        return {**encoded, "labels": labels}

    def positions(self) -> dict:
        """The positions an epoch's steps compute, as `_batch` pads them."""
        position, self.position = self.position, 0
        counts = []
        for _ in range(-(-self.count // self.batch_size)):
            mask = self._batch()["attention_mask"]
            counts.append((mask.numel(), int(mask.sum())))
        self.position = position
        return position_means(counts)

    def _step(self) -> tuple[int, int]:
        import torch

        from bench.suite.pretrain_throughput import torch_autocast

        batch = self._batch()
        mask = batch["attention_mask"]
        with torch_autocast(self.precision):
            loss = self.model(**batch).loss
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.schedule.step()
        return mask.numel(), int(mask.sum())

    def serve(self, commands, reply) -> None:
        for command in commands:
            start = _clock()
            taken = [self._step() for _ in range(self.steps[command])]
            reply({**_since(start), **position_sums(taken)})


def position_sums(counts) -> dict:
    """Totals of (positions, real tokens) pairs."""
    counts = list(counts)
    return {
        "positions": sum(int(p) for p, _ in counts),
        "real": sum(int(r) for _, r in counts),
    }


def position_means(counts) -> dict:
    """Means over batches of (positions, real tokens) pairs."""
    counts = list(counts)
    sums = position_sums(counts)
    return {
        "positions_per_step": sums["positions"] / len(counts),
        "real_tokens_per_step": sums["real"] / len(counts),
        "padding_fraction": 1 - sums["real"] / sums["positions"],
        "batches_counted": len(counts),
    }


def make_trainer(implementation: str, task: str, args):
    """The trainer of `implementation` for `task`, on this process's threads."""
    total = args.warmup_steps + args.rounds * args.steps
    if implementation == PEER:
        return PeerTrainer(task, args, total)
    from electra_tf.distribution import set_precision

    resolved = resolved_for(implementation, args)
    set_precision(resolved.precision)
    return OurTrainer(task, args, resolved.jit_compile, total)


# --- Worker side ---------------------------------------------------------------


def _one_thread(implementation: str) -> None:
    if implementation == PEER:
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
    else:
        import tensorflow as tf

        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)


def _reply(message: dict) -> None:
    print(json.dumps(message), flush=True)


def worker(args) -> None:
    """Answers `peak`, `positions`, `warmup` and `steps` lines until `stop`
    or end of input."""
    from bench.suite.pretrain_throughput import tensorflow_peak, torch_peak

    if args.core is not None and args.core >= 0:
        os.sched_setaffinity(0, {args.core})  # before any library starts threads
    _one_thread(args.worker)
    trainer = make_trainer(args.worker, args.task, args)
    peak = functools.partial(
        torch_peak if args.worker == PEER else tensorflow_peak, args.precision
    )

    def commands():
        for line in sys.stdin:
            command = json.loads(line)["command"]
            if command == "stop":
                return
            if command == "peak":
                _reply(peak())
            elif command == "positions":
                _reply(trainer.positions())
            else:
                yield command

    trainer.serve(commands(), _reply)


# --- Parent side -----------------------------------------------------------------


class Worker:
    """One implementation training one task in its own process."""

    def __init__(self, name: str, task: str, args, batches_file=None):
        self.name = f"{name} ({task})"
        implementation, _ = split_name(name, args.precision)
        # The precision resolved here, so that the worker gets a concrete one.
        self.precision = resolved_for(name, args).precision
        arguments = ["--worker", implementation, "--task", task, "--jit", args.jit]
        arguments += ["--precision", self.precision]
        for flag in (
            "preset",
            "task_dir",
            "batch_size",
            "max_seq_length",
            "padding",
            "doc_stride",
            "warmup_steps",
            "steps",
            "rounds",
        ):
            arguments += [f"--{flag.replace('_', '-')}", getattr(args, flag)]
        if args.core is not None:
            arguments += ["--core", args.core]
        if batches_file:
            arguments += ["--batches-file", batches_file]
        self.process = WorkerProcess(
            self.name, "bench.suite.finetune_throughput", arguments
        )

    def ask(self, command: str) -> dict:
        """The worker's answer to `command`; `WorkerDied` if it died."""
        return self.process.ask(command)

    def stop(self) -> None:
        self.process.stop(json.dumps({"command": "stop"}))


def measure_task(task: str, names, args) -> dict:
    """Warm-up, then rounds in turn: per implementation its per-step times."""
    with tempfile.TemporaryDirectory() as directory:
        batches_file = None
        if task != "qa":
            batches_file = pathlib.Path(directory) / "batches.json"
            batches_file.write_text(json.dumps(shared_batches(task, args)))
        workers = {name: Worker(name, task, args, batches_file) for name in names}
        return _measure(task, workers, args)


def _measure(task: str, workers: dict, args) -> dict:
    names = list(workers)
    timings = {name: {"wall": [], "cpu": [], "positions": []} for name in names}
    peaks, warmup, positions = [], {}, {}
    try:
        for name, worker in workers.items():
            positions[name] = worker.ask("positions")
            warmup[name] = worker.ask("warmup")["wall"]
            print(f"{task}: {name} warm-up {warmup[name]:.0f} s", flush=True)
        for round_index in range(args.rounds):
            peaks.append(peaks_by_precision(workers))
            for name, worker in workers.items():
                timing = worker.ask("steps")
                for key in ("wall", "cpu", "positions"):
                    timings[name][key].append(timing[key] / args.steps)
            print(
                f"{task} round {round_index}: peak "
                + ", ".join(f"{n} {peaks[-1][n]['gflops']:.1f}" for n in names)
                + " GFLOP/s; s/step "
                + ", ".join(f"{n} {timings[n]['wall'][-1]:.2f}" for n in names),
                flush=True,
            )
        ours = [name for name in names if split_name(name, args.precision)[0] != PEER]
        profiles = {
            n: workers[n].ask("profile")["op_time"] for n in ours if args.profile
        }
    finally:
        for worker in workers.values():
            worker.stop()
    return {
        "profiles": profiles,
        "timings": timings,
        "precisions": {name: worker.precision for name, worker in workers.items()},
        "peaks": peaks,
        "warmup_seconds": warmup,
        "positions": positions,
    }


def summarise(measured: dict, flops_per_step: float | None, batch_size: int) -> dict:
    """Per implementation: medians of s/step, examples/s, MFU (None without
    `flops_per_step`: batches of varying length), positions per second of the
    timed steps, and the examples/s of a whole epoch at that speed (the
    epoch's positions per example); ratios vs peer."""
    peaks = measured["peaks"]
    rows = {}
    for name, timing in measured["timings"].items():
        wall, cpu = timing["wall"], timing["cpu"]
        own = [peak[name] for peak in peaks]
        rows[name] = {
            "precision": measured["precisions"][name],
            "seconds_per_step": statistics.median(wall),
            "cpu_seconds_per_step": statistics.median(cpu),
            "examples_per_second": batch_size / statistics.median(wall),
            "mfu": flops_per_step
            and statistics.median(
                flops_per_step / s / 1e9 / p["gflops"] for s, p in zip(wall, own)
            ),
            "mfu_per_cpu_second": flops_per_step
            and statistics.median(
                flops_per_step / s / 1e9 / p["gflops_per_cpu_second"]
                for s, p in zip(cpu, own)
            ),
            "warmup_seconds": measured["warmup_seconds"][name],
            "round_seconds_per_step": wall,
            "round_positions_per_step": timing["positions"],
            # The timed steps' positions a second: the step's speed, apart
            # from how long the timed batches happened to be.
            "positions_per_second": statistics.median(
                p / s for p, s in zip(timing["positions"], wall)
            ),
            "epoch": measured["positions"][name],
        }
        row = rows[name]
        row["epoch_examples_per_second"] = row["positions_per_second"] / (
            row["epoch"]["positions_per_step"] / batch_size
        )
    peer = rows.get(PEER)
    peers = {
        row["precision"]: row
        for name, row in rows.items()
        if name.partition("@")[0] == PEER
    }
    for row in rows.values():
        same = peers.get(row["precision"])
        for key in ("examples_per_second", "epoch_examples_per_second"):
            ratio = key.replace("examples_per_second", "vs_transformers")
            row[ratio] = row[key] / peer[key] if peer else None
            row[ratio + "_same_precision"] = row[key] / same[key] if same else None
    return rows


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    names = [n for n in args.implementations.split(",") if n]
    tasks = [t for t in args.tasks.split(",") if t]
    implementations = {split_name(name, args.precision) for name in names}
    unknown = {i for i, _ in implementations} - set(IMPLEMENTATIONS)
    unknown |= {p for _, p in implementations} - set(BENCH_PRECISIONS)
    unknown |= set(tasks) - set(TASKS)
    if unknown or not names or not tasks:
        sys.exit(
            f"error: unknown {sorted(unknown)} (tasks {TASKS}, "
            f"implementations {IMPLEMENTATIONS})"
        )
    if args.core is None:
        args.core = max(os.sched_getaffinity(0))

    from bench.run_info import run_info
    from electra_tf.data.vocabulary import Vocabulary
    from electra_tf.pretraining.flops import executed_encoder_training_flops

    vocabulary = Vocabulary.from_file(VOCABULARY)
    model_config = _model_config(args.preset, vocabulary, 0.1)
    flops = executed_encoder_training_flops(model_config, args.max_seq_length)
    report = {
        **run_info(__file__),
        "preset": args.preset,
        "batch_size": args.batch_size,
        "max_seq_length": args.max_seq_length,
        "padding": args.padding,
        "doc_stride": args.doc_stride,
        "warmup_steps": args.warmup_steps,
        "steps_per_round": args.steps,
        "rounds": args.rounds,
        "core": args.core,
        "threads_per_worker": 1,
        "ours_uses_xla": {
            name: resolved_for(name, args).jit_compile
            for name in names
            if split_name(name, args.precision)[0] != PEER
        },
        "precision": {name: resolved_for(name, args).precision for name in names},
        "gflop_per_sequence_executed": flops / 1e9,
        "load_average_1min": {"before": os.getloadavg()[0]},
        "tasks": {},
    }
    for task in tasks:
        try:
            measured = measure_task(task, names, args)
        except WorkerDied as error:  # the other tasks still run and report
            print(f"error: {task}: {error}", flush=True)
            report["tasks"][task] = {"error": str(error)}
            continue
        fixed = padding_of(task, args) == "max_length"
        rows = summarise(
            measured, args.batch_size * flops if fixed else None, args.batch_size
        )
        report["tasks"][task] = {
            "matmul_peak_per_round": measured["peaks"],
            "results": rows,
            "op_time": measured["profiles"],
        }
    report["load_average_1min"]["after"] = os.getloadavg()[0]

    print(
        f"\n{args.preset}, batch {args.batch_size}, length {args.max_seq_length}, "
        f"one thread on CPU {args.core}; {flops / 1e9:.2f} GFLOP/sequence executed"
    )
    print(
        f"{'task':<15} {'implementation':<13} {'s/step':>7} {'ex/s':>6} "
        f"{'vs HF':>6} {'MFU':>6} {'MFU CPU':>8} {'pos/s':>6} {'padding':>7} "
        f"{'epoch ex/s':>10} {'vs HF':>6}"
    )

    def times(ratio):
        return f"{ratio:5.2f}x" if ratio else f"{'-':>6}"

    for task, result in report["tasks"].items():
        for name, row in result.get("results", {}).items():
            print(
                f"{task:<15} {name:<13} {row['seconds_per_step']:7.2f} "
                f"{row['examples_per_second']:6.2f} {times(row['vs_transformers'])}"
                + (
                    f" {row['mfu']:6.1%} {row['mfu_per_cpu_second']:8.1%}"
                    if row["mfu"]
                    else f" {'-':>6} {'-':>8}"
                )
                + f" {row['positions_per_second']:6.0f}"
                f" {row['epoch']['padding_fraction']:7.1%}"
                f" {row['epoch_examples_per_second']:10.2f}"
                f" {times(row['epoch_vs_transformers'])}"
            )
    try:  # imported for their versions in the report
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        pass
    report.update({k: v for k, v in run_info(__file__).items() if k == "versions"})
    write_result(args.output, report)
    return 1 if any("error" in result for result in report["tasks"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
