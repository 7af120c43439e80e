"""`ElectraError`, the base of every error a user can cause; `CorpusError`,
`FinetuningDataError` and `ConversionError`.

Each module raises its own subclass (`ConfigError`, `VocabularyError`,
`DataError`, ...), named after what went wrong; a command line catches
`ElectraError` once and prints its message in one line, without a traceback.
Errors that are bugs (anything else) keep their traceback.
"""

from __future__ import annotations

from collections.abc import Sequence


class ElectraError(Exception):
    """Something the user can fix: a flag, a file, a checkpoint, a corpus."""

    def one_line(self) -> str:
        """The message on one line, for a command line's `error: ...`."""
        return str(self)


class CorpusError(ElectraError, ValueError):
    """A corpus path is missing, or a corpus is empty, binary or not UTF-8."""


class FinetuningDataError(ElectraError, ValueError):
    """A fine-tuning data file (or dataset) is missing, malformed or does not
    fit its task: the base of each reader's error (`GlueDataError`,
    `DataFileError`, `TaggingDataError`, `SquadDataError`)."""


class ConversionError(ElectraError, ValueError):
    """Weights that do not fit, raised by every checkpoint conversion.

    Every mismatched, missing or unexpected tensor is listed:
    `str(error)` is the message followed by one problem per line;
    `error.problems` holds the same lines and `error.one_line()` joins them
    for a command line's one-line error.

    Example:
    >>> error = ConversionError("checkpoint x does not fit", ["a: missing", "b: shape"])
    >>> print(error)
    checkpoint x does not fit (2 tensors):
      a: missing
      b: shape
    >>> error.one_line()
    'checkpoint x does not fit (2 tensors): a: missing; b: shape'
    """

    def __init__(self, message: str, problems: Sequence[str] = ()):
        self.message = message
        self.problems = list(problems)
        if self.problems:
            count = len(self.problems)
            header = f"{message} ({count} tensor{'s' if count > 1 else ''})"
            text = header + ":\n  " + "\n  ".join(self.problems)
        else:
            text = message
        super().__init__(text)

    def one_line(self) -> str:
        return "; ".join(line.strip() for line in str(self).splitlines()).replace(
            ":; ", ": ", 1
        )
