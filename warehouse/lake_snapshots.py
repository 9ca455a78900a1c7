"""Publications as snapshots on the team warehouse (docs/METHODS.md §23).

Every DuckLake commit is a snapshot; crsbench names its own commits (`probe batch <id>`,
`panel freeze <name> at <time>`). A panel frozen on the team warehouse records the snapshot its freeze
committed (table `panel_publications`), so `leaderboard --as-published` can attach the warehouse as
of that snapshot and read every input exactly as it stood; `warehouse history` lists the snapshots;
`warehouse snapshot` copies one into a lone DuckDB file that any client opens; `warehouse attach-sql`
prints what an analyst's own DuckDB client runs to attach the warehouse read-only.
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from crsbench.core import CrsbenchError
from crsbench.warehouse import lake

if TYPE_CHECKING:
    from crsbench.warehouse.connection import Warehouse

NEEDS_TEAM = (
    "needs the team warehouse (--db ducklake:postgres:...; docs/TEAM_WAREHOUSE.md): "
    "a lone DuckDB file keeps no snapshots"
)


def publication_message(panel: str, frozen_at: datetime) -> str:
    """The commit message of a panel's freeze, unique per freeze."""
    return f"panel freeze {panel} at {frozen_at.isoformat()}"


def record_publication(wh: Warehouse, panel: str, frozen_at: datetime) -> int | None:
    """On a team warehouse, record the snapshot the freeze of `panel` committed; None on a lone file."""
    if wh.lake is None:
        return None
    row = wh.con.execute(
        f"select max(snapshot_id) from ducklake_snapshots('{lake.LAKE_NAME}') where commit_message = ?",
        [publication_message(panel, frozen_at)],
    ).fetchone()
    if row is None or row[0] is None:
        raise CrsbenchError(f"panel {panel!r}: the team warehouse recorded no snapshot for its freeze")
    snapshot = int(row[0])
    with wh.transaction(message=f"panel {panel} published at snapshot {snapshot}") as con:
        con.execute(
            "insert into panel_publications values (?, ?, ?)", [panel, snapshot, datetime.now(UTC).replace(tzinfo=None)]
        )
    return snapshot


def published_snapshot(wh: Warehouse, panel: str | None) -> tuple[str, int]:
    """(panel, snapshot id) of `panel`'s publication, or of the latest frozen panel's."""
    if wh.lake is None:
        raise CrsbenchError(f"--as-published {NEEDS_TEAM}")
    if panel is None:
        row = wh.con.execute("select panel from panels order by frozen_at desc limit 1").fetchone()
        if row is None:
            raise CrsbenchError("--as-published: no panel is frozen; 'crsbench panel freeze' publishes one")
        panel = str(row[0])
    found = wh.con.execute("select snapshot_id from panel_publications where panel = ?", [panel]).fetchone()
    if found is None:
        raise CrsbenchError(f"--as-published: panel {panel!r} has no recorded publication snapshot")
    return panel, int(found[0])


def history(wh: Warehouse, limit: int | None = None) -> pd.DataFrame:
    """The warehouse's snapshots, newest first: id, time (UTC), author, message, and the tables each
    changed, by name."""
    if wh.lake is None:
        raise CrsbenchError(f"'crsbench warehouse history' {NEEDS_TEAM}")
    frame = wh.sql(
        f"""with names as (
                select table_id, any_value(table_name order by begin_snapshot desc) as table_name
                from __ducklake_metadata_{lake.LAKE_NAME}.ducklake_table group by table_id)
            select s.snapshot_id, strftime(s.snapshot_time at time zone 'UTC', '%Y-%m-%d %H:%M:%S') as time_utc,
                   s.author, s.commit_message as message,
                   coalesce(s.changes['tables_inserted_into'], []) as inserted,
                   coalesce(s.changes['tables_deleted_from'], []) as deleted,
                   coalesce(s.changes['inlined_insert'], []) as inlined,
                   len(coalesce(s.changes['tables_created'], [])) + len(coalesce(s.changes['views_created'], []))
                     + len(coalesce(s.changes['tables_altered'], [])) as ddl
            from ducklake_snapshots('{lake.LAKE_NAME}') s order by s.snapshot_id desc"""
        + (" limit ?" if limit else ""),
        [limit] if limit else None,
    )
    names = dict(wh.con.execute(
        f"select table_id::varchar, table_name from __ducklake_metadata_{lake.LAKE_NAME}.ducklake_table"
    ).fetchall())  # fmt: skip
    frame["changed"] = [
        _changed(names, list(ins) + list(inl), list(dele), int(ddl))
        for ins, inl, dele, ddl in zip(frame.inserted, frame.inlined, frame.deleted, frame.ddl, strict=True)
    ]
    return frame[["snapshot_id", "time_utc", "author", "message", "changed"]]


def _changed(names: dict[str, str], inserted: list[str], deleted: list[str], ddl: int) -> str:
    said = []
    if inserted:
        said.append("rows added to " + ", ".join(sorted({names.get(str(t), str(t)) for t in inserted})))
    if deleted:
        said.append("rows deleted from " + ", ".join(sorted({names.get(str(t), str(t)) for t in deleted})))
    if ddl:
        said.append(f"{ddl} tables or views created or altered")
    return "; ".join(said) or "nothing"


def copy_to_file(wh: Warehouse, out: Path) -> int:
    """Write the warehouse `wh` (a team warehouse, opened as of a snapshot or not) into the lone DuckDB
    file `out`, atomically; returns the snapshot id copied. The file is an ordinary crsbench warehouse:
    the same tables and rows, the shipped macros and views, readable by any DuckDB client."""
    from crsbench.warehouse.connection import Warehouse

    if wh.lake is None:
        raise CrsbenchError(f"'crsbench warehouse snapshot' {NEEDS_TEAM}")
    if out.exists():
        raise CrsbenchError(f"{out} exists; give --out a new file name")
    snapshot = int(wh.con.execute(f"select id from ducklake_current_snapshot('{lake.LAKE_NAME}')").fetchone()[0])  # type: ignore[index]
    tmp = out.with_name(f".tmp-{uuid.uuid4().hex}-{out.name}")
    try:
        with Warehouse.open(tmp):
            pass  # every table, macro and view of this crsbench, empty
        wh.con.execute(f"attach {lake.sql_literal(str(tmp.absolute()))} as crsbench_copy")
        try:
            _copy_tables(wh)
        finally:
            wh.con.execute("detach crsbench_copy")
        with Warehouse.open(tmp):
            pass  # views over tables the copy created (analyses') are applied now
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    finally:
        for leftover in (tmp, Path(str(tmp) + ".wal"), tmp.with_name(tmp.name + ".parts")):
            if leftover.is_dir():
                import shutil

                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
    _move_parts_folder(out)
    return snapshot


def _copy_tables(wh: Warehouse) -> None:
    tables = [r[0] for r in wh.con.execute(
        "select table_name from duckdb_tables() where database_name = ? and schema_name = 'main' order by 1",
        [lake.LAKE_NAME],
    ).fetchall()]  # fmt: skip
    present = {r[0] for r in wh.con.execute(
        "select table_name from duckdb_tables() where database_name = 'crsbench_copy' and schema_name = 'main'"
    ).fetchall()}  # fmt: skip
    wh.con.execute("begin transaction")
    try:
        for table in tables:
            name = '"' + table.replace('"', '""') + '"'
            if table in present:
                wh.con.execute(f"delete from crsbench_copy.main.{name}")
                wh.con.execute(
                    f"insert into crsbench_copy.main.{name} by name select * from {lake.LAKE_NAME}.main.{name}"
                )
            else:
                wh.con.execute(f"create table crsbench_copy.main.{name} as select * from {lake.LAKE_NAME}.main.{name}")
    except BaseException:
        wh.con.execute("rollback")
        raise
    wh.con.execute("commit")


def _move_parts_folder(out: Path) -> None:
    # The copy's (empty) parts folder was made beside the temporary name; the file needs its own.
    from crsbench.warehouse.connection import Warehouse

    with Warehouse.open(out):
        pass


def attach_sql(locator: lake.LakeLocator, data_path: str | None) -> str:
    """The statements an analyst's own DuckDB (the same release) runs to attach the team warehouse
    read-only: LOAD each extension by path, a secret for an s3:// data path, ATTACH, USE."""
    lines = [f"-- DuckDB {lake.EXTENSION_DUCKDB} exactly: the extension builds match that release"]
    needs = ["ducklake"] + (["postgres_scanner"] if locator.postgres is not None else [])
    remote = data_path is not None and "://" in data_path and not data_path.startswith("file://")
    needs += ["httpfs"] if remote else []
    lines += [f"LOAD {lake.sql_literal(lake.extension_path(n))};" for n in needs]
    if remote:
        lines.append("-- credentials as for the feature store: the standard AWS environment")
        lines.append(
            "CREATE SECRET (TYPE s3, KEY_ID '<AWS_ACCESS_KEY_ID>', SECRET '<AWS_SECRET_ACCESS_KEY>', "
            "ENDPOINT '<host:port or omit for AWS>', URL_STYLE 'path');"
        )
    if "password" in locator.catalog:
        lines.append("-- the password is left out: give it in $PGPASSWORD or ~/.pgpass")
    lines.append(
        f"ATTACH {lake.sql_literal(lake.LAKE_PREFIX + _no_password(locator.catalog))} AS crsbench (READ_ONLY);"
    )
    lines.append("USE crsbench;")
    lines.append("SELECT * FROM crs_encoder;")
    return "\n".join(lines)


def _no_password(catalog: str) -> str:
    return " ".join(w for w in catalog.split(" ") if not w.lower().startswith("password="))
