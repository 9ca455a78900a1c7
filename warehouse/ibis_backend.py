"""The warehouse's DuckDB connection as ibis 12 expects it (`Warehouse.ibis()`)."""

from __future__ import annotations

import warnings
from typing import Any

import duckdb
import pyarrow as pa


class IbisConnection:
    """A DuckDB connection as ibis 12 expects it: `fetch_arrow_table` / `fetch_record_batch` on
    results, which duckdb 2 spells `to_arrow_table` / `to_arrow_reader`."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def __getattr__(self, name: str) -> Any:
        return getattr(self._con, name)

    def __enter__(self) -> IbisConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self._con.close()

    def execute(self, *args: Any, **kwargs: Any) -> IbisConnection:
        self._con.execute(*args, **kwargs)
        return self

    def cursor(self) -> IbisConnection:
        return IbisConnection(self._con.cursor())

    def fetch_arrow_table(self) -> pa.Table:
        with warnings.catch_warnings():  # duckdb notes the copy a DB-API result costs; ibis needs it
            warnings.simplefilter("ignore")
            return self._con.to_arrow_table()

    def fetch_record_batch(self, rows_per_batch: int = 1_000_000) -> pa.RecordBatchReader:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self._con.to_arrow_reader(rows_per_batch)
