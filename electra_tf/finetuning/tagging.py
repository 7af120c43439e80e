"""A tagging fine-tuning run: ELECTRA's recipe on CoNLL files, seeds, metrics, exports.

The tagging counterpart of `electra_tf.finetuning.classification.run_finetuning`,
with the same recipe (`FinetuningConfig`, `make_optimizer`), seeds and outputs:
`run_tagging` trains one `ElectraTokenClassifier` per seed with `model.fit`,
scores the dev file after every epoch (`TaggingEvaluation`: token accuracy,
and span precision/recall/F1 for BIO tag sets, over every word, long
sentences included), keeps each seed's best epoch and writes to
`output_dir`:

* `metrics.json`: per seed and epoch, the best epoch, the median over seeds;
* `logs/seed_<n>/`: TensorBoard event files (train and dev metrics);
* `predictions/test.conll`: the test file's words with predicted tags;
* `saved_model/` (raw text in, words, tags and offsets out;
  `electra_tf.export.token_classifier`) and `tagger.keras`, from the seed
  with the best dev score (span F1 for BIO tags, else token accuracy).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections.abc import Callable, Sequence

import keras
import numpy as np
import tensorflow as tf

from electra_tf.config import ConfigError, ModelConfig
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.export.token_classifier import export_token_classifier
from electra_tf.finetuning.best_epoch import BestEpochSelection, explain_score
from electra_tf.finetuning.classification import (
    make_optimizer,
    random_encoder,
    run_seeds,
)
from electra_tf.finetuning.json_file import write_json
from electra_tf.finetuning.settings import FinetuningConfig, settings_that_apply
from electra_tf.finetuning.tagging_data import (
    TFDS_TAGGING,
    TaggedSentences,
    TaggingDataError,
    check_tags,
    load_tfds_tagging,
    read_conll,
)
from electra_tf.finetuning.tagging_metrics import is_span_tag_set, tagging_scores
from electra_tf.models.token_classifier import ElectraTokenClassifier
from electra_tf.models.token_classifier_preprocessor import (
    ElectraTokenClassifierPreprocessor,
)

logger = logging.getLogger(__name__)

# ELECTRA's tagging recipe trains for 3 epochs, as GLUE.
DEFAULT_EPOCHS = 3


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


def load_tagging_data(
    train_file: str, dev_file: str, test_file: str | None = None
) -> TaggingData:
    """Reads CoNLL-layout splits; a dev tag the training file lacks is an error."""
    train = read_conll(train_file)
    dev = read_conll(dev_file)
    tags = tuple(sorted({tag for sentence in train.tags for tag in sentence}))
    if len(tags) < 2:
        raise TaggingDataError(f"{train_file}: one tag only ({tags[0]!r})")
    check_tags(dev, tags, train.source)
    test = read_conll(test_file, labelled=False) if test_file else None
    return TaggingData(tags=tags, train=train, dev=dev, test=test)


def load_tfds_tagging_data(
    name: str = TFDS_TAGGING, data_dir: str | None = None
) -> TaggingData:
    """The train, dev and test splits of a tfds tagging set (`load_tfds_tagging`;
    default CoNLL-2003 NER), its tags the dataset's tag names in id order. The
    test split is read unlabelled: its tags are predicted, as a test file's."""
    train, tags = load_tfds_tagging("train", name, data_dir=data_dir)
    dev, _ = load_tfds_tagging("dev", name, data_dir=data_dir)
    test, _ = load_tfds_tagging("test", name, data_dir=data_dir)
    check_tags(dev, tags, train.source)
    return TaggingData(
        tags=tags, train=train, dev=dev, test=dataclasses.replace(test, tags=None)
    )


def build_token_classifier(
    tags: Sequence[str],
    config: FinetuningConfig,
    pretrained: str | None = None,
    model_config: ModelConfig | None = None,
    vocabulary: Vocabulary | None = None,
) -> ElectraTokenClassifier:
    """A tagger: from a keras-hub preset, or randomly initialised with
    `model_config` and `vocabulary` (as `classification.build_classifier`)."""
    if pretrained is not None:
        tagger = ElectraTokenClassifier.from_preset(
            pretrained,
            tags=list(tags),
            sequence_length=config.max_seq_length,
            dropout=config.head_dropout,
            encoder_dropout=config.encoder_dropout,
        )
        tagger.backbone.reinitialize_top_layers(
            config.reinit_layers, ModelConfig.initializer_range
        )
        return tagger
    encoder, tokenizer = random_encoder(
        model_config, vocabulary, "tagger", config.encoder_dropout
    )
    return ElectraTokenClassifier(
        backbone=encoder,
        num_classes=len(tags),
        preprocessor=ElectraTokenClassifierPreprocessor(
            tokenizer, tags=list(tags), sequence_length=config.max_seq_length
        ),
        dropout=config.head_dropout,
    )


def tagging_score(scores: dict[str, float], span_tags: bool) -> float:
    """What selects epochs and seeds: span F1 for BIO tags, else accuracy."""
    return scores["f1"] if span_tags else scores["accuracy"]


def tagging_score_definition(span_tags: bool) -> str:
    """`tagging_score` in words, for the log and `metrics.json`."""
    return "dev span f1 (BIO tags)" if span_tags else "dev token accuracy"


class TaggingEvaluation(BestEpochSelection):
    """Tags the dev sentences after each epoch; restores the best epoch.

    Scores are computed on words (every word, whatever its sentence's
    length) and put into the epoch's logs as `val_<metric>`, so TensorBoard
    and `History` see them.
    """

    def __init__(
        self,
        dev: TaggedSentences,
        span_tags: bool,
        batch_size: int,
        patience: int = 0,
    ):
        super().__init__(patience)
        self.dev = dev
        self.span_tags = span_tags
        self.batch_size = batch_size

    def evaluate(self, logs):
        predicted = self.model.predict_tags(
            [list(w) for w in self.dev.words], batch_size=self.batch_size
        )
        scores = tagging_scores(self.dev.tags, predicted, self.span_tags)
        logs.update({f"val_{key}": value for key, value in scores.items()})
        return {"dev": scores}, tagging_score(scores, self.span_tags)


def finetune_tagger_seed(
    make_tagger: Callable[[], ElectraTokenClassifier],
    data: TaggingData,
    config: FinetuningConfig,
    seed: int,
    log_dir: str | None = None,
    verbose: int | str = 2,
) -> tuple[ElectraTokenClassifier, dict]:
    """Fine-tunes one tagger with `seed`; returns it (best epoch) and results."""
    keras.utils.set_random_seed(seed)
    tagger = make_tagger()
    epochs = config.epochs or DEFAULT_EPOCHS
    steps_per_epoch = math.ceil(len(data.train) / config.batch_size)
    tagger.compile(
        optimizer=make_optimizer(
            config, tagger.backbone.num_layers, epochs * steps_per_epoch
        ),
        jit_compile=config.jit_compile,
    )
    evaluation = TaggingEvaluation(
        data.dev,
        data.span_tags,
        config.eval_batch_size,
        patience=config.early_stopping_patience,
    )
    callbacks = [evaluation]
    if log_dir:
        callbacks.append(keras.callbacks.TensorBoard(log_dir))
    tagger.fit(
        data.train.to_dataset(
            config.batch_size,
            data.tag_ids,
            shuffle=True,
            seed=seed,
            group_by_length=config.group_by_length,
            max_words=config.max_seq_length,
        ),
        shuffle=False,  # the dataset shuffles itself, seeded
        epochs=epochs,
        callbacks=callbacks,
        verbose=verbose,
    )
    return tagger, evaluation.results(seed)


def write_conll_predictions(
    sentences: TaggedSentences, predicted: list[list[str]], path: str
) -> str:
    """`word<TAB>tag` lines, a blank line after each sentence."""
    tf.io.gfile.makedirs(os.path.dirname(path))
    lines = []
    for words, tags in zip(sentences.words, predicted):
        lines += [f"{w}\t{t}" for w, t in zip(words, tags)] + [""]
    with tf.io.gfile.GFile(path, "w") as f:
        f.write("\n".join(lines))
    return path


def run_tagging(
    data: TaggingData,
    make_tagger: Callable[[], ElectraTokenClassifier],
    config: FinetuningConfig,
    output_dir: str,
    seeds: Sequence[int] = (1,),
    run_info: dict | None = None,
    verbose: int | str = 2,
) -> dict:
    """Fine-tunes with every seed, then predicts and exports with the best.

    Returns:
        The contents of `metrics.json`.
    """
    if not seeds:
        raise ConfigError("at least one seed is needed")
    tf.io.gfile.makedirs(output_dir)
    summary = {
        "task": "tagging",
        **(run_info or {}),
        "config": settings_that_apply(config, tagging=True),
        "epochs": config.epochs or DEFAULT_EPOCHS,
        "tags": list(data.tags),
        "span_metrics": data.span_tags,
        "train_sentences": len(data.train),
        "score_definition": tagging_score_definition(data.span_tags),
        "seeds": {},
    }
    explain_score("tagging", summary["score_definition"])
    best_tagger = run_seeds(
        "tagging",
        seeds,
        lambda seed, log_dir: finetune_tagger_seed(
            make_tagger, data, config, seed, log_dir=log_dir, verbose=verbose
        ),
        output_dir,
        summary,
    )
    if data.test is not None:
        predicted = best_tagger.predict_tags(
            [list(w) for w in data.test.words], batch_size=config.eval_batch_size
        )
        summary["predictions"] = write_conll_predictions(
            data.test, predicted, os.path.join(output_dir, "predictions", "test.conll")
        )
    summary["saved_model"] = export_token_classifier(
        best_tagger, os.path.join(output_dir, "saved_model")
    )
    summary["keras_model"] = os.path.join(output_dir, "tagger.keras")
    best_tagger.save(summary["keras_model"])
    write_json(os.path.join(output_dir, "metrics.json"), summary)
    return summary


def median_accuracy(summary: dict) -> float:
    """The median over seeds of the best epochs' dev token accuracy."""
    return float(
        np.median([s["dev"]["dev"]["accuracy"] for s in summary["seeds"].values()])
    )
