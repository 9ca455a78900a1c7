"""The data dictionary inside the warehouse file.

Every table, view, macro and column carries a DuckDB COMMENT saying what it is, its unit or
range, which way is better, and the docs/METHODS.md section that defines it. Views and macros
take theirs from their own `sql/` file; tables and the Parquet-part views take theirs from
their declarations (`crsbench.warehouse.schema`, `crsbench.core.schema`), applied on every
read-write open by `apply_comments`. `entries` reads the dictionary back out of any
warehouse file (`crsbench describe`, docs/DATA_DICTIONARY.md), so what a user reads is what
the file says.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Collection, Iterator

import duckdb

from crsbench.core import CrsbenchError
from crsbench.core.schema import ObjectKind, Schema
from crsbench.warehouse import lake
from crsbench.warehouse.grid import IN_GRID, RUNS_GRID_DOC
from crsbench.warehouse.parts import one_row
from crsbench.warehouse.schema import PARTS, SCHEMA_INFO, TABLES
from crsbench.warehouse.schema_ledger import EXTRA_TABLES, PART


def declared_objects() -> Iterator[tuple[ObjectKind, Schema]]:
    """(kind, declaration) of every object whose comments come from Python declarations."""
    for table in (*TABLES, SCHEMA_INFO, *EXTRA_TABLES):
        yield "table", table
    for kind, declare in PARTS.items():
        schema = declare()
        with_part = schema.with_columns([PART])
        yield "view", with_part if kind == "batches" else schema
        yield (
            "table",
            Schema(
                f"{kind}_compacted",
                f"The `{kind}` rows compaction folded into the "
                f"file (so the file alone answers every view). " + schema.doc,
                with_part.columns,
            ),
        )
        yield (
            "view",
            Schema(
                f"{kind}_parts",
                f"Every row of the `{kind}` Parquet parts beside the file, with its part name. " + schema.doc,
                with_part.columns,
            ),
        )
        yield (
            "view",
            Schema(
                f"{kind}_pending", f"The `{kind}` rows of the parts not yet compacted. " + schema.doc, with_part.columns
            ),
        )
        if kind == "runs":
            yield "view", Schema("runs_grid", RUNS_GRID_DOC, (*schema.columns, IN_GRID))
        if kind != "batches":  # retiring applies to run records and their predictions
            yield (
                "view",
                Schema(f"{kind}_all", f"Every `{kind}` row, retired fits included. " + schema.doc, schema.columns),
            )
            yield (
                "view",
                Schema(
                    f"retired_{kind}",
                    f"The `{kind}` rows of retired fits (table retired_fits), kept for the record. " + schema.doc,
                    schema.columns,
                ),
            )


def comment_statements(con: duckdb.DuckDBPyConnection, only: Collection[str] | None = None) -> list[str]:
    """The COMMENT statements `apply_comments` runs (for the objects and columns the file has now)."""
    columns: dict[str, set[str]] = {}
    for table, column in con.execute(
        f"select table_name, column_name from duckdb_columns() where {_IN_FILE}"
    ).fetchall():
        columns.setdefault(table, set()).add(column)
    catalog = one_row(con.execute("select current_database()").fetchone())[0]
    # DuckLake stores no comment on a view's column (warehouse/lake.py): there, views keep their own.
    views_columns = not lake.on_lake(con)
    return [
        statement
        for kind, schema in declared_objects()
        if schema.name in columns and (only is None or schema.name in only)
        for statement in schema.comment_sql(
            kind, sorted(columns[schema.name]) if kind == "table" or views_columns else [], catalog
        )
    ]


def apply_comments(con: duckdb.DuckDBPyConnection, only: Collection[str] | None = None) -> None:
    """COMMENT ON every declared table/view (or those named in `only`) and each of its columns
    present in the file. Re-creating a view drops its comments, so whoever re-creates one calls this."""
    for statement in comment_statements(con, only):
        con.execute(statement)


@dataclasses.dataclass(frozen=True)
class Field:
    """A column of a table or view, or a parameter of a macro."""

    name: str
    type: str
    comment: str | None


@dataclasses.dataclass(frozen=True)
class Entry:
    """One object of the dictionary: a table, a view, a macro or a table macro."""

    name: str
    kind: str
    comment: str | None
    fields: tuple[Field, ...]


# Objects persisted in the warehouse file itself (not temporary views, not attached databases).
_IN_FILE = "database_name = current_database() and schema_name = 'main' and not internal"
_OBJECTS_SQL = f"""
    select table_name as name, 'table' as kind, comment from duckdb_tables() where {_IN_FILE}
    union all
    select view_name, 'view', comment from duckdb_views() where {_IN_FILE}
    union all
    select distinct function_name,
           case function_type when 'table_macro' then 'table macro' else 'macro' end, comment
    from duckdb_functions()
    where {_IN_FILE} and function_type in ('macro', 'table_macro')
    order by name
"""
_COLUMNS_SQL = f"""
    select table_name, column_name, data_type, comment from duckdb_columns() where {_IN_FILE}
    order by table_name, column_index
"""
_PARAMETERS_SQL = f"""
    select function_name, parameters from duckdb_functions()
    where {_IN_FILE} and function_type in ('macro', 'table_macro')
"""


def entries(con: duckdb.DuckDBPyConnection) -> list[Entry]:
    """Every table, view and macro of the file, by name, with its comment and its columns
    (tables, views) or parameters (macros)."""
    columns: dict[str, list[Field]] = {}
    for table, name, type_, comment in con.execute(_COLUMNS_SQL).fetchall():
        columns.setdefault(table, []).append(Field(name, type_, comment))
    parameters = {
        name: tuple(Field(p, "", None) for p in params) for name, params in con.execute(_PARAMETERS_SQL).fetchall()
    }
    return [
        Entry(name, kind, comment, tuple(columns.get(name, ())) if "macro" not in kind else parameters.get(name, ()))
        for name, kind, comment in con.execute(_OBJECTS_SQL).fetchall()
    ]


def describe(con: duckdb.DuckDBPyConnection, name: str | None = None) -> list[Entry]:
    """The whole dictionary, or the one object called `name` (unknown: CrsbenchError with the
    closest names)."""
    items = entries(con)
    if name is None:
        return items
    found = [e for e in items if e.name == name]
    if not found:
        close = difflib.get_close_matches(name, [e.name for e in items], n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise CrsbenchError(f"no table, view or macro named {name!r} in the warehouse{hint}")
    return found


def uncommented(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Objects and columns without a comment, as 'name' or 'name.column' (empty = complete)."""
    missing: list[str] = []
    for entry in entries(con):
        if not entry.comment:
            missing.append(entry.name)
        if "macro" not in entry.kind:
            missing += [f"{entry.name}.{f.name}" for f in entry.fields if not f.comment]
    return missing


def render_markdown(items: list[Entry], title: str = "Data dictionary") -> str:
    """The dictionary as Markdown: an index, then one section per object with its columns."""
    out = [
        f"# {title}",
        "",
        "Generated from the COMMENTs inside the warehouse file by "
        "`python scripts/data_dictionary.py`; do not edit by hand. In any warehouse, "
        "`crsbench describe [NAME]` prints the same text, and plain DuckDB shows it with "
        "`select * from duckdb_columns()` (column `comment`).",
        "",
        "| object | kind | what it is |",
        "|---|---|---|",
    ]
    out += [f"| [`{e.name}`](#{e.name}) | {e.kind} | {_cell(e.comment)} |" for e in items]
    for e in items:
        out += ["", f"## {e.name}", "", f"*{e.kind}* — {e.comment or ''}", ""]
        if "macro" in e.kind:
            out.append(
                "Parameters: " + ", ".join(f"`{f.name}`" for f in e.fields) + "." if e.fields else "No parameters."
            )
            continue
        out += ["| column | type | meaning |", "|---|---|---|"]
        out += [f"| `{f.name}` | {f.type} | {_cell(f.comment)} |" for f in e.fields]
    return "\n".join(out) + "\n"


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")
