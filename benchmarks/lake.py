"""The team warehouse against the lone file, on the same data, in one run (issue 47):

1. `select * from crs_encoder` on the paper-sized run table of `crs_query.py` (15 encoders x 3 datasets
   x 3,515 seed rows = 158,175 runs, 225 batches, panel `paper` frozen): the lone file after
   `crsbench warehouse compact`, and a DuckLake with a PostgreSQL catalog (a server of its own, started
   here from the distribution's package on a private socket) holding the same batches, each committed
   as the probe grid commits it. Median of --repeat runs after one warm-up; the rows must be identical.
   Both at rest: the lone file compacted, the lake's batch files merged (`crsbench warehouse compact`
   on either; `crsbench probe` does it as it ends).
2. Probe-grid write throughput, two ways:
   * the write path alone: the same 225 batches appended as a sweep appends them (`run_sink()`: Parquet
     parts beside the lone file; one DuckLake commit per batch on the team warehouse), run rows per
     second of wall time;
   * the probe grid itself: `crsbench probe` (default batch size) over the same synthetic features into
     each backend: 3 datasets (one shift pair) x --grid-images images, --grid-encoders encoders x D = 64,
     grid logreg + k-NN x depth 1 x fractions 1, 0.25 x seeds 0, 1; run rows (with their per-image
     predictions) per second of the command's wall time, compaction or merge included.

    .venv/bin/python benchmarks/lake.py [--repeat 15] [--grid-images 1500] [--grid-encoders 4]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _tests_support  # noqa: F401  (tests/ on sys.path: support.postgres_support)
import numpy as np
import pandas as pd
from crs_query import DATASETS, ENCODERS, SEEDS, cell_configs, cell_frame, time_query
from support.postgres_support import postgres_server

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

QUERY = "select * from crs_encoder"


def batches() -> list[pd.DataFrame]:
    """The paper-sized run table, one frame per (encoder, dataset, seed) batch, as crs_query builds it."""
    rng = np.random.default_rng(0)
    out = []
    for encoder in ENCODERS:
        for dataset, target in DATASETS.items():
            configs = cell_configs(target, False)
            out += [cell_frame(encoder, dataset, seed, configs, rng) for seed in SEEDS]
    return out


def write(db: str, frames: list[pd.DataFrame], data_path: str | None = None) -> float:
    """Append every batch through the warehouse's sweep sink; returns the wall seconds."""
    with Warehouse.open(db, data_path=data_path) as wh:
        sink = wh.run_sink()
    start = time.perf_counter()
    for frame in frames:
        sink(frame)
    return time.perf_counter() - start


def probe_grid(db: str, store: str, images: int, encoders: int, data_path: str | None = None) -> tuple[float, int]:
    """`crsbench probe` into `db` over synthetic features; (wall seconds, run rows)."""
    from support.synthetic import make_dataset, write_features

    from crsbench.warehouse.datasets import declare_shift, load_dataset, read_dataset
    from crsbench.warehouse.grid import restrict_grid

    with Warehouse.open(db, data_path=data_path) as wh:
        for name, task, seed in (("derm", "multiclass", 1), ("cxr", "multilabel", 2), ("cxr2", "multilabel", 3)):
            load_dataset(wh, make_dataset(name, task, images, 4, seed=seed))
        declare_shift(wh, "cxr", "cxr2")
        restrict_grid(wh.con, ["derm", "cxr", "cxr2"], probes=["logreg", "knn"], depths=[1.0],
                      fractions=[1.0, 0.25], seeds=[0, 1])  # fmt: skip
        stored = [read_dataset(wh, n) for n in ("derm", "cxr", "cxr2")]
    if not Path(store).exists():
        for k in range(encoders):
            for ds in stored:
                write_features(store, ds, f"enc{k}", 64, depths=(1.0,), seed=k)
    cli = [sys.executable, "-c", "import sys; from crsbench.cli import main; sys.exit(main())"]
    start = time.perf_counter()
    subprocess.run([*cli, "--quiet", "probe", "--db", db, "--store", store], check=True)
    wall = time.perf_counter() - start
    with Warehouse.open(db, read_only=True) as wh:
        rows = int(wh.sql("select count(*) n from runs")["n"].item())
    return wall, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--grid-images", type=int, default=1500)
    parser.add_argument("--grid-encoders", type=int, default=4)
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="crs-lake-bench-"))
    frames = batches()
    rows = sum(len(f) for f in frames)
    lone = str(folder / "lone.duckdb")
    with postgres_server() as server:
        team = "ducklake:postgres:" + server.createdb("bench")
        lone_s = write(lone, frames)
        team_s = write(team, frames, str(folder / "team-data"))
        print(f"write {rows:,} run rows in {len(frames)} batches: lone file (Parquet parts) {lone_s:.1f} s = "
              f"{rows / lone_s:,.0f} rows/s; team warehouse (DuckLake commits) {team_s:.1f} s = "
              f"{rows / team_s:,.0f} rows/s; ratio {team_s / lone_s:.2f}x")  # fmt: skip
        with Warehouse.open(lone) as wh:
            wh.compact_parts()
            freeze_panel(wh, "paper", ENCODERS)
        with Warehouse.open(team) as wh:
            wh.compact_parts()
            freeze_panel(wh, "paper", ENCODERS)
        lone_ms, lone_rows = time_query(Path(lone), QUERY, args.repeat)
        team_ms, team_rows = time_query(Path(team), QUERY, args.repeat)
        store = str(folder / "grid.zarr")
        grid_lone = probe_grid(str(folder / "grid.duckdb"), store, args.grid_images, args.grid_encoders)
        grid_team = probe_grid("ducklake:postgres:" + server.createdb("grid"), store, args.grid_images,
                               args.grid_encoders, str(folder / "grid-data"))  # fmt: skip
    assert grid_lone[1] == grid_team[1], (grid_lone, grid_team)
    grid_ratio = grid_team[0] / grid_lone[0]
    print(f"probe grid ({grid_lone[1]:,} run rows): lone file {grid_lone[0]:.1f} s = {grid_lone[1] / grid_lone[0]:,.0f} "
          f"rows/s; team warehouse {grid_team[0]:.1f} s = {grid_team[1] / grid_team[0]:,.0f} rows/s; "
          f"ratio {grid_ratio:.2f}x")  # fmt: skip
    key = ["panel", "encoder_id", "regime"]
    same = (
        lone_rows.drop(columns=[]).sort_values(key).reset_index(drop=True)
        .equals(team_rows.sort_values(key).reset_index(drop=True))
    )  # fmt: skip
    print(f"{QUERY!r}: lone file (compacted) median {lone_ms:.1f} ms; team warehouse median {team_ms:.1f} ms; "
          f"ratio {team_ms / lone_ms:.2f}x over {args.repeat} runs; rows identical: {same}")  # fmt: skip
    print(f"targets: query within 3x: {'met' if team_ms <= 3 * lone_ms else 'NOT met'}; "
          f"probe-grid write throughput within 1.5x: {'met' if grid_ratio <= 1.5 else 'NOT met'} "
          f"(the write path alone: {team_s / lone_s:.2f}x)")  # fmt: skip
    print("command: .venv/bin/python benchmarks/lake.py")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
