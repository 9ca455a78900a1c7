"""Evaluating the score inputs once per command (`Warehouse.snapshot`).

A command that asks several questions of the same scores (the leaderboard: board, rank agreement,
intervals, freshness, gaps) would otherwise evaluate the declared-grid joins under them once per
question. For the length of a `with` block each named view becomes a temporary table of the same
name: DuckDB resolves a name to the temporary schema first, so every query in the block, and every
persisted view that reads the name, reads the table instead of re-evaluating the view. The answers
are the views' own, as the runs stood when the block began.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import duckdb

# The views the score and freshness checks read, in dependency order: the runs incomplete cells lack,
# the axes per cell and the run digests of the stored results.
FRESHNESS_INPUTS = ("grid_missing", "encoder_run_digest")
SCORE_INPUTS = ("grid_missing", "axes_cell", "encoder_run_digest")


@contextmanager
def snapshot_views(con: duckdb.DuckDBPyConnection, views: Sequence[str] = SCORE_INPUTS) -> Iterator[None]:
    """Evaluate `views` once (in the order given) for the block; dropped at its end. Write no run,
    grid or retirement inside the block. A view the file lacks (an older warehouse opened
    read-only) is skipped."""
    present = {
        r[0]
        for r in con.execute(
            "select view_name from duckdb_views() where database_name = current_database() and schema_name = 'main'"
        ).fetchall()
    }
    taken = [name for name in views if name in present]
    try:
        for name in taken:
            con.execute(f"create or replace temp table {name} as select * from main.{name}")
        yield
    finally:
        for name in reversed(taken):
            con.execute(f"drop table if exists temp.{name}")
