"""Schema versions of the warehouse file: refusing a newer one, migrating an older one.

Migrations run inside one transaction on a read-write open; a read-only open of an older file
is refused with the command that migrates it. The compacted tables follow the part schemas,
so a column a later crsbench adds to the parts is added to them as well. A DuckDB file without
crsbench's `schema_info` that already holds something is another application's: it is refused,
read-only or not, and never migrated (only a new, empty file becomes a warehouse).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb

from crsbench.core import CrsbenchError, __version__
from crsbench.warehouse import lake, parts
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


# What a DuckDB file holds, by kind (the file's own catalog; temporary and internal objects left out).
_OBJECTS_SQL = """
select 'table ' || schema_name || '.' || table_name from duckdb_tables()
 where database_name = current_database() and not temporary and not internal
union all select 'view ' || schema_name || '.' || view_name from duckdb_views()
 where database_name = current_database() and not temporary and not internal
union all select 'sequence ' || schema_name || '.' || sequence_name from duckdb_sequences()
 where database_name = current_database() and not temporary
union all select 'macro ' || schema_name || '.' || function_name from duckdb_functions()
 where database_name = current_database() and not internal and function_type in ('macro', 'table_macro')
union all select 'type ' || schema_name || '.' || type_name from duckdb_types()
 where database_name = current_database() and not internal
union all select 'schema ' || schema_name from duckdb_schemas()
 where database_name = current_database() and not internal and schema_name <> 'main'
"""


def foreign_objects(con: duckdb.DuckDBPyConnection) -> list[str]:
    """What a file without crsbench's `schema_info` holds ('table main.orders', ...); empty for a new file."""
    return sorted(r[0] for r in con.execute(_OBJECTS_SQL).fetchall())


def check_version(wh: Warehouse) -> None:
    """Refuse another application's DuckDB file, a file of a newer schema, and (read-only) one
    that needs migrating."""
    current = schema_version(wh.con)
    if current == 0:
        found = foreign_objects(wh.con)
        if found:
            shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
            raise CrsbenchError(
                f"{wh.path} is not a crsbench warehouse: a DuckDB file without crsbench's schema_info, "
                f"holding {shown}; crsbench never migrates another application's file: "
                f"give --db a crsbench warehouse or a new file name"
            )
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
    # DuckLake keeps no PRIMARY KEY (warehouse/lake.py): the team warehouse's tables are declared without.
    ddl = lake.without_constraints if wh.lake is not None else str
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
                    wh.con.execute(ddl(statement))
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
