"""Query time of `select * from crs_encoder` on a paper-sized synthetic warehouse (issue 5).

Paper size: 15 encoders x 3 datasets x 3,515 seed rows. We read "3,515 seed rows" as the run
records of one encoder x dataset cell over its 5 seeds, i.e. 703 evaluated configurations x 5
seeds. The 703 configurations are the first 703 of the protocol grid (METHODS.md §14) in the
order the axes need them:
probe (logreg, mlp, knn) x depth (1.0, 0.75, 0.5, 0.25) x label fraction (1, .25, .1, .05, .01)
x condition (clean, the 15 perturbations, calib, and 'shift' on the dataset with a shift target).
That is 15 x 3 x 3,515 = 158,175 run rows. `--full-grid` keeps all 1,020-1,080 configurations
instead (about 235k rows).

Run records arrive the way a probe sweep writes them: one Parquet part per (encoder, dataset,
seed) batch, 225 parts. The benchmark times the query on those parts, then after
`Warehouse.compact_parts()` merges them into one file, each as the median of --repeat runs after
one warm-up, and checks the two give identical rows.

    .venv/bin/python benchmarks/crs_query.py [--repeat 15] [--full-grid] [--keep DIR]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core import DEPTHS, PERTURBED_CONDITIONS
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.panels import freeze_panel

ENCODERS = [f"enc{i:02d}" for i in range(15)]
DATASETS = {"isic": None, "aptos": None, "chexpert": "mimic"}
PROBES = ("logreg", "mlp", "knn")
FRACTIONS = (1.0, 0.25, 0.10, 0.05, 0.01)
CONFIGS_PER_CELL = 703
SEEDS = range(5)


def cell_configs(shift_target: str | None, full: bool) -> list[tuple[str, float, float, str, str]]:
    conditions = ["clean", *PERTURBED_CONDITIONS, "calib"] + (["shift"] if shift_target else [])
    grid = [
        (probe, depth, fraction, cond, shift_target if cond == "shift" else "")
        for probe in PROBES
        for depth in reversed(DEPTHS)
        for fraction in FRACTIONS
        for cond in conditions
    ]
    return grid if full else grid[:CONFIGS_PER_CELL]


def cell_frame(encoder: str, dataset: str, seed: int, configs, rng: np.random.Generator) -> pd.DataFrame:
    n = len(configs)
    probe, depth, fraction, condition, target = map(list, zip(*configs, strict=True))
    quality = 0.65 + 0.3 * rng.random()
    auroc = np.clip(quality * (0.8 + 0.2 * np.asarray(fraction) ** 0.3) - 0.1 * rng.random(n), 0.5, 1.0)
    auroc = np.where(np.asarray(condition) == "clean", auroc, auroc - 0.05 * rng.random(n))
    return pd.DataFrame(
        {
            "run_id": [uuid.uuid4().hex for _ in range(n)],
            "fit_id": [
                f"{encoder}|{dataset}|{p}|{d}|{f}|{seed}" for p, d, f in zip(probe, depth, fraction, strict=True)
            ],
            "encoder_id": encoder,
            "dataset_id": dataset,
            "eval_dataset_id": [t or dataset for t in target],
            "regime": "frozen",
            "probe": probe,
            "depth": depth,
            "label_fraction": fraction,
            "seed": seed,
            "condition": condition,
            "auroc": auroc,
            "ece": 0.02 + 0.2 * rng.random(n),
            "ece_adaptive": 0.02 + 0.2 * rng.random(n),
            "brier": rng.random(n) * 0.3,
            "nll": rng.random(n),
            "accuracy": auroc - 0.1,
            "mean_confidence": rng.random(n),
            "qwk": rng.random(n) if dataset == "aptos" else np.nan,
            "ordinal_mae": rng.random(n) if dataset == "aptos" else np.nan,
            "n_train": (np.asarray(fraction) * 20000).astype(int),
            "n_test": 5000,
            "fit_seconds": rng.random(n),
            "pretrained": True,
            "code_version": "bench",
            "created_at": datetime.now(UTC),
        }
    )


def build(db: Path, full: bool) -> int:
    rng = np.random.default_rng(0)
    rows = 0
    with Warehouse.open(db) as wh:
        for encoder in ENCODERS:
            for dataset, target in DATASETS.items():
                configs = cell_configs(target, full)
                for seed in SEEDS:
                    batch = cell_frame(encoder, dataset, seed, configs, rng)
                    wh.append_runs(batch)
                    rows += len(batch)
        freeze_panel(wh, "paper", ENCODERS)
    return rows


def time_query(db: Path, query: str, repeat: int) -> tuple[float, pd.DataFrame]:
    with Warehouse.open(db, read_only=True) as wh:
        result = wh.con.execute(query).df()  # warm-up (file cache, catalog)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            wh.con.execute(query).fetchall()
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000, result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--full-grid", action="store_true")
    parser.add_argument("--keep", type=Path, help="build the warehouse in this folder and keep it")
    args = parser.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="crs-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "bench.duckdb"
    query = "select * from crs_encoder"
    start = time.perf_counter()
    rows = build(db, args.full_grid)
    n_parts = len([p for p in (folder / "bench.duckdb.parts" / "runs").glob("part-*.parquet") if "empty" not in p.name])
    print(
        f"built {rows:,} run rows ({len(ENCODERS)} encoders x {len(DATASETS)} datasets x "
        f"{rows // (len(ENCODERS) * len(DATASETS)):,} seed rows) in {n_parts} parts, "
        f"{time.perf_counter() - start:.1f} s"
    )
    parts_ms, before = time_query(db, query, args.repeat)
    print(f"{query!r}: median {parts_ms:.1f} ms over {args.repeat} runs ({n_parts} Parquet parts)")
    with Warehouse.open(db) as wh:
        merged = wh.compact_parts()
    compact_ms, after = time_query(db, query, args.repeat)
    print(f"{query!r}: median {compact_ms:.1f} ms over {args.repeat} runs after compact_parts() ({merged} parts -> 1)")
    key = ["panel", "encoder_id", "regime"]
    identical = before.sort_values(key).reset_index(drop=True).equals(after.sort_values(key).reset_index(drop=True))
    print(f"rows identical before/after compaction: {identical}; {len(after)} rows")
    print(f"target <= 100 ms: {'met' if min(parts_ms, compact_ms) <= 100 else 'NOT met'}")
    print(f"command: .venv/bin/python benchmarks/crs_query.py{' --full-grid' if args.full_grid else ''}")
    return 0 if identical else 1


if __name__ == "__main__":
    sys.exit(main())
