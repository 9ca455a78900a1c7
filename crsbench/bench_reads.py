"""The reading half of `crsbench.Bench` beside the scores: exports and the encoder list. Bench
inherits it; every method opens the warehouse (lean: one DuckDB thread) for its own call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsbench.warehouse.connection import Warehouse


class Reads:
    """Bench's methods that only read (`self.db` is the warehouse)."""

    db: Path
    store: str

    def export(
        self, name_or_query: str, fmt: str = "csv", out: Path | str | None = None, force: bool = False
    ) -> tuple[int, str | None]:
        """Export a view, table or read-only query (in the SQL sandbox) as csv, parquet, json,
        markdown or latex; returns (rows, text), text None when written to `out`. `out` is
        checked before the query runs: never the warehouse, its WAL, parts folder or feature
        store, never a folder, device or FIFO, and an existing file only with `force`."""
        from crsbench.core import check_write_target
        from crsbench.pipeline.stores import warehouse_paths
        from crsbench.warehouse.export import export

        if out is not None:
            check_write_target(
                Path(out), force=force, protected=warehouse_paths(self.db, self.store), example="out.csv"
            )
        with Warehouse.open(self.db, sandbox=True, lean=True) as wh:
            return export(wh, name_or_query, fmt, Path(out) if out is not None else None, force=force)

    def encoders(
        self, files: Sequence[Path | str] = (), allow_code: bool = False, check_weights: bool = False
    ) -> list[dict[str, Any]]:
        """Every encoder (built-in, TOML `files` and the warehouse's crsbench.toml, plugins) with its
        origin, family, scope, loader and input size; `check_weights` adds whether its weights and
        text tower are available locally. `allow_code` lets `files` name Python code."""
        from crsbench.pipeline.encoders import encoder_rows

        return encoder_rows(self.db, [Path(f) for f in files], allow_code, check_weights)

    @staticmethod
    def missing_weights_hint() -> str:
        """Where missing weights go, in one line: the places extraction looks, in its order."""
        from crsbench.pipeline.encoders import missing_weights_hint

        return missing_weights_hint()
