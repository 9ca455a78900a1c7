"""Time the image-level bootstrap (`--resample images+seeds`) at paper scale, against the
paired-seed bootstrap on the same warehouse (the baseline measured in the same run).

Synthetic warehouse with stored predictions: 15 encoders x 3 datasets (8-class multiclass,
5-grade ordinal, 6-label multilabel) x --test-images test images, the runs the CRS reads (logreg
at full depth: clean at 5 fractions x 5 seeds, 15 perturbed conditions at 100 %), predictions at
100 % identical across seeds (as the deterministic probe gives), a panel of all 15.

    .venv/bin/python benchmarks/bootstrap_images.py [--test-images 5000] [--replicates 1000] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.bootstrap_support import cell_batches  # the tests' generator, same folder tree
from support.synthetic import make_dataset

from crsbench.analyses import run_analysis
from crsbench.core import PERTURBED_CONDITIONS
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import load_dataset
from crsbench.warehouse.panels import freeze_panel


def build(db: Path, test_images: int, n_encoders: int) -> int:
    n = int(test_images / 0.5)  # half of each dataset is its test split
    datasets = [
        make_dataset("derm", "multiclass", n, 8, seed=1, split_share=(0.4, 0.1)),
        make_dataset("fundus", "ordinal", n, 5, seed=2, split_share=(0.4, 0.1)),
        make_dataset("cxr", "multilabel", n, 6, seed=3, split_share=(0.4, 0.1)),
    ]
    encoders = [f"enc{i:02d}" for i in range(n_encoders)]
    runs = 0
    with Warehouse.open(db) as wh:
        for ds in datasets:
            load_dataset(wh, ds)
            for k, name in enumerate(encoders):
                batch, predictions = cell_batches(ds, name, 0.6 + 0.05 * k, k, PERTURBED_CONDITIONS)
                wh.append_runs(batch, predictions)
                runs += len(batch)
        wh.compact_parts()
        freeze_panel(wh, "paper", encoders)
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test-images", type=int, default=5000)
    parser.add_argument("--encoders", type=int, default=15)
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2, help="DuckDB threads and scoring workers")
    parser.add_argument("--keep", type=Path, help="build the warehouse in this folder and keep it")
    args = parser.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="crs-bench-boot-"))
    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "bench.duckdb"
    start = time.perf_counter()
    runs = build(db, args.test_images, args.encoders) if not db.exists() else -1
    print(
        f"built {runs:,} runs with predictions ({args.encoders} encoders x 3 datasets x "
        f"{args.test_images:,} test images): {time.perf_counter() - start:.0f} s"
    )
    timings = {}
    with Warehouse.open(db) as wh:
        wh.con.execute(f"set threads = {int(args.threads)}")
        for resample in ("seeds", "images+seeds"):
            start = time.perf_counter()
            result = run_analysis(
                wh, "bootstrap", {"replicates": args.replicates, "resample": resample, "workers": args.threads}
            )
            timings[resample] = time.perf_counter() - start
            print(
                f"{resample}: {args.replicates:,} replicates end to end {timings[resample]:.1f} s; " + result.notes[1]
            )
    ratio = timings["images+seeds"] / timings["seeds"]
    load = os.getloadavg()[0]
    target = 600 if args.test_images >= 5000 and args.encoders >= 15 else None
    print(
        f"images+seeds / seeds = {ratio:.1f}x; load average {load:.1f} on {os.cpu_count()} cores "
        "during the run (a shared machine inflates both)"
    )
    if target:
        print(f"target <= {target} s on 2 cores: {'met' if timings['images+seeds'] <= target else 'NOT met'}")
    print(
        f"command: .venv/bin/python benchmarks/bootstrap_images.py --test-images {args.test_images} "
        f"--encoders {args.encoders} --replicates {args.replicates} --threads {args.threads}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
