"""Tagging (token classification) on CoNLL files as a task kind.

`TaggingTask` fine-tunes an `ElectraTokenClassifier` on sentences of words, one
tag each, and scores the dev file after every epoch on words (every word,
however long its sentence): token accuracy, and span precision/recall/F1 for
BIO tag sets, which select the epoch (else accuracy). The recipe is
classification's, without its classification-only settings. The best seed
writes `predictions/test.conll` (the test file's words with predicted tags),
`saved_model/` (raw text in; words, tags and offsets out;
`electra_tf.export.token_classifier`) and `tagger.keras`. A labelled test file
(a tag column, as CoNLL-2003's test split has) is also scored, once, with the
best seed's model, after dev chose its epoch and the seed: `metrics.json`'s
`test`.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from electra_tf.atomic_write import write_text_atomically
from electra_tf.config import ConfigError, FinetuningConfig
from electra_tf.export.token_classifier import export_token_classifier
from electra_tf.finetuning.settings import (
    CLASSIFICATION_FLAGS,
    DEMO_TAGGING,
    FinetuningFlags,
    refuse_flags,
    refuse_unpaired_files,
)
from electra_tf.finetuning.starting_point import StartingPoint
from electra_tf.finetuning.tagging_data import (
    TFDS_TAGGING,
    TaggedSentences,
    TaggingDataError,
    check_tags,
    load_tfds_tagging,
    read_conll,
)
from electra_tf.finetuning.tagging_metrics import is_span_tag_set, tagging_scores
from electra_tf.finetuning.task import CLASSIFICATION_ONLY, FinetuningTask
from electra_tf.models.token_classifier import ElectraTokenClassifier


@dataclasses.dataclass(frozen=True)
class TaggingConfig(FinetuningConfig):
    """`FinetuningConfig` and tagging's own setting."""

    # The segment of every window's tokens: 0 (as transformers' token
    # classification) or 1 (as the original ELECTRA's tagging inputs);
    # padding is 0 either way.
    segment_id: int = 0

    def __post_init__(self):
        super().__post_init__()
        if self.segment_id < 0:
            raise ConfigError(f"segment_id must be >= 0, got {self.segment_id}")


@dataclasses.dataclass
class TaggingData:
    """The splits of one run and the tag set (the training file's tags)."""

    tags: tuple[str, ...]
    train: TaggedSentences
    dev: TaggedSentences
    test: TaggedSentences | None = None

    @property
    def span_tags(self) -> bool:
        """Whether the tags are BIO/IOB tags (span metrics apply)."""
        return is_span_tag_set(self.tags)

    @property
    def tag_ids(self) -> dict[str, int]:
        return {tag: i for i, tag in enumerate(self.tags)}


class TaggingTask(FinetuningTask):
    """CoNLL tagging (`data`: a `TaggingData`)."""

    names = ("tagging",)
    config_class = TaggingConfig
    settings_not_read = CLASSIFICATION_ONLY
    model_file = "tagger.keras"

    @classmethod
    def load_data(cls, flags: FinetuningFlags) -> tuple[TaggingData, dict]:
        """`--train-file`, `--dev-file` and `--test-file` (CoNLL), or `--tfds`
        (CoNLL-2003 NER), or neither: the bundled Brown POS excerpt."""
        refuse_unpaired_files(flags)
        if flags.data_dir:
            raise ConfigError(
                "--task tagging reads CoNLL files (--train-file, --dev-file) or "
                f"--tfds ({TFDS_TAGGING}), not --data-dir"
            )
        if flags.tfds and (flags.train_file or flags.test_file):
            raise ConfigError("--task tagging: --tfds or your own files, choose one")
        refuse_flags(
            flags,
            CLASSIFICATION_FLAGS,
            "--task tagging (CoNLL files: the word first, its tag last)",
        )
        if flags.tfds:
            data = load_tfds_tagging_data()
        elif flags.train_file:
            data = load_tagging_data(flags.train_file, flags.dev_file, flags.test_file)
        else:  # the demo excerpt
            splits = ("train", "dev", "test")
            data = load_tagging_data(*(f"{DEMO_TAGGING}/{s}.conll" for s in splits))
        return data, {"data": data.train.source}

    @classmethod
    def fit_recipe(cls, recipe, changes, architecture):
        config = recipe.override(**changes)
        segments = architecture["num_segments"]
        if config.segment_id >= segments:
            raise ConfigError(
                f"segment_id is {config.segment_id}, but the encoder has "
                f"{segments} segments (0 to {segments - 1})"
            )
        return config

    def score_definition(self) -> str:
        return "dev span f1 (BIO tags)" if self.data.span_tags else "dev token accuracy"

    def facts(self) -> dict:
        return {
            "tags": list(self.data.tags),
            "span_metrics": self.data.span_tags,
            "train_sentences": len(self.data.train),
        }

    def build_model(self) -> ElectraTokenClassifier:
        return build_token_classifier(self.data.tags, self.config, self.starting_point)

    def training_examples(self, model):
        elements = self.data.train.elements(self.data.tag_ids)
        return elements, model.preprocessor.sequence_lengths(elements[0])

    def evaluate(self, model, logs):
        """Tags the dev sentences; scores go into `logs` as `val_<metric>`."""
        scores, score = self.score(model, self.data.dev)
        logs.update({f"val_{key}": value for key, value in scores.items()})
        return {"dev": scores}, score

    def score(self, model, sentences: TaggedSentences) -> tuple[dict, float]:
        """Tags labelled `sentences` (dev, or a test split after training):
        their metrics and the score (`score_definition`'s: span F1 for BIO
        tags, else token accuracy). Their tags must be the training file's
        (`check_tags`)."""
        predicted = model.predict_tags(sentences.words, self.config.eval_batch_size)
        scores = tagging_scores(sentences.tags, predicted, self.data.span_tags)
        return scores, scores["f1" if self.data.span_tags else "accuracy"]

    def write_outputs(self, model, output_dir):
        outputs = {}
        test = self.data.test
        if test is not None:
            path = os.path.join(output_dir, "predictions", "test.conll")
            predicted = model.predict_tags(test.words, self.config.eval_batch_size)
            outputs["predictions"] = write_conll_predictions(test, predicted, path)
            if test.tags is not None:
                outputs["test"] = tagging_scores(
                    test.tags, predicted, self.data.span_tags
                )
        outputs["saved_model"] = export_token_classifier(
            model, os.path.join(output_dir, "saved_model")
        )
        return outputs


def load_tagging_data(
    train_file: str, dev_file: str, test_file: str | None = None
) -> TaggingData:
    """Reads CoNLL-layout splits; a dev tag the training file lacks is an error,
    and so is one of a labelled test file (a file of words only is read
    unlabelled)."""
    train = read_conll(train_file)
    dev = read_conll(dev_file)
    tags = tuple(sorted({tag for sentence in train.tags for tag in sentence}))
    if len(tags) < 2:
        raise TaggingDataError(f"{train_file}: one tag only ({tags[0]!r})")
    check_tags(dev, tags, train.source)
    test = read_conll(test_file, labelled=None) if test_file else None
    if test is not None:
        check_tags(test, tags, train.source)
    return TaggingData(tags=tags, train=train, dev=dev, test=test)


def load_tfds_tagging_data() -> TaggingData:
    """The train, dev and test splits of CoNLL-2003 NER in tfds
    (`load_tfds_tagging`), its tags the dataset's tag names in id order. The
    test split is labelled: predicted, then scored (`metrics.json`'s `test`),
    as a labelled test file."""
    train, tags = load_tfds_tagging("train")
    dev, _ = load_tfds_tagging("dev")
    test, _ = load_tfds_tagging("test")
    check_tags(dev, tags, train.source)
    return TaggingData(tags=tags, train=train, dev=dev, test=test)


def build_token_classifier(
    tags: Sequence[str], config: TaggingConfig, start: StartingPoint
) -> ElectraTokenClassifier:
    """A tagger for `tags` on `start`'s encoder (`StartingPoint.build`), its
    head's dropout and its windows' segment the config's."""
    return start.build(
        ElectraTokenClassifier,
        config,
        preprocessor_args={"tags": list(tags), "segment_id": config.segment_id},
        dropout=config.head_dropout,
    )


def write_conll_predictions(
    sentences: TaggedSentences, predicted: list[list[str]], path: str
) -> str:
    """`word<TAB>tag` lines, a blank line after each sentence."""
    lines = []
    for words, tags in zip(sentences.words, predicted):
        lines += [f"{w}\t{t}" for w, t in zip(words, tags)] + [""]
    return write_text_atomically(path, "\n".join(lines))
