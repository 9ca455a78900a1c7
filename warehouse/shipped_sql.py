"""The SQL objects shipped in `sql/`: listing them in order and applying them to a connection."""

from __future__ import annotations

from importlib import resources

import duckdb

from crsbench.core import crs_constants_sql
from crsbench.warehouse import metrics_seed
from crsbench.warehouse.dictionary import apply_comments

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
    for name, text in sql_files():
        try:
            con.execute(text)
        except duckdb.Error as exc:
            raise RuntimeError(f"sql/{name} failed: {exc}") from exc
    apply_comments(con)
