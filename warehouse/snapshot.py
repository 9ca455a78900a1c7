"""Evaluating the score inputs once per command (`Warehouse.snapshot`), and lean connections.

A command that asks several questions of the same scores (the leaderboard: board, rank agreement,
intervals, freshness, gaps) would otherwise evaluate the declared-grid joins under them once per
question. For the length of a `with` block each named view becomes a temporary table of the same
name: DuckDB resolves a name to the temporary schema first, so every query in the block, and every
persisted view that reads the name, reads the table instead of re-evaluating the view. The answers
are the views' own, as the runs stood when the block began.

A lean connection (`Warehouse.open(..., lean=True)`, the commands that only read a few rows) runs
one DuckDB thread and hands freed memory back to the system at once instead of keeping up to
128 MiB of it for reuse. With the score inputs evaluated first (`inputs_read_by`), a query over the
score views then holds one stage's working memory at a time, not all of them at once: on the demo
warehouse `export crs_encoder_ci` peaks ~40 % lower, with the same rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import duckdb

# The views the score and freshness checks read, in dependency order: the runs incomplete cells lack,
# the axes per cell and the run digests of the stored results.
FRESHNESS_INPUTS = ("grid_missing", "encoder_run_digest")
SCORE_INPUTS = ("grid_missing", "axes_cell", "encoder_run_digest")

# DuckDB settings of a lean connection (their defaults: one thread per core, 128 MiB kept).
LEAN_CONFIG: dict[str, str | int] = {
    "threads": 1,
    "allocator_flush_threshold": "1MB",
    "allocator_bulk_deallocation_flush_threshold": "1MB",
}

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _views(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    rows = con.execute(
        "select view_name, sql from duckdb_views() where database_name = current_database() and schema_name = 'main'"
    ).fetchall()
    return {name: text or "" for name, text in rows}


def inputs_read_by(con: duckdb.DuckDBPyConnection, query: str, views: Sequence[str] = SCORE_INPUTS) -> list[str]:
    """The `views` that `query` reads, directly or through the views it names (found by name in
    the view definitions: a view named in a comment or string counts too, which only costs the
    evaluation), in the order given."""
    definitions = _views(con)
    seen: set[str] = set()
    todo = [w.lower() for w in _WORD.findall(query)]
    lower = {name.lower(): name for name in definitions}
    while todo:
        word = todo.pop()
        name = lower.get(word)
        if name is None or name in seen:
            continue
        seen.add(name)
        todo += [w.lower() for w in _WORD.findall(definitions[name])]
    return [v for v in views if v in seen]


@contextmanager
def snapshot_views(con: duckdb.DuckDBPyConnection, views: Sequence[str] = SCORE_INPUTS) -> Iterator[None]:
    """Evaluate `views` once (in the order given) for the block; dropped at its end. Write no run,
    grid or retirement inside the block. A view the file lacks (an older warehouse opened
    read-only) is skipped."""
    present = set(_views(con)) if views else set()
    taken = [name for name in views if name in present]
    try:
        for name in taken:
            con.execute(f"create or replace temp table {name} as select * from main.{name}")
        yield
    finally:
        for name in reversed(taken):
            con.execute(f"drop table if exists temp.{name}")
