"""The table that ties a frozen panel to the team warehouse's snapshot it was published at
(docs/METHODS.md §23), declared for the schema; `lake_snapshots` fills and reads it.

A lone DuckDB file keeps no snapshots: there the table exists and stays empty."""

from __future__ import annotations

from crsbench.core.schema import Column, Schema
from crsbench.warehouse.schema_columns import PANEL as _PANEL

_S = "docs/METHODS.md §23"

PANEL_PUBLICATIONS = Schema(
    "panel_publications",
    f"One row per panel frozen on a team warehouse: the DuckLake snapshot its freeze committed, "
    f"which 'crsbench leaderboard --as-published' reads every input as of. {_S}.",
    (
        _PANEL,
        Column(
            "snapshot_id",
            "BIGINT",
            f"DuckLake snapshot id (ducklake_snapshots) of the commit that froze the panel. {_S}.",
        ),
        Column("recorded_at", "TIMESTAMP", f"When the publication was recorded (UTC), just after the freeze. {_S}."),
    ),
    since=20,
)
