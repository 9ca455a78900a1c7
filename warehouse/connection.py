"""Opening the warehouse: one DuckDB file plus its append-only Parquet parts.

Writers (ingest, panel freeze, analyses) hold the DuckDB file only for the length of
one command. Probe sweeps only add Parquet parts, each by an atomic rename, so a
read-only analyst session never sees a lock error or half a batch. Read-only opens
retry briefly while another command holds the file's write lock.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from crsbench.core import CrsbenchError, crs_constants_sql
from crsbench.warehouse.schema import MIGRATIONS, PART_SCHEMAS, SCHEMA_VERSION

DEFAULT_DB = "crsbench.duckdb"
_EMPTY_PART = "part-00000000-empty.parquet"
# The name sql_files() gives the macros generated from crsbench.core (no such file is shipped).
CONSTANTS_FILE = "macros/000_crs_constants.sql"


def default_db_path() -> Path:
    return Path(os.environ.get("CRSBENCH_DB", DEFAULT_DB))


def parts_dir_for(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".parts")


def _sql_string_literal(value: str) -> str:
    # DDL cannot take bound parameters, and a persisted view must name its Parquet
    # folder literally so the plain duckdb CLI can read it; quote it safely.
    return "'" + value.replace("'", "''") + "'"


SQL_FOLDERS = ("macros", "views")
# Macros of earlier releases, before every macro was named fn_*: dropped when the SQL is applied,
# so an upgraded warehouse does not keep a second, stale copy of a definition.
_RETIRED_MACROS = ("exact_mean", "crs_axes_cell", "crs_axes_aggregate", "crs_normalise",
                   "crs_dominance", "crs_scores", "crs_scores_weighted", "crs_rank_agreement",
                   "crs_anchors", "crs_panel_candidates")


def sql_files() -> list[tuple[str, str]]:
    """The SQL objects shipped in `sql/`: every macro, then every view, each folder in file-name
    order, as (path relative to sql/, text). Macros come first because views call them."""
    root = resources.files("crsbench.sql")
    files: list[tuple[str, str]] = []
    for folder in SQL_FOLDERS:
        entries = sorted((e for e in (root / folder).iterdir() if e.name.endswith(".sql")),
                         key=lambda e: e.name)
        files += [(f"{folder}/{e.name}", e.read_text(encoding="utf-8")) for e in entries]
    # First of all: the constant macros generated from crsbench.core (the CRS weights, the
    # encoder-key format), so the SQL reads those from their one home rather than a copy.
    return [(CONSTANTS_FILE, crs_constants_sql()), *files]


class Warehouse:
    """The DuckDB warehouse. Use `Warehouse.open(path)` as a context manager."""

    def __init__(self, path: Path | str | None = None, read_only: bool = False,
                 lock_timeout_s: float = 30.0) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.parts_dir = parts_dir_for(self.path).resolve()
        self.read_only = read_only
        if read_only and not self.path.exists():
            raise CrsbenchError(
                f"warehouse {self.path} does not exist; create it with "
                f"'crsbench warehouse init --db {self.path}' or run 'crsbench demo'"
            )
        self.con = self._connect(lock_timeout_s)
        if not read_only:
            self._migrate()
            self._prepare_parts()
            self.apply_views()

    @classmethod
    @contextmanager
    def open(cls, path: Path | str | None = None, read_only: bool = False) -> Iterator["Warehouse"]:
        wh = cls(path, read_only=read_only)
        try:
            yield wh
        finally:
            wh.close()

    def _connect(self, lock_timeout_s: float) -> duckdb.DuckDBPyConnection:
        if not self.read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + lock_timeout_s
        delay = 0.05
        while True:
            try:
                return duckdb.connect(str(self.path), read_only=self.read_only)
            except duckdb.IOException as exc:
                if "lock" not in str(exc).lower() or time.monotonic() > deadline:
                    raise CrsbenchError(f"cannot open warehouse {self.path}: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    def close(self) -> None:
        self.con.close()

    # -- schema ---------------------------------------------------------------------

    def schema_version(self) -> int:
        exists = self.con.execute(
            "select count(*) from information_schema.tables where table_name = 'schema_info'"
        ).fetchone()[0]
        if not exists:
            return 0
        row = self.con.execute("select max(version) from schema_info").fetchone()
        return int(row[0] or 0)

    def _migrate(self) -> None:
        current = self.schema_version()
        if current > SCHEMA_VERSION:
            raise CrsbenchError(
                f"warehouse {self.path} has schema version {current}, newer than this "
                f"crsbench ({SCHEMA_VERSION}); upgrade crsbench"
            )
        if current == SCHEMA_VERSION:
            return
        with self.transaction():
            self.con.execute(
                "create table if not exists schema_info(version integer, applied_at timestamp)"
            )
            for version in range(current, SCHEMA_VERSION):
                for statement in MIGRATIONS[version]:
                    self.con.execute(statement)
                self.con.execute(
                    "insert into schema_info values (?, current_timestamp)", [version + 1]
                )

    def _prepare_parts(self) -> None:
        for kind, schema in PART_SCHEMAS.items():
            folder = self.parts_dir / kind
            folder.mkdir(parents=True, exist_ok=True)
            empty = folder / _EMPTY_PART
            if not empty.exists():
                _atomic_write_parquet(schema.empty_table(), empty)
        self._finish_compactions()
        self._drop_orphan_predictions()

    def apply_views(self) -> None:
        """(Re)create the part-backed views and every macro and view in `sql/`, in file order."""
        with self.transaction():
            for kind in PART_SCHEMAS:
                # part-* only: in-flight writes are ".tmp-*.parquet" files that vanish on rename
                glob = str(self.parts_dir / kind / "part-*.parquet")
                self.con.execute(
                    f"create or replace view {kind}_parts as select * from "
                    f"read_parquet({_sql_string_literal(glob)}, union_by_name = true, "
                    f"filename = true)"
                )
            # Fits retired by `ingest --replace` (warehouse/retire.py) stay in their parts but
            # leave the views; the archive views show exactly them.
            self.con.execute(
                "create or replace view runs as select * exclude (filename) from runs_parts "
                "where fit_id not in (select fit_id from retired_fits)"
            )
            self.con.execute(
                "create or replace view retired_runs as select * exclude (filename) from runs_parts "
                "where fit_id in (select fit_id from retired_fits)"
            )
            self.con.execute(
                "create or replace view retired_predictions as select p.* exclude (filename) "
                "from predictions_parts p where p.fit_id in (select fit_id from retired_fits)"
            )
            # A batch writes its predictions part before its runs part; until the runs
            # part lands (or if the writer died in between) those predictions are hidden.
            self.con.execute(
                "create or replace view predictions as select p.* exclude (filename) "
                "from predictions_parts p where p.run_id in (select run_id from runs)"
            )
            for name in _RETIRED_MACROS:
                self.con.execute(f"drop macro table if exists {name}")
                self.con.execute(f"drop macro if exists {name}")
            for name, text in sql_files():
                try:
                    self.con.execute(text)
                except duckdb.Error as exc:
                    raise RuntimeError(f"sql/{name} failed: {exc}") from exc

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        self.con.execute("begin transaction")
        try:
            yield self.con
        except BaseException:
            self.con.execute("rollback")
            raise
        else:
            self.con.execute("commit")

    # -- queries --------------------------------------------------------------------

    def sql(self, query: str, params: list | dict | None = None) -> pd.DataFrame:
        """Run a query with bound parameters and return a pandas frame."""
        return self.con.execute(query, params or []).df()

    def ibis(self):
        """An ibis connection over the same DuckDB file (tables and views as ibis tables)."""
        import ibis

        return ibis.duckdb.from_connection(self.con)

    def table(self, name: str):
        return self.ibis().table(name)

    # -- run records ----------------------------------------------------------------

    def append_runs(self, runs: pd.DataFrame | pa.Table,
                    predictions: pd.DataFrame | pa.Table | None = None) -> str:
        """Add one atomic batch of run records (and their predictions); returns the batch id.

        Needs no DuckDB write lock: parts are written to a temporary name and renamed.
        """
        batch = f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        if predictions is not None:
            table = _conform(predictions, PART_SCHEMAS["predictions"], "predictions")
            _atomic_write_parquet(table, self.parts_dir / "predictions" / batch)
        table = _conform(runs, PART_SCHEMAS["runs"], "runs")
        _atomic_write_parquet(table, self.parts_dir / "runs" / batch)
        return batch

    def done_fit_ids(self) -> set[str]:
        rows = self.con.execute("select distinct fit_id from runs").fetchall()
        return {r[0] for r in rows}

    def compact_parts(self) -> int:
        """Merge every run part (and its predictions part) into one pair; returns parts merged.

        A sweep writes one part per batch, and scanning hundreds of small Parquet files costs more
        than the views' own work. Needs the read-write open: DuckDB's file lock keeps every reader
        out meanwhile, so no query sees the merged part next to its sources. Parts that land during
        the merge are left alone. A manifest makes a crash recoverable: the next read-write open
        finishes (merged runs part present) or rolls back (absent) the compaction.
        """
        if self.read_only:
            raise CrsbenchError(f"compacting {self.path} needs a read-write open")
        runs_dir, pred_dir = self.parts_dir / "runs", self.parts_dir / "predictions"
        sources = sorted(p for p in runs_dir.glob("part-*.parquet") if p.name != _EMPTY_PART)
        if len(sources) < 2:
            return len(sources)
        pred_sources = [pred_dir / p.name for p in sources if (pred_dir / p.name).exists()]
        name = f"part-{time.time_ns():020d}-compact-{uuid.uuid4().hex[:8]}.parquet"
        if pred_sources:
            _merge_parquet(pred_sources, PART_SCHEMAS["predictions"], pred_dir / name)
        manifest = self.parts_dir / f"compact-{name}.json"
        _atomic_write_text(manifest, json.dumps([p.name for p in sources]))
        _merge_parquet(sources, PART_SCHEMAS["runs"], runs_dir / name)
        for part in [*sources, *pred_sources]:
            part.unlink(missing_ok=True)
        manifest.unlink()
        return len(sources)

    def _finish_compactions(self) -> None:
        for manifest in self.parts_dir.glob("compact-part-*.json"):
            name = manifest.name.removeprefix("compact-").removesuffix(".json")
            if (self.parts_dir / "runs" / name).exists():
                for source in json.loads(manifest.read_text()):
                    for kind in PART_SCHEMAS:
                        (self.parts_dir / kind / source).unlink(missing_ok=True)
            else:
                (self.parts_dir / "predictions" / name).unlink(missing_ok=True)
            manifest.unlink()

    def _drop_orphan_predictions(self) -> None:
        runs = {p.name for p in (self.parts_dir / "runs").glob("part-*.parquet")}
        for part in (self.parts_dir / "predictions").glob("part-*.parquet"):
            if part.name != _EMPTY_PART and part.name not in runs:
                # Only a writer that died between its two renames leaves these behind,
                # and parts older than a minute cannot belong to a batch in flight.
                if time.time() - part.stat().st_mtime > 60:
                    part.unlink(missing_ok=True)
        for tmp in self.parts_dir.glob("*/.tmp-*"):
            if time.time() - tmp.stat().st_mtime > 60:
                tmp.unlink(missing_ok=True)


def _conform(data: pd.DataFrame | pa.Table, schema: pa.Schema, kind: str) -> pa.Table:
    table = data if isinstance(data, pa.Table) else pa.Table.from_pandas(data, preserve_index=False)
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise ValueError(f"{kind} batch is missing columns: {', '.join(missing)}")
    return table.select(schema.names).cast(schema)


def _merge_parquet(sources: list[Path], schema: pa.Schema, target: Path,
                   row_group_rows: int = 1 << 18) -> None:
    # Sources are buffered into large row groups (scans pay per row group) and written as they
    # fill, so memory stays bounded; older parts missing a newer column get nulls.
    tmp = target.with_name(f".tmp-{uuid.uuid4().hex}-{target.name}")
    buffered: list[pa.Table] = []
    with pq.ParquetWriter(tmp, schema) as writer:
        for source in sources:
            table = pq.read_table(source)
            for field in schema:
                if field.name not in table.column_names:
                    table = table.append_column(field.name, pa.nulls(len(table), field.type))
            buffered.append(table.select(schema.names).cast(schema))
            if sum(len(t) for t in buffered) >= row_group_rows:
                writer.write_table(pa.concat_tables(buffered), row_group_size=row_group_rows)
                buffered = []
        if buffered:
            writer.write_table(pa.concat_tables(buffered), row_group_size=row_group_rows)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, target)


def _atomic_write_text(target: Path, text: str) -> None:
    tmp = target.with_name(f".tmp-{uuid.uuid4().hex}-{target.name}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)


def _atomic_write_parquet(table: pa.Table, target: Path) -> None:
    tmp = target.with_name(f".tmp-{uuid.uuid4().hex}-{target.name}")
    pq.write_table(table, tmp)
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, target)
