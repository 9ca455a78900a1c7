"""Data flows one way: no module imports a package above it in the flow, and no imports form a cycle.

core < ingest < features < probes < warehouse < sql < crsbench (pipeline, bench, analyses, report, CLI)
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FLOW = (
    "crsbench.core",
    "crsbench.ingest",
    "crsbench.features",
    "crsbench.probes",
    "crsbench.warehouse",
    "crsbench.sql",
)
TOP = len(FLOW)  # everything else under crsbench: the top of the flow


def _package_dirs() -> dict[str, Path]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return {package: REPO / folder for package, folder in config["package-dir"].items()}


def _modules() -> dict[str, Path]:
    """Every module of the installed package, by dotted name (crsbench/ and the mapped stage folders)."""
    found: dict[str, Path] = {}
    dirs = _package_dirs()
    for package, folder in dirs.items():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).with_suffix("").parts
            if package == "crsbench" and parts[0] in {p.split(".")[1] for p in dirs if p != "crsbench"}:
                continue  # a mapped stage folder nested in crsbench/ would be listed twice
            name = ".".join([package, *parts]).removesuffix(".__init__")
            found[name] = path
    return found


def layer(module: str) -> int:
    for rank, package in enumerate(FLOW):
        if module == package or module.startswith(package + "."):
            return rank
    return TOP


def _imports(path: Path, module: str, modules: dict[str, Path], top_level_only: bool) -> list[tuple[str, int]]:
    """The crsbench modules `path` imports: `from pkg import name` is module pkg.name when that is
    a module (a submodule import), else pkg itself."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out += [
                (f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module, node.lineno)
                for a in node.names
            ]
        elif isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
    return [(name, line) for name, line in out if name in modules and name != module]


def _upward(modules: dict[str, Path]) -> list[str]:
    bad = []
    for module, path in modules.items():
        for target, line in _imports(path, module, modules, top_level_only=False):
            if layer(target) > layer(module):
                where = path.relative_to(REPO) if REPO in path.parents else path.name
                bad.append(f"{where}:{line}: {module} imports {target}")
    return bad


def _cycles(modules: dict[str, Path]) -> list[list[str]]:
    # Module-level imports: a cycle among them makes import order matter (half-initialised
    # modules). Function-level imports are how a registry loads its entries lazily; not counted.
    graph = {m: sorted({t for t, _ in _imports(p, m, modules, top_level_only=True)}) for m, p in modules.items()}
    cycles: list[list[str]] = []
    state: dict[str, str] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        for nxt in graph[node]:
            if state.get(nxt) == "open":
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = "done"

    for node in graph:
        if node not in state:
            visit(node, [node])
    return cycles


def test_no_module_imports_a_stage_above_it():
    assert _upward(_modules()) == []


def test_no_import_cycle():
    assert _cycles(_modules()) == []


def test_the_walk_sees_every_stage_and_catches_an_upward_import(tmp_path):
    modules = _modules()
    assert {layer(m) for m in modules} == set(range(TOP + 1))
    assert "crsbench.probes.calibration" in modules and "crsbench.features.vlm" in modules
    bad, other = tmp_path / "bad.py", tmp_path / "other.py"
    bad.write_text("def f():\n    from crsbench.analyses import run_analysis\n")
    other.write_text("import crsbench.probes.bad\n")
    assert _upward({"crsbench.probes.bad": bad, "crsbench.analyses": other}) == [
        "bad.py:2: crsbench.probes.bad imports crsbench.analyses"
    ]
    bad.write_text("from crsbench.analyses import x\n")
    assert _cycles({"crsbench.probes.bad": bad, "crsbench.analyses": other}) == [
        ["crsbench.probes.bad", "crsbench.analyses", "crsbench.probes.bad"]
    ]
