"""`crsbench analyze NAME`: run a registered analysis and store its tables in the warehouse."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pandas as pd
import typer
from rich.markup import escape

from crsbench.analyses import AnalysisResult, analyses, get_analysis, table_name
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


@app.command("analyze")
def analyze(
    name: Annotated[str, typer.Argument(help="Analysis to run (e1, e2, ...), or 'list' to show them all.")],
    panel: Annotated[str | None, typer.Option("--panel", help="Reference panel whose CRS to use.")] = None,
    reference: Annotated[str | None, typer.Option("--reference", help="Reference encoder id (e6).")] = None,
    replicates: Annotated[
        int | None, typer.Option("--replicates", help="Bootstrap replicates (bootstrap; default 1,000, at least 100).")
    ] = None,
    resample: Annotated[
        str | None,
        typer.Option(
            "--resample", help="bootstrap: images+seeds (default), seeds (the paper's paired-seed bootstrap) or images."
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Random seed (bootstrap, stability, insertion, weights).")
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", help="Generative VLM: local folder or cached hub id (e5).")
    ] = None,
    dataset: Annotated[
        str | None,
        typer.Option(
            "--dataset",
            "-d",
            help="Dataset name (e5, agreement, partition, resplit, shortcuts): adds or replaces its rows only.",
        ),
    ] = None,
    encoder: Annotated[
        list[str] | None,
        typer.Option("--encoder", "-e", help="Encoder to include (agreement, partition, resplit; repeatable)."),
    ] = None,
    repeats: Annotated[
        int | None, typer.Option("--repeats", help="Re-drawn train/calib partitions (resplit; at least 2).")
    ] = None,
    key: Annotated[
        list[str] | None,
        typer.Option(
            "--key", help="Metadata key to form subgroups by (subgroups, operating_points; repeatable, default all)."
        ),
    ] = None,
    rule: Annotated[
        list[str] | None,
        typer.Option(
            "--rule",
            help="Threshold rule (operating_points; repeatable): youden, sens90, argmax, youden_ovr, fixed.",
        ),
    ] = None,
    threshold: Annotated[
        float | None,
        typer.Option(
            "--threshold",
            help="Fixed probability threshold, p >= T called positive (operating_points: adds rule fixed).",
        ),
    ] = None,
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
) -> None:
    """Run an analysis on the warehouse; its outputs become tables analysis_NAME_*."""
    if name == "list":
        print_frame(_registry_frame(), title="analyses", key="analyses")
        return
    params = {
        "panel": panel,
        "reference": reference,
        "replicates": replicates,
        "seed": seed,
        "resample": resample,
        "model": model,
        "dataset": dataset,
        "encoders": encoder or None,
        "repeats": repeats,
        "keys": key or None,
        "rules": rule or None,
        "threshold": threshold,
        **parse_settings(settings or []),
    }
    analyze_and_render(Bench(db), name, params, replace_all=replace_all)


def analyze_and_render(bench: Bench, name: str, params: dict[str, Any], *, replace_all: bool = False) -> AnalysisResult:
    """Run one analysis under a progress bar and print its summary, notes and stored tables."""
    spec = get_analysis(name)
    with progress() as bar:
        # Analyses report no inner steps; the bar shows that one is running and for how long.
        bar(f"analysis {name}", 0, 1)
        result = bench.analyze(name, replace_all=replace_all, **params)
        bar(f"analysis {name}", 1, 1)
    render_analysis(name, spec.description, result)
    return result


def render_analysis(name: str, description: str, result: AnalysisResult) -> None:
    tables = [table_name(name, part) for part in [*result.tables, "summary"]]
    if not console.json_mode:
        print_frame(result.summary, title=f"{name}: {description}")
    human = "\n".join([*(escape(n) for n in result.notes), f"stored: {', '.join(tables)}"])
    emit({"analysis": name, "tables": tables, "notes": result.notes, "summary": result.summary}, human)
