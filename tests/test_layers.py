"""Data flows one way: no module imports a floor above it, and no imports form a cycle.

core < ingest < features < probes < warehouse < sql < analyses, pipeline < reads < report < bench < cli

The stages below `crsbench/` are the folders the package-dir map installs as `crsbench.<stage>`;
the floors inside `crsbench/` are its sub-packages (docs/ARCHITECTURE.md). No module imports a
leading-underscore name from another module: a name two modules share is public in its home.

Every import counts, wherever it stands: at module level, inside a function (a lazy import is
still a dependency: a cycle through one only waits for the call to bite), under TYPE_CHECKING,
and `importlib.import_module("a.literal.name")`. A cycle the design accepts is named in ALLOWED,
one edge a line with its reason; nothing else may close a cycle.
"""

from __future__ import annotations

import ast
import shutil
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Floors, lowest first; a module belongs to the floor whose package is its own or an ancestor.
# `crsbench` itself (the package's front door, re-exporting Bench) stands with bench.
FLOW: tuple[tuple[str, ...], ...] = (
    ("crsbench.core",),
    ("crsbench.ingest",),
    ("crsbench.features",),
    ("crsbench.probes",),
    ("crsbench.warehouse",),
    ("crsbench.sql",),
    ("crsbench.analyses", "crsbench.pipeline"),
    ("crsbench.exchange",),
    ("crsbench.reads",),
    ("crsbench.report",),
    ("crsbench.bench", "crsbench.bench_scores", "crsbench.bench_results", "crsbench.bench_team", "crsbench"),
    ("crsbench.cli",),
)
TOP = len(FLOW) - 1

# (importer, imported module): why a private name of a third-party module is imported.
PRIVATE_ALLOWED: dict[tuple[str, str], str] = {
    ("crsbench.cli.lazy", "typer"): "type-only: typer vendors click as typer._click; TyperGroup is typed with it",
    ("crsbench.features.loaders", "open_clip.model"): (
        "open_clip builds a CLIP vision tower only through _build_vision_tower (no public constructor)"
    ),
}

# (importer, imported): why this edge may close a cycle. Each must be a type-only import (under
# `if TYPE_CHECKING:`), which runs no code; the test fails if one turns into a real import.
ALLOWED: dict[tuple[str, str], str] = {
    ("crsbench.warehouse.compaction", "crsbench.warehouse.connection"): (
        "type-only: compact(wh: Warehouse) is the body of Warehouse.compact, called with the open warehouse"
    ),
    ("crsbench.warehouse.upgrade", "crsbench.warehouse.connection"): (
        "type-only: check_version/migrate(wh: Warehouse) run inside Warehouse's own open"
    ),
}


def _package_dirs() -> dict[str, Path]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return {package: REPO / folder for package, folder in config["package-dir"].items()}


def _modules(dirs: dict[str, Path] | None = None) -> dict[str, Path]:
    """Every module of the package, by dotted name (crsbench/ and the mapped stage folders)."""
    found: dict[str, Path] = {}
    dirs = _package_dirs() if dirs is None else dirs
    for package, folder in dirs.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if package == "crsbench" and parts[0] in {p.split(".")[1] for p in dirs if p != "crsbench"}:
                continue  # a mapped stage folder nested in crsbench/ would be listed twice
            name = ".".join([package, *parts]).removesuffix(".__init__")
            found[name] = path
    return found


def layer(module: str) -> int:
    """The floor of `module`: the deepest floor package that is it or contains it."""
    best, depth = None, -1
    for rank, packages in enumerate(FLOW):
        for package in packages:
            inside = module == package or (package != "crsbench" and module.startswith(package + "."))
            if inside and package.count(".") > depth:
                best, depth = rank, package.count(".")
    if best is None:
        raise ValueError(f"{module} is on no floor: give it a sub-package of crsbench/ (tests/test_layers.py FLOW)")
    return best


def _private_imports(modules: dict[str, Path], allowed: dict[tuple[str, str], str] | None = None) -> list[str]:
    """`from other import _name` anywhere in a module (dunder names aside), unless `allowed` says why."""
    allowed = PRIVATE_ALLOWED if allowed is None else allowed
    bad = []
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            source = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                source = f"{anchor}.{source}" if source else anchor
            private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            if private and source != module and (module, source) not in allowed:
                bad.append(f"{_where(path)}:{node.lineno}: {module} imports {', '.join(private)} from {source}")
    return bad


def _type_only_lines(tree: ast.Module) -> set[int]:
    """Lines of the imports under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if (
            isinstance(test, ast.Name | ast.Attribute)
            and getattr(test, "id", getattr(test, "attr", "")) == "TYPE_CHECKING"
        ):
            lines |= {
                n.lineno for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Import | ast.ImportFrom)
            }
    return lines


def _import_module_literal(node: ast.AST) -> str | None:
    """The name in `importlib.import_module("x.y")` / `import_module("x.y")`, when it is a literal."""
    if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    value = node.args[0].value
    return value if name == "import_module" and isinstance(value, str) else None


def _imports(path: Path, module: str, modules: dict[str, Path]) -> list[tuple[str, int, bool]]:
    """(imported crsbench module, line, type-only) for every import anywhere in `path`:
    `from pkg import name` is module pkg.name when that is a module (a submodule import), else pkg."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    type_only = _type_only_lines(tree)
    out: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's own package upwards
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            out += [(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base, node.lineno) for a in node.names]
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif (literal := _import_module_literal(node)) is not None:
            out.append((literal, node.lineno))
    return [(name, line, line in type_only) for name, line in out if name in modules and name != module]


def _where(path: Path) -> Path | str:
    return path.relative_to(REPO) if REPO in path.parents else path.name


def _upward(modules: dict[str, Path]) -> list[str]:
    bad = []
    for module, path in modules.items():
        for target, line, _ in _imports(path, module, modules):
            if layer(target) > layer(module):
                bad.append(f"{_where(path)}:{line}: {module} imports {target}")
    return bad


def _graph(modules: dict[str, Path]) -> dict[str, dict[str, tuple[int, bool]]]:
    """{module: {imported module: (first line, every import of it type-only)}}."""
    graph: dict[str, dict[str, tuple[int, bool]]] = {}
    for module, path in modules.items():
        edges: dict[str, tuple[int, bool]] = {}
        for target, line, type_only in _imports(path, module, modules):
            first, all_type_only = edges.get(target, (line, True))
            edges[target] = (min(first, line), all_type_only and type_only)
        graph[module] = edges
    return graph


def _cycles(modules: dict[str, Path], allowed: dict[tuple[str, str], str] | None = None) -> list[list[str]]:
    """The import cycles, one per strongly connected component of the import graph (without the
    `allowed` edges): its modules sorted, then each edge inside it as `a -> b (file:line)`."""
    allowed = ALLOWED if allowed is None else allowed
    graph = {m: {t: e for t, e in edges.items() if (m, t) not in allowed} for m, edges in _graph(modules).items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while (member := stack.pop()) != node:
                component.append(member)
            component.append(node)
            if len(component) > 1:
                members = sorted(component)
                edges = [
                    f"{a} -> {b} ({_where(modules[a])}:{graph[a][b][0]})"
                    for a in members
                    for b in graph[a]
                    if b in members
                ]
                found.append(members + edges)

    for node in graph:
        if node not in index:
            connect(node)
    return found


def test_no_module_imports_a_stage_above_it():
    assert _upward(_modules()) == []


def test_no_module_imports_a_private_name_of_another():
    assert _private_imports(_modules()) == []


def test_every_allowed_private_import_exists():
    modules = _modules()
    for (module, source), reason in PRIVATE_ALLOWED.items():
        text = modules[module].read_text(encoding="utf-8")
        assert reason and f"from {source} import _" in text, f"stale PRIVATE_ALLOWED entry {module} <- {source}"


def test_an_injected_private_import_fails(tmp_path):
    home, user = tmp_path / "home.py", tmp_path / "user.py"
    home.write_text("def _helper():\n    return 1\n")
    user.write_text("def f():\n    from crsbench.analyses.home import _helper\n\n    return _helper()\n")
    modules = {"crsbench.analyses.home": home, "crsbench.analyses.user": user}
    assert _private_imports(modules) == [
        "user.py:2: crsbench.analyses.user imports _helper from crsbench.analyses.home"
    ]
    user.write_text("from .home import _helper as helper\n")  # relative, renamed: still private
    assert len(_private_imports(modules)) == 1
    user.write_text("from crsbench.analyses.home import __doc__\n")  # a dunder is not private
    assert _private_imports(modules) == []


def test_floors_inside_crsbench_are_ordered_and_a_back_arrow_fails(tmp_path):
    order = ["crsbench.core.sql", "crsbench.sql", "crsbench.analyses.registry", "crsbench.pipeline.probe"]
    order += ["crsbench.reads.leaderboard", "crsbench.report.sections", "crsbench.bench", "crsbench.cli.app"]
    ranks = [layer(m) for m in order]
    assert ranks == sorted(ranks) and ranks[2] == ranks[3] and len(set(ranks)) == 7
    # A read model importing its renderer: the back-arrow issue 43 found (card -> report.data).
    reads, report = tmp_path / "card.py", tmp_path / "data.py"
    reads.write_text("from crsbench.report.data import gather\n")
    report.write_text("from crsbench.reads.card import reporting_card\n")
    modules = {"crsbench.reads.card": reads, "crsbench.report.data": report}
    assert _upward(modules) == ["card.py:1: crsbench.reads.card imports crsbench.report.data"]
    with pytest.raises(ValueError, match="on no floor"):
        layer("crsbench.loose_module")


def test_no_import_cycle_at_module_or_function_level():
    assert _cycles(_modules()) == []


def test_every_allowed_edge_exists_and_is_type_only():
    graph = _graph(_modules())
    for (module, target), reason in ALLOWED.items():
        assert reason and target in graph[module], f"stale ALLOWED entry {module} -> {target}"
        assert graph[module][target][1], f"{module} -> {target} is no longer type-only: {reason}"


def test_the_walk_sees_every_stage_and_catches_an_upward_import(tmp_path):
    modules = _modules()
    assert {layer(m) for m in modules} == set(range(TOP + 1))  # every floor has modules
    assert "crsbench.probes.calibration" in modules and "crsbench.features.vlm" in modules
    bad, other = tmp_path / "bad.py", tmp_path / "other.py"
    bad.write_text("def f():\n    from crsbench.analyses import run_analysis\n")
    other.write_text("import crsbench.probes.bad\n")
    assert _upward({"crsbench.probes.bad": bad, "crsbench.analyses": other}) == [
        "bad.py:2: crsbench.probes.bad imports crsbench.analyses"
    ]
    bad.write_text("import importlib\ndef f():\n    return importlib.import_module('crsbench.analyses')\n")
    assert _upward({"crsbench.probes.bad": bad, "crsbench.analyses": other}) == [
        "bad.py:3: crsbench.probes.bad imports crsbench.analyses"
    ]


def _features_copy(tmp_path: Path) -> tuple[dict[str, Path], Path]:
    """A copy of the real crsbench.features tree (every module as it is) and its registry.py."""
    shutil.copytree(REPO / "features", tmp_path / "features", ignore=shutil.ignore_patterns("__pycache__"))
    return {"crsbench.features": tmp_path / "features"}, tmp_path / "features" / "registry.py"


def test_a_function_level_cycle_in_a_copy_of_the_features_tree_fails_the_check(tmp_path):
    dirs, registry = _features_copy(tmp_path)
    modules = _modules(dirs)
    assert len(modules) > 20 and _cycles(modules, {}) == []  # the real tree, copied: no cycle
    # The registry looking entries up itself, lazily, as it once did: the lookup imports it back.
    source = registry.read_text(encoding="utf-8")
    registry.write_text(
        source
        + "\n\ndef _lookup(id):\n    from crsbench.features.lookup import get_encoder\n\n    return get_encoder(id)\n"
    )
    (cycle,) = _cycles(_modules(dirs), {})
    line = len(source.splitlines()) + 4
    assert {"crsbench.features.registry", "crsbench.features.lookup"} <= set(cycle)
    assert f"crsbench.features.registry -> crsbench.features.lookup (registry.py:{line})" in cycle
    assert "crsbench.features.lookup -> crsbench.features.registry (lookup.py:15)" in cycle
    # The same back-edge through importlib with a literal name, and as a relative import.
    registry.write_text(
        source + "\n\ndef _lookup():\n    import importlib\n\n    importlib.import_module('crsbench.features.lookup')\n"
    )
    assert len(_cycles(_modules(dirs), {})) == 1
    registry.write_text(source + "\n\ndef _lookup():\n    from . import lookup\n")
    assert len(_cycles(_modules(dirs), {})) == 1


def test_allowed_edges_only_lift_the_cycles_they_name(tmp_path):
    dirs, registry = _features_copy(tmp_path)
    source = registry.read_text(encoding="utf-8")
    registry.write_text(source + "\n\ndef _lookup():\n    from crsbench.features.lookup import get_encoder\n")
    modules = _modules(dirs)
    edge = ("crsbench.features.registry", "crsbench.features.lookup")
    assert _cycles(modules, {edge: "justified"}) == [] and len(_cycles(modules, {("a", "b"): "other"})) == 1
    # A type-only back-edge is still an edge the walk sees (and ALLOWED must name it).
    registry.write_text(source + "\nif TYPE_CHECKING:\n    from crsbench.features.lookup import get_encoder\n")
    assert _graph(_modules(dirs))["crsbench.features.registry"]["crsbench.features.lookup"][1] is True
    assert len(_cycles(_modules(dirs), {})) == 1
