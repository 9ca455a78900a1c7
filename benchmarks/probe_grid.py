"""Benchmark: the demo's probe grid with the logreg solver dispatch (exact Newton where it pays)
vs L-BFGS for every logreg fit, same features, same run, alternated.

    .venv/bin/python benchmarks/probe_grid.py --db demo-out/crsbench.duckdb [-e tiny-resnet18 ...] [--rounds 2]

Reads an existing warehouse (e.g. the demo's) read-only and writes nothing to it: each side runs
`run_grid` in-process over the demo grid of the encoders given (default: the first two
encoders), keeping the run records in memory. Prints each side's wall and CPU seconds, their
ratios, and the largest difference of every metric between the two sides' run records (the two
solvers reach the same optimum, so the printed 4-decimal figures agree).
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

import pandas as pd

import crsbench.probes.kinds.estimators as estimators
from crsbench.features.store import FeatureStore
from crsbench.probes.grid import GridContext, plan_fits, run_grid
from crsbench.probes.lbfgs import fit_logreg
from crsbench.probes.metrics import METRICS
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import list_datasets, read_dataset, shift_pairs, shift_targets

DISPATCH = estimators.solve_logreg


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_side(db: Path, encoders: list[str], lbfgs_only: bool) -> tuple[pd.DataFrame, float, float]:
    estimators.solve_logreg = fit_logreg if lbfgs_only else DISPATCH  # type: ignore[assignment]
    with Warehouse.open(db, read_only=True) as wh:
        targets = {t for _, t in shift_pairs(wh)}
        names = [n for n in list_datasets(wh) if n not in targets]
        shifts = {n: shift_targets(wh, n) for n in names}
        needed = dict.fromkeys(names + [t for ts in shifts.values() for t in ts])
        loaded = {n: read_dataset(wh, n) for n in needed}
    store = FeatureStore(str(db) + ".features.zarr")
    fits = plan_fits(names, encoders, store)
    frames: list[pd.DataFrame] = []
    wall, cpu = time.perf_counter(), _cpu()
    run_grid(fits, GridContext(loaded, store, lambda runs, _p: frames.append(runs), shift_targets=shifts))
    wall, cpu = time.perf_counter() - wall, _cpu() - cpu
    estimators.solve_logreg = DISPATCH  # type: ignore[assignment]
    runs = pd.concat(frames).sort_values("run_id").reset_index(drop=True)
    return runs, wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, default=Path("demo-out/crsbench.duckdb"))
    parser.add_argument("-e", "--encoder", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=1, help="alternations of the two sides (best of each kept)")
    args = parser.parse_args()
    with Warehouse.open(args.db, read_only=True) as wh:
        encoders = args.encoder or sorted(wh.sql("select distinct encoder_id from runs")["encoder_id"])[:2]
    best: dict[bool, tuple[float, float]] = {}
    runs: dict[bool, pd.DataFrame] = {}
    for _ in range(args.rounds):
        for lbfgs_only in (True, False):
            frame, wall, cpu = run_side(args.db, encoders, lbfgs_only)
            runs[lbfgs_only] = frame
            old = best.get(lbfgs_only, (float("inf"), float("inf")))
            best[lbfgs_only] = (min(old[0], wall), min(old[1], cpu))
            print(f"{'L-BFGS everywhere' if lbfgs_only else 'solver dispatch  '}: wall {wall:7.1f} s, cpu {cpu:7.1f} s")
    (w_old, c_old), (w_new, c_new) = best[True], best[False]
    print(f"encoders {', '.join(encoders)}: {len(runs[False])} run records per side")
    print(f"speed-up: wall {w_old / w_new:.2f}x ({w_old:.1f} s -> {w_new:.1f} s), cpu {c_old / c_new:.2f}x")
    a, b = runs[True], runs[False]
    assert a["run_id"].tolist() == b["run_id"].tolist(), "the two sides planned different runs"
    diffs = {m: float((a[m] - b[m]).abs().max()) for m in METRICS.names() if m in a}
    print("max |difference| per metric: " + ", ".join(f"{m} {d:.2g}" for m, d in diffs.items()))


if __name__ == "__main__":
    main()
