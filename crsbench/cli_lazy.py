"""Lazy command loading: `crsbench --help` lists every command without importing any of them.

Each command module imports its stage (torch, duckdb, pandas, ...) when it is imported, which
takes seconds. The table below names the module that registers each command and the one-line help
shown in the command list; a command's module is imported only when that command runs (or its own
--help is asked for). tests/test_cli_conventions.py keeps the table equal to what the modules register.
"""

from __future__ import annotations

import importlib

import click
from typer.core import TyperGroup

# command name -> (module that registers it, first line of its help)
COMMANDS: dict[str, tuple[str, str]] = {}


def register_lazy(table: dict[str, tuple[str, str]]) -> None:
    COMMANDS.update(table)


class LazyGroup(TyperGroup):
    """A Typer group whose commands from `COMMANDS` are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        names = list(self.commands)
        return names + [name for name in COMMANDS if name not in self.commands]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if command is not None or cmd_name not in COMMANDS:
            return command
        # Listing for the help page: a stand-in carrying the one-line help, nothing imported.
        return click.Command(cmd_name, help=COMMANDS[cmd_name][1], short_help=COMMANDS[cmd_name][1])

    def resolve_command(self, ctx: click.Context, args: list[str]):
        if args and args[0] in COMMANDS and args[0] not in self.commands:
            self.load(args[0])
        return super().resolve_command(ctx, args)

    def load(self, name: str) -> click.Command:
        """Import the module of command `name` and add the command it registers."""
        import typer.main

        from crsbench.cli_app import app

        importlib.import_module(COMMANDS[name][0])
        group = typer.main.get_group(app)
        for command_name, command in group.commands.items():
            self.commands.setdefault(command_name, command)
        return self.commands[name]


def load_all() -> None:
    """Import every command module (for tests and tools that inspect the whole CLI)."""
    for module in dict.fromkeys(module for module, _ in COMMANDS.values()):
        importlib.import_module(module)
