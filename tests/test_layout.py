"""The package's shape: an import graph without cycles, between modules and
between packages, imports at the top, thin command lines, nothing on sys.path,
and `import electra_tf` as the public API."""

import ast
import pathlib
import subprocess
import sys

import pytest

from tests.helpers import SUBPROCESS_TIMEOUT

REPO = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = REPO / "electra_tf"


def _module(path: pathlib.Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module(p): p for p in PACKAGE.rglob("*.py")}


def _imports(tree: ast.AST):
    """(module imported, at module level?) for every electra_tf import.

    `from package import module` imports the module; `from module import name`
    the module. (A package's `__init__` runs first either way: ours only
    imports from its submodules.)
    """
    top = set(map(id, tree.body))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                names.append(submodule if submodule in MODULES else node.module)
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name.startswith("electra_tf"):
                yield name, id(node) in top


def _graph():
    graph = {}
    for name, path in MODULES.items():
        edges = set()
        for imported, _ in _imports(ast.parse(path.read_text())):
            if imported in MODULES and imported != name:
                edges.add(imported)
        graph[name] = edges
    return graph


def _package(module: str) -> str:
    """`electra_tf.models` for `electra_tf.models.encoder`; a module directly in
    `electra_tf/` (config, errors, presets, ...) stands for itself."""
    return ".".join(module.split(".")[:2])


def _package_graph(graph):
    """The import graph between electra_tf's sub-packages: an edge where any
    module of one imports any module of the other. `electra_tf/__init__.py`,
    the public API, imports every package and nothing imports it: left out."""
    packages = {}
    for module, imported in graph.items():
        if module == "electra_tf":
            continue
        edges = packages.setdefault(_package(module), set())
        edges.update(_package(target) for target in imported)
        edges.discard(_package(module))
    return packages


def _first_cycle(graph):
    """A cycle of `graph` (node -> set of nodes) as a list of nodes, or None."""
    state, path = {}, []

    def visit(node):
        state[node] = "open"
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == "open":
                return path[path.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        path.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_import_graph_has_no_cycle():
    cycle = _first_cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_packages_do_not_import_each_other_in_a_cycle():
    """Folders are layers: models/ below conversion/, pretraining/ below it
    (a module-level check misses models/a -> conversion/b -> models/c)."""
    graph = _graph()
    cycle = _first_cycle(_package_graph(graph))
    if cycle is not None:
        # Name the module imports behind each package edge of the cycle.
        edges = [
            f"{module} -> {target}"
            for source, destination in zip(cycle, cycle[1:])
            for module, imported in sorted(graph.items())
            for target in sorted(imported)
            if _package(module) == source and _package(target) == destination
        ]
        pytest.fail("package cycle: " + " -> ".join(cycle) + "\n" + "\n".join(edges))


def test_the_cycle_checks_find_a_cycle():
    """Neither check passes vacuously: a cycle through other modules' packages
    is found at both levels."""
    modules = {
        "electra_tf.models.encoder": set(),
        "electra_tf.models.text_classifier": {"electra_tf.conversion.keras_hub"},
        "electra_tf.conversion.keras_hub": {"electra_tf.models.encoder"},
        "electra_tf": {"electra_tf.models.encoder"},
    }
    assert _first_cycle(modules) is None
    assert _first_cycle(_package_graph(modules)) == [
        "electra_tf.conversion",
        "electra_tf.models",
        "electra_tf.conversion",
    ]
    modules["electra_tf.models.encoder"] = {"electra_tf.models.text_classifier"}
    assert _first_cycle(modules) is not None


# The packages from the bottom up: each imports only packages of lower rows.
# A new package takes a row here (the test below names one that has none).
LAYERS = (
    ("errors", "atomic_write", "random_streams", "optimization", "request_checks"),
    ("config", "network"),
    # The data builder warns about a length beyond every preset's positions.
    ("presets",),
    ("data", "distribution", "precision"),
    ("models",),
    ("scoring",),
    ("export",),
    ("pretraining", "finetuning"),
    ("conversion",),
    # The public API (`import electra_tf`) imports from every package above.
    ("api",),
    ("cli",),
)


def _upward_edges(packages, layers=LAYERS):
    """Package imports that do not go down `layers`, as "a -> b" lines."""
    row = {f"electra_tf.{name}": i for i, names in enumerate(layers) for name in names}
    unplaced = sorted(set(packages) - set(row))
    assert not unplaced, f"packages with no row in LAYERS: {unplaced}"
    return [
        f"{source} -> {target}"
        for source, targets in sorted(packages.items())
        for target in sorted(targets)
        if row[target] >= row[source]
    ]


def test_packages_import_only_the_layers_below_them():
    assert _upward_edges(_package_graph(_graph())) == []


def test_the_layer_check_finds_an_import_that_goes_up_or_sideways():
    packages = {
        "electra_tf.models": {"electra_tf.data"},
        "electra_tf.data": set(),
        "electra_tf.finetuning": {"electra_tf.pretraining", "electra_tf.models"},
        "electra_tf.pretraining": set(),
    }
    assert _upward_edges(packages) == [
        "electra_tf.finetuning -> electra_tf.pretraining"
    ]
    packages["electra_tf.data"] = {"electra_tf.models"}
    assert "electra_tf.data -> electra_tf.models" in _upward_edges(packages)


def test_private_names_stay_in_their_module():
    crossing = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "electra_tf"
            ):
                crossing.update(
                    (name, alias.name)
                    for alias in node.names
                    if alias.name.startswith("_")
                )
    assert not crossing, f"private names imported by another module: {sorted(crossing)}"


def test_library_imports_of_our_modules_are_at_the_top():
    for path in PACKAGE.rglob("*.py"):
        late = [
            name for name, at_top in _imports(ast.parse(path.read_text())) if not at_top
        ]
        assert not late, f"{path.relative_to(REPO)} imports {late} inside a function"


def test_nothing_puts_the_checkout_on_sys_path():
    for folder in ("electra_tf", "pretrain", "finetune", "bench", "tests", "scripts"):
        for path in (REPO / folder).rglob("*.py"):
            if path == pathlib.Path(__file__):
                continue
            assert "sys.path.insert" not in path.read_text(), path


def test_command_lines_are_thin():
    files = [*(PACKAGE / "cli").glob("*.py")]
    files += [*(REPO / "pretrain").glob("*.py"), *(REPO / "finetune").glob("*.py")]
    for path in files:
        lines = len(path.read_text().splitlines())
        assert lines < 130, f"{path.relative_to(REPO)} has {lines} lines"


def test_the_public_api_loads_our_keras_files(tmp_path):
    """`keras.models.load_model` needs only `import electra_tf` (fresh process)."""
    import electra_tf

    assert sorted(electra_tf.__all__) == electra_tf.__all__
    for name in electra_tf.__all__:
        assert hasattr(electra_tf, name), name
    config = electra_tf.get_preset("tiny").model.override(vocabulary_size=50)
    electra_tf.ElectraEncoder.discriminator_from_config(config).save(
        tmp_path / "encoder.keras"
    )
    probe = (
        "import keras, electra_tf\n"
        f"model = keras.models.load_model({str(tmp_path / 'encoder.keras')!r})\n"
        "print(type(model).__name__)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ElectraEncoder")
