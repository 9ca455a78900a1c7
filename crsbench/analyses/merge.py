"""Additive storage of a run restricted to datasets (`crsbench analyze NAME -d X`). METHODS.md §11.

A run whose `dataset` param names datasets replaces only those datasets' rows of each stored
output table that has a dataset column (`dataset_id` or `dataset`); the rows of every other
dataset stay exactly as they were. A table is replaced whole instead (with a note) when it has
no dataset column, when its column names or types differ from the stored table's, or when the
run is unrestricted or asked to (`replace_all`). A part the restricted run did not write loses
only the named datasets' rows.

A merged table's row in `analyses` keeps, in its params JSON under `stored_datasets`, one entry
per dataset it holds: the params, input digest and encoders of the run that wrote that
dataset's rows. Its table-level `input_digest` is the current digest when every entry's runs
are still current, else the digest of a stale entry (which differs from the current one), so
view analysis_freshness stays right for the merged table.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import duckdb

DATASET_COLUMNS = ("dataset_id", "dataset")
PROVENANCE_KEY = "stored_datasets"
# The input key of a dataset's images (view dataset_image_digest) beside the encoders' run digests.
IMAGES_PREFIX = "images:"


@dataclasses.dataclass(frozen=True)
class Provenance:
    """Where a table's (or one dataset's) rows came from: the run's params, digest and encoders."""

    params: dict[str, Any]
    input_digest: str | None
    input_encoders: list[str] | None

    def as_json(self) -> dict[str, Any]:
        return {"params": self.params, "input_digest": self.input_digest, "input_encoders": self.input_encoders}


def restricted_datasets(params: Mapping[str, Any]) -> list[str] | None:
    """The datasets a run is restricted to (its `dataset` param: one name or a list), None if none."""
    value = params.get("dataset")
    if value is None:
        return None
    if isinstance(value, list | tuple):
        return sorted({str(v) for v in value}) or None
    return [str(value)]


# Set by run_analysis while an analysis runs with replace_all, so that an analysis writing its
# own warehouse table (partition_shift, resplit_selection) honours --replace-all too.
_REPLACE_ALL: contextvars.ContextVar[bool] = contextvars.ContextVar("replace_all", default=False)


@contextlib.contextmanager
def replacing_all(flag: bool) -> Iterator[None]:
    token = _REPLACE_ALL.set(flag)
    try:
        yield
    finally:
        _REPLACE_ALL.reset(token)


def rows_scope(params: Mapping[str, Any]) -> list[str] | None:
    """The datasets whose rows a run may replace in a table it writes itself; None: every row."""
    return None if _REPLACE_ALL.get() else restricted_datasets(params)


def dataset_column(columns: Sequence[str]) -> str | None:
    return next((c for c in DATASET_COLUMNS if c in columns), None)


def digest_over(digests: Mapping[str, str], encoders: Sequence[str] | None) -> str | None:
    """MD5 of `input=digest` over the inputs `encoders` names (encoders, or images:<dataset>; every
    encoder's runs when None), as view analysis_freshness computes it; None when none has a digest."""
    if encoders is None:
        keys = sorted(k for k in digests if not k.startswith(IMAGES_PREFIX))
    else:
        keys = sorted(e for e in set(encoders) if e in digests)
    if not keys:
        return None
    return hashlib.md5(",".join(f"{e}={digests[e]}" for e in keys).encode()).hexdigest()


def stored_entries(row: tuple[str, str | None, list[str] | None], datasets: Sequence[str]) -> dict[str, Provenance]:
    """Per-dataset provenance of a stored table from its `analyses` row (params JSON, digest,
    encoders): its `stored_datasets` entries, or the row itself for each of `datasets` (its rows)."""
    params = json.loads(row[0])
    if isinstance(params, dict) and isinstance(params.get(PROVENANCE_KEY), dict):
        return {
            d: Provenance(e["params"], e["input_digest"], e["input_encoders"])
            for d, e in params[PROVENANCE_KEY].items()
        }
    table_level = Provenance(params, row[1], None if row[2] is None else list(row[2]))
    return {d: table_level for d in datasets}


def merged_record(
    entries: Mapping[str, Provenance], digests: Mapping[str, str], run_params: Mapping[str, Any]
) -> tuple[str, str | None, list[str] | None]:
    """(params JSON, input_digest, input_encoders) of a merged table from its per-dataset entries."""
    named = [e.input_encoders for e in entries.values()]
    encoders = None if any(n is None for n in named) else sorted({x for n in named if n is not None for x in n})
    stale = [
        e
        for e in entries.values()
        if e.input_digest is None or e.input_digest != digest_over(digests, e.input_encoders)
    ]
    # A stale entry's digest differs from the current one, so the view reports the table stale.
    digest = stale[0].input_digest if stale else digest_over(digests, encoders)
    params = {**run_params, PROVENANCE_KEY: {d: entries[d].as_json() for d in sorted(entries)}}
    return json.dumps(params, sort_keys=True, default=str), digest, encoders


def table_columns(con: duckdb.DuckDBPyConnection, relation: str) -> list[tuple[str, str]] | None:
    """(name, type) of each column of a table or registered frame, None when it does not exist."""
    try:
        rows = con.execute(f'describe "{relation}"').fetchall()
    except duckdb.CatalogException:
        return None
    return [(str(r[0]), str(r[1])) for r in rows]


def why_not_mergeable(old: list[tuple[str, str]] | None, new: list[tuple[str, str]], new_rows: int) -> str | None:
    """None when the new rows can replace the named datasets' rows of the stored table, else why not."""
    if old is None:
        return "no stored table"
    if dataset_column([c for c, _ in old]) is None:
        return "it has no dataset column"
    if {c for c, _ in old} != {c for c, _ in new}:
        return "its columns differ from the stored table's"
    if new_rows and dict(old) != dict(new):
        return "its column types differ from the stored table's"
    return None


def merge_into(con: duckdb.DuckDBPyConnection, table: str, view: str | None, datasets: list[str]) -> int:
    """Delete the named datasets' rows of `table`, append the frame registered as `view`; returns
    the number of rows kept from other datasets."""
    old = table_columns(con, table) or []
    column = dataset_column([c for c, _ in old])
    con.execute(f'delete from "{table}" where list_contains(?, "{column}")', [datasets])
    row = con.execute(f'select count(*) from "{table}"').fetchone()
    kept = int(row[0]) if row else 0
    if view is not None:
        con.execute(f'insert into "{table}" by name select * from "{view}"')
    return kept


def kept_datasets(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    column = dataset_column([c for c, _ in table_columns(con, table) or []])
    if column is None:
        return []
    rows = con.execute(f'select distinct "{column}" from "{table}" where "{column}" is not null').fetchall()
    return sorted(str(r[0]) for r in rows)
