"""The warehouse's append-only Parquet parts: where they live, how SQL reaches them, how they are written.

A probe sweep adds each batch as Parquet parts beside the DuckDB file (`<db>.parts/<kind>/part-*.parquet`),
each by an atomic rename, so it never needs the file's write lock. The views read the parts through
DuckDB globs; a path is always escaped before it becomes a glob, so a warehouse under `st*r/` never
reads the parts of `stXr/` and one under `br[1]/` still finds its own.

Only parts crsbench wrote are read: those `parts_ledger` lists, and those that landed since the
last read-write open, each of which carries the digest sidecar its writer renames into place
before the part itself. Any other file in the folder is foreign: no view reads it, the ledger never
records it, `crsbench verify` lists it and compaction refuses to run until it is moved out.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    import pandas as pd

EMPTY_PART = "part-00000000-empty.parquet"
# The kinds a batch writes beside its runs part (the runs part lands last: the batch's commit).
BATCH_KINDS = ("predictions", "coefficients", "batches")
PART_PATTERN = "part-*.parquet"
DIGEST_SUFFIX = ".sha256"


def parts_dir_for(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".parts")


def glob_escape(path: str) -> str:
    """`path` as a DuckDB glob that matches exactly that path (its `*`, `?`, `[` taken literally)."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in path)


def sql_literal(value: str) -> str:
    # DDL cannot take bound parameters, and a persisted view must name its Parquet folder
    # literally so a plain duckdb client can read it; quote it safely.
    return "'" + value.replace("'", "''") + "'"


def one_row(row: tuple[Any, ...] | None) -> tuple[Any, ...]:
    """The `fetchone()` result of a query that always returns a row (an aggregate, `current_database()`)."""
    assert row is not None, "query returned no row"
    return row


def data_parts(folder: Path) -> list[Path]:
    """The parts in `folder` that hold rows (not the empty schema part), oldest first."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.glob(PART_PATTERN) if p.name != EMPTY_PART)


def foreign_parts(parts_dir: Path, ledgered: set[tuple[str, str]], kinds: Iterable[str]) -> list[Path]:
    """The parts in `parts_dir` crsbench did not write: not in the ledger (`ledgered`, (kind, name)
    pairs) and without the digest sidecar every crsbench writer puts down before its part."""
    return [
        p
        for kind in kinds
        for p in data_parts(parts_dir / kind)
        if (kind, p.name) not in ledgered and not digest_path(p).exists()
    ]


def describe_foreign(parts_dir: Path, foreign: list[Path]) -> str:
    """One line naming foreign parts and the way out."""
    shown = ", ".join(str(p.relative_to(parts_dir)) for p in foreign[:4]) + (" ..." if len(foreign) > 4 else "")
    return (
        f"{len(foreign)} Parquet part(s) in {parts_dir} were not written by crsbench (absent from parts_ledger, "
        f"no digest sidecar): {shown}; no view reads them: move them out of that folder "
        f"(e.g. 'mv {foreign[0]} {parts_dir.parent}/')"
    )


def read_parts_sql(pattern: str) -> str:
    """A relation over the parts matching the (already escaped) glob `pattern`, with each row's part name."""
    return (
        f"select * exclude (filename), parse_filename(filename) as part from "
        f"read_parquet({sql_literal(pattern)}, union_by_name = true, filename = true)"
    )


def read_part_list_sql(paths: list[Path]) -> str:
    """Like `read_parts_sql` over an explicit list of files (each escaped: DuckDB globs list items too)."""
    items = ", ".join(sql_literal(glob_escape(str(p))) for p in paths)
    return (
        f"select * exclude (filename), parse_filename(filename) as part from "
        f"read_parquet([{items}], union_by_name = true, filename = true)"
    )


def drop_stale(parts_dir: Path, folded: list[tuple[str, str]]) -> None:
    """Delete what no view may read any more: parts already folded into the file, and leftovers.

    A compaction that crashed after its commit leaves `folded` parts behind (the views already
    ignore them). Only a writer that died between its renames leaves a predictions or batches part
    without its runs part, or a temporary file; older than a minute, none belongs to a batch in flight.
    A part without its digest sidecar is not crsbench's leftover (`foreign_parts`) and stays.
    """
    import time

    for kind, name in folded:
        (parts_dir / kind / name).unlink(missing_ok=True)
        digest_path(parts_dir / kind / name).unlink(missing_ok=True)
    runs = {p.name for p in (parts_dir / "runs").glob(PART_PATTERN)}
    for kind in BATCH_KINDS:
        for part in data_parts(parts_dir / kind):
            stale = part.name not in runs and time.time() - part.stat().st_mtime > 60
            if stale and digest_path(part).exists():
                part.unlink(missing_ok=True)
    for tmp in parts_dir.glob("*/.tmp-*"):
        if time.time() - tmp.stat().st_mtime > 60:
            tmp.unlink(missing_ok=True)
    for sidecar in parts_dir.glob(f"*/part-*{DIGEST_SUFFIX}"):  # a writer that died before its part landed
        part = sidecar.with_name(sidecar.name.removesuffix(DIGEST_SUFFIX))
        if not part.exists() and time.time() - sidecar.stat().st_mtime > 60:
            sidecar.unlink(missing_ok=True)


def new_part_name() -> str:
    import time

    # Names sort in time order; the views rely on it to choose among duplicate run records.
    return f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"


def conform(data: pd.DataFrame | pa.Table, schema: pa.Schema, kind: str) -> pa.Table:
    """`data` (pandas or Arrow) with exactly `schema`'s columns and types; names what is missing."""
    table = data if isinstance(data, pa.Table) else pa.Table.from_pandas(data, preserve_index=False)
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise ValueError(f"{kind} batch is missing columns: {', '.join(missing)}")
    return table.select(schema.names).cast(schema)


def digest_path(part: Path) -> Path:
    """The part's sidecar `<part>.sha256`: the SHA-256 of its bytes, written before the part lands."""
    return part.with_name(part.name + DIGEST_SUFFIX)


def file_digest(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def recorded_digest(part: Path) -> str | None:
    """The digest written beside `part` (None for parts written before digests)."""
    try:
        text = digest_path(part).read_text().strip()
    except FileNotFoundError:
        return None
    return text if len(text) == 64 else None


def atomic_write_parquet(table: pa.Table, target: Path) -> None:
    """Write `table` to `target` by a rename, its SHA-256 sidecar first. A failed write (a full disk,
    a file-size limit) removes its temporary files and raises an OSError naming `target`."""
    tmp = target.with_name(f".tmp-{uuid.uuid4().hex}-{target.name}")
    sidecar = tmp.with_name(tmp.name + DIGEST_SUFFIX)
    try:
        pq.write_table(table, tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        # The digest lands first, so a part never exists without it (`crsbench verify` checks it).
        sidecar.write_text(file_digest(tmp) + "\n")
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        sidecar.unlink(missing_ok=True)
        if exc.errno is not None and exc.filename is None:  # Arrow's errors name no file
            raise OSError(exc.errno, os.strerror(exc.errno), str(target)) from exc
        raise
    os.replace(sidecar, digest_path(target))
    os.replace(tmp, target)


def append_run_parts(
    parts_dir: Path,
    runs: pd.DataFrame | pa.Table,
    predictions: pd.DataFrame | pa.Table | None = None,
    coefficients: pd.DataFrame | pa.Table | None = None,
) -> str:
    """Write one batch of run records as Parquet parts, with no connection; returns the batch id.

    A long sweep closes the warehouse after `Warehouse.expect_appends()` (so the persisted views
    read the parts folder) and then writes its batches through this. The runs part is renamed into
    place last, so the batch appears whole or not at all.
    """
    from crsbench.warehouse.provenance import batch_record
    from crsbench.warehouse.schema import PART_SCHEMAS

    batch = new_part_name()
    if predictions is not None:
        table = conform(predictions, PART_SCHEMAS["predictions"], "predictions")
        atomic_write_parquet(table, parts_dir / "predictions" / batch)
    if coefficients is not None and len(coefficients):
        table = conform(coefficients, PART_SCHEMAS["coefficients"], "coefficients")
        atomic_write_parquet(table, parts_dir / "coefficients" / batch)
    atomic_write_parquet(batch_record(batch), parts_dir / "batches" / batch)
    table = conform(runs, PART_SCHEMAS["runs"], "runs")
    atomic_write_parquet(table, parts_dir / "runs" / batch)
    return batch


# -- the views over parts and compacted rows -------------------------------------------------------


def _columns(schema: pa.Schema, alias: str = "") -> str:
    prefix = f"{alias}." if alias else ""
    return ", ".join(f"{prefix}{name}" for name in schema.names)


def file_free_sql(schema: pa.Schema) -> str:
    """A typed relation with no rows and the parts' columns, reading no file."""
    from crsbench.warehouse.schema import duckdb_type

    typed = ", ".join(f"cast(null as {duckdb_type(f)}) as {f.name}" for f in schema)
    return f"select {typed}, cast(null as varchar) as part where false"


def part_relation_sql(schema: pa.Schema, pattern: str | None, kind: str) -> str:
    """The `<kind>_parts` relation: every part crsbench wrote among those matching the escaped glob
    `pattern` (ledgered, or with its digest sidecar beside it), or none if None."""
    if pattern is None:
        return file_free_sql(schema)
    sidecars = sql_literal(pattern + DIGEST_SUFFIX)
    return (
        f"select {_columns(schema)}, part from ({read_parts_sql(pattern)}) "
        f"where part || {sql_literal(DIGEST_SUFFIX)} in (select parse_filename(file) from glob({sidecars})) "
        f"or part in (select part from parts_ledger where kind = {sql_literal(kind)} and state = 'pending')"
    )


def pending_views_sql(schemas: Mapping[str, pa.Schema]) -> list[str]:
    """The persisted views that combine compacted rows with the parts not yet compacted.

    `runs` keeps exactly one row per run_id whatever the parts hold: a compacted record wins,
    then the record in the earliest part (part names sort by write time), so a duplicate batch
    can never reach a metric. `predictions` keeps the rows of the part whose run record was
    chosen, and none of a batch whose runs part has not landed yet (or never will).
    """
    runs, preds, batches = schemas["runs"], schemas["predictions"], schemas["batches"]
    coefs = schemas["coefficients"]
    compacted = "(select part from parts_ledger where kind = '{kind}' and state = 'compacted')"
    return [
        f"""create or replace view runs_pending as
            select {_columns(runs, "p")}, p.part from runs_parts p
            where p.part not in {compacted.format(kind="runs")}
              and not exists (select 1 from runs_compacted c where c.run_id = p.run_id)
            qualify row_number() over (partition by p.run_id
                order by p.part, p.created_at, p.fit_seconds, p.auroc, p.nll, p.ece, p.brier) = 1""",
        f"""create or replace view predictions_pending as
            select {_columns(preds, "p")}, p.part from predictions_parts p
            semi join runs_pending r on p.run_id = r.run_id and p.part = r.part""",
        f"""create or replace view coefficients_pending as
            select {_columns(coefs, "p")}, p.part from coefficients_parts p
            semi join runs_pending r on p.fit_id = r.fit_id and p.part = r.part""",
        f"""create or replace view batches_pending as
            select {_columns(batches, "p")}, p.part from batches_parts p
            where p.part not in {compacted.format(kind="batches")}""",
        # Fits retired by `ingest --replace` (warehouse/retire.py) keep their rows but leave
        # `runs`/`predictions`; the archive views `retired_*` show exactly them.
        f"""create or replace view runs_all as
            select {_columns(runs)} from runs_compacted
            union all select {_columns(runs)} from runs_pending""",
        f"""create or replace view predictions_all as
            select {_columns(preds)} from predictions_compacted
            union all select {_columns(preds)} from predictions_pending""",
        f"""create or replace view coefficients_all as
            select {_columns(coefs)} from coefficients_compacted
            union all select {_columns(coefs)} from coefficients_pending""",
        f"""create or replace view coefficients as
            select {_columns(coefs)} from coefficients_all where fit_id not in (select fit_id from retired_fits)""",
        f"""create or replace view retired_coefficients as
            select {_columns(coefs)} from coefficients_all where fit_id in (select fit_id from retired_fits)""",
        f"""create or replace view runs as
            select {_columns(runs)} from runs_all where fit_id not in (select fit_id from retired_fits)""",
        f"""create or replace view predictions as
            select {_columns(preds)} from predictions_all
            where fit_id not in (select fit_id from retired_fits)""",
        f"""create or replace view retired_runs as
            select {_columns(runs)} from runs_all where fit_id in (select fit_id from retired_fits)""",
        f"""create or replace view retired_predictions as
            select {_columns(preds)} from predictions_all
            where fit_id in (select fit_id from retired_fits)""",
        f"""create or replace view batches as
            select {_columns(batches)}, part from batches_compacted
            union all select {_columns(batches)}, part from batches_pending""",
    ]
