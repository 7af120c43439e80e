"""Every figure of README's "Results at a glance" and of BENCHMARKS.md's
summary equals its result file. Each row of those tables carries markers
(HTML comments, invisible on GitHub):

* `<!-- check FILE: FIGURE = EXPRESSION -->`: FIGURE (e.g. `2.27x`, `62%`,
  `41 ms`) appears in the row as printed, and EXPRESSION over FILE's keys
  gives it to within its rounding (half a unit of its last digit);
  `FIGURE >= EXPRESSION` is a bound ("within 1.1e-6"): the value is at most
  the figure and within one unit of its last digit of it.
* `<!-- evidence: PATH -->`: a row whose evidence is a test, not a result
  file (PATH must exist).

FILE is under `bench/results/` unless it holds a `/` (then from the
repository root). In EXPRESSION, a key is a path into the JSON with `:`
between levels (`results:ours:tokens_per_second`, list items by index);
numbers and `+ - * / ( )` (separated by spaces) combine them; `@OTHER.json:key`
reads another result file's key.

RELIABILITY.md's counts of the bad-input probe equal its committed result,
`bench/results/bad_inputs_probe.json` (`python -m scripts.probe_bad_inputs`):
the table of counts per command and class, and the run it comes from (commit,
date, cases, seconds).

No TensorFlow here: plain text and JSON only.
"""

from __future__ import annotations

import ast
import json
import operator
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
CHECK = re.compile(r"<!--\s*check\s+([^:]+?):\s*(.+?)\s+(=|>=)\s+(.+?)\s*-->")
EVIDENCE = re.compile(r"<!--\s*evidence:\s*(\S+)\s*-->")
MARKER = re.compile(r"<!--.*?-->")
NUMBER = re.compile(r"[-+]?\d[\d,]*(?:\.(\d+))?(?:e([-+]?\d+))?")
OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
# Where the checked tables are: (document, the heading their section starts at).
TABLES = [("README.md", "## Results at a glance"), ("BENCHMARKS.md", "## Summary")]


def lookup(document: dict, key: str):
    """The value at `key` (`a:b:0:c`) in a JSON document."""
    value = document
    for part in key.split(":"):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def evaluate(expression: str, document: dict, root: pathlib.Path = REPO) -> float:
    """`expression`'s value, its keys looked up in `document` (`@file:key`:
    in another result file)."""
    names = {}
    tokens = []
    for token in expression.split():
        if token in "+-*/()" or NUMBER.fullmatch(token):
            tokens.append(token)
        else:
            source = document
            if token.startswith("@"):
                file, token = token[1:].split(":", 1)
                source = json.loads(result_file(file, root).read_text())
            names[f"k{len(names)}"] = float(lookup(source, token))
            tokens.append(f"k{len(names) - 1}")

    def value(node):
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            return names[node.id]
        raise ValueError(f"not an arithmetic expression: {expression}")

    return value(ast.parse(" ".join(tokens), mode="eval").body)


def printed(figure: str) -> tuple[float, float]:
    """(the number of a printed figure, one unit of its last digit)."""
    match = NUMBER.search(figure)
    if not match:
        raise ValueError(f"no number in {figure!r}")
    decimals = len(match.group(1) or "")
    exponent = int(match.group(2) or 0)
    return float(match.group(0).replace(",", "")), 10.0 ** (exponent - decimals)


def result_file(name: str, root: pathlib.Path = REPO) -> pathlib.Path:
    return root / name if "/" in name else root / "bench" / "results" / name


def table_rows(text: str, heading: str) -> list[str]:
    """The table rows (after the header and its rule) of the first table in
    the section that starts at `heading`."""
    section = text.split(heading + "\n", 1)[1]
    section = re.split(r"\n#{1,2} ", section, maxsplit=1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return rows[2:]


def row_problems(row: str, root: pathlib.Path = REPO) -> list[str]:
    """What is wrong with one row: no marker, a figure not printed in it, a
    figure its file does not give, a missing file or key."""
    visible = MARKER.sub("", row)
    checks, evidence = CHECK.findall(row), EVIDENCE.findall(row)
    name = visible.split("|")[1].strip()[:50]
    if not checks and not evidence:
        return [f"{name}: no check or evidence marker"]
    problems = []
    for path in evidence:
        if not (root / path.split("::")[0]).exists():
            problems.append(f"{name}: evidence {path} does not exist")
    for file, figure, relation, expression in checks:
        if figure not in visible:
            problems.append(f"{name}: {figure} is not printed in the row")
            continue
        path = result_file(file.strip(), root)
        try:
            value = evaluate(expression, json.loads(path.read_text()), root)
        except (OSError, KeyError, IndexError, ValueError, TypeError) as error:
            problems.append(f"{name}: {file}: {expression}: {error!r}")
            continue
        number, unit = printed(figure)
        if relation == "=":
            wrong = abs(value - number) > unit / 2 + 1e-12 * abs(number)
        else:
            wrong = not (number - unit < value <= number)
        if wrong:
            problems.append(f"{name}: printed {figure}, {file} gives {value:.6g}")
    return problems


def probe_count_problems(text: str, record: dict) -> list[str]:
    """Where a document's probe counts disagree with the probe's record: the
    table whose header starts `| command | cases |` (a column per class, in
    the record's order, a row per command and `all`), and the sentence that
    names the run (its commit, date, number of cases and seconds)."""
    if not record.get("finished") or record["cases_run"] != record["cases_planned"]:
        return ["the probe's record is not of a finished run"]
    counts = record["counts"]
    classes = list(counts["all"])
    tables = [
        [line for line in block.splitlines() if line.startswith("|")]
        for block in re.split(r"\n\s*\n", text)
        if block.lstrip().startswith("| command | cases |")
    ]
    if len(tables) != 1:
        return [f"{len(tables)} tables of probe counts, not 1"]
    header, _, *rows = tables[0]
    cells = [cell.strip() for cell in header.strip("|").split("|")]
    problems = []
    if cells[2:] != classes:
        problems.append(f"the columns are {cells[2:]}, the record's classes {classes}")
    seen = set()
    for row in rows:
        command, *numbers = [c.strip().strip("`") for c in row.strip("|").split("|")]
        seen.add(command)
        if command not in counts:
            problems.append(f"{command}: not a command of the record")
            continue
        expected = [sum(counts[command].values())] + [
            counts[command][kind] for kind in classes
        ]
        if [int(n.replace(",", "")) for n in numbers] != expected:
            problems.append(f"{command}: {numbers}, the record gives {expected}")
    if seen != set(counts):
        problems.append(f"commands {sorted(set(counts) - seen)} missing")
    run = [
        f"`{record['commit'][:7]}`",
        record["date"][:10],
        f"{record['cases_run']} cases",
        f"{record['seconds']:,} s",
    ]
    problems += [f"the run's {item} is not stated" for item in run if item not in text]
    return problems


# === The checker on made-up tables ===


def test_the_checker_reads_figures_and_expressions():
    assert printed("2.27x") == (2.27, pytest.approx(0.01))
    assert printed("62%") == (62.0, 1.0)
    assert printed("1.1e-6") == (1.1e-6, pytest.approx(1e-7))
    assert printed("1,999 tokens/s") == (1999.0, 1.0)
    document = {"a": {"b": 3.0}, "c": [1.0, 4.0]}
    assert evaluate("100 * a:b / ( c:1 - c:0 )", document) == 100.0


def test_an_expression_reads_another_result_file(tmp_path):
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "o.json").write_text('{"s": 2.0}')
    assert evaluate("a:b / @o.json:s", {"a": {"b": 3.0}}, tmp_path) == 1.5


def test_the_checker_catches_each_kind_of_wrong_row(tmp_path):
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "r.json").write_text(
        '{"x": 2.274, "y": 1.013e-6}'
    )
    good = (
        "| speed | 2.27x; within 1.1e-6 | <!-- check r.json: 2.27x = x --> "
        "<!-- check r.json: 1.1e-6 >= y --> |"
    )
    assert row_problems(good, tmp_path) == []
    cases = {
        "| a | 2.27x | |": "no check or evidence marker",
        "| a | 2.3x | <!-- check r.json: 2.27x = x --> |": "not printed",
        "| a | 2.28x | <!-- check r.json: 2.28x = x --> |": "gives 2.274",
        "| a | 1.0e-6 | <!-- check r.json: 1.0e-6 >= y --> |": "gives 1.013e-06",
        "| a | 2.27x | <!-- check r.json: 2.27x = z --> |": "KeyError",
        "| a | 2.27x | <!-- check s.json: 2.27x = x --> |": "FileNotFoundError",
        "| a | yes | <!-- evidence: tests/nothing.py --> |": "does not exist",
    }
    for row, problem in cases.items():
        found = row_problems(row, tmp_path)
        assert len(found) == 1 and problem in found[0], (row, found)


# === The documents ===


@pytest.mark.parametrize("document, heading", TABLES, ids=[t[0] for t in TABLES])
def test_every_row_s_figures_equal_their_result_files(document, heading):
    rows = table_rows((REPO / document).read_text(encoding="utf-8"), heading)
    assert len(rows) >= 5
    problems = [problem for row in rows for problem in row_problems(row)]
    assert problems == []


def test_the_probe_count_checker_catches_each_kind_of_disagreement():
    record = {
        "finished": True,
        "cases_planned": 5,
        "cases_run": 5,
        "commit": "0123456789abcdef",
        "date": "2026-11-29T05:00:00+00:00",
        "seconds": 1234,
        "counts": {
            "electra-score": {"refused": 2, "warned": 1, "unclear": 0},
            "serving": {"refused": 0, "warned": 0, "unclear": 2},
            "all": {"refused": 2, "warned": 1, "unclear": 2},
        },
    }
    text = (
        "Run at `0123456` on 2026-11-29: 5 cases in 1,234 s.\n\n"
        "| command | cases | refused | warned | unclear |\n|---|---|---|---|---|\n"
        "| `electra-score` | 3 | 2 | 1 | 0 |\n| `serving` | 2 | 0 | 0 | 2 |\n"
        "| all | 5 | 2 | 1 | 2 |\n"
    )
    assert probe_count_problems(text, record) == []
    wrong = {
        "| `serving` | 2 | 0 | 0 | 2 |": "| `serving` | 2 | 1 | 0 | 1 |",
        "| refused | warned |": "| warned | refused |",
        "| all | 5 | 2 | 1 | 2 |\n": "",
        "1,234 s": "1,200 s",
        "`0123456`": "`6543210`",
    }
    for old, new in wrong.items():
        assert len(probe_count_problems(text.replace(old, new), record)) >= 1, new
    assert probe_count_problems(text, {**record, "finished": False}) != []


def test_reliability_s_probe_counts_equal_the_probe_s_record():
    record = json.loads(result_file("bad_inputs_probe.json").read_text())
    text = (REPO / "RELIABILITY.md").read_text(encoding="utf-8")
    assert probe_count_problems(text, record) == []
