"""The `crsbench` command line: a thin layer over the stages.

Exit codes: 0 ok, 1 user error (one-line message), 2 internal error. Each command
group lives in its own module under `crsbench/cli/commands/` that registers onto `app`
(`crsbench.cli.app`); `crsbench.cli.lazy` imports a group only when one of its commands runs.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Annotated, TextIO

import typer

from crsbench.cli.app import DbOption, app
from crsbench.cli.commands import warehouse as _warehouse_first  # noqa: F401  (listed first in --help)
from crsbench.cli.output import console
from crsbench.core import EXIT_BUG, EXIT_USER, CrsbenchError

__all__ = ["DbOption", "app", "main"]


def _warn_one_line(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    console.err(f"warning: {message}")


GLOBAL_FLAGS = ("--json", "--quiet", "-q")


def hoist_global_flags(argv: list[str]) -> list[str]:
    """`argv` with --json/--quiet moved before the subcommand, so they work after it too.

    Tokens after a `--` separator are arguments, never flags, and stay where they are.
    """
    end = argv.index("--") if "--" in argv else len(argv)
    flags = [a for a in argv[:end] if a in GLOBAL_FLAGS]
    return [*flags, *[a for a in argv[:end] if a not in GLOBAL_FLAGS], *argv[end:]]


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point; returns the exit status (0 ok, 1 user error, 2 internal)."""
    argv = hoist_global_flags(list(sys.argv[1:] if argv is None else argv))
    # typer >= 0.24 vendors click: its exceptions are typer.Exit / typer.Abort /
    # typer.exceptions.TyperException (usage errors), not click's.
    from typer.exceptions import TyperException

    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warn_one_line
            # Not standalone, click returns a command's `typer.Exit` code instead of raising it.
            result = app(args=argv, prog_name="crsbench", standalone_mode=False)
    except CrsbenchError as exc:
        console.fail(f"error: {exc}", exc.exit_code)
        return exc.exit_code
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        console.fail("aborted", EXIT_USER)
        return EXIT_USER
    except TyperException as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":
            console.err(exc.format_message())  # the help text itself
            return 1
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        console.fail(f"error: {exc.format_message()}{hint}", 1)
        return 1
    except Exception as exc:  # last-resort handler for the CLI
        if os.environ.get("CRSBENCH_DEBUG"):
            raise
        from crsbench.cli.faults import user_fault

        fault = user_fault(exc)  # a full disk, a file-size limit, a truncated Parquet file, ...
        if fault is not None:
            console.fail(f"error: {fault}", EXIT_USER)
            return EXIT_USER
        console.fail(f"internal error: {type(exc).__name__}: {exc} (set CRSBENCH_DEBUG=1 for the traceback)", EXIT_BUG)
        return EXIT_BUG
    return result if isinstance(result, int) else 0


def _print_version(value: bool) -> None:
    if value:
        from crsbench.core import __version__

        sys.stdout.write(f"crsbench {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _global_options(
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print nothing but errors.")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document instead of tables.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Print the crsbench version and exit."),
    ] = False,
) -> None:
    """Feature store and analysis warehouse for choosing medical image encoders (CRS-Bench)."""
    console.configure(quiet=quiet, json_mode=json_out)
