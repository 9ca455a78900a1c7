"""Tables an analysis keeps beside its `analysis_<name>_*` outputs (subgroup_metrics, operating_points,
resplit_selection, partition_shift, ...): each replaced whole, or for a run restricted to datasets only
their rows, by `replace_rows`.

Inside `deferring_writes()` the replacement is recorded instead of written, so an analysis computed on a
read-only connection (in a child process, `analyses.processes`) hands its side tables back with its
outputs, and the caller writes both in order (`write_deferred`), as the analysis would have.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

import pandas as pd

from crsbench.analyses.merge import dataset_column
from crsbench.warehouse.connection import Warehouse

Replacement = tuple[dict[str, pd.DataFrame], list[str] | None]  # (table -> frame, datasets or None)

_DEFERRED: ContextVar[list[Replacement] | None] = ContextVar("deferred_side_tables", default=None)


@contextmanager
def deferring_writes() -> Iterator[list[Replacement]]:
    """Within the block, `replace_rows` appends its replacement to the yielded list instead of writing."""
    recorded: list[Replacement] = []
    token = _DEFERRED.set(recorded)
    try:
        yield recorded
    finally:
        _DEFERRED.reset(token)


def replace_rows(wh: Warehouse, frames: Mapping[str, pd.DataFrame], datasets: list[str] | None = None) -> None:
    """Replace every row of each table with its frame (same columns, in order), in one transaction;
    with `datasets` (a run restricted to them), only those datasets' rows (METHODS.md §11)."""
    deferred = _DEFERRED.get()
    if deferred is not None:
        deferred.append((dict(frames), None if datasets is None else list(datasets)))
        return
    with wh.transaction() as con:
        for table, frame in frames.items():
            columns = [str(c) for c in frame.columns]
            names = ", ".join(f'"{c}"' for c in columns)
            view = f"_new_{table}"
            column = dataset_column(columns)
            if datasets is not None and column is not None:
                con.execute(f'delete from "{table}" where list_contains(?, "{column}")', [datasets])
            else:
                con.execute(f'delete from "{table}"')
            con.register(view, frame)
            try:
                con.execute(f'insert into "{table}" ({names}) select {names} from "{view}"')
            finally:
                con.unregister(view)


def write_deferred(wh: Warehouse, replacements: list[Replacement]) -> None:
    """Write replacements recorded under `deferring_writes()`, in the order they were made."""
    for frames, datasets in replacements:
        replace_rows(wh, frames, datasets)
