"""Opening the warehouse: one DuckDB file plus its append-only Parquet parts.

Writers (ingest, panel freeze, analyses) hold the DuckDB file only for the length of
one command. Probe sweeps only add Parquet parts, each by an atomic rename, so a
read-only analyst session never sees a lock error or half a batch. Read-only opens
retry briefly while another command holds the file's write lock.

Schema versions and migrations live in `upgrade`, the shipped macros and views in
`shipped_sql`, the part files in `parts` and folding them into the file in `compaction`.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from crsbench.core import CrsbenchError, default_db_path
from crsbench.warehouse import lake, parts, upgrade
from crsbench.warehouse import sandbox as _sandbox
from crsbench.warehouse.compaction import compact
from crsbench.warehouse.dictionary import apply_comments
from crsbench.warehouse.parts import EMPTY_PART, PART_PATTERN, append_run_parts, glob_escape, parts_dir_for
from crsbench.warehouse.schema import PART_SCHEMAS
from crsbench.warehouse.shipped_sql import applied_digest, apply_sql_files, record_digest, shipped_digest
from crsbench.warehouse.snapshot import LEAN_CONFIG, SCORE_INPUTS, snapshot_views

if TYPE_CHECKING:
    from ibis.backends.duckdb import Backend as IbisBackend
    from ibis.expr.types import Table as IbisTable

    from crsbench.warehouse.claims import FitClaims
    from crsbench.warehouse.lake_claims import LakeClaims


# A sweep's sink: (runs, predictions, coefficients) -> the batch id, the batch landed whole.
RunSink = Callable[..., str]


class MissingPartsWarning(UserWarning):
    """Parts a read-write open once saw are gone; the views serve what remains."""


class WarehouseBusy(CrsbenchError):
    """Another process held the file's lock for longer than the open waits."""


class Warehouse:
    """The DuckDB warehouse. Use `Warehouse.open(path)` as a context manager.

    Nothing stored in the file names a path inside the warehouse's own directory: the persisted part
    views read `<db>.parts` relative to the directory (a plain duckdb client started there, or with
    `SET file_search_path` to it, reads them), and every crsbench connection shadows them with
    temporary views over this copy's own parts, so a copied or moved warehouse, opened read-only or
    not from any working directory, reads its own runs. After `compact_parts()` the rows live in the
    file and the persisted views read no file at all.

    `sandbox=True` opens it read-only for analysts' ad-hoc SQL in a private, locked DuckDB instance
    that opens no file (`crsbench.warehouse.sandbox`); check each query with `check_query` first.
    `lean=True` connects with `snapshot.LEAN_CONFIG` (one thread, freed memory returned at once).
    """

    def __init__(
        self,
        path: Path | str | None = None,
        read_only: bool = False,
        lock_timeout_s: float = 30.0,
        sandbox: bool = False,
        lean: bool = False,
        data_path: str | None = None,
        as_of: int | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        # A team warehouse (warehouse/lake.py) keeps no parts: its writers commit batches to DuckLake,
        # so its parts folder is one that never exists (every parts read finds nothing there).
        self.lake = lake.LakeLocator.parse(str(path)) if path is not None and lake.is_lake(path) else None
        if self.lake is None and lake.is_lake(self.path):
            self.lake = lake.LakeLocator.parse(str(self.path))
        self.parts_dir = Path(os.devnull) / "parts" if self.lake else parts_dir_for(self.path.absolute())
        self.data_path = data_path
        self.as_of = as_of
        self.sandbox = sandbox
        self.lean = lean
        self._spill_dir: Path | None = None
        self.read_only = read_only or sandbox
        read_only = self.read_only
        self._closed = False
        self._reading_parts = False
        if as_of is not None and self.lake is None:
            raise CrsbenchError(
                f"warehouse {self.path} is a lone DuckDB file, which keeps no snapshots: reading it as "
                f"published needs the team warehouse (--db ducklake:postgres:...; docs/TEAM_WAREHOUSE.md)"
            )
        self.read_only = self.read_only or as_of is not None
        read_only = self.read_only
        if read_only and self.lake is None and not self.path.exists():
            raise CrsbenchError(
                f"warehouse {self.path} does not exist; create it with "
                f"'crsbench warehouse init --db {self.path}' or run 'crsbench demo'"
            )
        self.con = self._connect(lock_timeout_s)
        self.con.execute(lake.QUIET)
        try:
            upgrade.check_version(self)
            if not read_only:
                upgrade.migrate(self)
                self._prepare_parts()
            self.attach_parts()
            if not read_only:
                self.apply_views()
                self._record_parts()
            self.missing_parts = [] if self.lake else self._missing_parts()
            if sandbox:
                _sandbox.lock(self.con, lake.data_path_of(self.con) if self.lake else None)
        except BaseException:
            self.close()
            raise
        if self.missing_parts:
            shown = ", ".join(self.missing_parts[:5]) + (" ..." if len(self.missing_parts) > 5 else "")
            warnings.warn(
                f"warehouse {self.path}: {len(self.missing_parts)} Parquet part(s) missing from "
                f"{self.parts_dir} ({shown}); serving the compacted rows and the parts that "
                f"remain",
                MissingPartsWarning,
                stacklevel=3,
            )

    @classmethod
    @contextmanager
    def open(
        cls,
        path: Path | str | None = None,
        read_only: bool = False,
        sandbox: bool = False,
        lean: bool = False,
        data_path: str | None = None,
        as_of: int | None = None,
    ) -> Iterator[Warehouse]:
        wh = cls(path, read_only=read_only, sandbox=sandbox, lean=lean, data_path=data_path, as_of=as_of)
        try:
            yield wh
        finally:
            wh.close()

    def _connect(self, lock_timeout_s: float) -> duckdb.DuckDBPyConnection:
        config: dict[str, str | bool | int | float | list[str]] = dict(LEAN_CONFIG) if self.lean else {}
        if self.lake is not None:
            return lake.connect(
                self.lake, read_only=self.read_only, data_path=self.data_path, snapshot=self.as_of, config=config
            )
        if not self.read_only:
            config["storage_compatibility_version"] = upgrade.STORAGE_COMPATIBILITY
        if not self.read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        target = self._connect_path()
        if self.sandbox:
            self._spill_dir = Path(tempfile.mkdtemp(prefix="crsbench-sql-"))
            return _sandbox.connect(self.path, lock_timeout_s, self._spill_dir, config)
        deadline = time.monotonic() + lock_timeout_s
        delay = 0.05
        while True:
            try:
                return duckdb.connect(target, read_only=self.read_only, config=config)
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower():
                    raise CrsbenchError(f"cannot open warehouse {self.path}: {exc}") from exc
                if time.monotonic() > deadline:
                    raise WarehouseBusy(f"cannot open warehouse {self.path}: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
            except duckdb.SerializationException as exc:
                raise CrsbenchError(
                    f"cannot open warehouse {self.path}: written by a newer DuckDB ({str(exc).splitlines()[0]})"
                ) from exc

    def _connect_path(self) -> str:
        # DuckDB (2.0) takes a '?' in a database path for the start of options and writes the WAL
        # elsewhere (`sp?ace/w.duckdb` -> `sp.wal?ace/...`), so a write would fail half-way.
        if "?" in str(self.path.absolute()) and not self.read_only:
            raise CrsbenchError(
                f"warehouse {self.path}: DuckDB cannot write a database whose path "
                f"contains '?'; rename the folder or the file"
            )
        return str(self.path)

    def close(self) -> None:
        self._closed = True
        if hasattr(self, "con"):
            self.con.close()
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)

    # -- schema ---------------------------------------------------------------------

    def schema_version(self) -> int:
        return upgrade.schema_version(self.con)

    # -- parts ----------------------------------------------------------------------

    def _prepare_parts(self) -> None:
        if self.lake is not None:
            return
        for kind, schema in PART_SCHEMAS.items():
            folder = self.parts_dir / kind
            folder.mkdir(parents=True, exist_ok=True)
            empty = folder / EMPTY_PART
            # The empty part carries the declared schema, so every declared column (a newly
            # registered metric too) is in the views before any part holds it.
            if not empty.exists() or not _same_fields(pq.read_schema(empty), schema):
                parts.atomic_write_parquet(schema.empty_table(), empty)
        folded = self.con.execute("select kind, part from parts_ledger where state = 'compacted'").fetchall()
        parts.drop_stale(self.parts_dir, folded)

    def attach_parts(self, sources: dict[str, list[Path]] | None = None) -> None:
        """Point this connection's temporary `<kind>_parts` views at this copy's parts.

        They shadow the persisted views for this connection only, so nothing is written to the
        file (read-only opens need it) and a copy never reads another copy's parts. With
        `sources`, exactly those files (compaction folds a fixed set).
        """
        if self.lake is not None:
            return  # the lake's persisted part views read no file (`_persisted_part_views`)
        for kind, schema in PART_SCHEMAS.items():
            folder = self.parts_dir / kind
            if sources is not None:
                files = sources.get(kind, [])
                relation = (
                    f"select {', '.join(schema.names)}, part from ({parts.read_part_list_sql(files)})"
                    if files
                    else parts.file_free_sql(schema)
                )
            elif self.sandbox:  # no DuckDB glob, no DuckDB file access: Arrow reads the listed parts
                foreign = set(self.foreign_parts())
                files = [p for p in parts.data_parts(folder) if p not in foreign]
                relation = (
                    _sandbox.register_parts(self.con, kind, schema, files) if files else parts.file_free_sql(schema)
                )
            else:
                present = folder.is_dir() and any(folder.glob(PART_PATTERN))
                pattern = glob_escape(str(folder)) + "/" + PART_PATTERN if present else None
                relation = parts.part_relation_sql(schema, pattern, kind)
            self.con.execute(f"create or replace temp view {kind}_parts as {relation}")

    def check_query(self, query: str) -> None:
        """Refuse a statement that is not a query (sandboxed opens: see `crsbench.warehouse.sandbox`)."""
        _sandbox.check_query(self.con, query, lake=self.lake is not None)

    def _persisted_part_views(self, expect_appends: bool = False) -> None:
        # Relative to the warehouse's directory, so a copy anywhere reads its own parts; a kind
        # without pending parts reads no file, so the compacted file alone answers every view.
        self._reading_parts = expect_appends or any(parts.data_parts(self.parts_dir / k) for k in PART_SCHEMAS)
        for kind, schema in PART_SCHEMAS.items():
            pending = expect_appends or bool(parts.data_parts(self.parts_dir / kind))
            pattern = glob_escape(f"{self.parts_dir.name}/{kind}/") + PART_PATTERN if pending else None
            relation = parts.part_relation_sql(schema, pattern, kind)
            self.con.execute(f"create or replace view main.{kind}_parts as {relation}")
        apply_comments(self.con, only=[f"{kind}_parts" for kind in PART_SCHEMAS])

    def expect_appends(self) -> None:
        """Make the persisted part views read the parts folder: batches are about to be appended."""
        self.repoint_part_views(expect_appends=True)

    def repoint_part_views(self, expect_appends: bool = False) -> None:
        """Re-create only the persisted `<kind>_parts` views (every other view reads them by name):
        over the parts folder when parts are pending or `expect_appends`, else over no file."""
        if not self.read_only and self.lake is None:
            with self._search_path(), self.transaction():
                self._persisted_part_views(expect_appends=expect_appends)

    @contextmanager
    def _search_path(self) -> Iterator[None]:
        # Persisted views name their parts relative to the warehouse's directory; DuckDB resolves
        # relative paths against file_search_path (else the working directory) when binding them.
        # Set only while creating them: a user's own relative paths keep meaning the working directory.
        folder = str(self.path.absolute().parent)
        if "," not in folder and self.lake is None:  # the setting is a comma-separated list
            self.con.execute(f"set file_search_path = {parts.sql_literal(folder)}")
        try:
            yield
        finally:
            self.con.execute("reset file_search_path")

    def apply_views(self) -> None:
        """(Re)create the part-backed views (every time: they follow the parts present) and, when the
        digest the file recorded (`shipped_sql`) differs, every macro and view in `sql/`, in order."""
        with self._search_path(), self.transaction():
            # The lake's part views read no file and never change: re-creating them at every open
            # would add a DuckLake snapshot per command and conflict between concurrent writers.
            if self.lake is None:
                self._persisted_part_views()
            pending = parts.pending_views_sql(PART_SCHEMAS)
            if applied_digest(self.con) == shipped_digest(self.con, pending):
                return
            if self.lake is not None:
                self._persisted_part_views()
            for statement in pending:
                self.con.execute(statement)
            apply_sql_files(self.con)
            record_digest(self.con, pending)

    def ledgered(self) -> set[tuple[str, str]]:
        """(kind, part) of every part the ledger names, whatever its state."""
        return {(k, p) for k, p in self.con.execute("select kind, part from parts_ledger").fetchall()}

    def foreign_parts(self) -> list[Path]:
        """Parts in the folder crsbench did not write (`parts.foreign_parts`): no view reads them."""
        return parts.foreign_parts(self.parts_dir, self.ledgered(), PART_SCHEMAS)

    def _record_parts(self) -> None:
        # Only parts crsbench wrote (each lands after its digest sidecar); foreign ones stay unrecorded.
        if self.lake is not None:
            return
        known = self.ledgered()
        new = [
            (kind, p.name, parts.recorded_digest(p))
            for kind in PART_SCHEMAS
            for p in parts.data_parts(self.parts_dir / kind)
            if (kind, p.name) not in known and parts.digest_path(p).exists()
        ]
        if new:
            with self.transaction():
                self.con.executemany(
                    "insert into parts_ledger (kind, part, state, recorded_at, digest) "
                    "values (?, ?, 'pending', current_timestamp, ?)",
                    [list(row) for row in new],
                )

    def _missing_parts(self) -> list[str]:
        pending = self.con.execute(
            "select kind, part from parts_ledger where state = 'pending' order by part, kind"
        ).fetchall()
        return [f"{kind}/{name}" for kind, name in pending if not (self.parts_dir / kind / name).exists()]

    @contextmanager
    def transaction(self, message: str | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction; on a team warehouse, one DuckLake commit, which `message` describes in
        `crsbench warehouse history`."""
        self.con.execute("begin transaction")
        try:
            if message is not None and self.lake is not None:
                self.con.execute(f"call {lake.LAKE_NAME}.set_commit_message('crsbench', ?)", [message])
            yield self.con
        except BaseException:
            self.con.execute("rollback")
            raise
        else:
            self.con.execute("commit")

    # -- queries --------------------------------------------------------------------

    def sql(self, query: str, params: list[Any] | dict[str, Any] | None = None) -> pd.DataFrame:
        """Run a query with bound parameters and return a pandas frame."""
        return self.con.execute(query, params or []).df()

    def snapshot(self, views: Sequence[str] = SCORE_INPUTS) -> AbstractContextManager[None]:
        """Evaluate `views` once for the length of a `with` block (see `crsbench.warehouse.snapshot`)."""
        return snapshot_views(self.con, views)

    def ibis(self) -> IbisBackend:
        """An ibis DuckDB backend over the same connection (tables and views as ibis tables).

        The whole backend API works (`list_tables()`, `table()`, `sql()`, `to_pyarrow_batches()`, ...):
        ibis 12 still calls DuckDB result methods that duckdb 2 renamed, which `IbisConnection` maps.
        """
        import ibis

        from crsbench.warehouse.ibis_backend import IbisConnection

        return ibis.duckdb.from_connection(IbisConnection(self.con))

    def table(self, name: str) -> IbisTable:
        return self.ibis().table(name)

    # -- paths stored in the file -------------------------------------------------------

    def portable_path(self, location: str | Path) -> str:
        """`location` as the file stores it: relative to the warehouse's directory when inside it.

        So the directory can be copied or moved with its feature store or images; anything
        elsewhere is stored absolute (or as its URL), never relative to a working directory.
        """
        text = str(location)
        if "://" in text and not text.startswith("file://"):
            return text
        path = Path(text.removeprefix("file://")).absolute()
        if self.lake is not None:  # a team warehouse has no directory: its paths are shared ones
            return str(path)
        try:
            return path.relative_to(self.path.absolute().parent).as_posix()
        except ValueError:
            return str(path)

    def resolve_path(self, stored: str) -> str:
        """A stored location for this copy of the warehouse (the inverse of `portable_path`)."""
        if "://" in stored or Path(stored).is_absolute() or self.lake is not None:
            return stored
        return str(self.path.absolute().parent / stored)

    # -- run records ----------------------------------------------------------------

    def append_runs(
        self,
        runs: pd.DataFrame | pa.Table,
        predictions: pd.DataFrame | pa.Table | None = None,
        coefficients: pd.DataFrame | pa.Table | None = None,
    ) -> str:
        """Add one atomic batch of run records (and their predictions and probe coefficients); returns the batch id.

        Needs no DuckDB write lock: parts are written to a temporary name and renamed, the runs
        part last, so the batch appears whole or not at all.
        """
        return self.run_sink()(runs, predictions, coefficients)

    def run_sink(self) -> RunSink:
        """Where a sweep's batches go, with no connection of this object's needed afterwards: Parquet parts
        beside the file, or DuckLake commits to the team warehouse (`lake_writes.LakeSink`)."""
        if self.lake is not None:
            from crsbench.warehouse.lake_writes import LakeSink

            return LakeSink(self.lake)
        if not (self.read_only or self._closed or self._reading_parts):
            self.expect_appends()
        return functools.partial(append_run_parts, self.parts_dir)

    def fit_claims(self, compacted_done: Callable[[], set[str]] | None = None) -> FitClaims | LakeClaims:
        """The claims that give each probe fit one writer: files in the parts folder, or rows in the team
        warehouse's PostgreSQL catalog (`lake_claims`)."""
        if self.lake is not None:
            from crsbench.warehouse.lake_claims import LakeClaims

            return LakeClaims(self.lake)
        from crsbench.warehouse.claims import FitClaims

        return FitClaims(self.parts_dir, compacted_done=compacted_done)

    def done_fit_ids(self) -> set[str]:
        rows = self.con.execute("select distinct fit_id from runs").fetchall()
        return {r[0] for r in rows}

    def compact_parts(self) -> int:
        """Fold every run part (with predictions and provenance) into the file (warehouse.compaction); parts folded.
        A team warehouse has no parts (its batches are committed whole): there it merges the small Parquet
        files of its batches (`lake_writes.merge_files`); files merged."""
        if self.lake is not None:
            from crsbench.warehouse.lake_claims import MERGE_CLAIM, LakeClaims, live_sweeps
            from crsbench.warehouse.lake_writes import merge_files

            # DuckLake's merge is a compaction commit: never beside another command's batch commits or
            # merge (two sweeps ending together), so it waits for the sweeps and takes a claim of its own.
            sweeps = live_sweeps(self.lake)
            if sweeps:
                raise CrsbenchError(
                    f"{sweeps} other command(s) still write to {self.lake.shown()}; "
                    f"'crsbench warehouse compact' merges the batch files once they end"
                )
            with LakeClaims(self.lake) as claims:
                if not claims.acquire([MERGE_CLAIM]):
                    raise CrsbenchError(f"another command is merging the batch files of {self.lake.shown()}")
                return merge_files(self.con)
        return compact(self)


def check_writable(db: Path | str, command: str) -> None:
    """Refuse, before any work, a warehouse this process cannot write (a read-only file, folder or mount).

    `command` names what the user ran; `--no-compact` does not help: the parts are written beside the file
    and the file records them.
    """
    if lake.is_lake(db):
        return  # the data path is checked when the team warehouse is opened (lake.check_data_path)
    path = Path(db)
    folder = parts_dir_for(path.absolute())
    blocked = [
        p for p in (path, folder, folder / "runs", path.absolute().parent) if p.exists() and not os.access(p, os.W_OK)
    ]
    if blocked:
        does = (
            f"still writes its run parts into {folder} and records them in the file"
            if "--no-compact" in command
            else f"writes its run parts into {folder} and folds them into the file"
        )
        raise CrsbenchError(
            f"warehouse {path} is read-only (no write permission on {blocked[0]}): 'crsbench {command}' "
            f"{does}; make it writable or give --db a writable copy"
        )


def _same_fields(a: pa.Schema, b: pa.Schema) -> bool:
    return [(f.name, f.type) for f in a] == [(f.name, f.type) for f in b]
