"""Run a small probe grid and write its run table to Parquet (argv[1]).

Started by test_probes_reproducible in a subprocess per ATEN_CPU_CAPABILITY, since torch
reads that variable once, at import. Features are correlated (a power-law spectrum over
many dimensions) so the logistic-regression optimum is ill-conditioned, as with real
encoder embeddings.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pandas as pd
import torch
from support.synthetic import make_dataset, write_features

from crsbench.features.store import FeatureStore
from crsbench.probes.grid import plan_fits, run_grid


def main(out: str) -> None:
    torch.set_num_threads(1)
    root = Path(tempfile.mkdtemp())
    datasets = {
        "derm": make_dataset("derm", "multiclass", 400, 5, seed=1),
        "cxr": make_dataset("cxr", "multilabel", 400, 4, seed=2),
    }
    url = str(root / "features.zarr")
    for ds in datasets.values():
        write_features(url, ds, "enc", 192, depths=(1.0,), chunk_rows=128, signal=0.3, latent=64, decay=1.0)
    store = FeatureStore(url)
    fits = plan_fits(
        list(datasets),
        ["enc"],
        store,
        probes=("logreg", "knn"),
        fractions=(0.05, 0.25, 1.0),
        seeds=(0, 1),
        depths=(1.0,),
    )
    frames: list[pd.DataFrame] = []
    run_grid(fits, datasets, store, shift_targets={}, done=set(), sink=lambda runs, _predictions: frames.append(runs))
    table = pd.concat(frames).drop(columns=["fit_seconds", "created_at"])
    table.sort_values("run_id").reset_index(drop=True).to_parquet(out)


if __name__ == "__main__":
    main(sys.argv[1])
