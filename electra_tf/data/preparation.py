"""Data for pre-training, in one call each.

* `prepare_pretraining_data`: what a run needs: learn or load the vocabulary,
  build or reuse the TFRecords, check `stats.json`. `pretrain/run.py` and the
  benchmarks prepare their data with it.
* `build_corpus_data`: `pretrain/build_data.py`, TFRecords for later runs.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile

import tensorflow as tf

from electra_tf.config import ConfigError
from electra_tf.data.corpus import DEMO_CORPUS
from electra_tf.data.input_pipeline import (
    DataError,
    check_vocabulary_of_records,
    first_example,
    list_files,
    read_data_stats,
)
from electra_tf.data.tfds_corpus import TfdsCorpus, is_tfds_source
from electra_tf.data.tfrecord_format import STATS_FILE, VOCABULARY_FILE
from electra_tf.data.tfrecord_writer import (
    BuildError,
    build_pretraining_data,
    check_output_dir,
)
from electra_tf.data.vocabulary import (
    BUNDLED_VOCABULARY,
    DEMO_VOCABULARY,
    Vocabulary,
    learn_vocabulary,
)
from electra_tf.presets import DEMO_VOCABULARY_REQUEST

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class PretrainingData:
    """TFRecords ready for a run, and the vocabulary they were built with.

    Attributes:
        vocabulary: the run's `Vocabulary` (with its casing).
        train_data: TFRecord pattern(s) of the training data.
        eval_data: TFRecord pattern(s) of held-out data; "" for none.
        data_dir: the directory of the (first) training shards.
        max_seq_length: the run's sequence length, which the data have.
    """

    vocabulary: Vocabulary
    train_data: str
    eval_data: str
    data_dir: str
    max_seq_length: int


def prepare_pretraining_data(
    work_dir: str,
    max_seq_length: int | None,
    *,
    data: str | None = None,
    eval_data: str | None = None,
    corpus=(),
    vocab: str | None = None,
    learn_vocab_size: int = DEMO_VOCABULARY_REQUEST,
    lowercase: bool = True,
    eval_fraction: float = 0.05,
    **build,
) -> PretrainingData:
    """Existing TFRecords (`data`), or TFRecords built once under `work_dir/data`.

    With `data`: the vocabulary is `vocab` or the `vocab.txt` beside the shards,
    and held-out data are `eval_data` or the `eval-*` shards beside them, if any.
    Without: unless `work_dir/data/stats.json` shows an earlier build, the
    vocabulary is read from `vocab` or learned from `corpus` (`learn_vocab_size`
    tokens, written to `work_dir/vocab.txt`; with neither, the demo corpus, and
    for the default size and casing the shipped `DEMO_VOCABULARY` that
    learning would give) and `corpus` is built
    into `work_dir/data` by `build_corpus_data` (whole
    documents held out by `eval_fraction`; `build` holds its other arguments,
    e.g. `num_shards`, `num_processes`, `progress`). Either way the data's
    `stats.json`, when there is one, must match `max_seq_length` and the
    vocabulary; None takes the length of existing TFRecords from it.

    Raises:
        ConfigError: the data have another sequence length or vocabulary.
        DataError, VocabularyError, CorpusError, BuildError: as their names say.
    """
    vocab_path = vocab
    if data:
        files = _data_files(data)
        data_dir = os.path.dirname(files[0])
        train_data = data
        beside = os.path.join(data_dir, "eval-*")
        if not eval_data and tf.io.gfile.glob(beside):
            eval_data = beside
    else:
        data_dir = os.path.join(work_dir, "data")
        # The shipped result of learning exactly what would be learned here.
        if (
            not corpus
            and not vocab
            and learn_vocab_size == DEMO_VOCABULARY_REQUEST
            and lowercase
            and build.get("strip_accents", True)
        ):
            vocab = vocab_path = DEMO_VOCABULARY
        corpus = list(corpus) or [DEMO_CORPUS]
        if not tf.io.gfile.exists(os.path.join(data_dir, STATS_FILE)):
            if not vocab:
                logger.info(
                    "Learning a %d-token vocabulary from %s", learn_vocab_size, corpus
                )
            logger.info("Building TFRecords from %s into %s", corpus, data_dir)
            build_corpus_data(
                data_dir,
                inputs=corpus,
                vocab=vocab,
                learn_vocab_size=None if vocab else learn_vocab_size,
                learned_vocab_path=os.path.join(work_dir, VOCABULARY_FILE),
                lowercase=lowercase,
                max_seq_length=max_seq_length,
                eval_fraction=eval_fraction,
                overwrite=True,
                **build,
            )
        train_data = os.path.join(data_dir, "train-*")
        eval_data = eval_data or os.path.join(data_dir, "eval-*")
    # The run reads the vocabulary kept with its data (a copy of a learned one).
    vocabulary = Vocabulary.from_file(
        vocab_path or os.path.join(data_dir, VOCABULARY_FILE), lowercase
    )
    stats = read_data_stats(data_dir)
    if data:
        # Data built with another vocabulary, caught from the records
        # themselves (a stats.json may be missing; its md5 is checked below).
        check_vocabulary_of_records(files, vocabulary)
    if max_seq_length is None:
        if not stats or not data:
            raise ConfigError(f"give max_seq_length: {data_dir} has no {STATS_FILE}")
        max_seq_length = stats.get("max_seq_length")
    if stats:
        if not stats.get("eval_examples") and eval_data == os.path.join(
            data_dir, "eval-*"
        ):
            _warn_no_evaluation(data_dir, f"its {STATS_FILE} counts 0 eval_examples")
            eval_data = None
        if stats.get("max_seq_length") != max_seq_length:
            raise ConfigError(
                f"{data_dir} holds TFRecords of length {stats.get('max_seq_length')} "
                f"but the run's max_seq_length is {max_seq_length}"
            )
        if stats.get("vocabulary_md5") not in (None, vocabulary.md5()):
            raise ConfigError(
                f"{data_dir} was built with another vocabulary than {vocabulary.path}"
            )
    if data and not eval_data:
        _warn_no_evaluation(data_dir, "no eval-* shards beside the --data files")
    return PretrainingData(
        vocabulary=vocabulary,
        train_data=train_data,
        eval_data=eval_data or "",
        data_dir=data_dir,
        max_seq_length=max_seq_length,
    )


def _warn_no_evaluation(data_dir: str, why: str) -> None:
    """The one warning of a run that will have no held-out evaluation."""
    logger.warning(
        "%s has no held-out data (%s): this run trains and exports without a "
        "held-out evaluation and writes no eval_results.json; pass --eval-data, "
        "or rebuild the data from more documents or with a larger --eval-fraction",
        data_dir,
        why,
    )


def _data_files(data: str) -> list[str]:
    """The files of `--data`, which must be TFRecords (checked on the first
    record, before a vocabulary is looked for beside them).

    Raises:
        DataError: naming `--data`, what it expects and what it was given.
    """
    for pattern in data.split(","):
        if pattern.strip() and tf.io.gfile.isdir(pattern.strip()):
            raise DataError(
                f"--data {pattern.strip()} is a directory: --data takes TFRecord "
                "files as a pattern, e.g. "
                f"{os.path.join(pattern.strip(), 'train-*')}"
            )
    files = list_files(data)
    try:
        first_example(files)
    except DataError as error:
        raise DataError(
            f"--data takes TFRecords built by electra-build-data (raw text goes "
            f"to --corpus): {error}"
        ) from error
    return files


def build_corpus_data(
    output_dir: str,
    *,
    inputs=(),
    tfds_text_field: str | None = None,
    vocab: str | None = None,
    learn_vocab_size: int | None = None,
    learned_vocab_path: str | None = None,
    lowercase: bool = True,
    strip_accents: bool = True,
    num_shards: int = 8,
    num_eval_shards: int | None = None,
    num_hosts: int = 1,
    overwrite: bool = False,
    **build,
) -> dict:
    """`pretrain/build_data.py`: TFRecords from text files and/or tfds datasets.

    `inputs` are files, directories, globs or `tfds:<name>[/<config>][:<split>]`
    sources (see `tfds_corpus`), whose text is the feature `tfds_text_field`
    (None: inferred).

    The vocabulary is `vocab` (default: the bundled BERT uncased one) or, with
    `learn_vocab_size`, learned from the inputs and written to
    `learned_vocab_path` (default: a temporary file; the build keeps a copy
    beside the shards either way). Shard counts must split
    evenly over `num_hosts` (`num_eval_shards` defaults to `num_hosts`).
    `build` holds `build_pretraining_data`'s other arguments (`max_seq_length`,
    `eval_fraction`, `seed`, `num_processes`, `progress`). Returns its
    statistics.

    Raises:
        BuildError: bad counts, no input, or a file system error;
        CorpusError (also for an unusable tfds dataset), DataError,
        VocabularyError.
    """
    num_eval_shards = num_hosts if num_eval_shards is None else num_eval_shards
    if num_hosts < 1:
        raise BuildError(f"--num-hosts must be at least 1, got {num_hosts}")
    for flag, count in (
        ("--num-shards", num_shards),
        ("--num-eval-shards", num_eval_shards),
    ):
        if count % num_hosts:
            raise BuildError(
                f"{flag} {count} is not a multiple of --num-hosts {num_hosts}: "
                "hosts would read unequal shares"
            )
    try:
        # Fail before any slow step (downloading, learning a vocabulary).
        check_output_dir(output_dir, overwrite)
        inputs = list(inputs)
        if not inputs:
            raise BuildError("give at least one --input")
        if tfds_text_field is not None:
            if not any(map(is_tfds_source, inputs)):
                raise BuildError("--tfds-text-field is for tfds: inputs; none given")
            inputs = [
                TfdsCorpus.parse(source, tfds_text_field)
                if isinstance(source, str) and is_tfds_source(source)
                else source
                for source in inputs
            ]
        # A learned vocabulary is written outside output_dir (until the build
        # copies it), which must stay empty until then.
        with tempfile.TemporaryDirectory(prefix="build_data-") as scratch:
            if learn_vocab_size is not None:
                vocabulary = learn_vocabulary(
                    inputs,
                    learn_vocab_size,
                    learned_vocab_path or os.path.join(scratch, VOCABULARY_FILE),
                    lowercase=lowercase,
                    strip_accents=strip_accents,
                )
            else:
                vocabulary = Vocabulary.from_file(
                    vocab or BUNDLED_VOCABULARY, lowercase
                )
            return build_pretraining_data(
                inputs,
                vocabulary,
                output_dir,
                num_shards=num_shards,
                num_eval_shards=num_eval_shards,
                lowercase=lowercase,
                strip_accents=strip_accents,
                overwrite=overwrite,
                **build,
            )
    except (OSError, tf.errors.OpError) as error:  # e.g. permission denied
        message = getattr(error, "message", None) or str(error)
        raise BuildError(message) from error
