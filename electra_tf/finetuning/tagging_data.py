"""Tagged sentences from CoNLL-layout files, or from tensorflow-datasets.

One word per line, its tag in the last column, a blank line between
sentences. Columns are tab-separated if the line has a tab, else separated by
spaces, so both `word<TAB>tag` and CoNLL-2003's `word POS chunk NER` (tag:
NER, the last column) read; `-DOCSTART-` lines (CoNLL-2003's document
breaks) are skipped. Every line of a file must have the same number of
columns; a test file may have one column (words only, read unlabelled) or
a tag column (read labelled and scored). Problems raise
`TaggingDataError`, one line naming the file, the line and the value.
`load_tfds_tagging` reads a tfds tagging set instead (CoNLL-2003 NER).

Example:
>>> import pathlib, tempfile
>>> path = pathlib.Path(tempfile.mkdtemp()) / "train.conll"
>>> _ = path.write_text("-DOCSTART- -X- -X- O\\n\\nEU NNP B-NP B-ORG\\n"
...                     "rejects VBZ B-VP O\\n\\nPeter NNP B-NP B-PER\\n")
>>> sentences = read_conll(path)
>>> sentences.words, sentences.tags
((('EU', 'rejects'), ('Peter',)), (('B-ORG', 'O'), ('B-PER',)))
"""

from __future__ import annotations

import dataclasses
import os

import tensorflow as tf

from electra_tf.errors import FinetuningDataError
from electra_tf.finetuning.files import load_tfds, read_text

DOCUMENT_START = "-DOCSTART-"
# The tensorflow-datasets tagging set `--task tagging --tfds` reads: CoNLL-2003
# English NER (splits train, dev, test), its words and the feature of its tags.
TFDS_TAGGING = "conll2003"
TFDS_WORDS_FEATURE = "tokens"
TFDS_TAGS_FEATURE = "ner"


class TaggingDataError(FinetuningDataError):
    """A tagging file is missing, malformed or does not fit the task."""


@dataclasses.dataclass(frozen=True)
class TaggedSentences:
    """Sentences as words, with one tag per word (None: unlabelled)."""

    words: tuple[tuple[str, ...], ...]
    tags: tuple[tuple[str, ...], ...] | None
    # Where they came from, for messages.
    source: str = ""
    # The 1-based line of each sentence's first word.
    lines: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.words)

    def elements(self, tag_ids: dict[str, int] | None = None) -> tuple:
        """The sentences as in-memory tensors, one a row: words (tf.string
        [sentences, (words)]) and, with `tag_ids` and tags, their tag ids
        (int32 [sentences, (words)]), for `ElectraTokenClassifier.fit`."""
        words = tf.ragged.constant([list(w) for w in self.words], dtype=tf.string)
        if self.tags is None or tag_ids is None:
            return (words,)
        ids = [[tag_ids[tag] for tag in tags] for tags in self.tags]
        return words, tf.ragged.constant(ids, dtype=tf.int32)


def read_conll(path, labelled: bool | None = True) -> TaggedSentences:
    """Reads a CoNLL-layout file (see the module docstring).

    Args:
        path: the file.
        labelled: False for a file of words only (one column), or to ignore
            its tags; None: as the file is (labelled if its word lines have
            more than one column).
    """
    path = os.fspath(path)
    text = read_text(path, TaggingDataError)
    sentences, tag_lists, lines = [], [], []
    words, tags = [], []
    columns = None

    def close():
        if words:
            sentences.append(tuple(words))
            tag_lists.append(tuple(tags))
            words.clear()
            tags.clear()

    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("\t") if "\t" in line else line.split()
        if not line.strip() or fields[0] == DOCUMENT_START:
            close()
            continue
        if columns is None:
            columns = len(fields)
            if labelled is None:
                labelled = columns > 1
            if labelled and columns < 2:
                raise TaggingDataError(
                    f"{path}, line {number}: one column {line[:80]!r}; expected "
                    "a word and its tag (word<TAB>tag)"
                )
        elif len(fields) != columns:
            raise TaggingDataError(
                f"{path}, line {number}: {len(fields)} columns where the file's "
                f"first word line has {columns}: {line[:80]!r}"
            )
        if not fields[0].strip():
            raise TaggingDataError(
                f"{path}, line {number}: no word before the tab: {line[:80]!r}"
            )
        if labelled and not fields[-1].strip():
            raise TaggingDataError(
                f"{path}, line {number}: word {fields[0][:40]!r} has an empty tag"
            )
        if not words:
            lines.append(number)
        words.append(fields[0])
        tags.append(fields[-1])
    close()
    if not sentences:
        raise TaggingDataError(f"{path}: no sentences")
    return TaggedSentences(
        words=tuple(sentences),
        tags=tuple(tag_lists) if labelled else None,
        source=path,
        lines=tuple(lines),
    )


def check_tags(sentences: TaggedSentences, tags: tuple[str, ...], train_source: str):
    """Raises `TaggingDataError` at the first tag of `sentences` not in `tags`."""
    known = set(tags)
    for first_line, sentence_tags in zip(sentences.lines, sentences.tags or ()):
        for offset, tag in enumerate(sentence_tags):
            if tag not in known:
                raise TaggingDataError(
                    f"{sentences.source}, line {first_line + offset}: tag {tag!r} "
                    f"does not occur in the training file {train_source}"
                )


def load_tfds_tagging(
    split: str,
    name: str = TFDS_TAGGING,
    tags_feature: str = TFDS_TAGS_FEATURE,
) -> tuple[TaggedSentences, tuple[str, ...]]:
    """`split` of the tfds tagging set `name`, and its tag names in id order.

    tfds downloads and prepares it on first use (into its default
    `~/tensorflow_datasets`). Sentences that are only a `-DOCSTART-` line are
    skipped, as in CoNLL files.

    Raises:
        TaggingDataError: the dataset cannot be loaded, lacks the features, a
            sentence has not one tag per word, or the split has no sentences.
    """
    source = f"tfds {name}:{split}"
    records, info = load_tfds(name, split, None, TaggingDataError)
    if TFDS_WORDS_FEATURE not in info.features or tags_feature not in info.features:
        raise TaggingDataError(
            f"{source} has no features {TFDS_WORDS_FEATURE!r} and {tags_feature!r} "
            f"(it has {', '.join(sorted(info.features))})"
        )
    tag_names = tuple(info.features[tags_feature].feature.names)
    words, tags = [], []
    for example in records:
        sentence = tuple(word.decode("utf-8") for word in example[TFDS_WORDS_FEATURE])
        if not sentence or sentence == (DOCUMENT_START,):
            continue
        ids = example[tags_feature]
        if len(ids) != len(sentence):
            raise TaggingDataError(
                f"{source}, sentence {len(words) + 1}: {len(sentence)} words but "
                f"{len(ids)} tags"
            )
        words.append(sentence)
        tags.append(tuple(tag_names[i] for i in ids))
    if not words:
        raise TaggingDataError(f"{source}: no sentences")
    sentences = TaggedSentences(words=tuple(words), tags=tuple(tags), source=source)
    return sentences, tag_names
