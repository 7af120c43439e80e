"""A benchmark's worker process: started as a module of this repository, driven
over its stdin/stdout one line at a time, its stderr kept for when it dies.

It runs as `python -P -m <module>` with the repository root first on
`PYTHONPATH`, so it imports this checkout's `bench` and `electra_tf` whatever
the current directory, and in the caller's directory, so relative paths keep
their meaning. A worker that dies is one `WorkerDied` error naming it, its exit
code and the end of its stderr, not a `BrokenPipeError`.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]


class WorkerDied(RuntimeError):
    """A worker process exited while its benchmark still talked to it."""


def worker_environment() -> dict:
    """This process's environment with the repository root first on PYTHONPATH."""
    environment = dict(os.environ)
    paths = [str(REPO)] + [
        path for path in environment.get("PYTHONPATH", "").split(os.pathsep) if path
    ]
    environment["PYTHONPATH"] = os.pathsep.join(paths)
    return environment


class WorkerProcess:
    """`python -P -m module *arguments` with pipes for stdin and stdout.

    Args:
        name: what the errors call it (an implementation's name).
        module: e.g. `"bench.suite.pretrain_throughput"`.
        arguments: its command-line arguments.
    """

    def __init__(self, name: str, module: str, arguments):
        self.name = name
        self.command = [sys.executable, "-P", "-m", module, *map(str, arguments)]
        # A file, not a pipe: nobody reads stderr while the worker runs, and a
        # full pipe would block it.
        self._stderr = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=worker_environment(),
        )

    def send(self, line: str) -> None:
        """Writes one line to the worker's stdin; `WorkerDied` if it is gone."""
        try:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):  # ValueError: stdin closed
            raise self.died() from None

    def receive(self) -> str:
        """The worker's next stdout line; `WorkerDied` at end of file."""
        line = self.process.stdout.readline()
        if not line:
            raise self.died()
        return line

    def stderr_tail(self, lines: int = 15) -> str:
        """The last `lines` lines the worker wrote to stderr."""
        self._stderr.flush()
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", errors="replace")
        return "\n".join(text.rstrip().splitlines()[-lines:])

    def died(self) -> WorkerDied:
        """The error for a worker that exited: exit code and its stderr's end."""
        code = self.process.wait()
        tail = self.stderr_tail()
        detail = (
            f"; the end of its stderr:\n{tail}" if tail else " with nothing on stderr"
        )
        return WorkerDied(f"the {self.name} worker died (exit code {code}){detail}")

    def ask(self, command: str) -> dict:
        """The worker's JSON answer to `{"command": command}`; `WorkerDied` if
        it died. Lines that are not JSON objects (libraries print) are skipped."""
        self.send(json.dumps({"command": command}))
        while True:
            line = self.receive()
            if line.startswith("{"):
                return json.loads(line)

    def stop(self, last_line: str | None = None) -> int:
        """Sends `last_line` (if it still runs), closes stdin, waits; exit code."""
        if self.process.poll() is None:
            try:
                if last_line is not None:
                    self.process.stdin.write(last_line + "\n")
                self.process.stdin.close()
            except BrokenPipeError:
                pass
        code = self.process.wait()
        self.process.stdout.close()
        self._stderr.close()
        return code
