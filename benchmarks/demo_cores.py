"""Benchmark: the demo's extraction and probe grid on every core against the previous defaults, in one run.

    .venv/bin/python benchmarks/demo_cores.py [--scale 1.0]

Extraction: one forward stream per core (`threads` None now) against one stream on a 2-core machine
(half the cores, the previous default), on two warehouses holding the same generated suite. Probe
grid: the demo's grid in child processes (`processes` None: chosen by its size) against threads in
this process (`processes=False`, the previous executor), on two copies of one extracted warehouse.
Each pair runs one after the other; the script checks that the feature stores hold the same bytes
and that the run records and predictions of the two grids are equal (fit times aside).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import _canonical  # noqa: F401  (canonical numerics before numpy and torch load)
import duckdb

from crsbench import Bench
from crsbench.cli.commands.demo import DEMO_PROBE_BATCH
from crsbench.features.extract_options import ExtractOptions
from crsbench.pipeline.extract import ExtractConfig
from crsbench.pipeline.probe import ProbeConfig


def store_digest(store: Path) -> str:
    """One digest of every chunk file of a feature store (names and bytes; metadata's times aside)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in store.rglob("*") if p.is_file() and not p.name.startswith((".z", "zarr.json"))):
        digest.update(str(path.relative_to(store)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def grid_tables(db: Path) -> tuple[object, object]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        runs = con.execute("select * exclude (created_at, fit_seconds) from runs order by run_id").df()
        preds = con.execute("select * from predictions order by all").df()
        return runs, preds
    finally:
        con.close()


def timed_extract(db: Path, threads: int | None) -> float:
    bench = Bench(db)
    plan = bench.demo_plan([])
    start = time.perf_counter()
    bench.extract(list(plan.encoders), list(plan.datasets), ExtractConfig(options=ExtractOptions(threads=threads)))
    return time.perf_counter() - start


def timed_grid(db: Path, processes: bool | None) -> float:
    bench = Bench(db)
    plan = bench.demo_plan([])
    start = time.perf_counter()
    bench.probe(list(plan.encoders), (), ProbeConfig(batch_size=DEMO_PROBE_BATCH, processes=processes))
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args()
    old_streams = max(1, (os.cpu_count() or 2) // 2)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for side in ("before", "after"):
            Bench(root / side / "crsbench.duckdb").ingest_suite(root / side / "suite", args.scale, 128)
        extract_before = timed_extract(root / "before" / "crsbench.duckdb", old_streams)
        extract_after = timed_extract(root / "after" / "crsbench.duckdb", None)
        stores = [store_digest(root / side / "crsbench.duckdb.features.zarr") for side in ("before", "after")]
        shutil.rmtree(root / "before")
        shutil.copytree(root / "after", root / "before")
        grid_before = timed_grid(root / "before" / "crsbench.duckdb", False)
        grid_after = timed_grid(root / "after" / "crsbench.duckdb", None)
        runs_before, preds_before = grid_tables(root / "before" / "crsbench.duckdb")
        runs_after, preds_after = grid_tables(root / "after" / "crsbench.duckdb")
    same_grid = runs_before.equals(runs_after) and preds_before.equals(preds_after)  # type: ignore[attr-defined]
    print(f"command: benchmarks/demo_cores.py --scale {args.scale}  ({os.cpu_count()} cores)")
    print(
        f"extraction: {old_streams} stream(s) {extract_before:6.1f} s, one per core {extract_after:6.1f} s "
        f"({extract_before / extract_after:.2f}x); same bytes: {stores[0] == stores[1]}"
    )
    print(
        f"probe grid: threads {grid_before:6.1f} s, child processes {grid_after:6.1f} s "
        f"({grid_before / grid_after:.2f}x); same runs and predictions: {same_grid} ({len(runs_after)} runs)"
    )
    return 0 if stores[0] == stores[1] and same_grid else 1


if __name__ == "__main__":
    raise SystemExit(main())
