"""Helpers for the fault suite: a small synthetic warehouse, CLI subprocesses, raw part reads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
from support.synthetic import make_dataset, write_features

from crsbench.ingest import Dataset
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import declare_shift, load_dataset, read_dataset
from crsbench.warehouse.parts import parts_dir_for

CLI = [sys.executable, "-c", "import sys; from crsbench.cli import main; sys.exit(main())"]
# A grid of 2 sources x 2 probes x 2 fractions x 2 seeds = 16 fits, one per batch.
PROBE_ARGS = [
    "probe",
    "--probe",
    "logreg",
    "--probe",
    "knn",
    "--depth",
    "1.0",
    "--fraction",
    "1.0",
    "--fraction",
    "0.25",
    "--seed",
    "0",
    "--seed",
    "1",
    "--batch-size",
    "1",
]
PLANNED_FITS = 16


def load_synthetic_datasets(wh: Warehouse) -> dict[str, Dataset]:
    """Load derm (multiclass), cxr and its shift target cxr2 (multilabel) into `wh`; returns them as stored."""
    for ds in (
        make_dataset("derm", "multiclass", 120, 3, seed=1),
        make_dataset("cxr", "multilabel", 120, 3, seed=2),
        make_dataset("cxr2", "multilabel", 80, 3, seed=3),
    ):
        load_dataset(wh, ds)
    declare_shift(wh, "cxr", "cxr2")
    return {n: read_dataset(wh, n) for n in ("derm", "cxr", "cxr2")}


def synthetic_warehouse(folder: Path) -> Path:
    """Two sources (one with a shift target), features of one encoder at full depth."""
    db = folder / "bench.duckdb"
    with Warehouse.open(db) as wh:
        stored = load_synthetic_datasets(wh)
    for ds in stored.values():
        write_features(str(db) + ".features.zarr", ds, "enc", 8, depths=(1.0,), chunk_rows=64)
    return db


def env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def start(args: list[str], db: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [*CLI, "--json", *args, "--db", str(db)], env=env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(proc: subprocess.Popen, timeout: float = 300) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out)


def raw_runs(db: Path) -> pd.DataFrame:
    """Every run row the warehouse holds, folded into the file or in the parts, duplicates included
    (the views may hide them)."""
    folder = parts_dir_for(db) / "runs"
    frames = [pq.read_table(p).to_pandas() for p in sorted(folder.glob("part-*.parquet"))]
    if db.exists():
        with Warehouse.open(db, read_only=True) as wh:
            frames.insert(0, wh.sql("select * exclude (part) from runs_compacted"))
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def one_line_user_error(rc: int, err: str, *names: str) -> None:
    """A refusal as the CLI gives one: exit 1, exactly one `error: ...` line naming `names`."""
    assert rc == 1, err[-3000:]
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert "internal error" not in err and "Traceback" not in err
    for name in names:
        assert name in err, err
