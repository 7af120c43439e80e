"""A SQuAD 1.1 or 2.0 fine-tuning run: ELECTRA's recipe, official metrics, exports.

`run_question_answering` trains one `ElectraQuestionAnswerer` per seed with
`model.fit` on raw questions and contexts (the preprocessor cuts them into
windows inside `fit`), answers every dev question after each epoch, scores
the answers with the official SQuAD evaluation (`squad_metrics`), keeps each
seed's best epoch, and writes to `output_dir`:

* `metrics.json`: per seed and epoch, the best epoch, the median over seeds;
* `predictions.json` (official format; SQuAD 2.0: "" where the no-answer
  score exceeds the best-F1 threshold found on dev) and, for 2.0,
  `null_odds.json` (the no-answer scores, the official script's
  `--na-prob-file`);
* `logs/seed_<n>/`: TensorBoard event files;
* `saved_model/`: a raw-text SavedModel (`export.question_answerer`), with
  the dev-chosen no-answer threshold for 2.0, and `question_answerer.keras`.

The training questions are cut into windows once, before the first epoch
(the original writes them to TFRecords once); a training batch is
`batch_size` windows, as the original's batches of features, shuffled every
epoch with the seed.
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

from electra_tf.config import Config, ConfigError, ModelConfig, parse_hparams
from electra_tf.data.vocabulary import Vocabulary
from electra_tf.distribution import resolve_jit_compile
from electra_tf.export.question_answerer import export_question_answerer
from electra_tf.finetuning import squad_metrics
from electra_tf.finetuning.best_epoch import BestEpochSelection, explain_score
from electra_tf.finetuning.classification import make_optimizer, random_encoder
from electra_tf.finetuning.json_file import write_json
from electra_tf.finetuning.settings import (
    FinetuningFlags,
    check_demo_pretrained,
    check_output_dir,
    flag_overrides,
    parse_seeds,
    random_init_model,
    recipe_for_width,
    refuse_flags_that_do_not_apply,
    refuse_train_examples,
)
from electra_tf.finetuning.squad_data import (
    SquadDataError,
    SquadExample,
    golds,
    load_squad_split,
    write_null_odds_json,
    write_predictions_json,
)
from electra_tf.models.keras_hub_preset import preset_architecture
from electra_tf.models.question_answerer import ElectraQuestionAnswerer
from electra_tf.models.question_answerer_preprocessor import (
    ElectraQuestionAnswererPreprocessor,
)

# `finetune/run.py --task ...` names of the two SQuAD versions.
SQUAD_TASKS = {"squad1": 1, "squad2": 2}

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class QuestionAnsweringConfig(Config):
    """ELECTRA's SQuAD recipe (google-research/electra `configure_finetuning`)."""

    # Peak learning rate: small 3e-4, base 1e-4, large 5e-5 (as for GLUE).
    learning_rate: float = 1e-4
    # Layer-wise learning-rate decay: 0.8 (small, base), 0.9 (large).
    layerwise_decay: float = 0.8
    # The intended layer-wise decay (see `finetuning.layerwise_decay`).
    corrected_layerwise_decay: bool = False
    # Fraction of all training steps spent in linear warm-up.
    warmup_fraction: float = 0.1
    # Decoupled weight decay (LayerNorm weights and biases excluded).
    weight_decay: float = 0.01
    # Adam epsilon.
    adam_epsilon: float = 1e-6
    # Clip gradients to this global norm.
    clip_norm: float = 1.0
    # Passes over the training questions (ELECTRA: 2 for SQuAD).
    epochs: int = 2
    # Windows per update (the original's features).
    batch_size: int = 32
    # Questions per batch when answering.
    eval_batch_size: int = 32
    # Tokens per window (ELECTRA: 512 for base and large).
    max_seq_length: int = 512
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
    # Dropout inside the encoder while fine-tuning (the paper's 0.1, whatever
    # the pre-training used).
    encoder_dropout: float = 0.1
    # Compile train steps with XLA.
    jit_compile: bool = False

    def __post_init__(self):
        if self.learning_rate <= 0.0:
            raise ConfigError(f"learning_rate must be > 0, got {self.learning_rate}")
        for name in (
            "epochs",
            "batch_size",
            "eval_batch_size",
            "max_seq_length",
            "doc_stride",
            "max_answer_length",
            "beam_size",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        self._check_fractions("encoder_dropout")
        if self.max_seq_length - self.max_query_length - 3 < 1:
            raise ConfigError(
                f"max_seq_length {self.max_seq_length} leaves no room for context "
                f"after max_query_length {self.max_query_length}"
            )


def build_question_answerer(
    version: int,
    config: QuestionAnsweringConfig,
    pretrained: str | None = None,
    model_config: ModelConfig | None = None,
    vocabulary: Vocabulary | None = None,
) -> ElectraQuestionAnswerer:
    """A question answerer (with the no-answer head for SQuAD 2.0), from a
    keras-hub preset or randomly initialised (then `model_config` and the
    WordPiece `vocabulary`, with its casing, are needed)."""
    head = dict(
        answerable=version == 2,
        head_hidden_dim=config.head_hidden_dim,
        beam_size=config.beam_size,
        max_answer_length=config.max_answer_length,
        answerable_weight=config.answerable_weight,
    )
    lengths = dict(
        sequence_length=config.max_seq_length,
        max_query_length=config.max_query_length,
        doc_stride=config.doc_stride,
    )
    if pretrained is not None:
        return ElectraQuestionAnswerer.from_preset(
            pretrained, encoder_dropout=config.encoder_dropout, **lengths, **head
        )
    encoder, tokenizer = random_encoder(
        model_config, vocabulary, "model", config.encoder_dropout
    )
    return ElectraQuestionAnswerer(
        backbone=encoder,
        preprocessor=ElectraQuestionAnswererPreprocessor(tokenizer, **lengths),
        **head,
    )


def _labels(examples: Sequence[SquadExample]) -> tuple[np.ndarray, np.ndarray]:
    answerable = [bool(e.answers) and not e.is_impossible for e in examples]
    starts = [e.answers[0][1] if ok else -1 for e, ok in zip(examples, answerable)]
    texts = [e.answers[0][0] if ok else "" for e, ok in zip(examples, answerable)]
    return np.array(starts, "int32"), np.array(texts, dtype=object)


def training_windows(
    preprocessor: ElectraQuestionAnswererPreprocessor,
    examples: Sequence[SquadExample],
    chunk_size: int = 256,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every window of every training question with its labels, as numpy
    `(x, y)` in the layout `ElectraQuestionAnswerer.fit` takes."""
    windows = tf.function(preprocessor.windows, reduce_retracing=True)
    starts, texts = _labels(examples)
    parts = []
    for begin in range(0, len(examples), chunk_size):
        end = begin + chunk_size
        w = windows(
            tf.constant([e.question for e in examples[begin:end]]),
            tf.constant([e.context for e in examples[begin:end]]),
            tf.constant(starts[begin:end]),
            tf.constant(texts[begin:end].astype(str)),
        )
        parts.append({k: v.numpy() for k, v in w.items()})
    w = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    x = {
        "token_ids": w["token_ids"],
        "segment_ids": w["segment_ids"],
        "padding_mask": w["padding_mask"],
        "start_positions": w["start_positions"],
    }
    y = {
        "start_logits": w["start_positions"],
        "end_logits": w["end_positions"][:, None],
        "no_answer_logit": w["is_impossible"],
    }
    return x, y


def training_dataset(
    windows: tuple[dict[str, np.ndarray], dict[str, np.ndarray]],
    batch_size: int,
    seed: int,
) -> tf.data.Dataset:
    """Batches of `batch_size` windows, reshuffled every epoch with `seed`."""
    size = len(windows[0]["token_ids"])
    dataset = tf.data.Dataset.from_tensor_slices(windows)
    dataset = dataset.shuffle(size, seed=seed, reshuffle_each_iteration=True)
    return dataset.batch(batch_size)


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


def _score(version: int, results: dict) -> float:
    return results["f1"] if version == 1 else results["best_f1"]


def score_definition(version: int) -> str:
    """`_score` in words, for the log and `metrics.json`."""
    if version == 1:
        return "dev f1"
    return "dev best_f1 (F1 at the best no-answer threshold)"


class SquadEvaluation(BestEpochSelection):
    """Answers the dev questions after each epoch; restores the best epoch.

    The epoch with the best F1 (SQuAD 2.0: F1 at the best threshold) wins;
    its dev results go into the epoch's logs as `val_<metric>`.
    """

    def __init__(self, examples, version, batch_size):
        super().__init__()
        self.examples, self.version, self.batch_size = examples, version, batch_size

    def evaluate(self, logs):
        results, _, _ = evaluate_answers(
            self.model, self.examples, self.version, self.batch_size
        )
        logs.update({f"val_{k}": v for k, v in results.items()})
        return results, _score(self.version, results)


def finetune_seed(
    make_model: Callable[[], ElectraQuestionAnswerer],
    version: int,
    train: Sequence[SquadExample],
    dev: Sequence[SquadExample],
    config: QuestionAnsweringConfig,
    seed: int,
    log_dir: str | None = None,
    verbose: int | str = 2,
) -> tuple[ElectraQuestionAnswerer, dict]:
    """Fine-tunes one model with `seed`; returns it (best epoch) and its results."""
    keras.utils.set_random_seed(seed)
    model = make_model()
    # As the original: a question whose answer text is not at its
    # answer_start is not trained on (the readers warned about it).
    train = [e for e in train if e.is_impossible or e.answer_is_aligned]
    windows = training_windows(model.preprocessor, train)
    steps_per_epoch = math.ceil(len(windows[0]["token_ids"]) / config.batch_size)
    model.compile(
        optimizer=make_optimizer(
            config, model.backbone.num_layers, config.epochs * steps_per_epoch
        ),
        jit_compile=config.jit_compile,
    )
    evaluation = SquadEvaluation(dev, version, config.eval_batch_size)
    callbacks = [evaluation]
    if log_dir:
        callbacks.append(keras.callbacks.TensorBoard(log_dir))
    model.fit(
        training_dataset(windows, config.batch_size, seed),
        shuffle=False,  # the dataset shuffles itself, seeded
        epochs=config.epochs,
        callbacks=callbacks,
        verbose=verbose,
    )
    return model, evaluation.results(seed)


def run_question_answering(
    version: int,
    train: Sequence[SquadExample],
    dev: Sequence[SquadExample],
    make_model: Callable[[], ElectraQuestionAnswerer],
    config: QuestionAnsweringConfig,
    output_dir: str,
    seeds: Sequence[int] = (1,),
    run_info: dict | None = None,
    verbose: int | str = 2,
) -> dict:
    """Fine-tunes with every seed; predicts and exports with the best.

    Returns the contents of `metrics.json`.
    """
    if not seeds:
        raise ConfigError("at least one seed is needed")
    tf.io.gfile.makedirs(output_dir)
    summary = {
        "task": f"squad{version}",
        **(run_info or {}),
        "config": config.to_dict(),
        # Questions trained on, and those left out because their answer is
        # not at its answer_start (the readers warned about them).
        "train_questions": sum(e.is_impossible or e.answer_is_aligned for e in train),
        "train_questions_misaligned": sum(
            not (e.is_impossible or e.answer_is_aligned) for e in train
        ),
        "dev_questions": len(dev),
        "score_definition": score_definition(version),
        "seeds": {},
    }
    explain_score(summary["task"], summary["score_definition"])
    best_model, best_results = None, None
    for seed in seeds:
        model, results = finetune_seed(
            make_model,
            version,
            train,
            dev,
            config,
            seed,
            log_dir=os.path.join(output_dir, "logs", f"seed_{seed}"),
            verbose=verbose,
        )
        summary["seeds"][str(seed)] = results
        per_seed = list(summary["seeds"].values())
        summary["median"] = {
            "dev": {
                key: float(np.median([s["dev"][key] for s in per_seed]))
                for key in results["dev"]
            },
            "score": float(np.median([s["score"] for s in per_seed])),
        }
        if best_results is None or results["score"] > best_results["score"]:
            best_model, best_results = model, results
        write_json(os.path.join(output_dir, "metrics.json"), summary)

    summary["best_seed"] = best_results["seed"]
    results, spans, na = evaluate_answers(
        best_model, dev, version, config.eval_batch_size
    )
    threshold = None
    if version == 2:
        threshold = results["best_f1_thresh"]
        summary["na_threshold"] = threshold
        summary["null_odds"] = write_null_odds_json(
            os.path.join(output_dir, "null_odds.json"), na
        )
        spans = squad_metrics.apply_threshold(spans, na, threshold)
    summary["predictions"] = write_predictions_json(
        os.path.join(output_dir, "predictions.json"), spans
    )
    summary["saved_model"] = export_question_answerer(
        best_model, os.path.join(output_dir, "saved_model"), na_threshold=threshold
    )
    summary["keras_model"] = os.path.join(output_dir, "question_answerer.keras")
    best_model.save(summary["keras_model"])
    write_json(os.path.join(output_dir, "metrics.json"), summary)
    return summary


def recipe_for(hidden_dim: int) -> tuple[str, QuestionAnsweringConfig]:
    """The GLUE recipe's learning rate and layer-wise decay for the size
    closest to `hidden_dim` (the paper uses the same per size), with the
    SQuAD settings above."""
    size, recipe = recipe_for_width(hidden_dim)
    return size, QuestionAnsweringConfig(
        learning_rate=recipe.learning_rate, layerwise_decay=recipe.layerwise_decay
    )


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


def finetune_squad(
    version: int,
    data_dir: str | None = None,
    use_tfds: bool = False,
    pretrained: str | None = None,
    output_dir: str | None = None,
    seeds: Sequence[int] = (1,),
    overrides: dict | None = None,
    model_config: ModelConfig | None = None,
    vocabulary: Vocabulary | None = None,
    verbose: int | str = 2,
) -> tuple[str, dict]:
    """`finetune/run.py --task squad1|squad2`: reads the data, picks the recipe
    for the model's size, applies `overrides` (QuestionAnsweringConfig
    fields; unknown keys raise `ConfigError`) and runs
    `run_question_answering`. Returns the output directory and the summary.

    Data: `<data_dir>/train-v1.1.json` and `dev-v1.1.json` (or v2.0), or
    tensorflow-datasets' `squad/v1.1` (`v2.0`) with `use_tfds`.
    """
    if version not in (1, 2):
        raise ConfigError(f"SQuAD version must be 1 or 2, got {version}")
    if not data_dir and not use_tfds:
        raise SquadDataError(
            f"squad{version} needs --data-dir (holding train-v"
            f"{'1.1' if version == 1 else '2.0'}.json and dev-...) or --tfds"
        )
    train = load_squad_split(version, "train", data_dir, use_tfds=use_tfds)
    dev = load_squad_split(version, "dev", data_dir, use_tfds=use_tfds)
    if pretrained is None:
        if model_config is None or vocabulary is None:
            raise ValueError("a randomly initialised model needs a model config")
        hidden_dim = model_config.hidden_dim
        encoder_length = model_config.max_sequence_length
    else:
        architecture = preset_architecture(pretrained)
        hidden_dim = architecture["hidden_dim"]
        encoder_length = architecture["max_sequence_length"]
    size, config = recipe_for(hidden_dim)
    config = fit_to_encoder(config, encoder_length, overrides or {})
    logger.info("%s recipe for squad%d: %s", size, version, config.to_dict())

    def make_model():
        return build_question_answerer(
            version,
            config,
            pretrained,
            model_config=model_config,
            vocabulary=vocabulary,
        )

    output_dir = output_dir or os.path.join("runs", "finetune", f"squad{version}")
    summary = run_question_answering(
        version,
        train,
        dev,
        make_model,
        config,
        output_dir,
        seeds=seeds,
        run_info={
            "pretrained": pretrained or "none",
            "data": "tfds" if use_tfds else data_dir,
            "recipe": size,
        },
        verbose=verbose,
    )
    return output_dir, summary


def finetune_squad_from_flags(flags: FinetuningFlags) -> tuple[str, dict]:
    """`finetune/run.py --task squad1|squad2` with its flags: `--data-dir`
    (the official JSON files) or `--tfds`, `--pretrained` (or "none" with
    `--preset` and `--vocab`), `--seeds`, `--epochs`, `--batch-size` (windows),
    `--learning-rate`, `--layerwise-decay`, `--jit` and `--hparams` (fields of
    `QuestionAnsweringConfig`). Returns the output directory and the summary.
    """
    if flags.task not in SQUAD_TASKS:
        raise ConfigError(f"{flags.task} is not squad1 or squad2")
    refuse_train_examples(flags)
    refuse_flags_that_do_not_apply(flags, "squad")
    output_dir = flags.output_dir or os.path.join("runs", "finetune", flags.task)
    check_output_dir(output_dir, flags.overwrite)
    version = SQUAD_TASKS[flags.task]
    pretrained = None if flags.pretrained.lower() == "none" else flags.pretrained
    check_demo_pretrained(pretrained)
    model_config = vocabulary = None
    if pretrained is None:
        model_config, vocabulary = random_init_model(flags)
    overrides = flag_overrides(flags)
    # XLA on CPUs is measured to pay off for pre-training, not fine-tuning.
    overrides["jit_compile"] = resolve_jit_compile(flags.jit, on_cpu=False)
    overrides.update(parse_hparams(flags.hparams))
    return finetune_squad(
        version,
        data_dir=flags.data_dir,
        use_tfds=flags.tfds,
        pretrained=pretrained,
        output_dir=output_dir,
        seeds=parse_seeds(flags.seeds),
        overrides=overrides,
        model_config=model_config,
        vocabulary=vocabulary,
    )
