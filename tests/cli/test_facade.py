"""The CLI goes through `crsbench.Bench`: no module of `crsbench/cli/` imports the stages or the
pipeline (features, pipeline, probes, warehouse), at module level or inside a function, except the
imports the allow-list below names with the reason each is one. Imports under `if TYPE_CHECKING:`
are annotations only and never run."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

CLI_DIR = Path(__file__).resolve().parents[2] / "crsbench" / "cli"
FORBIDDEN = ("crsbench.features", "crsbench.pipeline", "crsbench.probes", "crsbench.warehouse")

# (cli module, imported module): why it is not behind a Bench method.
ALLOWED = {
    ("app", "crsbench.pipeline.stores"): "--store is refused at parse time when its URL embeds a "
    "password (check_store_url, a pure function of the text), before any command builds a Bench",
}


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
    )


def imported_modules(source: str) -> list[tuple[str, int]]:
    """(module, line) of every absolute import that runs: module level and in functions alike, but
    not those under `if TYPE_CHECKING:`."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST) -> None:
        if _type_checking_block(node):
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
            found.extend((f"{node.module}.{alias.name}", node.lineno) for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def leaks(name: str, source: str) -> list[str]:
    """What CLI module `name` imports past Bench, one line each (empty: none)."""
    out = []
    for module, line in imported_modules(source):
        hit = next((f for f in FORBIDDEN if module == f or module.startswith(f + ".")), None)
        if hit is None:
            continue
        # `from crsbench.warehouse import panels` names crsbench.warehouse.panels: either is allowed by its entry
        if any((name, m) in ALLOWED for m in (module, module.rpartition(".")[0])):
            continue
        out.append(f"crsbench/cli/{name}.py:{line} imports {module}")
    return sorted(set(out))


def test_no_cli_module_reaches_past_bench() -> None:
    modules = sorted(CLI_DIR.rglob("*.py"))
    assert len(modules) > 15 and CLI_DIR / "commands" / "features.py" in modules
    found = [
        line
        for path in modules
        for line in leaks(path.relative_to(CLI_DIR).with_suffix("").as_posix(), path.read_text(encoding="utf-8"))
    ]
    assert found == [], "\n".join(found)


def test_every_allowed_import_is_still_made() -> None:
    """A stale allow-list entry would let a later import through unseen."""
    for (name, module), reason in ALLOWED.items():
        assert reason
        made = {m for m, _ in imported_modules((CLI_DIR / f"{name}.py").read_text(encoding="utf-8"))}
        assert module in made, (name, module)


def test_the_check_sees_function_level_and_aliased_imports_but_not_typing_only_ones() -> None:
    source = textwrap.dedent(
        """
        from typing import TYPE_CHECKING
        import crsbench.probes.grid as grid
        from crsbench.bench import Bench
        if TYPE_CHECKING:
            from crsbench.pipeline.adapt import AdaptResult
        def command():
            from crsbench.warehouse import panels
            from crsbench.features.registry import list_encoders
        """
    )
    assert leaks("commands/example", source) == [
        "crsbench/cli/commands/example.py:3 imports crsbench.probes.grid",
        "crsbench/cli/commands/example.py:8 imports crsbench.warehouse",
        "crsbench/cli/commands/example.py:8 imports crsbench.warehouse.panels",
        "crsbench/cli/commands/example.py:9 imports crsbench.features.registry",
        "crsbench/cli/commands/example.py:9 imports crsbench.features.registry.list_encoders",
    ]
