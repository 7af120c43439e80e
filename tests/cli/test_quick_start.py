"""The command lines start like a good tool's: `--help` and a bad flag answer
without importing TensorFlow (how long that takes is a benchmark,
`scripts/bench_help_time.py`, not a test), and a command that does import it
prints none of TensorFlow's C++ start-up lines unless `ELECTRA_TF_VERBOSE=1`.

Subprocesses, each with this checkout first on `sys.path`."""

import json
import os
import pathlib
import subprocess
import sys

from tests.helpers import SUBPROCESS_TIMEOUT

REPO = pathlib.Path(__file__).resolve().parents[2]
COMMANDS = [
    "build_data",
    "convert",
    "export_litert",
    "finetune",
    "finetune_demo",
    "pretrain",
    "score",
]
HEAVY = ("tensorflow", "keras", "keras_hub", "tensorflow_text")

# In a fresh interpreter: each command's main with `arguments`, then what
# was imported. SystemExit carries argparse's status (0 for --help).
PROBE = """
import contextlib, importlib, io, json, sys
statuses = {}
for name in %(commands)r:
    main = importlib.import_module("electra_tf.cli." + name).main
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(
        io.StringIO()
    ):
        try:
            statuses[name] = main(%(arguments)r)
        except SystemExit as exit:
            statuses[name] = exit.code
imported = [name for name in %(heavy)r if name in sys.modules]
print(json.dumps({"statuses": statuses, "imported": imported}))
"""


def _environment(**extra) -> dict:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("TF_CPP_MIN_LOG_LEVEL", "ELECTRA_TF_VERBOSE")
    }
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO), env.get("PYTHONPATH")])
    )
    env.update(extra)
    return env


def _run(arguments: list[str]) -> subprocess.CompletedProcess:
    """`python ARGUMENTS` from the repository root, TensorFlow's logging as a
    user's shell leaves it."""
    return subprocess.run(
        [sys.executable, *arguments],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_environment(),
        timeout=SUBPROCESS_TIMEOUT,
    )


def _probe(commands, arguments) -> dict:
    script = PROBE % dict(commands=commands, arguments=arguments, heavy=HEAVY)
    result = _run(["-c", script])
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.splitlines()[-1])


def test_help_and_bad_flags_answer_without_tensorflow():
    answered = _probe(COMMANDS, ["--help"])
    assert answered == {"statuses": dict.fromkeys(COMMANDS, 0), "imported": []}
    wrong = _probe(COMMANDS, ["--no-such-flag"])
    assert wrong == {"statuses": dict.fromkeys(COMMANDS, 2), "imported": []}
    # A flag's value checked by its flags dataclass, before the library loads.
    assert _probe(["pretrain"], ["--steps", "0"]) == {
        "statuses": {"pretrain": 2},
        "imported": [],
    }


def test_the_thin_scripts_are_the_command_lines():
    """`python pretrain/run.py --help` (the README's form) is the same parser."""
    result = _run(["pretrain/run.py", "--help"])
    assert result.returncode == 0 and "--objective" in result.stdout
    assert result.stderr == ""


def test_a_command_that_loads_tensorflow_starts_quietly(tmp_path):
    """No C++ start-up lines (CUDA stubs, cuInit, CPU features): the error
    is the only line on stderr."""
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("the cat sat\n")
    command = [
        "pretrain/score.py",
        "--model-dir",
        str(tmp_path / "no_run"),
        "--input",
        str(sentences),
        "--output",
        str(tmp_path / "scores.tsv"),
    ]
    result = _run(command)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: no sentence scorer in")
