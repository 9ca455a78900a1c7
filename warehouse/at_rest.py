"""Folding a finished command's parts into the file, so a plain DuckDB client anywhere reads it at rest.

A sweep still running elsewhere keeps its parts, and the persisted views keep reading the parts
folder while one runs. This module opens the warehouse (`connection`), which compacts through
`compaction`; it sits above both, so neither imports it back.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from crsbench.core import CrsbenchError
from crsbench.warehouse import lake, parts
from crsbench.warehouse.claims import live_sweeps
from crsbench.warehouse.compaction import compact, refuse_foreign
from crsbench.warehouse.connection import Warehouse, WarehouseBusy
from crsbench.warehouse.schema import PART_SCHEMAS


@dataclasses.dataclass(frozen=True)
class Folded:
    """What a writing command's closing compaction did."""

    parts: int  # runs parts folded into the file
    pending: int = 0  # runs parts left as Parquet files
    reason: str = ""  # why they were left ('' when nothing is left)


def fold_at_rest(db: Path, lock_timeout_s: float = 5.0) -> Folded:
    """Fold the pending parts into `db` as a command that appended them finishes.

    Never blocks or breaks anything: when another sweep is still writing parts, or another process
    holds the file (an analyst's open connection, another command) past `lock_timeout_s`, the parts
    stay pending and `reason` says why and what folds them later.
    """
    if lake.is_lake(db):
        return _merge_lake(db)
    folder = parts.parts_dir_for(Path(db).absolute()) / "runs"
    pending = len(parts.data_parts(folder))
    if not pending:
        return Folded(0)
    later = f"'crsbench warehouse compact --db {db}' folds them"
    try:
        wh = Warehouse(db, lock_timeout_s=lock_timeout_s)
    except WarehouseBusy:
        return Folded(0, pending, f"another process has the file open; {later} once it is closed")
    try:
        # Checked under the file's write lock, which a sweep holds while it registers: a sweep
        # starting now either is listed here or starts after this compaction has finished.
        sweeps = live_sweeps(wh.parts_dir)
        if sweeps:
            return Folded(0, pending, f"{len(sweeps)} other sweep(s) still write parts; {later} when they end")
        foreign = wh.foreign_parts()
        if foreign:  # never folded nor deleted: the user decides (`compaction.refuse_foreign`)
            return Folded(0, pending, f"{parts.describe_foreign(wh.parts_dir, foreign)}; then {later}")
        folded = compact(wh)
        return Folded(folded, len(parts.data_parts(folder)))
    finally:
        wh.close()


def _merge_lake(db: Path) -> Folded:
    # The team warehouse's batches are committed whole; what a finished sweep leaves is one small file
    # per batch, merged here (`lake_writes.merge_files`) once no other sweep writes. Best effort: while
    # one does, or a concurrent merge conflicts, the files wait for the next merge (queries read them).
    import duckdb

    try:
        with Warehouse.open(db) as wh:
            return Folded(wh.compact_parts())
    except CrsbenchError as exc:
        return Folded(0, 0, str(exc))
    except duckdb.FatalException:
        raise
    except duckdb.Error as exc:  # a conflict with another commit: the files stay as they are
        reason = str(exc).splitlines()[0]
        return Folded(0, 0, f"the batch files stay unmerged until 'crsbench warehouse compact' ({reason})")


def refuse_foreign_before_open(db: Path) -> None:
    """`compact`'s refusal of foreign parts (`compaction.refuse_foreign`), made before the file is
    opened for writing, so a refused `crsbench warehouse compact` leaves it byte for byte."""
    parts_dir = parts.parts_dir_for(Path(db).absolute())
    if not Path(db).exists() or not parts.foreign_parts(parts_dir, set(), PART_SCHEMAS):
        return  # every part carries its sidecar: none is foreign
    try:
        wh = Warehouse(db, read_only=True)
    except CrsbenchError:
        return  # a file to migrate first: the read-write open's compaction refuses the same way
    try:
        refuse_foreign(wh)
    finally:
        wh.close()
