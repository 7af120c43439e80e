"""Span question answering (SQuAD 1.1 and 2.0, MRQA) as a task kind.

`QuestionAnsweringTask` fine-tunes an `ElectraQuestionAnswerer` on raw
questions and contexts with the original's recipe: contexts cut into windows of
`max_seq_length` tokens every `doc_stride`, its XLNet-style span head (and for
2.0 a no-answer classifier), 2 epochs. After every epoch it answers each dev
question and scores the answers with the official SQuAD evaluation
(`squad_metrics`): F1 (2.0: at the best no-answer threshold) selects the epoch.

`--task mrqa` is the same kind on the MRQA 2019 shared task's files
(`mrqa_data`: `--train-file`/`--dev-file`, or `--task mrqa/<config> --tfds`),
as SQuAD 1.1: every question answerable, scored by the MRQA official
evaluation, which is SQuAD v1.1's (`squad_metrics.evaluate_v1`).
The best seed writes:

* `predictions.json` (official format; SQuAD 2.0: "" where the no-answer
  score exceeds the best-F1 threshold found on dev) and, for 2.0,
  `null_odds.json` (the no-answer scores, the official script's
  `--na-prob-file`);
* `saved_model/`: a raw-text SavedModel (`export.question_answerer`), with
  the dev-chosen no-answer threshold for 2.0, and `question_answerer.keras`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from electra_tf.config import ConfigError, FinetuningConfig
from electra_tf.export.question_answerer import export_question_answerer
from electra_tf.finetuning import squad_metrics
from electra_tf.finetuning.mrqa_data import (
    TFDS_PREFIX,
    TFDS_TRAINING_CONFIGS,
    MrqaDataError,
    load_tfds_mrqa,
    read_mrqa_file,
)
from electra_tf.finetuning.settings import (
    CLASSIFICATION_FLAGS,
    FinetuningFlags,
    refuse_flags,
    refuse_unpaired_files,
)
from electra_tf.finetuning.squad_data import (
    SquadExample,
    golds,
    load_squad_split,
    write_null_odds_json,
    write_predictions_json,
)
from electra_tf.finetuning.starting_point import StartingPoint
from electra_tf.finetuning.task import CLASSIFICATION_ONLY, FinetuningTask
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.question_answerer_preprocessor import (
    ElectraQuestionAnswererPreprocessor,
)

# `finetune/run.py --task ...` names of the two SQuAD versions.
SQUAD_TASKS = {"squad1": 1, "squad2": 2}
# `--task mrqa` (own files) and `--task mrqa/<config>` (tensorflow-datasets).
MRQA_TASK = "mrqa"


@dataclasses.dataclass(frozen=True)
class QuestionAnsweringConfig(FinetuningConfig):
    """`FinetuningConfig` and the settings of span question answering
    (google-research/electra `configure_finetuning`). SQuAD's own values of
    the shared settings are `QuestionAnsweringTask.recipe_changes`."""

    # Question tokens kept.
    max_query_length: int = 64
    # Context tokens between window starts.
    doc_stride: int = 128
    # Longest answer, in tokens.
    max_answer_length: int = 30
    # Starts searched at prediction time.
    beam_size: int = 20
    # Width of the span head's hidden layers.
    head_hidden_dim: int = 512
    # Weight of the no-answer loss (SQuAD 2.0).
    answerable_weight: float = 0.5

    def __post_init__(self):
        super().__post_init__()
        self._check_positive("doc_stride", "max_answer_length", "beam_size")
        if self.max_seq_length - self.max_query_length - 3 < 1:
            raise ConfigError(
                f"max_seq_length {self.max_seq_length} leaves no room for context "
                f"after max_query_length {self.max_query_length}"
            )


@dataclasses.dataclass
class SquadData:
    """The splits of one run: SQuAD `version` (1 or 2; MRQA is 1), train and
    dev questions, and the run's name when it is not `squad<version>`."""

    version: int
    train: list[SquadExample]
    dev: list[SquadExample]
    name: str = ""
    # MRQA's `--test-file`: questions answered and scored once, by the best
    # seed's model.
    test: list[SquadExample] = dataclasses.field(default_factory=list)

    @property
    def trained_on(self) -> list[SquadExample]:
        """As the original: a question whose answer text is not at its
        answer_start is not trained on (the readers warned about it)."""
        return [e for e in self.train if e.is_impossible or e.answer_is_aligned]


class QuestionAnsweringTask(FinetuningTask):
    """SQuAD 1.1 or 2.0, or MRQA (`data`: a `SquadData`)."""

    names = (*SQUAD_TASKS, MRQA_TASK)
    config_class = QuestionAnsweringConfig
    # The paper's 512-token windows (`fit_recipe` fits them to a shorter
    # encoder); questions answered 32 at a time.
    recipe_changes = {"max_seq_length": 512, "eval_batch_size": 32}
    default_epochs = 2
    settings_not_read = {
        **CLASSIFICATION_ONLY,
        "head_dropout": "the span head has no dropout",
        "group_by_length": "every window is max_seq_length long",
        # Keras' binary cross-entropy of the [windows] no-answer logit is a
        # mean whatever its reduction, so a sum would not be the original's.
        "loss_reduction": "the span loss is the mean over the windows",
    }
    model_file = "question_answerer.keras"

    @classmethod
    def load_data(cls, flags: FinetuningFlags) -> tuple[SquadData, dict]:
        """SQuAD: `--data-dir` (the official JSON files) or `--tfds`; MRQA:
        `--train-file` and `--dev-file`, or `--task mrqa/<config> --tfds`."""
        if flags.task.lower().split("/")[0] == MRQA_TASK:
            return load_mrqa_data(flags)
        refuse_flags(
            flags,
            (*CLASSIFICATION_FLAGS, "train_file", "dev_file", "test_file"),
            f"--task {flags.task}, which reads --data-dir or --tfds",
        )
        version = SQUAD_TASKS[flags.task.lower()]
        data = load_squad_data(version, flags.data_dir, use_tfds=flags.tfds)
        return data, {"data": "tfds" if flags.tfds else flags.data_dir}

    @classmethod
    def fit_recipe(cls, recipe, changes, architecture):
        return fit_to_encoder(recipe, architecture["max_sequence_length"], changes)

    @property
    def name(self) -> str:
        return self.data.name or f"squad{self.data.version}"

    def score_definition(self) -> str:
        if self.data.name.startswith(MRQA_TASK):
            return "dev f1 (MRQA official: the max over each question's answers)"
        if self.data.version == 1:
            return "dev f1"
        return "dev best_f1 (F1 at the best no-answer threshold)"

    def facts(self) -> dict:
        # Questions trained on, and those left out (`SquadData.trained_on`).
        trained = len(self.data.trained_on)
        facts = {
            "train_questions": trained,
            "train_questions_misaligned": len(self.data.train) - trained,
            "dev_questions": len(self.data.dev),
        }
        if self.data.name.startswith(MRQA_TASK):
            # The header's (tfds: subset's) dataset names, e.g. "NewsQA".
            facts["train_dataset"] = self.data.train[0].title
            facts["dev_dataset"] = self.data.dev[0].title
        return facts

    def build_model(self) -> ElectraQuestionAnswerer:
        return build_question_answerer(
            self.data.version, self.config, self.starting_point
        )

    def compile_arguments(self) -> dict:
        # The model's "auto" loss, a mean (`settings_not_read`).
        return {}

    def training_examples(self, model):
        # Windows are all `max_seq_length` long: never grouped.
        return training_windows(model.preprocessor, self.data.trained_on), None

    def evaluate(self, model, logs):
        """Answers the dev questions; the official results go into `logs` as
        `val_<metric>`."""
        results, _, _ = evaluate_answers(
            model, self.data.dev, self.data.version, self.config.eval_batch_size
        )
        logs.update({f"val_{k}": v for k, v in results.items()})
        return results, results["f1" if self.data.version == 1 else "best_f1"]

    def write_outputs(self, model, output_dir):
        results, spans, na = evaluate_answers(
            model, self.data.dev, self.data.version, self.config.eval_batch_size
        )
        outputs = {}
        threshold = None
        if self.data.version == 2:
            threshold = results["best_f1_thresh"]
            outputs["na_threshold"] = threshold
            outputs["null_odds"] = write_null_odds_json(
                os.path.join(output_dir, "null_odds.json"), na
            )
            spans = squad_metrics.apply_threshold(spans, na, threshold)
        outputs["predictions"] = write_predictions_json(
            os.path.join(output_dir, "predictions.json"), spans
        )
        if self.data.test:
            outputs["test"], test_spans, _ = evaluate_answers(
                model, self.data.test, 1, self.config.eval_batch_size
            )
            outputs["test_predictions"] = write_predictions_json(
                os.path.join(output_dir, "test_predictions.json"), test_spans
            )
        outputs["saved_model"] = export_question_answerer(
            model, os.path.join(output_dir, "saved_model"), na_threshold=threshold
        )
        return outputs


def load_squad_data(
    version: int, data_dir: str | None = None, use_tfds: bool = False
) -> SquadData:
    """`<data_dir>/train-v1.1.json` and `dev-v1.1.json` (or v2.0), or
    tensorflow-datasets' `squad/v1.1` (`v2.0`) with `use_tfds`."""
    return SquadData(
        version,
        train=load_squad_split(version, "train", data_dir, use_tfds=use_tfds),
        dev=load_squad_split(version, "dev", data_dir, use_tfds=use_tfds),
    )


def load_mrqa_data(flags: FinetuningFlags) -> tuple[SquadData, dict]:
    """`--task mrqa --train-file ... --dev-file ...` (the official MRQA
    files) or `--task mrqa/<config> --tfds`, as SQuAD 1.1 data, and what
    `metrics.json` records of where it came from."""
    task = flags.task.lower()
    refuse_flags(
        flags,
        (*CLASSIFICATION_FLAGS, "data_dir"),
        f"--task {flags.task}, which reads --train-file and --dev-file (or "
        "--task mrqa/<config> --tfds)",
    )
    data, info = _mrqa_train_and_dev(flags, task)
    if flags.test_file:
        data.test = read_mrqa_test(flags.test_file)
        info["test_data"] = flags.test_file
    return data, info


def read_mrqa_test(source: str) -> list[SquadExample]:
    """`--test-file` of `--task mrqa`: an MRQA file, or `tfds:mrqa/<config>`
    (any config: the test split of those that have only one, the validation
    split of the others)."""
    if not source.startswith(TFDS_PREFIX):
        return read_mrqa_file(source, training=False)
    name = source.removeprefix(TFDS_PREFIX)
    dataset, _, config = name.partition("/")
    if dataset != "mrqa" or not config:
        raise MrqaDataError(
            f"--test-file {source}: tensorflow-datasets test files of --task mrqa "
            "are tfds:mrqa/<config>, e.g. tfds:mrqa/bio_asq"
        )
    return load_tfds_mrqa(config, "test")


def _mrqa_train_and_dev(flags: FinetuningFlags, task: str) -> tuple[SquadData, dict]:
    configs = ", ".join(f"mrqa/{c}" for c in TFDS_TRAINING_CONFIGS)
    if task != MRQA_TASK:
        config = task.split("/", 1)[1]
        if not flags.tfds:
            raise MrqaDataError(
                f"--task {flags.task} reads tensorflow-datasets: add --tfds (or use "
                "--task mrqa with --train-file and --dev-file)"
            )
        refuse_flags(
            flags,
            ("train_file", "dev_file"),
            f"--task {flags.task} --tfds (your own files: --task mrqa)",
        )
        data = SquadData(
            1,
            train=load_tfds_mrqa(config, "train"),
            dev=load_tfds_mrqa(config, "dev"),
            name=f"mrqa_{config}",
        )
        return data, {"data": f"tfds mrqa/{config}"}
    if flags.tfds:
        raise MrqaDataError(
            f"--task mrqa --tfds needs the dataset: --task mrqa/<config> --tfds, one "
            f"of {configs}"
        )
    refuse_unpaired_files(flags)
    if not flags.train_file:
        raise MrqaDataError(
            "--task mrqa needs --train-file and --dev-file (the official MRQA files, "
            f"e.g. NewsQA.jsonl.gz), or --task mrqa/<config> --tfds ({configs})"
        )
    data = SquadData(
        1,
        train=read_mrqa_file(flags.train_file, training=True),
        dev=read_mrqa_file(flags.dev_file, training=False),
        name=MRQA_TASK,
    )
    return data, {"data": flags.train_file, "dev_data": flags.dev_file}


def build_question_answerer(
    version: int, config: QuestionAnsweringConfig, start: StartingPoint
) -> ElectraQuestionAnswerer:
    """A question answerer (with the no-answer head for SQuAD 2.0) on
    `start`'s encoder (`StartingPoint.build`), its windows and head the
    config's."""
    return start.build(
        ElectraQuestionAnswerer,
        config,
        preprocessor_args={
            "max_query_length": config.max_query_length,
            "doc_stride": config.doc_stride,
        },
        answerable=version == 2,
        head_hidden_dim=config.head_hidden_dim,
        beam_size=config.beam_size,
        max_answer_length=config.max_answer_length,
        answerable_weight=config.answerable_weight,
    )


def training_windows(
    preprocessor: ElectraQuestionAnswererPreprocessor,
    examples: Sequence[SquadExample],
    chunk_size: int = 256,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every window of every training question with its labels, as numpy
    `(x, y)` in the layout `ElectraQuestionAnswerer.fit` takes: cut once per
    seed (the original writes them to TFRecords once), then batched as the
    original's features, `batch_size` windows a batch."""
    windows = tf.function(preprocessor.windows, reduce_retracing=True)
    # Each question's first answer, ("", -1) for an unanswerable one.
    answers = [
        e.answers[0] if e.answers and not e.is_impossible else ("", -1)
        for e in examples
    ]
    parts = []
    for begin in range(0, len(examples), chunk_size):
        chunk = slice(begin, begin + chunk_size)
        w = windows(
            tf.constant([e.question for e in examples[chunk]]),
            tf.constant([e.context for e in examples[chunk]]),
            tf.constant([start for _, start in answers[chunk]], tf.int32),
            tf.constant([text for text, _ in answers[chunk]]),
        )
        parts.append({k: v.numpy() for k, v in w.items()})
    w = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    inputs = ("token_ids", "segment_ids", "padding_mask", "start_positions")
    x = {name: w[name] for name in inputs}
    y = {
        "start_logits": w["start_positions"],
        "end_logits": w["end_positions"][:, None],
        "no_answer_logit": w["is_impossible"],
    }
    return x, y


def evaluate_answers(
    model: ElectraQuestionAnswerer,
    examples: Sequence[SquadExample],
    version: int,
    batch_size: int = 32,
) -> tuple[dict, dict[str, str], dict[str, float]]:
    """Answers every question and scores the answers officially.

    Returns `(results, predictions, no_answer_scores)`: the official
    metrics (v2: at threshold 0 of the no-answer logit, plus the best
    thresholds), the best span of each question, and (v2) its no-answer
    score.
    """
    answers = model.answer(
        [e.question for e in examples], [e.context for e in examples], batch_size
    )
    qids = [e.qid for e in examples]
    spans = dict(zip(qids, answers["text"].tolist()))
    gold = golds(examples)
    if version == 1:
        return squad_metrics.evaluate_v1(gold, spans), spans, {}
    na = dict(zip(qids, answers["no_answer_score"].astype(float).tolist()))
    return squad_metrics.evaluate_v2(gold, spans, na, na_threshold=0.0), spans, na


def fit_to_encoder(
    config: QuestionAnsweringConfig, encoder_length: int, overrides: dict
) -> QuestionAnsweringConfig:
    """The recipe with `overrides`, its windows fitted to the encoder.

    The paper's 512-token windows need an encoder of 512 positions. Unless
    set, `max_seq_length` is the encoder's length when that is shorter (the
    CPU demo's 128), and `max_query_length` at most half the window, so
    `--task squad2` runs on any export as is (a `doc_stride` longer than a
    window's context is already cut to it). A window longer than the encoder
    is one error naming the setting and the longest that fits.
    """
    fitted = {}
    if "max_seq_length" not in overrides:
        fitted["max_seq_length"] = min(config.max_seq_length, encoder_length)
    window = overrides.get("max_seq_length", fitted.get("max_seq_length"))
    if "max_query_length" not in overrides:
        fitted["max_query_length"] = min(config.max_query_length, window // 2)
    config = config.override(**fitted, **overrides)
    if config.max_seq_length > encoder_length:
        raise ConfigError(
            f"max_seq_length {config.max_seq_length} is longer than the encoder's "
            f"{encoder_length} positions; use --max-seq-length {encoder_length} "
            "or less"
        )
    return config
