"""Every --help renders its text literally: no option's or command's help loses characters to
markup (`[encoder.<id>]` once vanished from `extract --help`)."""

from __future__ import annotations

import contextlib
import io
import re
from typing import Any

import pytest

from crsbench.cli import main
from crsbench.cli.app import app


def _words(text: str) -> str:
    # click wraps at hyphens too ("mimic-" / "cxr"): join those back
    return re.sub(r"-\s+", "-", " ".join(text.split()))


def _commands() -> list[tuple[tuple[str, ...], Any]]:
    """Every leaf command with its path (typer vendors its own click: groups are duck-typed)."""
    import typer.main

    root = typer.main.get_command(app)
    out: list[tuple[tuple[str, ...], Any]] = []

    def walk(group: Any, path: tuple[str, ...]) -> None:
        ctx = type(root.context_class(root))(group, info_name="crsbench")
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None, name
            if hasattr(command, "list_commands"):
                walk(command, (*path, name))
            else:
                out.append(((*path, name), command))

    walk(root, ())
    return out


def _help(path: tuple[str, ...]) -> str:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main([*path, "--help"]) == 0
    return out.getvalue()


def test_every_help_text_renders_literally():
    commands = _commands()
    assert len(commands) > 20
    for path, command in commands:
        shown = _words(_help(path))
        texts = [p.help for p in command.params if getattr(p, "help", None)]
        texts.append((command.help or "").split("\n\n")[0])
        for text in texts:
            assert _words(text) in shown, (path, text)


@pytest.mark.parametrize("literal", ["[encoder.<id>]"])
def test_extract_help_shows_bracketed_text(literal):
    assert literal in _help(("extract",))
