"""A tensorflow-datasets text dataset as a pre-training corpus.

Wherever a corpus path is accepted (`build_data.py --input`, `run.py --corpus`),
`tfds:<name>[/<config>][:<split>]` names a tensorflow-datasets dataset instead:

    tfds:imdb_reviews/plain_text:unsupervised
    tfds:wikipedia/20230601.en:train
    tfds:lm1b                      (split: train)

One example is one document; the lines of its text are the document's
sentences, split and stripped as a corpus file's lines are. The text is the
dataset's one `Text` feature (or the one named `text` among several), unless
`text_field` names another. tfds downloads and prepares the dataset on first
use (into `$TFDS_DATA_DIR`, default `~/tensorflow_datasets`) and reads it in a
fixed order, so a build from it is deterministic.

>>> source = TfdsCorpus.parse("tfds:imdb_reviews/plain_text:unsupervised")
>>> source.name, source.split, source.text_field
('imdb_reviews/plain_text', 'unsupervised', None)
>>> str(TfdsCorpus.parse("tfds:lm1b", text_field="text"))
'tfds:lm1b:train (field text)'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from electra_tf.errors import CorpusError
from electra_tf.network import NetworkUnreachableError, check_reachable

PREFIX = "tfds:"
# The feature a dataset's text is read from when several are text.
_PREFERRED_FIELD = "text"


def is_tfds_source(source) -> bool:
    """Whether `source` names a tfds dataset (`tfds:...`) rather than a path."""
    return isinstance(source, TfdsCorpus) or (
        isinstance(source, str) and source.startswith(PREFIX)
    )


@dataclasses.dataclass(frozen=True)
class TfdsCorpus:
    """One split of a tensorflow-datasets dataset, read as a corpus.

    Attributes:
        name: the dataset, with its config if any (`wikipedia/20230601.en`).
        split: the split, e.g. `train`, or any tfds split expression
            (`train[:10%]`).
        text_field: the feature holding the text; None to infer it.
    """

    name: str
    split: str = "train"
    text_field: str | None = None

    @classmethod
    def parse(cls, spec: str, text_field: str | None = None) -> TfdsCorpus:
        """`tfds:<name>[/<config>][:<split>]` -> a `TfdsCorpus`.

        Raises:
            CorpusError: the spec names no dataset.
        """
        body = spec[len(PREFIX) :] if spec.startswith(PREFIX) else spec
        name, _, split = body.partition(":")
        if not name.strip() or (_ and not split.strip()):
            raise CorpusError(
                f"bad tfds corpus {spec!r}: write tfds:<name>[/<config>][:<split>], "
                "e.g. tfds:imdb_reviews/plain_text:unsupervised"
            )
        return cls(name.strip(), split.strip() or "train", text_field)

    def __str__(self) -> str:
        field = f" (field {self.text_field})" if self.text_field else ""
        return f"{PREFIX}{self.name}:{self.split}{field}"

    def iter_documents(self) -> Iterator[list[str]]:
        """Yields one document per example: its text's non-blank lines, stripped.

        Raises:
            CorpusError: the dataset is unknown, has no (or no single) text
                field, or cannot be downloaded, prepared or read.
        """
        # Imported here: loading tensorflow-datasets takes seconds, and only
        # tfds sources need it.
        import tensorflow_datasets as tfds

        try:
            builder = tfds.builder(self.name)
        except tfds.core.registered.DatasetNotFoundError as error:
            raise CorpusError(
                f"no tensorflow-datasets dataset {self.name!r} (from {self}); "
                "see https://www.tensorflow.org/datasets/catalog/overview"
            ) from error
        except Exception as error:  # e.g. an unknown config
            raise CorpusError(f"cannot open {self}: {_first_line(error)}") from error
        field = self.text_field or _infer_text_field(self, builder.info.features)
        if field not in builder.info.features:
            raise CorpusError(
                f"{self} has no feature {field!r} (it has "
                f"{', '.join(sorted(builder.info.features))})"
            )
        if not builder.is_prepared():
            try:
                check_reachable(f"tfds dataset {self.name} (from {self})")
            except NetworkUnreachableError as error:
                raise CorpusError(str(error)) from error
        try:
            builder.download_and_prepare()
            # No file shuffling: the same examples in the same order every time.
            dataset = builder.as_dataset(split=self.split, shuffle_files=False)
        except Exception as error:  # tfds raises many kinds (network, bad split)
            raise CorpusError(f"cannot read {self}: {_first_line(error)}") from error
        for example in tfds.as_numpy(dataset.map(lambda example: example[field])):
            if not isinstance(example, bytes):
                raise CorpusError(f"feature {field!r} of {self} is not one text")
            text = example.decode("utf-8", errors="replace")
            # The splitting of a corpus file's lines (corpus.iter_documents).
            document = [line.strip() for line in text.split("\n")]
            document = [line for line in document if line]
            if document:
                yield document


def _infer_text_field(source: TfdsCorpus, features) -> str:
    """The one top-level `Text` feature, or the one named `text` among several."""
    import tensorflow_datasets as tfds

    candidates = sorted(
        name
        for name, feature in features.items()
        if isinstance(feature, tfds.features.Text)
    )
    if len(candidates) == 1:
        return candidates[0]
    if _PREFERRED_FIELD in candidates:
        return _PREFERRED_FIELD
    if not candidates:
        raise CorpusError(
            f"{source} has no text feature (it has {', '.join(sorted(features))}); "
            "name one with --tfds-text-field"
        )
    raise CorpusError(
        f"{source} has several text features ({', '.join(candidates)}); "
        "choose one with --tfds-text-field"
    )


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
