"""A sweep's batches on the team warehouse: each one DuckLake commit, whole or not at all.

On the lone file a batch is a set of Parquet parts renamed into place (`parts.append_run_parts`)
and folded in later. On the team warehouse the same tables (`runs_compacted`, `predictions_compacted`,
`coefficients_compacted`, `batches_compacted`) receive the batch in one transaction, which DuckLake
commits atomically in its catalog: a writer killed mid-batch leaves nothing visible, and readers on
other machines see the batch as soon as it commits. The commit carries the message
`probe batch <id>` (`crsbench warehouse history`).
"""

from __future__ import annotations

import duckdb
import pandas as pd
import pyarrow as pa

from crsbench.warehouse import lake
from crsbench.warehouse.parts import conform, new_part_name


class LakeSink:
    """Commits a sweep's batches to the team warehouse over one connection of its own (opened at the
    first batch), so the sweep holds no warehouse object between batches."""

    def __init__(self, locator: lake.LakeLocator) -> None:
        self.locator = locator
        self._con: duckdb.DuckDBPyConnection | None = None

    def __call__(
        self,
        runs: pd.DataFrame | pa.Table,
        predictions: pd.DataFrame | pa.Table | None = None,
        coefficients: pd.DataFrame | pa.Table | None = None,
    ) -> str:
        from crsbench.warehouse.provenance import batch_record
        from crsbench.warehouse.schema import PART_SCHEMAS

        batch = new_part_name()
        tables: dict[str, pa.Table] = {"batches": batch_record(batch)}
        if predictions is not None:
            tables["predictions"] = conform(predictions, PART_SCHEMAS["predictions"], "predictions")
        if coefficients is not None and len(coefficients):
            tables["coefficients"] = conform(coefficients, PART_SCHEMAS["coefficients"], "coefficients")
        tables["runs"] = conform(runs, PART_SCHEMAS["runs"], "runs")
        commit_batch(self._connection(), batch, tables)
        return batch

    def _connection(self) -> duckdb.DuckDBPyConnection:
        if self._con is None:
            self._con = lake.connect(self.locator, read_only=False)
        return self._con

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def commit_batch(con: duckdb.DuckDBPyConnection, batch: str, tables: dict[str, pa.Table]) -> None:
    """Insert one batch's tables (kind -> rows in the part schema) into the `<kind>_compacted` tables,
    with `part` = the batch id, as one DuckLake commit."""
    con.execute("begin transaction")
    try:
        con.execute("call lake.set_commit_message('crsbench', ?)", [f"probe batch {batch}"])
        for kind, table in tables.items():
            name = f"crsbench_batch_{kind}"
            con.register(name, table)
            try:
                con.execute(f"insert into {kind}_compacted by name select *, ? as part from {name}", [batch])
            finally:
                con.unregister(name)
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")


def merge_files(con: duckdb.DuckDBPyConnection) -> int:
    """Move the rows DuckLake keeps inline in the catalog (small inserts: a panel, an anchor set, a batch's
    provenance row) into Parquet files, then merge each table's small files (one per committed batch)
    into larger ones: a query then reads a few local files instead of hundreds, and no row through
    PostgreSQL. Earlier snapshots keep the files and rows they name, so `leaderboard --as-published` and
    `warehouse snapshot --at` read as before. Returns how many files were merged."""
    # Two commits: DuckLake commits either changes (the flush) or a compaction (the merge), not both.
    _with_message(
        con, "warehouse compact: inline rows to files", f"call ducklake_flush_inlined_data('{lake.LAKE_NAME}')"
    )
    rows = _with_message(
        con, "warehouse compact: batch files merged", f"call ducklake_merge_adjacent_files('{lake.LAKE_NAME}')"
    )
    return sum(int(str(r[2])) for r in rows if len(r) > 2 and r[2] is not None)


def _with_message(con: duckdb.DuckDBPyConnection, message: str, statement: str) -> list[tuple[object, ...]]:
    con.execute("begin transaction")
    try:
        con.execute(f"call {lake.LAKE_NAME}.set_commit_message('crsbench', ?)", [message])
        rows = con.execute(statement).fetchall()
    except BaseException:
        con.execute("rollback")
        raise
    con.execute("commit")
    return rows
