"""Schema versions of the warehouse file: refusing a newer one, migrating an older one.

Migrations run inside one transaction on a read-write open; a read-only open of an older file
is refused with the command that migrates it. The compacted tables follow the part schemas,
so a column a later crsbench adds to the parts is added to them as well.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

from crsbench.core import CrsbenchError, __version__
from crsbench.warehouse import parts
from crsbench.warehouse.schema import MIGRATIONS, PART_SCHEMAS, SCHEMA_INFO, SCHEMA_VERSION, duckdb_type

if TYPE_CHECKING:
    from crsbench.warehouse.connection import Warehouse

# Files are written in the storage format of DuckDB 1.4, so every client from 1.4 on (the 1.5 shell,
# ibis, DBeaver) opens them; DuckDB 2.x's default format is unreadable to them.
STORAGE_COMPATIBILITY = "v1.4.0"


def schema_version(con: duckdb.DuckDBPyConnection) -> int:
    """The schema version the file records (0 for a new, empty file)."""
    exists = parts.one_row(
        con.execute(
            "select count(*) from information_schema.tables where table_name = 'schema_info' and table_schema = 'main'"
        ).fetchone()
    )[0]
    if not exists:
        return 0
    row = parts.one_row(con.execute("select max(version) from schema_info").fetchone())
    return int(row[0] or 0)


def check_version(wh: Warehouse) -> None:
    """Refuse a file of a newer schema, and (read-only) one that needs migrating."""
    current = schema_version(wh.con)
    if current > SCHEMA_VERSION:
        writer = parts.one_row(wh.con.execute("select max_by(crsbench_version, version) from schema_info").fetchone())[
            0
        ]
        raise CrsbenchError(
            f"warehouse {wh.path} has schema v{current}, written by crsbench {writer}; this crsbench "
            f"{__version__} reads schema v{SCHEMA_VERSION} or older: upgrade to crsbench {writer} or later"
        )
    if wh.read_only and current < SCHEMA_VERSION:
        raise CrsbenchError(
            f"warehouse {wh.path} has schema v{current}, older than this crsbench's "
            f"v{SCHEMA_VERSION}; open it read-write once to migrate it: "
            f"crsbench warehouse init --db {wh.path}"
        )


def migrate(wh: Warehouse) -> None:
    """Bring the file to this crsbench's schema (read-write opens only)."""
    current = schema_version(wh.con)
    if current < SCHEMA_VERSION:
        with wh.transaction():
            wh.con.execute(SCHEMA_INFO.create_sql())
            # Each migration below records itself with every schema_info column, so an older
            # schema_info gains its later columns first.
            for version in range(2, SCHEMA_VERSION + 1):
                for statement in SCHEMA_INFO.add_column_sql(version):
                    wh.con.execute(statement)
            for version in range(current, SCHEMA_VERSION):
                for statement in MIGRATIONS[version]:
                    wh.con.execute(statement)
                wh.con.execute(
                    "insert into schema_info (version, applied_at, crsbench_version) values (?, current_timestamp, ?)",
                    [version + 1, __version__],
                )
    _sync_compacted_columns(wh.con)


def _sync_compacted_columns(con: duckdb.DuckDBPyConnection) -> None:
    # The compacted tables follow the part schemas: a column a later crsbench adds to the
    # parts is added here too (older rows read it as null, like older parts do).
    for kind, schema in PART_SCHEMAS.items():
        have = {
            r[0]
            for r in con.execute(
                "select column_name from information_schema.columns where table_name = ? and table_schema = 'main'",
                [f"{kind}_compacted"],
            ).fetchall()
        }
        for field in schema:
            if field.name not in have:
                con.execute(f"alter table {kind}_compacted add column {field.name} {duckdb_type(field)}")
