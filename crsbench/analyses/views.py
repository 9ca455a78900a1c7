"""SQL declarations of analysis tables that have a public view, generated from the analysis registry.

A view users query (e.g. `encoder_agreement`) must exist, empty, before its analysis first runs, so
the warehouse creates its stored table empty and the view over it from a shipped `sql/views/` file.
The warehouse sits below this floor and cannot read the registry, so those files are generated here
(`python scripts/analysis_sql.py`; tests/analyses/test_agreement.py fails when one is stale): the
columns are the part's declared `outputs`, every COMMENT is the one `store_result` writes
(`output_comments`), and only the column types and the view's own description are declared here.

    declare_view("encoder_agreement", analysis="agreement", file="views/270_encoder_agreement.sql",
                 doc="One row per ...", types={"dataset_id": "VARCHAR", ...})
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from crsbench.analyses.registry import ANALYSES, output_comments, table_name
from crsbench.core import Registry
from crsbench.core.schema import sql_identifier, sql_literal


@dataclasses.dataclass(frozen=True)
class AnalysisView:
    """A public view over output part `name` of `analysis` (view and part share the name)."""

    name: str
    analysis: str
    file: str  # path under sql/, e.g. "views/270_encoder_agreement.sql"; its number orders it among the views
    doc: str  # the view's COMMENT
    types: Mapping[str, str]  # column -> DuckDB type, for every column of the part (may hold more)


VIEWS: Registry[AnalysisView] = Registry("analysis view")


def declare_view(name: str, *, analysis: str, file: str, doc: str, types: Mapping[str, str]) -> AnalysisView:
    """Declare the public view `name` over part `name` of `analysis`."""
    return VIEWS.add(name, AnalysisView(name, analysis, file, doc, dict(types)))


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
    comments = output_comments(ANALYSES.get(view.analysis), view.name, table, columns)
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


def render(view: AnalysisView) -> str:
    """The text of the view's shipped file."""
    head = (
        f"-- Generated from analysis {view.analysis}'s registration and crsbench/analyses/views.py by\n"
        "-- `python scripts/analysis_sql.py`; do not edit by hand. The empty stored table makes the view\n"
        f"-- exist before `crsbench analyze {view.analysis}` runs; the analysis replaces it with its output.\n"
    )
    return f"{head}{table_sql(view)}\n{view_sql(view)}"


def shipped_files() -> dict[str, str]:
    """Path under sql/ -> text, of every declared view (the analyses loaded first)."""
    ANALYSES.load()
    return {view.file: render(view) for view in VIEWS.values()}
