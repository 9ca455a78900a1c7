"""The SQL objects shipped in `sql/`: listing them in order and applying them to a connection."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from importlib import resources

import duckdb

from crsbench.core import crs_constants_sql
from crsbench.warehouse import lake, metrics_seed
from crsbench.warehouse.dictionary import apply_comments, comment_statements
from crsbench.warehouse.parts import sql_literal

# The one-row view recording what the macros and views of the file were created from (`applied`).
DIGEST_VIEW = "shipped_sql"
DIGEST_DOC = (
    "One row: a digest of the SQL crsbench created this file's macros and views from (the shipped "
    "sql/ files, the part views, the declared comments) and of the tables and objects the file held "
    "then. A read-write open re-creates every macro and view only when it differs, e.g. after an "
    "upgrade of crsbench, a migration or a dropped view. docs/METHODS.md §4.2."
)
# The name sql_files() gives the macros generated from crsbench.core (no such file is shipped).
CONSTANTS_FILE = "macros/000_crs_constants.sql"
SQL_FOLDERS = ("macros", "views")
# Macros of earlier releases, before every macro was named fn_*: dropped when the SQL is applied,
# so an upgraded warehouse does not keep a second, stale copy of a definition.
_RETIRED_MACROS = (
    "exact_mean",
    "crs_axes_cell",
    "crs_axes_aggregate",
    "crs_normalise",
    "crs_dominance",
    "crs_scores",
    "crs_scores_weighted",
    "crs_rank_agreement",
    "crs_anchors",
    "crs_panel_candidates",
)


def sql_files() -> list[tuple[str, str]]:
    """The SQL objects shipped in `sql/`: every macro, then every view, each folder in file-name
    order, as (path relative to sql/, text). Macros come first because views call them."""
    root = resources.files("crsbench.sql")
    files: list[tuple[str, str]] = []
    for folder in SQL_FOLDERS:
        entries = sorted((e for e in (root / folder).iterdir() if e.name.endswith(".sql")), key=lambda e: e.name)
        files += [(f"{folder}/{e.name}", e.read_text(encoding="utf-8")) for e in entries]
    # The seed means' metric columns are generated from the metric registry (its marker line).
    files = [(name, metrics_seed.render(text) if name == metrics_seed.FILE else text) for name, text in files]
    # First of all: the constant macros generated from crsbench.core (the CRS weights, the
    # encoder-key format), so the SQL reads those from their one home rather than a copy.
    return [(CONSTANTS_FILE, crs_constants_sql()), *files]


def apply_sql_files(con: duckdb.DuckDBPyConnection) -> None:
    """Drop the retired macros, (re)create every shipped macro and view in order, then COMMENT
    every object (a re-created view loses its comments)."""
    for name in _RETIRED_MACROS:
        con.execute(f"drop macro table if exists {name}")
        con.execute(f"drop macro if exists {name}")
    lake_catalog = lake.on_lake(con)
    for name, text in sql_files():
        try:
            if lake_catalog:  # a team warehouse's DuckLake takes every statement but view columns' comments
                for statement in con.extract_statements(text):
                    if lake.lake_stores(con, statement.query):
                        con.execute(statement.query)
            else:
                con.execute(text)
        except duckdb.Error as exc:
            raise RuntimeError(f"sql/{name} failed: {exc}") from exc
    apply_comments(con)


def shipped_digest(con: duckdb.DuckDBPyConnection, statements: Sequence[str]) -> str:
    """A digest of everything applying the shipped SQL depends on: the `statements` run before it
    (the part views), the sql/ files, the retired macros, the COMMENT statements for the file as it
    is, and every column (with its type), view and macro now in the file with its comment (so a
    migrated table, a dropped view or one re-created by hand with other columns makes it differ).
    Definitions are left out: DuckDB prints a view's or macro's definition differently once the
    file is reopened (e.g. without `AS MATERIALIZED`)."""
    in_file = "database_name = current_database() and schema_name = 'main' and not internal"
    catalog = con.execute(
        f"""select 'column' as kind, table_name, column_name, data_type || ':' || coalesce(comment, '')
            from duckdb_columns() where {in_file} and table_name <> '{DIGEST_VIEW}'
            union all
            select 'view', view_name, null, comment from duckdb_views()
            where {in_file} and view_name <> '{DIGEST_VIEW}'
            union all
            select distinct function_type, function_name, null, comment from duckdb_functions()
            where {in_file} and function_type in ('macro', 'table_macro')
            order by all"""
    ).fetchall()
    digest = hashlib.sha256()
    for part in (
        *statements,
        *(f"{name}\n{text}" for name, text in sql_files()),
        *_RETIRED_MACROS,
        *comment_statements(con),
        *(repr(row) for row in catalog),
    ):
        digest.update(part.encode("utf-8") + b"\0")
    return digest.hexdigest()


def applied_digest(con: duckdb.DuckDBPyConnection) -> str | None:
    """The digest the file recorded when its SQL was last applied (None if never)."""
    present = con.execute(
        "select count(*) from duckdb_views() where database_name = current_database() "
        "and schema_name = 'main' and view_name = ?",
        [DIGEST_VIEW],
    ).fetchone()
    if not present or not present[0]:
        return None
    row = con.execute(f"select digest from main.{DIGEST_VIEW}").fetchone()
    return None if row is None else str(row[0])


def record_digest(con: duckdb.DuckDBPyConnection, statements: Sequence[str]) -> None:
    """Record the digest of the SQL just applied (the view holding it is left out of the digest)."""
    con.execute(
        f"create or replace view main.{DIGEST_VIEW} as select {sql_literal(shipped_digest(con, statements))} as digest"
    )
    con.execute(f"comment on view main.{DIGEST_VIEW} is {sql_literal(DIGEST_DOC)}")
    column = (
        f"comment on column main.{DIGEST_VIEW}.digest is "
        "'SHA-256 (hex) of the shipped SQL and the catalog it was applied to; compared on every "
        "read-write open. docs/METHODS.md §4.2.'"
    )
    if lake.lake_stores(con, column):
        con.execute(column)
