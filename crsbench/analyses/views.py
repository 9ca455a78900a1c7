"""SQL declarations of analysis tables that have a public view, generated from the analysis registry.

A view users query (e.g. `encoder_agreement`) must exist, empty, before its analysis first runs, so
the warehouse creates its stored table empty and the view over it from a shipped `sql/views/` file.
The warehouse sits below this floor and cannot read the registry, so those files are generated here
(`python scripts/analysis_sql.py`; tests/analyses/test_agreement.py fails when one is stale): the
columns are the part's declared `outputs`, every COMMENT is the one `store_result` writes
(`output_comments`), and only the column types and the view's own description are declared here.

    declare_view("encoder_agreement", analysis="agreement", numbers=(270, 273),
                 doc="One row per ... docs/METHODS.md §17.", types={"dataset_id": "VARCHAR", ...})
"""

from __future__ import annotations

import dataclasses
import textwrap
from collections.abc import Mapping

from crsbench.analyses.registry import ANALYSES, output_comments, table_name
from crsbench.core import Registry
from crsbench.core.schema import sql_identifier, sql_literal


@dataclasses.dataclass(frozen=True)
class AnalysisView:
    """A public view over output part `name` of `analysis` (view and part share the name)."""

    name: str
    analysis: str
    numbers: tuple[int, int]  # of the table's and the view's files (sql/views/NNN_<name>.sql: their order)
    doc: str  # the view's COMMENT
    types: Mapping[str, str]  # column -> DuckDB type, for every column of the part (may hold more)


VIEWS: Registry[AnalysisView] = Registry("analysis view")


def declare_view(
    name: str, *, analysis: str, numbers: tuple[int, int], doc: str, types: Mapping[str, str]
) -> AnalysisView:
    """Declare the public view `name` over part `name` of `analysis`; `doc` says what a row is and
    cites its docs/METHODS.md section (the files' opening comment quotes it)."""
    return VIEWS.add(name, AnalysisView(name, analysis, numbers, doc, dict(types)))


def _columns(view: AnalysisView) -> tuple[str, ...]:
    columns = ANALYSES.get(view.analysis).columns(view.name)
    untyped = [c for c in columns if c not in view.types]
    if untyped:
        raise ValueError(f"view {view.name!r} declares no type for column(s) {', '.join(untyped)}")
    return columns


def table_sql(view: AnalysisView) -> str:
    """The empty stored table with the COMMENTs the analysis writes on its output."""
    table = table_name(view.analysis, view.name)
    columns = _columns(view)
    body = ",\n".join(f"    {sql_identifier(c)} {view.types[c]}" for c in columns)
    # The statements store_result runs, with the (checked, lower-case) table name unquoted as in every sql/ file.
    comments = [
        s.replace(sql_identifier(table), table, 1)
        for s in output_comments(ANALYSES.get(view.analysis), view.name, table, columns)
    ]
    return f"create table if not exists {table}(\n{body});\n\n" + "".join(f"{s};\n" for s in comments)


def view_sql(view: AnalysisView) -> str:
    """The view: every declared column cast to its declared type, with the table's column COMMENTs."""
    spec = ANALYSES.get(view.analysis)
    columns = _columns(view)
    # Plain names: table_name() admits only lower-case identifiers (and the view is named as its part).
    name, table = view.name, table_name(view.analysis, view.name)
    select = ",\n       ".join(f"cast({sql_identifier(c)} as {view.types[c]}) as {sql_identifier(c)}" for c in columns)
    lines = [f"create or replace view {name} as\nselect {select}\nfrom {table};\n"]
    lines.append(f"comment on view {name} is {sql_literal(view.doc)};")
    for column in columns:
        doc = spec.column_doc(view.name, column)
        if doc is not None:
            lines.append(f"comment on column {name}.{sql_identifier(column)} is {sql_literal(doc)};")
    return "\n".join(lines) + "\n"


def _head(view: AnalysisView, what: str) -> str:
    text = (
        f"{what} {view.doc} Generated from analysis {view.analysis}'s registration and "
        "crsbench/analyses/views.py by `python scripts/analysis_sql.py`; do not edit by hand."
    )
    return "".join(f"-- {line}\n" for line in textwrap.wrap(text, 100))


def render(view: AnalysisView) -> dict[str, str]:
    """The texts of the view's two shipped files (path under sql/ -> text): the table, then the view."""
    table = table_name(view.analysis, view.name)
    empty = (
        f"Table {table}, declared empty so view {view.name} exists before `crsbench analyze {view.analysis}` "
        "runs (the analysis replaces it with its output). A row of the view:"
    )
    return {
        f"views/{view.numbers[0]:03d}_{table}.sql": _head(view, empty) + table_sql(view),
        f"views/{view.numbers[1]:03d}_{view.name}.sql": _head(view, f"View {view.name}:") + view_sql(view),
    }


def shipped_files() -> dict[str, str]:
    """Path under sql/ -> text, of every declared view's table and view (the analyses loaded first)."""
    ANALYSES.load()
    return {name: text for view in VIEWS.values() for name, text in render(view).items()}
