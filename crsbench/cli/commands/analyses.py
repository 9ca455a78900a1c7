"""`crsbench analyze NAME`: run a registered analysis and store its tables in the warehouse."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Annotated, Any

import pandas as pd
import typer
from rich.markup import escape

from crsbench.analyses import AnalysisResult, Param, analyses, get_analysis, table_name
from crsbench.bench import Bench
from crsbench.cli.app import DbOption, app
from crsbench.cli.output import console, emit, print_frame, progress
from crsbench.core import CrsbenchError, default_db_path


def parse_settings(settings: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` pairs; VALUE is read as JSON when it parses (numbers, lists), else as text."""
    out: dict[str, Any] = {}
    for item in settings:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CrsbenchError(f"--set expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def _registry_frame() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "analysis": s.name,
                "params": ", ".join(f"{k}={v}" for k, v in s.defaults.items()),
                "description": s.description,
            }
            for s in analyses().values()
        ],
        columns=["analysis", "params", "description"],
    )


def _help_of(users: list[tuple[str, Param]]) -> str:
    """One option's help from every analysis that declares it: each distinct text once, followed by
    the analyses it describes."""
    by_text: dict[str, list[str]] = {}
    for name, param in users:
        by_text.setdefault(param.help.rstrip("."), []).append(name)
    return " ".join(f"{text} ({', '.join(names)})." for text, names in by_text.items())


def _option(name: str, users: list[tuple[str, Param]]) -> inspect.Parameter:
    """The `crsbench analyze` option of a declared param (None when not given: the analysis's default)."""
    param = users[0][1]
    help_text = _help_of(users)
    if param.type is bool:
        flag = param.cli_flag
        option = typer.Option(f"{flag}/--no-{flag.removeprefix('--')}", help=help_text)
        annotation: Any = Annotated[bool | None, option]
    else:
        names = [param.cli_flag, *([param.short] if param.short else [])]
        value = list[str] if param.repeatable else param.type
        annotation = Annotated[value | None, typer.Option(*names, help=help_text)]
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)


def declared_options() -> list[inspect.Parameter]:
    """An option per param any registered analysis declares (plugins included), in registry order."""
    users: dict[str, list[tuple[str, Param]]] = {}
    for spec in analyses().values():
        for param in spec.params.values():
            users.setdefault(param.name, []).append((spec.name, param))
    return [_option(name, declared) for name, declared in users.items()]


def with_declared_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command`'s signature with its `**declared` replaced by the analyses' declared options, so the
    CLI offers (and --help explains) every param an analysis declares with no edit here."""
    fixed = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.kind is not p.VAR_KEYWORD]
    first, rest = fixed[:1], [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in fixed[1:]]
    command.__signature__ = inspect.Signature([*first, *declared_options(), *rest])  # type: ignore[attr-defined]
    return command


@app.command("analyze")
@with_declared_options
def analyze(
    name: Annotated[str, typer.Argument(help="Analysis to run (e1, e2, ...), or 'list' to show them all.")],
    settings: Annotated[
        list[str] | None,
        typer.Option(
            "--set", help="Other analysis params as KEY=VALUE (repeatable), e.g. --set methods=temperature,isotonic."
        ),
    ] = None,
    replace_all: Annotated[
        bool,
        typer.Option(
            "--replace-all",
            help="With -d: replace the stored tables whole (default: replace only that dataset's rows, keep the rest).",
        ),
    ] = False,
    db: DbOption = default_db_path(),
    **declared: Any,
) -> None:
    """Run an analysis on the warehouse; its outputs become tables analysis_NAME_*."""
    if name == "list":
        print_frame(_registry_frame(), title="analyses", key="analyses")
        return
    given = {key: (value or None) if isinstance(value, list) else value for key, value in declared.items()}
    spec = get_analysis(name)
    # An option another analysis declares, given to this one, is an error; one left unset is not.
    params = {key: value for key, value in given.items() if key in spec.params or value is not None}
    analyze_and_render(Bench(db), name, {**params, **parse_settings(settings or [])}, replace_all=replace_all)


def analyze_and_render(bench: Bench, name: str, params: dict[str, Any], *, replace_all: bool = False) -> AnalysisResult:
    """Run one analysis under a progress bar and print its summary, notes and stored tables."""
    spec = get_analysis(name)
    with progress() as bar:
        # Most analyses report no inner steps: the bar then shows that one is running and for how long.
        bar(f"analysis {name}", 0, 1)
        result = bench.analyze(name, replace_all=replace_all, progress=bar, **params)
        bar(f"analysis {name}", 1, 1)
    render_analysis(name, spec.description, result)
    return result


def render_analysis(name: str, description: str, result: AnalysisResult) -> None:
    tables = [table_name(name, part) for part in [*result.tables, "summary"]]
    if not console.json_mode:
        print_frame(result.summary, title=f"{name}: {description}")
    human = "\n".join([*(escape(n) for n in result.notes), f"stored: {', '.join(tables)}"])
    emit({"analysis": name, "tables": tables, "notes": result.notes, "summary": result.summary}, human)
