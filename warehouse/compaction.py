"""Compaction: fold the Parquet parts a sweep wrote into tables inside the DuckDB file.

Afterwards the `.duckdb` file on its own answers every view and macro (copy it anywhere, open it
with any DuckDB client from 1.4 on), and the views scan one table instead of hundreds of small
files. Appending later still works: new parts, folded in at the next compaction.

Crash safety: the rows and the ledger entries naming their source parts are inserted in one
transaction; the source files are deleted only after it commits. If the process dies in between,
the views already ignore those parts (the ledger says they are compacted) and the next read-write
open deletes them.

Commands that append parts (`crsbench probe`) fold them in as they finish
(`crsbench.warehouse.at_rest.fold_at_rest`, which opens the warehouse and calls `compact`).

A part crsbench did not write (`parts.foreign_parts`) is never folded or deleted: compaction
refuses, naming it, until the user moves it out of the folder.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from crsbench.core import CrsbenchError
from crsbench.warehouse import parts
from crsbench.warehouse.claims import live_sweeps
from crsbench.warehouse.upgrade import STORAGE_COMPATIBILITY

if TYPE_CHECKING:
    from crsbench.warehouse.connection import Warehouse


def compact(wh: Warehouse) -> int:
    """Fold every runs part present now, and its predictions and batch parts, into the file.

    Needs the read-write open: DuckDB's file lock keeps every reader out meanwhile, so no query sees
    a row twice. Parts that land during the compaction are left for the next one. Returns how many
    runs parts were folded in.
    """
    if wh.read_only:
        raise CrsbenchError(f"compacting {wh.path} needs a read-write open")
    refuse_foreign(wh)
    runs = parts.data_parts(wh.parts_dir / "runs")
    sources = {"runs": runs}
    for kind in parts.BATCH_KINDS:
        sources[kind] = [wh.parts_dir / kind / p.name for p in runs if (wh.parts_dir / kind / p.name).exists()]
    if runs:
        wh.attach_parts(sources)
        try:
            with wh.transaction() as con:
                # the batch kinds first: runs_pending is empty once the runs are in
                for kind in (*parts.BATCH_KINDS, "runs"):
                    con.execute(f"insert into {kind}_compacted by name select * from {kind}_pending")
                con.executemany(
                    "insert into parts_ledger (kind, part, state, recorded_at) values (?, ?, 'compacted', current_timestamp)",
                    [[kind, p.name] for kind, files in sources.items() for p in files],
                )
                con.execute(
                    "delete from parts_ledger where state = 'pending' and part in "
                    "(select part from parts_ledger where state = 'compacted')"
                )
        finally:
            wh.attach_parts()
        for files in sources.values():
            for path in files:
                path.unlink(missing_ok=True)
                parts.digest_path(path).unlink(missing_ok=True)
    _forget_missing(wh)
    # No pending parts left: the persisted views stop reading files, unless a sweep still writes
    # (its next parts must stay visible to clients in the folder).
    sweeping = bool(live_sweeps(wh.parts_dir))
    wh.repoint_part_views(expect_appends=sweeping)
    if _rewrite_if_newer_storage(wh) and sweeping:
        wh.expect_appends()  # the reopened file's views were re-pointed without the sweep in mind
    return len(runs)


def refuse_foreign(wh: Warehouse) -> None:
    """Refuse to compact while parts crsbench did not write lie in the folder: folding them would
    make them the warehouse's rows, deleting them would lose whatever the user put there."""
    foreign = wh.foreign_parts()
    if foreign:
        raise CrsbenchError(f"cannot compact {wh.path}: {parts.describe_foreign(wh.parts_dir, foreign)}, then rerun")


def _forget_missing(wh: Warehouse) -> None:
    # Parts deleted by hand cannot come back by compacting; the ledger stops naming them.
    missing = wh._missing_parts()
    if missing:
        with wh.transaction() as con:
            con.executemany(
                "update parts_ledger set state = 'missing' where kind = ? and part = ?",
                [name.split("/", 1) for name in missing],
            )


def _rewrite_if_newer_storage(wh: Warehouse) -> bool:
    """Rewrite a file created in DuckDB 2's storage format in the 1.4 one, so older clients open it;
    returns whether it did (and reopened `wh`).

    Warehouses created before crsbench wrote the compatible format are converted here, once.
    """
    version = parts.one_row(
        wh.con.execute(
            "select tags['storage_version'] from duckdb_databases() where database_name = current_database()"
        ).fetchone()
    )[0]
    if not version or version.startswith(STORAGE_COMPATIBILITY):
        return False
    target = wh.path.with_name(f".tmp-{uuid.uuid4().hex}-{wh.path.name}")
    if "?" in str(target.absolute()):
        return False  # DuckDB cannot ATTACH such a path; the file stays in the newer format
    source = parts.one_row(wh.con.execute("select current_database()").fetchone())[0]
    try:
        wh.con.execute(
            f"attach {parts.sql_literal(str(target.absolute()))} as crs_rewrite "
            f"(storage_version {parts.sql_literal(STORAGE_COMPATIBILITY)})"
        )
        wh.con.execute(f'copy from database "{source}" to crs_rewrite')
        wh.con.execute("detach crs_rewrite")
        wh.con.execute("checkpoint")
        wh.con.close()
        with open(target, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(target, wh.path)
    finally:
        Path(target).unlink(missing_ok=True)
        Path(str(target) + ".wal").unlink(missing_ok=True)
    wh.con = type(wh)(wh.path).con  # reopen the rewritten file (views re-pointed, columns synced)
    return True
