"""The command lines (console scripts declared in pyproject.toml): each parses its
flags and calls one library function; `command_line` prints an `ElectraError` in
one line (exit status 2) instead of a traceback. A command's flags dataclass
(`FinetuningFlags`, `PretrainingFlags`) holds each flag's default, once: the
parsers set none of their own (`flags_from`)."""

import argparse
import gc
import logging
import sys

from electra_tf.errors import ElectraError


def command_line(parse_args):
    """Turns `run(args) -> int` into the command's `main(argv=None) -> int`.

    `main` parses the flags with `parse_args`, logs INFO to stderr, and catches
    every `ElectraError`, once, printing it on one line (exit status 2).
    """

    def decorate(run):
        def main(argv=None) -> int:
            args = parse_args(argv)
            logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
            try:
                return run(args)
            except ElectraError as error:
                message = f"error: {error.one_line()}"
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


def flags_from(flags_class, args: argparse.Namespace):
    """`flags_class`, a command's flags dataclass, from the parsed `args`: a
    flag not given (None) takes the dataclass's default; `--no-lowercase`
    sets `lowercase`."""
    given = {name: value for name, value in vars(args).items() if value is not None}
    given["lowercase"] = not given.pop("no_lowercase", False)
    return flags_class(**given)
