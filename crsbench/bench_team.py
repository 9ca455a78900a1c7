"""The team-warehouse half of `crsbench.Bench` (docs/METHODS.md §23, docs/TEAM_WAREHOUSE.md): its
snapshots, a lone-file copy of one, and the lines an analyst's own DuckDB client attaches it with."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from crsbench.warehouse.connection import Warehouse


class Team:
    """Bench's methods over the team warehouse's snapshots (`self.db` is the warehouse)."""

    db: Path

    @property
    def team(self) -> bool:
        """Whether the warehouse is a team warehouse (`--db ducklake:...`) rather than a lone DuckDB file."""
        from crsbench.warehouse.lake import is_lake

        return is_lake(self.db)

    def history(self, limit: int | None = None) -> pd.DataFrame:
        """The team warehouse's snapshots, newest first, with what each changed."""
        from crsbench.warehouse.lake_snapshots import history

        with Warehouse.open(self.db, read_only=True, lean=True) as wh:
            return history(wh, limit)

    def snapshot_to_file(self, out: Path | str, at: int | None = None) -> int:
        """Copy the team warehouse as of snapshot `at` (default: the latest) into the lone DuckDB file
        `out`, which any DuckDB client opens; returns the snapshot copied."""
        from crsbench.core import CrsbenchError
        from crsbench.warehouse.lake import is_lake
        from crsbench.warehouse.lake_snapshots import NEEDS_TEAM, copy_to_file

        if not is_lake(self.db):
            raise CrsbenchError(f"'crsbench warehouse snapshot' {NEEDS_TEAM}")
        with Warehouse.open(self.db, read_only=True, as_of=at) as wh:
            return copy_to_file(wh, Path(out))

    def attach_sql(self) -> str:
        """The LOAD and ATTACH lines for an analyst's own DuckDB client (the same DuckDB release)."""
        from crsbench.core import CrsbenchError
        from crsbench.warehouse import lake
        from crsbench.warehouse.lake_snapshots import NEEDS_TEAM, attach_sql

        if not lake.is_lake(self.db):
            raise CrsbenchError(
                f"'crsbench warehouse attach-sql' {NEEDS_TEAM}; a lone file opens as 'duckdb {self.db}'"
            )
        locator = lake.LakeLocator.parse(str(self.db))
        return attach_sql(locator, lake.recorded_data_path(locator))
