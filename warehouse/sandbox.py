"""The read-only sandbox of analysts' ad-hoc SQL (`crsbench sql`, `crsbench export`, `Bench.sql`).

The query runs in a private in-memory DuckDB instance that attaches the warehouse file read-only,
reads the pending Parquet parts through Arrow datasets that Python lists (so no DuckDB glob ever
meets the folder's name: `st*r/`, `br[1]/`, spaces and unicode all work), and then has every file
system access of DuckDB switched off and its configuration locked: DuckDB may open no file at all,
so no `COPY ... TO`, `EXPORT`, `ATTACH` or `read_csv('/etc/passwd')`, not even into the parts
folder, nor into the attached file or its WAL (DuckDB keeps those open to external-access-off
connections; the local file system is disabled as well). Statements other than queries are refused
before they run (no COPY, CREATE, INSERT, SET, PRAGMA).

The instance is the sandbox's own: settings never leak into another connection the process holds
to the same file, and a second sandbox never finds the first one's locked configuration.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path

import duckdb
import pyarrow as pa

from crsbench.core import CrsbenchError
from crsbench.warehouse import parts

# Queries only: SELECT covers WITH, FROM, VALUES, TABLE, DESCRIBE, SHOW and SUMMARIZE.
ALLOWED_STATEMENTS = ("SELECT", "EXPLAIN")
_EXPLAIN = re.compile(r"\s*explain\s+(?:analy[sz]e\s+)?(.*)", re.IGNORECASE | re.DOTALL)
_RESERVED_NAMES = {"memory", "temp", "system", "main", "information_schema", "pg_catalog"}


def database_name(path: Path) -> str:
    """The name the attached file gets: its stem, as a plain `duckdb FILE` session names it."""
    stem = path.name.rsplit(".", 1)[0] if "." in path.name else path.name
    return "warehouse" if not stem or stem.lower() in _RESERVED_NAMES else stem


def quote_identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def connect(
    path: Path,
    lock_timeout_s: float,
    spill_dir: Path,
    config: Mapping[str, str | bool | int | float | list[str]] | None = None,
) -> duckdb.DuckDBPyConnection:
    """A private instance with `path` attached read-only and made the default database (and the
    DuckDB `config` given, e.g. a lean connection's thread count).

    DuckDB keeps its temporary directory (for spilling large queries) accessible with external
    access off, so it is `spill_dir`, a fresh private folder, never the working directory's `.tmp`.
    """
    con = duckdb.connect(":memory:", config={**(config or {}), "temp_directory": str(spill_dir)})
    name = quote_identifier(database_name(path))
    deadline = time.monotonic() + lock_timeout_s
    delay = 0.05
    try:
        while True:
            try:
                con.execute(f"attach {parts.sql_literal(str(path.absolute()))} as {name} (read_only)")
                break
            except duckdb.Error as exc:
                text = str(exc)
                if "Unique file handle conflict" in text:
                    raise CrsbenchError(
                        f"cannot open warehouse {path} read-only in the SQL sandbox: this process holds "
                        f"a read-write connection to it; close it or connect with read_only=True"
                    ) from exc
                if "lock" not in text.lower() or time.monotonic() > deadline:
                    raise CrsbenchError(f"cannot open warehouse {path}: {text.splitlines()[0]}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        con.execute(f"use {name}")
    except BaseException:
        con.close()
        raise
    return con


def register_parts(con: duckdb.DuckDBPyConnection, kind: str, schema: pa.Schema, files: list[Path]) -> str:
    """A relation over the part `files` of `kind` read by Arrow, each row with its part's name.

    Each file is one fragment whose `part` column is its partition value, so DuckDB pushes its
    projections and filters (on `part` too) into the scan and reads only what the query needs.
    """
    import pyarrow.compute as pc
    import pyarrow.dataset as ds
    import pyarrow.fs

    full = schema.append(pa.field("part", pa.string()))
    dataset = ds.FileSystemDataset.from_paths(
        [str(f.absolute()) for f in files],
        schema=full,
        format=ds.ParquetFileFormat(),
        filesystem=pyarrow.fs.LocalFileSystem(),
        partitions=[pc.field("part") == f.name for f in files],
    )
    name = f"crsbench_{kind}_part_files"
    # duckdb 2 refuses `register` while an earlier `fetchone()` left a result open; finish one first
    con.execute("select 1").fetchall()
    con.register(name, dataset)
    return f"select {', '.join(full.names)} from {name}"


def lock(con: duckdb.DuckDBPyConnection, data_path: str | None = None) -> None:
    """From now on DuckDB opens no file (the attached warehouse stays readable through the handle it
    holds) and nothing can be turned back on.

    External access off still lets DuckDB open the attached file, its WAL names and the spill folder;
    disabling the local file system on top closes those too (and any function that forgets the first
    check), so a query that would spill to disk fails instead.
    """
    if data_path is not None:  # a team warehouse (warehouse/lake.py): DuckLake reads its Parquet files there
        con.execute("set allowed_directories = ?", [[data_path.rstrip("/") + "/"]])
    con.execute("set enable_external_access = false")
    if data_path is None:
        con.execute("set disabled_filesystems = 'LocalFileSystem'")
    con.execute("set lock_configuration = true")


_CATALOG_FUNCTIONS = re.compile(
    r"\b(postgres_\w+|ducklake_\w*(?:set|add|expire|cleanup|delete|flush|merge|rewrite|commit)\w*)\s*\(", re.IGNORECASE
)


def check_query(con: duckdb.DuckDBPyConnection, query: str, lake: bool = False) -> None:
    """Refuse, before anything runs, every statement of `query` that is not a query; on a team warehouse
    (`lake`) also every call of a function that reaches its PostgreSQL catalog directly or changes the
    lake (`postgres_query`, `ducklake_expire_snapshots`, ...): the snapshot reads stay allowed."""
    named = _CATALOG_FUNCTIONS.search(query) if lake else None
    if named:
        raise CrsbenchError(
            f"query failed: {named.group(1)}() is refused on the team warehouse: the SQL reads the "
            f"warehouse's tables and views only"
        )
    try:
        statements = con.extract_statements(query)
    except duckdb.Error as exc:
        raise CrsbenchError(f"query failed: {str(exc).splitlines()[0]}") from exc
    for statement in statements:
        kind = str(statement.type).rsplit(".", 1)[-1]
        explained = _EXPLAIN.fullmatch(statement.query) if kind == "EXPLAIN" else None
        if explained:  # EXPLAIN ANALYZE runs the statement it explains
            check_query(con, explained.group(1))
        elif kind not in ALLOWED_STATEMENTS or kind == "EXPLAIN":
            raise CrsbenchError(
                f"query failed: {kind} statements are refused; the warehouse's SQL is read-only "
                f"(SELECT, WITH, FROM, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN)"
            )
