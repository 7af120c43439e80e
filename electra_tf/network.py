"""Whether the network is reachable, asked once before a download.

tensorflow-datasets retries an unreachable download for minutes (210 s for a
GLUE task here) before its error. `check_reachable` opens one TCP connection
with a short timeout first, so an offline machine fails in seconds with a
line that says so. Only used where a download is about to start (a tfds
dataset not prepared on disk).
"""

from __future__ import annotations

import socket

from electra_tf.errors import ElectraError

# tfds keeps its prepared datasets and metadata on Google Cloud Storage.
TFDS_HOST = ("storage.googleapis.com", 443)


class NetworkUnreachableError(ElectraError, OSError):
    """A download is needed and the network cannot be reached."""


def unreachable_reason(host=TFDS_HOST, timeout: float = 3.0) -> str | None:
    """None if a TCP connection to `host` (name, port) opens within
    `timeout` seconds, else why not (one line)."""
    try:
        with socket.create_connection(host, timeout=timeout):
            return None
    except OSError as error:
        return f"{host[0]}:{host[1]}: {error or type(error).__name__}"


def check_reachable(what: str, host=TFDS_HOST, timeout: float = 3.0) -> None:
    """Raises `NetworkUnreachableError` ("`what` needs downloading, but the
    network is unreachable (...): offline?") unless `host` answers."""
    reason = unreachable_reason(host, timeout)
    if reason is not None:
        raise NetworkUnreachableError(
            f"{what} needs downloading, but the network is unreachable "
            f"({reason}): offline? Prepare it once on a machine that is online "
            "(tfds keeps it under its data_dir, ~/tensorflow_datasets by default)"
        )
