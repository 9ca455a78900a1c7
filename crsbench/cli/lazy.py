"""Lazy command loading: `crsbench --help` lists every command without importing any of them.

Each command module imports its stage (torch, duckdb, pandas, ...) when it is imported, which
takes seconds. The command list is read from the sources of `crsbench/cli/commands/*.py` instead (their
`@app.command(...)` functions and `app.add_typer(...)` groups, with the help they declare), and a
command's module is imported only when that command runs or its own --help is asked for.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
from pathlib import Path
from typing import TYPE_CHECKING, cast

from typer.core import TyperGroup

if TYPE_CHECKING:
    # typer vendors its own copy of click; TyperGroup's methods are typed with that copy.
    from typer import _click

_COMMANDS = Path(__file__).parent / "commands"


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _keyword(call: ast.Call, name: str) -> str | None:
    return next((_literal(k.value) for k in call.keywords if k.arg == name), None)


def _first_paragraph(text: str | None) -> str:
    text = inspect.cleandoc(text or "")
    return " ".join(text.split("\n\n", 1)[0].split())


def _scan(path: Path) -> dict[str, str]:
    """{command name: one-line help} of the commands and groups `path` adds to `app`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typers: dict[str, str] = {}
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and getattr(node.value.func, "attr", None) == "Typer"
            and isinstance(node.targets[0], ast.Name)
        ):
            typers[node.targets[0].id] = _keyword(node.value, "help") or ""
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_typer"
            and getattr(node.func.value, "id", None) == "app"
            and node.args
        ):
            name = _keyword(node, "name")
            if name is not None:
                found[name] = _first_paragraph(typers.get(getattr(node.args[0], "id", ""), ""))
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if (
                    isinstance(deco, ast.Call)
                    and isinstance(deco.func, ast.Attribute)
                    and deco.func.attr == "command"
                    and getattr(deco.func.value, "id", None) == "app"
                ):
                    name = _literal(deco.args[0]) if deco.args else None
                    name = name or _keyword(deco, "name") or node.name.replace("_", "-")
                    found[name] = _first_paragraph(_keyword(deco, "help") or ast.get_docstring(node))
    return found


@functools.cache
def commands() -> dict[str, tuple[str, str]]:
    """{command name: (module that registers it, one-line help)}, in module then source order."""
    table: dict[str, tuple[str, str]] = {}
    for path in sorted(_COMMANDS.glob("*.py")):
        for name, help_line in _scan(path).items():
            table.setdefault(name, (f"crsbench.cli.commands.{path.stem}", help_line))
    return table


class LazyGroup(TyperGroup):
    """A Typer group whose commands from `COMMANDS` are imported on first use."""

    def list_commands(self, ctx: _click.Context) -> list[str]:
        names = list(self.commands)
        return names + [name for name in commands() if name not in self.commands]

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        command = self.commands.get(cmd_name)
        if command is not None or cmd_name not in commands():
            return command
        # Listing for the help page: a stand-in carrying the one-line help, nothing imported.
        help_line = commands()[cmd_name][1]
        # Only its name and help are read, so a plain click.Command serves for typer's copy
        # (imported here: typer runs on its own copy, so a command that runs never needs click).
        import click

        return cast("_click.Command", click.Command(cmd_name, help=help_line, short_help=help_line))

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        if args and args[0] in commands() and args[0] not in self.commands:
            self.load(args[0])
        return super().resolve_command(ctx, args)

    def load(self, name: str) -> _click.Command:
        """Import the module of command `name` and add the command it registers."""
        import typer.main

        # The module registers onto the shared `app` it imports from crsbench.cli.app (the name
        # `_scan` reads); taking it from there keeps this module below cli_app, never both ways.
        module = importlib.import_module(commands()[name][0])
        group = typer.main.get_group(module.app)
        for command_name, command in group.commands.items():
            self.commands.setdefault(command_name, command)
        return self.commands[name]


def load_all() -> None:
    """Import every command module (for tests and tools that inspect the whole CLI)."""
    for module in dict.fromkeys(module for module, _ in commands().values()):
        importlib.import_module(module)
