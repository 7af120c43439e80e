"""`write_text_atomically`: the one way the library writes a whole file.

Every file a run or a command writes whole and may rewrite (`metrics.json`
after each seed, `stats.json`, `vocab.txt`, predictions, `electra-score`'s
output) goes through a temporary file renamed over the target once
complete, so that a reader, a killed run or a full disk never meets half a
file, and a previous file is kept until the new one is whole.
"""

from __future__ import annotations

import os

import tensorflow as tf

# A temporary file is named `.tmp-<pid>-<name>` beside its target: hidden and
# not matched by the target's pattern (`train-*`, `*.json`), so nothing takes a
# half-written file for a whole one; the pid keeps two processes writing the
# same file from writing into one temporary.
TEMPORARY_PREFIX = ".tmp-"

# What `tf.io.gfile` raises for a file it cannot write: `OSError` for some
# local failures, a `tf.errors.OpError` (NotFoundError, PermissionDeniedError,
# ...) for the rest and for every remote file system.
WRITE_ERRORS = (OSError, tf.errors.OpError)


def write_text_atomically(
    path, text: str, error: type[Exception] | None = None, *, create_folder=True
) -> str:
    """Writes `text` to `path` (any `tf.io.gfile` path) whole or not at all;
    returns `path`.

    The text goes to a temporary file beside `path` (`TEMPORARY_PREFIX`),
    renamed over `path` once complete. If anything fails the temporary file
    is removed and a previous file at `path` is left as it was.

    Args:
        error: an `ElectraError` subclass: a file system error (`WRITE_ERRORS`)
            is raised as `error("cannot write <path>: <what>")`. Without it
            the file system's own error propagates (a command line prints it
            as `error: <path>: <what>`).
        create_folder: create `path`'s folder first. A command writing where
            a user named (`electra-score --output`) passes False, so that a
            misspelt folder is an error rather than a new folder.
    """
    path = os.fspath(path)
    directory, name = os.path.split(path)
    temporary = os.path.join(directory, f"{TEMPORARY_PREFIX}{os.getpid()}-{name}")
    try:
        if directory and create_folder:
            tf.io.gfile.makedirs(directory)
        with tf.io.gfile.GFile(temporary, "w") as f:
            f.write(text)
        tf.io.gfile.rename(temporary, path, overwrite=True)
    except BaseException as problem:  # also an interrupt: no temporary left
        _remove_if_present(temporary)
        if not isinstance(problem, WRITE_ERRORS):
            raise
        # The user named `path`, not the temporary file: the message names it.
        reason = _reason(problem, temporary, path)
        if error is not None:
            raise error(f"cannot write {path}: {reason}") from problem
        if isinstance(problem, OSError):
            raise OSError(problem.errno, reason, path) from problem
        try:  # TensorFlow's error classes take (node_def, op, message)
            renamed = type(problem)(None, None, f"{path}; {reason}")
        except TypeError:
            raise problem from None
        raise renamed from problem
    return path


def _reason(problem: Exception, temporary: str, path: str) -> str:
    """What the file system said of `temporary`, without its name (the
    temporary's folder is `path`'s, so the rest of the message holds)."""
    if isinstance(problem, OSError) and problem.strerror:
        return problem.strerror
    text = getattr(problem, "message", None) or str(problem)
    for name in (temporary, os.path.basename(temporary)):
        text = text.replace(name + "; ", "").replace(name + ": ", "")
        text = text.replace(name, os.path.basename(path))
    return text.strip()


def _remove_if_present(path: str) -> None:
    """Removes `path` if it exists; a failure to (a folder that cannot be
    read) is ignored, so that the error that stopped the write is the one
    raised."""
    try:
        if tf.io.gfile.exists(path):
            tf.io.gfile.remove(path)
    except WRITE_ERRORS:
        pass
