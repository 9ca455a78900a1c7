"""Benchmark: a small probe grid on threads (the default for it now) against child processes, in one run.

    .venv/bin/python benchmarks/small_grid.py [--repeats 2]

The grid is the fault suite's: 2 encoders x 3 synthetic datasets of 80-120 images, 2 probes x 2
fractions x 2 seeds at one depth, one fit per batch (32 fits, 3,500 image-fits). Each side is a
fresh interpreter calling `Bench.probe` on its own copy of one warehouse, `ProbeConfig.processes` forced on or off;
the two alternate. Reported: wall time, and the CPU the whole machine spent while it ran (the
children's interpreters included, which `getrusage` misses when a pool outlives its waits). The
run records of the two sides must be equal (fit times aside).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _tests_support  # noqa: F401  (tests/ on sys.path: support.fault_support, support.synthetic)
import duckdb
from support.fault_support import load_synthetic_datasets
from support.synthetic import write_features

from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import read_dataset
from crsbench.warehouse.grid import restrict_grid

ENCODERS = ("enc1", "enc2")
COMPARED = "select run_id, auroc, ece, brier, nll, accuracy from runs order by run_id"
# The probe in a fresh interpreter, through the library's door, with the executor forced (ProbeConfig.processes).
FORCED = (
    "import sys\nfrom crsbench import Bench\nfrom crsbench.pipeline.probe import ProbeConfig\n"
    "Bench(sys.argv[1], store=sys.argv[2]).probe(sys.argv[3:], config=ProbeConfig(batch_size=1, processes={processes}))"
)


def busy_seconds() -> float:
    """CPU seconds every core of this machine has spent busy since boot (/proc/stat)."""
    with open("/proc/stat") as fh:
        ticks = [int(v) for v in fh.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def build(folder: Path) -> tuple[Path, str]:
    db = folder / "layout.duckdb"
    with Warehouse.open(db) as wh:
        load_synthetic_datasets(wh)
        restrict_grid(wh.con, ["derm", "cxr", "cxr2"], probes=["logreg", "knn"], depths=[1.0],
                      fractions=[1.0, 0.25], seeds=[0, 1])  # fmt: skip
    with Warehouse.open(db, read_only=True) as wh:
        stored = [read_dataset(wh, n) for n in ("derm", "cxr", "cxr2")]
    store = str(folder / "features.zarr")
    for i, encoder in enumerate(ENCODERS):
        for ds in stored:
            write_features(store, ds, encoder, 8, depths=(1.0,), chunk_rows=64, seed=i)
    return db, store


def probe_once(layout: Path, store: str, target: Path, processes: bool) -> tuple[float, float, object]:
    shutil.copy2(layout, target)
    argv = [str(target), store, *ENCODERS]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    busy, started = busy_seconds(), time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", FORCED.format(processes=processes), *argv], env=env,
                          capture_output=True, text=True)  # fmt: skip
    wall, cpu = time.perf_counter() - started, busy_seconds() - busy
    if proc.returncode != 0:
        raise SystemExit(proc.stderr[-3000:])
    with duckdb.connect(str(target), read_only=True) as con:
        return wall, cpu, con.execute(COMPARED).df()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="crsbench-small-grid-"))
    try:
        layout, store = build(folder)
        times: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        runs = {}
        for r in range(args.repeats):
            for processes in (True, False):
                wall, cpu, runs[processes] = probe_once(layout, store, folder / f"{processes}-{r}.duckdb", processes)
                times[processes].append((wall, cpu))
        assert runs[True].equals(runs[False]), "children and threads stored different runs"
        best = {p: (min(w for w, _ in t), min(c for _, c in t)) for p, t in times.items()}
        for processes, name in ((True, "children"), (False, "threads")):
            wall, cpu = best[processes]
            print(f"{name:9s} wall {wall:6.2f} s  machine CPU {cpu:6.2f} s  (best of {args.repeats})")
        (cw, cc), (tw, tc) = best[True], best[False]
        print(
            f"threads against children: {cw / tw:.2f}x less wall, {cc / tc:.2f}x less CPU; {len(runs[True])} runs equal"
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
