"""The command lines (console scripts declared in pyproject.toml): each parses its
flags and calls one library function; `command_line` prints an `ElectraError` in
one line (exit status 2) instead of a traceback. A command's flags dataclass
(`FinetuningFlags`, `PretrainingFlags`) holds each flag's default, once: the
parsers set none of their own (`flags_from`).

A command imports nothing that imports TensorFlow until its flags have parsed:
`--help` and a bad flag answer at once (`electra_tf/__init__.py` leaves the
public API out while a command line is imported). Then `load_library`
imports TensorFlow and the library, hiding TensorFlow's start-up lines unless
`ELECTRA_TF_VERBOSE=1`."""

import argparse
import gc
import logging
import re
import sys

from electra_tf.cli.start import load_library  # noqa: F401  (the commands')
from electra_tf.errors import ElectraError


def command_line(parse_args):
    """Turns `run(args) -> int` into the command's `main(argv=None) -> int`.

    `main` parses the flags with `parse_args`, logs INFO to stderr, and catches
    every `ElectraError`, once, printing it on one line (exit status 2); an
    operating-system error (`OSError`, and TensorFlow's file-system errors) is
    printed the same way, as `error: <path>: <what is wrong>`: a file that
    cannot be read or written is the user's to fix, not a bug.
    """

    def decorate(run):
        def main(argv=None) -> int:
            args = parse_args(argv)
            logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
            try:
                return run(args)
            except ElectraError as error:
                message = f"error: {error.one_line()}"
            except OSError as error:
                message = f"error: {os_error_line(error)}"
            except Exception as error:
                line = file_system_error_line(error)
                if line is None:
                    raise  # a bug: its traceback
                message = f"error: {line}"
            # What the failed run left (e.g. a checkpoint restore that did not
            # match) logs warnings when it is collected: collect it now (the
            # error, which holds its frames, is gone), so that the one-line
            # message stays the last thing printed.
            gc.collect()
            print(message, file=sys.stderr)
            return 2

        main.__doc__ = run.__doc__
        return main

    return decorate


def os_error_line(error: OSError) -> str:
    """`<path>: <what>` for an operating-system error (a file that cannot be
    read or written, a directory where a file should be, ...)."""
    what = error.strerror or str(error)
    if error.filename is None:
        return what
    if error.filename2 is not None:
        return f"{error.filename} -> {error.filename2}: {what}"
    return f"{error.filename}: {what}"


def file_system_error_line(error: Exception) -> str | None:
    """The one-line message of TensorFlow's file-system errors (`tf.io.gfile`,
    checkpoints, TFRecord readers and writers: permission denied, not found, a
    directory where a file should be, or the reverse), which name the path;
    None for any other error.

    TensorFlow is not imported for this: if it was never imported, the error
    is not one of its.
    """
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return None
    errors = tf.errors
    if isinstance(
        error,
        (
            errors.PermissionDeniedError,
            errors.NotFoundError,
            errors.AlreadyExistsError,
        ),
    ) or (
        isinstance(error, errors.FailedPreconditionError)
        and _FILE_SYSTEM_WORDS.search(error.message)
    ):
        return _first_line(error.message)
    return None


# The phrases of an OS error inside a TensorFlow FailedPreconditionError
# (which is also raised for things that are not about files).
_FILE_SYSTEM_WORDS = re.compile(
    r"is a directory|not a directory|read-only file system|permission denied",
    re.IGNORECASE,
)


def _first_line(message: str) -> str:
    """TensorFlow's message without its graph and op details."""
    line = message.strip().splitlines()[0] if message.strip() else message
    return line.split(" [Op:")[0].strip()


def flags_from(flags_class, args: argparse.Namespace):
    """`flags_class`, a command's flags dataclass, from the parsed `args`: a
    flag not given (None) takes the dataclass's default; `--no-lowercase`
    sets `lowercase`."""
    given = {name: value for name, value in vars(args).items() if value is not None}
    given["lowercase"] = not given.pop("no_lowercase", False)
    return flags_class(**given)
