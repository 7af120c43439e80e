"""The documents hold together: every relative link of the README, docs/,
BENCHMARKS.md and RELIABILITY.md reaches a file and, with `#anchor`, a heading
or an explicit `<a id>` there; every `bench/results/...` path they cite exists;
the README and BENCHMARKS.md stay short enough to read; every row of
RELIABILITY.md is short and cites tests that exist, marked (slow) where they
are. The checkers are tested on made-up markdown first, so that they cannot
pass by finding nothing.

No TensorFlow here: plain text only.
"""

from __future__ import annotations

import ast
import glob
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
README_MAX_LINES = 300
# Headroom under it for the sections others are adding (25, 26).
BENCHMARKS_MAX_LINES = 1100

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXPLICIT_ANCHOR = re.compile(r"""<a\s+[^>]*\b(?:id|name)\s*=\s*["']([^"']+)["']""")
# [text](target) and ![alt](target); the target up to a space or ")".
LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]"  # [text], one level of nested [...]
    r"\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)"  # (target "title")
)
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
RESULT_PATH = re.compile(r"bench/results/(?:[A-Za-z0-9_.*/-]|\{[^{}\s]*\})*[\w*/}]")
BRACES = re.compile(r"\{([^{}]*)\}")
# RELIABILITY.md: a row gives the input, what the user sees and its tests;
# the details live in the tests (the longest row had 1,190 characters).
RELIABILITY_ROW_MAX = 460
CITED = re.compile(r"`([^`]+)`(\s*\(slow\))?")
# `dir/test_file.py::test_name[id]`, `dir/test_file.py`, or `test_name` of the
# file cited before it.
CITATION = re.compile(
    r"(?:(?P<path>[\w/]+\.py)(?:::(?P<test>test_\w+))?|(?P<name>test_\w+))"
    r"(?:\[[^\]]*\])?"
)


def documents(root: pathlib.Path = REPO) -> list[pathlib.Path]:
    """The documents checked: README.md, docs/**/*.md, BENCHMARKS.md, RELIABILITY.md."""
    paths = [root / "README.md", root / "BENCHMARKS.md", root / "RELIABILITY.md"]
    paths += sorted((root / "docs").rglob("*.md"))
    return [path for path in paths if path.exists()]


def prose_lines(text: str) -> list[str]:
    """Every line, those of fenced code blocks blanked and inline code
    removed from the others (so that line numbers still hold)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            lines.append("")
        else:
            lines.append("" if fenced else INLINE_CODE.sub("", line))
    return lines


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: markup reduced to its text,
    lowercased, every character but letters, digits, spaces, "-" and "_"
    dropped, each space a "-"."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links -> text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a markdown text defines: its headings' slugs (a repeated
    slug gets -1, -2, ... as on GitHub) and explicit `<a id=...>`/`name=...`."""
    found, seen = set(), {}
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        found.update(EXPLICIT_ANCHOR.findall(line))
        match = HEADING.match(line)
        if match:
            slug = github_slug(match.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def link_problems(path: pathlib.Path) -> list[str]:
    """Each broken relative link of `path`: a missing file, or an anchor the
    target markdown does not define. Web links are not followed."""
    problems = []
    text = path.read_text(encoding="utf-8")
    for number, line in enumerate(prose_lines(text), 1):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
                continue
            file_part, _, anchor = target.partition("#")
            destination = (path.parent / file_part).resolve() if file_part else path
            if not destination.exists():
                problems.append(
                    f"{path.name}:{number}: {target}: no file {destination}"
                )
                continue
            if anchor and destination.suffix == ".md":
                defined = anchors(destination.read_text(encoding="utf-8"))
                if anchor not in defined:
                    problems.append(
                        f"{path.name}:{number}: {target}: no heading or <a id> "
                        f"'{anchor}' in {destination.name}"
                    )
    return problems


def expand_braces(pattern: str) -> list[str]:
    """The shell's brace expansion: `a_{x,y}.{json,md}` -> four names."""
    match = BRACES.search(pattern)
    if not match:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end() :]
    return [
        name
        for choice in match.group(1).split(",")
        for name in expand_braces(head + choice + tail)
    ]


def missing_results(path: pathlib.Path, root: pathlib.Path = REPO) -> list[str]:
    """Each `bench/results/...` path `path` cites (anywhere, code included)
    that does not exist. Braces expand as in the shell; a glob must match
    something; a name without a suffix (a script's `--output` prefix) must
    begin some file's name."""
    problems = []
    for cited in sorted(set(RESULT_PATH.findall(path.read_text(encoding="utf-8")))):
        for name in expand_braces(cited.rstrip(".,")):
            pattern = str(root / name)
            if not pathlib.PurePath(name).suffix and not name.endswith("/"):
                pattern += "*"
            if not glob.glob(pattern):
                problems.append(f"{path.name}: {name} does not exist")
    return problems


def fence_problems(path: pathlib.Path) -> list[str]:
    """Code fences that do not pair up: a closing fence with a language after
    it (markdown would open a block there, not close one), or a block left open."""
    problems, open_at = [], None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        fence = re.match(r"^\s*(```|~~~)\s*(\S*)", line)
        if not fence:
            continue
        if open_at is None:
            open_at = number
        elif fence.group(2):
            problems.append(
                f"{path.name}:{number}: a fence with a language closes {open_at}"
            )
            open_at = None
        else:
            open_at = None
    if open_at is not None:
        problems.append(f"{path.name}:{open_at}: a code block never closed")
    return problems


def table_rows(text: str, last_column: str) -> list[str]:
    """The rows of every markdown table whose header's last column is
    `last_column`, each table's header and rule left out."""
    rows, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if block and block[0].strip().strip("|").split("|")[-1].strip() == last_column:
            rows += block[2:]
        block = []
    return rows


def slow_tests(path: pathlib.Path) -> tuple[bool, set[str]]:
    """(whether the whole module is marked slow, the test functions marked
    slow) of a test file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    module = any(
        isinstance(node, ast.Assign)
        and any(getattr(t, "id", None) == "pytestmark" for t in node.targets)
        and "mark.slow" in ast.unparse(node.value)
        for node in tree.body
    )
    functions = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any("mark.slow" in ast.unparse(d) for d in node.decorator_list)
    }
    return module, functions


def reliability_row_problems(row: str, root: pathlib.Path = REPO) -> list[str]:
    """What is wrong with one row of RELIABILITY.md: longer than
    RELIABILITY_ROW_MAX; a test cell that cites no test (unless it says
    `no test: <why>`) or holds more than test names (a probe case, "same");
    a cited file or test that does not exist; (slow) missing after a slow
    test, or after a test that is not slow."""
    name = row.strip("| ").split("|")[0].strip()[:50]
    problems = []
    if len(row) > RELIABILITY_ROW_MAX:
        problems.append(
            f"{name}: {len(row)} characters (at most {RELIABILITY_ROW_MAX})"
        )
    cell = row.strip().strip("|").split("|")[-1].strip()
    if cell.startswith("no test: "):
        if len(cell.split()) < 5:
            problems.append(f"{name}: 'no test' without saying why")
        return problems
    rest = CITED.sub("", cell).replace(",", "").replace(";", "").strip()
    if rest:
        problems.append(f"{name}: the test cell holds more than test names: {rest!r}")
    citations = CITED.findall(cell)
    if not citations:
        problems.append(f"{name}: cites no test")
    path = None
    for cited, slow_mark in citations:
        match = CITATION.fullmatch(cited)
        if not match:
            problems.append(f"{name}: `{cited}` is not a test")
            continue
        if match["path"]:
            path = root / "tests" / match["path"]
            test = match["test"]
        else:
            test = match["name"]
        if path is None:
            problems.append(f"{name}: `{cited}` names no file before it")
            continue
        if not path.exists():
            problems.append(f"{name}: `{cited}`: no file {path.relative_to(root)}")
            continue
        if test and not re.search(
            rf"^\s*(async )?def {test}\(", path.read_text(encoding="utf-8"), re.M
        ):
            problems.append(f"{name}: `{cited}`: no {test} in {path.name}")
            continue
        module_slow, slow = slow_tests(path)
        is_slow = module_slow or test in slow
        if is_slow != bool(slow_mark):
            state = "slow, not marked (slow)" if is_slow else "marked (slow), not slow"
            problems.append(f"{name}: `{cited}` is {state}")
    return problems


# === The checker on made-up markdown ===


def test_slugs_follow_github():
    assert github_slug("Set-up: the two commands") == "set-up-the-two-commands"
    assert github_slug("The CPU recipe: `--preset cpu`") == (
        "the-cpu-recipe---preset-cpu"
    )
    assert github_slug("ELECTRA - MLM (3 x 3)") == "electra---mlm-3-x-3"
    assert github_slug("What [pre-training](x.md) buys, 2.4x!") == (
        "what-pre-training-buys-24x"
    )
    assert github_slug("snake_case **bold**") == "snake_case-bold"
    text = "# Results\n## Results\n## Results\n```\n# not a heading\n```\n"
    assert anchors(text) == {"results", "results-1", "results-2"}
    assert anchors('<a id="summary"></a>\n<a name="old"></a>') == {"summary", "old"}


def test_the_checker_catches_broken_links_and_passes_good_ones(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(
        '# Guide\n\n## Serving it\n\n<a id="latency"></a>\n', encoding="utf-8"
    )
    good = tmp_path / "good.md"
    good.write_text(
        "# Top\n\nSee [the guide](docs/guide.md), [serving](docs/guide.md#serving-it), "
        "[latency](docs/guide.md#latency), [top](#top), [web](https://x.org/a#b).\n"
        "```\n[in code](nowhere.md)\n```\nand `[inline](nowhere.md)`.\n",
        encoding="utf-8",
    )
    assert link_problems(good) == []
    bad = tmp_path / "bad.md"
    bad.write_text(
        "[gone](docs/missing.md) [no anchor](docs/guide.md#serving) [self](#nothing)\n",
        encoding="utf-8",
    )
    problems = link_problems(bad)
    assert len(problems) == 3, problems
    assert "missing.md" in problems[0]
    assert "'serving'" in problems[1] and "'nothing'" in problems[2]


def test_the_checker_catches_a_cited_result_file_that_is_missing(tmp_path):
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "speed.json").write_text("{}")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "Measured (`bench/results/speed.json`, bench/results/spe*.json,\n"
        "`bench/results/{speed,size}.json`; --output bench/results/speed).\n"
        "```\npython -m x --output bench/results/lost.json\n```\n",
        encoding="utf-8",
    )
    assert missing_results(doc, tmp_path) == [
        "doc.md: bench/results/lost.json does not exist",
        "doc.md: bench/results/size.json does not exist",
    ]


def test_the_checker_catches_fences_that_do_not_pair(tmp_path):
    good = tmp_path / "good.md"
    good.write_text("```bash\nls\n```\n\n```\nx\n```\n", encoding="utf-8")
    assert fence_problems(good) == []
    bad = tmp_path / "bad.md"
    bad.write_text("```bash\n```bash\nls\n```\n", encoding="utf-8")
    assert fence_problems(bad) == [
        "bad.md:2: a fence with a language closes 1",
        "bad.md:4: a code block never closed",
    ]


# === The repository's documents ===


def _name(path: pathlib.Path) -> str:
    return path.relative_to(REPO).as_posix()


def test_the_reliability_checker_catches_each_kind_of_wrong_row(tmp_path):
    (tmp_path / "tests" / "a").mkdir(parents=True)
    (tmp_path / "tests" / "a" / "test_x.py").write_text(
        "import pytest\n\n\ndef test_fast():\n    pass\n\n\n"
        "@pytest.mark.slow\ndef test_slow():\n    pass\n"
    )
    (tmp_path / "tests" / "test_all_slow.py").write_text(
        "import pytest\n\npytestmark = pytest.mark.slow\n"
    )
    good = [
        "| in | out | `a/test_x.py::test_fast`, `test_slow` (slow) |",
        "| in | out | `a/test_x.py::test_fast[some-id]`; `a/test_x.py` |",
        "| in | out | `test_all_slow.py` (slow) |",
        "| in | out | no test: a statement of the formats read |",
    ]
    for row in good:
        assert reliability_row_problems(row, tmp_path) == [], row
    cases = {
        "| in | out | probe case `build-empty` |": "more than test names",
        "| in | out | same |": "cites no test",
        "| in | out | (no test) |": "cites no test",
        "| in | out | no test: none |": "without saying why",
        "| in | out | `a/test_x.py::test_gone` |": "no test_gone",
        "| in | out | `a/test_y.py` |": "no file",
        "| in | out | `test_fast` |": "names no file before it",
        "| in | out | `build-empty` |": "is not a test",
        "| in | out | `a/test_x.py::test_slow` |": "slow, not marked",
        "| in | out | `a/test_x.py::test_fast` (slow) |": "not slow",
        "| in | out | `test_all_slow.py` |": "slow, not marked",
        "| " + "x" * 460 + " | out | `a/test_x.py` |": "characters",
    }
    for row, problem in cases.items():
        found = reliability_row_problems(row, tmp_path)
        assert any(problem in p for p in found), (row, found)
    tables = (
        "| a | b | test |\n|---|---|---|\n| 1 | 2 | 3 |\n\ntext\n\n"
        "| x | count |\n|---|---|\n| y | 4 |\n\n| test |\n|---|\n| z |\n"
    )
    assert table_rows(tables, "test") == ["| 1 | 2 | 3 |", "| z |"]


def test_the_documents_are_found():
    names = {path.relative_to(REPO).as_posix() for path in documents()}
    assert {"README.md", "BENCHMARKS.md", "RELIABILITY.md"} <= names
    assert any(name.startswith("docs/") for name in names)


@pytest.mark.parametrize("path", documents(), ids=_name)
def test_every_relative_link_and_anchor_resolves(path):
    assert link_problems(path) == []


@pytest.mark.parametrize("path", documents(), ids=_name)
def test_code_fences_pair_up(path):
    assert fence_problems(path) == []


@pytest.mark.parametrize("path", documents(), ids=_name)
def test_every_cited_result_file_exists(path):
    assert missing_results(path) == []


def test_the_readme_links_every_guide():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for guide in sorted((REPO / "docs").glob("*.md")):
        assert f"(docs/{guide.name}" in readme, guide.name


def test_the_readme_is_at_most_300_lines():
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES


def test_benchmarks_is_at_most_1100_lines():
    lines = (REPO / "BENCHMARKS.md").read_text(encoding="utf-8").count("\n")
    assert lines <= BENCHMARKS_MAX_LINES


def test_the_benchmarks_summary_fits_one_screen():
    text = (REPO / "BENCHMARKS.md").read_text(encoding="utf-8")
    summary = text.split("## Summary\n", 1)[1].split('<a id="demo">', 1)[0]
    assert len(summary.strip().splitlines()) <= 40


def test_every_reliability_row_is_short_and_cites_tests_that_exist():
    text = (REPO / "RELIABILITY.md").read_text(encoding="utf-8")
    rows = table_rows(text, "test")
    assert len(rows) >= 50
    problems = [problem for row in rows for problem in reliability_row_problems(row)]
    assert problems == []


def test_licence_and_citation_are_there_and_linked():
    licence = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    citation = (REPO / "CITATION.cff").read_text(encoding="utf-8")
    assert "cff-version: 1.2.0" in citation and "license: Apache-2.0" in citation
    # The ELECTRA and Electric papers are cited.
    assert "arXiv:2003.10555" in citation and "2020.emnlp-main.20" in citation
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "(LICENSE)" in readme and "(CITATION.cff)" in readme
