"""Every command of the README and docs/ runs as written: each shell line of
their code blocks that calls one of our command lines (`pretrain/run.py`,
`finetune/run.py`, ..., or its `electra-*` console script) is parsed by that
command line's own argparse parser, so a renamed or removed flag, a bad
choice or a missing required flag fails here. Shell lines that call
something else are listed in `NOT_OURS`, each with why it is not run here.
README's two set-up commands are checked against the files they use and
against `.ci/run`. Python blocks must at least compile.
"""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import pathlib
import re
import shlex
import tomllib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# Shell lines of the documents that do not call our command lines, by how
# they begin: why each is not exercised here.
NOT_OURS = {
    "python3.11 -m venv .venv": "README's set-up: test_the_set_up_commands_*",
    ".venv/bin/pip install -r requirements": "README's set-up: the same test",
    ".venv/bin/python -m pytest": "README command 2: the test suite this is in",
    "mkdir -p models/electra": "TensorFlow Serving's model directory: no Docker here",
    "cp -r runs/pretrain/export/saved_model": "the same",
    "docker run": "TensorFlow Serving: no Docker engine and no network here",
    "curl ": "a REST request to TensorFlow Serving: none runs here",
    "export TF_CONFIG=": "several hosts (docs/distribution.md): one host here",
}


def _console_scripts() -> dict[str, str]:
    """`electra-*` name -> module, from pyproject.toml, and each thin script
    (`pretrain/run.py`, ...) -> the module it imports `main` from."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    commands = {
        name: target.split(":")[0]
        for name, target in pyproject["project"]["scripts"].items()
    }
    for script in [*REPO.glob("pretrain/*.py"), *REPO.glob("finetune/*.py")]:
        found = re.search(
            r"from (electra_tf\.cli\.\w+) import main", script.read_text()
        )
        if found:
            commands[script.relative_to(REPO).as_posix()] = found.group(1)
    return commands


COMMANDS = _console_scripts()


def code_blocks(path: pathlib.Path) -> list[tuple[str, int, str]]:
    """(language, first line number, text) of each fenced block of `path`."""
    blocks, language, start, lines = [], None, 0, []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"^\s*```(\w*)", line)
        if fence and language is None:
            language, start, lines = fence.group(1) or "text", number + 1, []
        elif fence:
            blocks.append((language, start, "\n".join(lines)))
            language = None
        elif language is not None:
            lines.append(line)
    return blocks


def shell_commands(text: str) -> list[list[str]]:
    """The commands of a shell block: continuation lines joined, comments
    dropped, a quote spanning lines kept whole, split at `&&`, `;` and `|`."""
    commands, pending = [], ""
    for line in text.splitlines():
        pending += line
        if pending.endswith("\\"):
            pending = pending[:-1] + " "
            continue
        try:
            words = shlex.split(pending, comments=True)
        except ValueError:  # an open quote: the command goes on
            pending += "\n"
            continue
        pending = ""
        command = []
        for word in words + ["&&"]:
            if word in ("&&", ";", "|", "||"):
                if command:
                    commands.append(command)
                command = []
            else:
                command.append(word)
    assert not pending.strip(), f"unfinished command: {pending!r}"
    return commands


def our_command(words: list[str]) -> tuple[str, list[str]] | None:
    """(the command line's module, its arguments) if `words` calls ours."""
    if words and words[0].endswith("python") and len(words) > 1:
        words = words[1:]
    if words and words[0].removeprefix(".venv/bin/") in COMMANDS:
        name = words[0].removeprefix(".venv/bin/")
        # "..." stands for the flags of the command before it.
        return COMMANDS[name], [word for word in words[1:] if word != "..."]
    return None


def documented_commands() -> list[tuple[str, list[str]]]:
    """(where, words) of every shell command in the documents' code blocks."""
    found = []
    for path in DOCUMENTS:
        for language, start, text in code_blocks(path):
            if language in ("bash", "sh", "shell", "console"):
                for words in shell_commands(text):
                    found.append((f"{path.relative_to(REPO)}:{start}", words))
    return found


def parse(module: str, arguments: list[str]) -> str:
    """Parses `arguments` with `module`'s `parse_args`; argparse's complaint
    (it exits) comes back as text, "" when they parse."""
    parse_args = importlib.import_module(module).parse_args
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        try:
            parse_args(arguments)
        except SystemExit as exit:
            return stderr.getvalue().strip() or f"exit {exit.code}"
    return ""


# === The extraction itself, on made-up text ===


def test_shell_commands_are_split_as_a_shell_would():
    text = (
        "# a comment\n"
        "python pretrain/run.py --data 'a b/*' \\\n"
        "    --preset cpu   # trailing comment\n"
        "export X='{\"a\":\n  1}'\n"
        "mkdir -p m && cp -r a m/1\n"
    )
    assert shell_commands(text) == [
        ["python", "pretrain/run.py", "--data", "a b/*", "--preset", "cpu"],
        ["export", 'X={"a":\n  1}'],
        ["mkdir", "-p", "m"],
        ["cp", "-r", "a", "m/1"],
    ]


def test_a_wrong_flag_fails_and_a_right_one_parses():
    module, arguments = our_command(
        [".venv/bin/python", "pretrain/run.py", "...", "--objective", "mlm"]
    )
    assert module == "electra_tf.cli.pretrain" and arguments == ["--objective", "mlm"]
    assert parse(module, arguments) == ""
    assert "--objectives" in parse(module, ["--objectives", "mlm"])
    assert "invalid choice" in parse(module, ["--objective", "bert"])
    convert = COMMANDS["electra-convert"]
    assert "required" in parse(convert, ["electra-to-hf", "--output", "x"])


def test_every_command_line_is_known():
    """Each console script and each thin script maps to a module with a parser."""
    assert {
        "electra-pretrain",
        "electra-build-data",
        "electra-convert",
        "electra-finetune",
        "electra-finetune-demo",
        "electra-score",
        "pretrain/run.py",
        "pretrain/build_data.py",
        "pretrain/convert.py",
        "pretrain/score.py",
        "finetune/run.py",
        "finetune/demo.py",
    } <= set(COMMANDS)


# === The documents ===


def test_the_documents_have_commands_of_every_command_line():
    modules = {
        our[0] for _, words in documented_commands() if (our := our_command(words))
    }
    assert modules == set(COMMANDS.values())


@pytest.mark.parametrize(
    "where, words",
    documented_commands(),
    ids=[f"{where}:{' '.join(words)[:60]}" for where, words in documented_commands()],
)
def test_every_documented_command_parses(where, words):
    our = our_command(words)
    if our is None:
        line = " ".join(words)
        assert any(line.startswith(start) for start in NOT_OURS), (
            f"{where}: {line} is neither ours nor in NOT_OURS"
        )
        return
    module, arguments = our
    assert parse(module, arguments) == "", f"{where}: {shlex.join(words)}"


def test_the_set_up_commands_are_the_readme_s_and_ci_s():
    """README command 1 installs requirements.txt (which installs the project)
    and runs pretrain/run.py with no flags (parsed above); command 2 is
    exactly what .ci/run runs."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    main_job = (
        "python3.11 -m venv .venv && .venv/bin/pip install -r requirements.txt"
        " && .venv/bin/python pretrain/run.py\n"
    )
    tests = (
        "python3.11 -m venv .venv && .venv/bin/pip install -r requirements-test.txt"
        " && .venv/bin/python -m pytest\n"
    )
    assert main_job in readme and tests in readme
    assert tests.strip() in (REPO / ".ci" / "run").read_text()
    requirements = (REPO / "requirements.txt").read_text().split()
    assert requirements[-1:] == ["."] and requirements[-2] == "-e"
    # The test requirements include the run-time ones, through the bench's.
    chain = ["requirements-test.txt", "requirements-bench.txt", "requirements.txt"]
    for this, included in zip(chain, chain[1:]):
        assert f"-r {included}" in (REPO / this).read_text().splitlines()


def test_python_examples_compile():
    blocks = [
        (path, start, text)
        for path in DOCUMENTS
        for language, start, text in code_blocks(path)
        if language == "python"
    ]
    assert blocks
    for path, start, text in blocks:
        try:
            ast.parse(text)
        except SyntaxError as error:
            pytest.fail(f"{path.name}:{start + (error.lineno or 1) - 1}: {error}")
