"""Benchmark: the logreg probe grid (`run_grid`) vs a per-fit scikit-learn loop, same outputs.

    .venv/bin/python benchmarks/probe.py [--n 4000] [--dim 768] [--threads 2]

One synthetic multiclass (8 classes) and one multilabel (14 labels) dataset are written to a
temporary feature store (float16; D = 768 with a power-law spectrum, (j+1)^-1 scales over
768 nuisance factors, like real embeddings). N defaults to 4000 images per dataset (paper
datasets have ~20k+) so the scikit-learn side finishes in a few minutes on 2 cores; the
gap grows with N, since the solver's per-iteration cost is the same and sklearn needs ~10x
more iterations on such spectra. Both sides
run the same grid, logreg at full depth x 5 label fractions x 5 seeds per dataset, and
produce the same run records (16 test conditions + calib split per fit):

* crsbench: `run_grid` in-process (lazy Dask reads, train statistics once per feature set,
  batched preconditioned L-BFGS, fraction 1.0 fitted once for all seeds).
* baseline: for each fit, read its features, standardise, fit
  `LogisticRegression(C=1.0, max_iter=1000)` (one per label for multilabel, i.e. one-vs-rest),
  and score every evaluation with `sklearn.metrics.roc_auc_score`.

Prints both times, the speed-up and the largest AUROC difference over all run records.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import _canonical  # noqa: F401  (canonical numerics before numpy and torch load)
import _tests_support  # noqa: F401  (tests/ on sys.path, for support.synthetic)
import numpy as np
import pandas as pd
import torch
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from support.synthetic import make_dataset, write_features
from threadpoolctl import threadpool_limits

from crsbench.core import CLEAN, CONDITIONS, FRACTION_SEEDS, LABEL_FRACTIONS
from crsbench.core.backends import backends_line, cpu_model
from crsbench.features.store import FeatureSetRef, FeatureStore
from crsbench.ingest.types import Dataset, Task
from crsbench.probes.grid import GridContext, plan_fits, run_grid
from crsbench.probes.records import FitKey


def sklearn_loop(
    fits: list[FitKey], datasets: dict[str, Dataset], store: FeatureStore
) -> dict[tuple[str, float, int, str], float]:
    """(dataset, fraction, seed, condition) -> macro AUROC, the obvious way: every fit reads, standardises, fits, scores."""
    out: dict[tuple[str, float, int, str], float] = {}
    for key in fits:
        ds = datasets[key.dataset_id]
        ref = FeatureSetRef(ds.name, key.encoder_id)
        train = ds.split_rows("train")
        x_train = np.asarray(store.array(ref, 1.0, CLEAN)[:][train], dtype=np.float64)
        mean, std = x_train.mean(0), x_train.std(0)
        rows = np.searchsorted(train, ds.fraction_rows(key.label_fraction, key.seed))
        x, y = (x_train[rows] - mean) / std, ds.labels[train][rows]
        multilabel = Task(ds.task) is Task.MULTILABEL
        models = (
            [LogisticRegression(C=1.0, max_iter=1000).fit(x, y[:, j]) for j in range(y.shape[1])]
            if multilabel
            else [LogisticRegression(C=1.0, max_iter=1000).fit(x, y)]
        )
        evals = [(c, c, ds.split_rows("test")) for c in CONDITIONS] + [("calib", CLEAN, ds.split_rows("calib"))]
        for condition, array, eval_rows in evals:
            xe = (np.asarray(store.array(ref, 1.0, array)[:][eval_rows], dtype=np.float64) - mean) / std
            ye = ds.labels[eval_rows]
            if multilabel:
                auroc = np.mean([roc_auc_score(ye[:, j], m.predict_proba(xe)[:, 1]) for j, m in enumerate(models)])
            else:
                p = models[0].predict_proba(xe)
                auroc = np.mean([roc_auc_score(ye == k, p[:, k]) for k in range(p.shape[1])])
            out[(key.dataset_id, key.label_fraction, key.seed, condition)] = float(auroc)
    return out


def grid_inputs(folder: Path, n: int, dim: int) -> tuple[dict[str, Dataset], FeatureStore, list[FitKey]]:
    """The benchmark's two datasets, their features in a store under `folder`, and the logreg grid's fits."""
    url = str(folder / "bench.zarr")
    datasets = {
        "derm": make_dataset("derm", Task.MULTICLASS, n, 8, seed=1),
        "cxr": make_dataset("cxr", Task.MULTILABEL, n, 14, seed=2),
    }
    for ds in datasets.values():
        write_features(url, ds, "enc", dim, depths=(1.0,), signal=0.35, chunk_rows=2048, latent=dim, decay=1.0)
    store = FeatureStore(url)
    fits = plan_fits(
        list(datasets), ["enc"], store, probes=["logreg"], depths=(1.0,), fractions=LABEL_FRACTIONS,
        seeds=FRACTION_SEEDS,
    )  # fmt: skip
    return datasets, store, fits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000, help="images per dataset")
    parser.add_argument("--dim", type=int, default=768, help="feature dimension")
    parser.add_argument("--threads", type=int, default=2, help="torch / BLAS threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    warnings.filterwarnings("ignore", category=UserWarning)

    with tempfile.TemporaryDirectory() as tmp:
        datasets, store, fits = grid_inputs(Path(tmp), args.n, args.dim)

        frames: list[pd.DataFrame] = []
        start = time.perf_counter()
        run_grid(fits, GridContext(datasets, store, lambda runs, preds: frames.append(runs)))
        ours_s = time.perf_counter() - start
        # keyed by what the fit is (run ids also carry the data and weights digests the grid stamps)
        ours = pd.concat(frames).set_index(["dataset_id", "label_fraction", "seed", "condition"])["auroc"]

        start = time.perf_counter()
        # scikit-learn on OpenBLAS with the threads asked for (canonical numerics pin crsbench's to 1)
        with threadpool_limits(limits=args.threads, user_api="blas"):
            reference = sklearn_loop(fits, datasets, store)
        base_s = time.perf_counter() - start

    diff = max(abs(ours[r] - a) for r, a in reference.items())
    assert set(reference) == set(ours.index), "the two sides produced different run records"
    print(
        f"command: {Path(sys.executable).name} benchmarks/probe.py --n {args.n} --dim {args.dim} "
        f"--threads {args.threads}"
    )
    print(
        f"grid: {len(fits)} logreg fits, {len(ours)} run records "
        f"(multiclass K=8 + multilabel L=14, N={args.n}, D={args.dim})"
    )
    print(f"CPU: {cpu_model()}; {backends_line()}")
    print(f"crsbench run_grid: {ours_s:8.1f} s")
    print(f"sklearn loop:      {base_s:8.1f} s")
    print(f"speed-up: {base_s / ours_s:.1f}x   max |AUROC difference|: {diff:.5f}")
    return 0 if diff <= 0.002 else 1


if __name__ == "__main__":
    raise SystemExit(main())
