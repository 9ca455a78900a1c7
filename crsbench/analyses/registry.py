"""The analysis registry and the one writer every analysis result goes through.

An analysis is a function `(wh, params) -> AnalysisResult`, registered by name with
`@register_analysis(name, params={...defaults})`. Running one (`run_analysis`) merges
the caller's params over the declared defaults (an unknown param is a user error),
calls the function and stores every output frame as the warehouse table
`analysis_<name>_<part>` (plus `analysis_<name>_summary`), all in one transaction,
with one row per table in the `analyses` table.
"""

from __future__ import annotations

import dataclasses
import json
import pkgutil
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from crsbench.core import CrsbenchError, Registry, __version__
from crsbench.core.schema import sql_literal
from crsbench.warehouse.connection import Warehouse

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RESERVED = {"list", "all"}


@dataclasses.dataclass
class AnalysisResult:
    """What an analysis returns: named output frames, a summary frame and notes.

    `tables` maps a part name (lower-case identifier) to its frame; it is stored as
    `analysis_<name>_<part>`. `summary` is the short table the CLI prints (also stored,
    as part `summary`). `notes` are one-line remarks (skipped cells, missing inputs).
    """

    tables: dict[str, pd.DataFrame]
    summary: pd.DataFrame
    notes: list[str] = dataclasses.field(default_factory=list)


AnalysisFn = Callable[[Warehouse, Mapping[str, Any]], AnalysisResult]


@dataclasses.dataclass(frozen=True)
class AnalysisSpec:
    name: str
    fn: AnalysisFn
    description: str
    params: Mapping[str, Any]


def _spec(name: str, fn: AnalysisFn, *, params: Mapping[str, Any] | None = None,
          description: str | None = None) -> AnalysisSpec:
    doc = (fn.__doc__ or "").strip().splitlines()
    return AnalysisSpec(name, fn, description or (doc[0] if doc else ""), dict(params or {}))


# Every module of this package registers its analyses on import; discovering them (the
# builtins) means adding an analysis never touches a shared list.
ANALYSES: Registry[AnalysisSpec] = Registry(
    "analysis", make=_spec, entry_point_group="crsbench.analyses",
    builtins=tuple(f"crsbench.analyses.{m.name}" for m in pkgutil.iter_modules([str(Path(__file__).parent)])))


def register_analysis(name: str, *, params: Mapping[str, Any] | None = None,
                      description: str | None = None) -> Callable[[AnalysisFn], AnalysisFn]:
    """Register `fn` as analysis `name`; `params` declares every accepted param and its default."""
    if not _NAME.match(name) or name in _RESERVED:
        raise ValueError(f"invalid analysis name {name!r}")
    return ANALYSES.register(name, params=params, description=description)


def analyses() -> dict[str, AnalysisSpec]:
    """All registered analyses by name, sorted."""
    return dict(sorted(ANALYSES.items()))


def get_analysis(name: str) -> AnalysisSpec:
    return ANALYSES.get(name)


def resolve_params(spec: AnalysisSpec, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """Declared defaults overlaid with the given params (None means 'use the default')."""
    given = {k: v for k, v in (params or {}).items() if v is not None}
    unknown = sorted(set(given) - set(spec.params))
    if unknown:
        accepted = ", ".join(spec.params) or "none"
        raise CrsbenchError(
            f"analysis {spec.name} does not take {', '.join(unknown)} (accepted params: {accepted})"
        )
    return {**spec.params, **given}


def table_name(analysis: str, part: str) -> str:
    name = f"analysis_{analysis}_{part}"
    if not _NAME.match(part) or not _NAME.match(name):
        raise ValueError(f"invalid output part {part!r} of analysis {analysis!r}")
    return name


def store_result(wh: Warehouse, name: str, result: AnalysisResult,
                 params: Mapping[str, Any]) -> list[str]:
    """Write every output frame as `analysis_<name>_<part>` in one transaction; returns the table names.

    Tables an earlier run of the same analysis wrote but this run did not are dropped,
    so the `analyses` table always describes exactly what is there.
    """
    frames = {**result.tables, "summary": result.summary}
    names = {table_name(name, part): frame for part, frame in frames.items()}
    params_json = json.dumps(dict(params), sort_keys=True, default=str)
    with wh.transaction() as con:
        previous = [r[0] for r in con.execute(
            "select table_name from analyses where analysis = ?", [name]).fetchall()]
        for stale in sorted(set(previous) - set(names)):
            # Identifiers cannot be bound; every stored name passed table_name()'s check.
            if _NAME.match(stale):
                con.execute(f'drop table if exists "{stale}"')
        con.execute("delete from analyses where analysis = ?", [name])
        for table, frame in names.items():
            view = f"_analysis_frame_{table}"
            con.register(view, _storable(frame))
            try:
                con.execute(f'create or replace table "{table}" as select * from "{view}"')
            finally:
                con.unregister(view)
            con.execute(
                "insert into analyses values (?, ?, ?, ?, current_timestamp)",
                [name, table, params_json, __version__],
            )
            # The data dictionary inside the file (crsbench describe); COMMENT takes no parameters.
            part = table.removeprefix(f"analysis_{name}_")
            doc = (f"Output '{part}' of analysis {name} (crsbench analyze {name}): {get_analysis(name).description} "
                   f"Parameters and code version: table analyses. docs/METHODS.md §10-§12.")
            con.execute(f'comment on table "{table}" is {sql_literal(doc)}')
    return list(names)


def _storable(frame: pd.DataFrame) -> pd.DataFrame:
    # An all-empty frame has object columns DuckDB cannot type; store them as text.
    out = frame.reset_index(drop=True).copy()
    for col in out.columns:
        if out[col].dtype == object and out[col].isna().all():
            out[col] = out[col].astype("string")
    return out


def run_analysis(wh: Warehouse, name: str, params: Mapping[str, Any] | None = None,
                 store: bool = True) -> AnalysisResult:
    """Run a registered analysis with validated params and (by default) store its tables."""
    spec = get_analysis(name)
    resolved = resolve_params(spec, params)
    result = spec.fn(wh, resolved)
    if store:
        store_result(wh, name, result, resolved)
    return result
