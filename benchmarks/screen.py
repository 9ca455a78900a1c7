"""Benchmark: the pre-screen (every transferability estimator, `score_cell`) against the logreg grid's
fits on the same cells, in one run.

    .venv/bin/python benchmarks/screen.py [--encoders 15] [--images 25000] [--dim 1024] [--classes 5]
        [--workers 2] [--grid-encoders 2] [--small]

Cells: E synthetic encoders of the same N train images (the whole train split), one depth, D dims,
K classes (multiclass). Each encoder mixes 64 latent factors with (j+1)^-1/2 scales into D dims plus
noise, like real embeddings, and adds a class signal whose strength grows with the encoder's
number (so the estimators have an ordering to recover; printed as Kendall tau per estimator). The
features are standardised as the probes standardise them (train mean and standard deviation).

* pre-screen: `score_cell` over every registered estimator, for every encoder; `--workers`
  processes with one thread each (numpy's OpenBLAS is one thread under crsbench's canonical
  numerics; torch set to one), each generating and scoring its encoders. Wall time of the whole
  pre-screen, and the sum of the per-encoder CPU seconds.
* logreg grid: `get_probe("logreg").fit` on the same cells over LABEL_FRACTIONS x FRACTION_SEEDS
  (fraction 1.0 fitted once: logreg is not seeded), one thread, CPU seconds per fit. Subsets are
  drawn by `numpy.random.default_rng(seed)` without replacement. Fitting every encoder's grid takes
  long, so it is timed on `--grid-encoders` evenly spaced encoders (the first, the last, ...) and
  scaled linearly to all E (printed). Those encoders run in `--workers` processes with one thread
  each, as the pre-screen's do, so both sides share the cores (and their caches and memory
  bandwidth) in the same way.

Each process first scores and fits a tiny cell (`warm_up`), so neither side's timing includes
importing its libraries. The ratio compares one-thread CPU seconds on both sides (the grid spreads its fits over the cores as
the pre-screen spreads its encoders). The pre-screen's wall time includes starting the processes and
generating each encoder's features (as a real screen includes reading them). Targets (issue 45):
the whole pre-screen <= 3 min of wall time on 2 cores, and >= 50x cheaper than the logreg fits.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import _canonical  # noqa: F401  (canonical numerics before numpy and torch load)
import numpy as np
import torch
from scipy.stats import kendalltau
from threadpoolctl import threadpool_limits

from crsbench.core import FRACTION_SEEDS, LABEL_FRACTIONS
from crsbench.core.backends import backends_line, cpu_model
from crsbench.ingest.types import Task
from crsbench.probes.registry import get_probe
from crsbench.probes.screening.registry import estimator_names
from crsbench.probes.screening.score import score_cell

LATENT = 64


def encoder_features(e: int, n: int, dim: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Encoder e's standardised (n, dim) float64 train features and the shared labels."""
    y = np.random.default_rng(seed).integers(0, k, n)
    rng = np.random.default_rng([seed, e + 1])
    factors = rng.normal(size=(n, LATENT)) / np.sqrt(np.arange(LATENT) + 1.0)
    factors += (0.03 + 0.006 * e) * rng.normal(size=(k, LATENT))[y]  # class signal, stronger for later encoders
    x = factors @ (rng.normal(size=(LATENT, dim)) / 8.0) + 0.05 * rng.normal(size=(n, dim))
    return (x - x.mean(axis=0)) / x.std(axis=0), y


@functools.cache
def warm_up(k: int) -> None:
    """Once per process, before any timing: both sides' first call on a tiny cell, so that neither
    side's timing includes importing its libraries (scikit-learn's mixture for N-LEEP, the solvers)."""
    torch.set_num_threads(1)
    x, y = encoder_features(0, 64 * k, 16, k)
    with threadpool_limits(limits=1):
        score_cell(x, y, Task.MULTICLASS, k)
        get_probe("logreg").fit(x, y, Task.MULTICLASS, k, 0)


def screen_one(e: int, n: int, dim: int, k: int) -> tuple[int, float, dict[str, float]]:
    """(encoder, CPU seconds, scores) of one encoder's pre-screen, on one thread."""
    warm_up(k)
    x, y = encoder_features(e, n, dim, k)
    start = time.process_time()
    with threadpool_limits(limits=1):  # crsbench's canonical numerics: OpenBLAS on one thread
        scores = score_cell(x, y, Task.MULTICLASS, k)
    return e, time.process_time() - start, scores


def grid_fits(e: int, n: int, dim: int, k: int) -> tuple[int, float]:
    """(number of logreg fits, CPU seconds) of one encoder's grid, on one thread."""
    warm_up(k)
    x, y = encoder_features(e, n, dim, k)
    fit = get_probe("logreg").fit
    subsets = [np.arange(n)] + [
        np.sort(np.random.default_rng(seed).choice(n, round(f * n), replace=False))
        for f in LABEL_FRACTIONS
        if f < 1.0
        for seed in FRACTION_SEEDS
    ]
    start = time.process_time()
    with threadpool_limits(limits=1):
        for rows in subsets:
            fit(x[rows], y[rows], Task.MULTICLASS, k, 0)
    return len(subsets), time.process_time() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--encoders", type=int, default=15)
    ap.add_argument("--images", type=int, default=25_000)
    ap.add_argument("--dim", type=int, default=1024)
    ap.add_argument("--classes", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2, help="pre-screen processes, one thread each")
    ap.add_argument("--grid-encoders", type=int, default=2, help="encoders whose logreg grid is timed")
    ap.add_argument("--small", action="store_true", help="a quick check: 4 encoders x 3,000 images x D = 256")
    args = ap.parse_args()
    if args.small:
        args.encoders, args.images, args.dim = 4, 3000, 256
    n, dim, k, n_enc = args.images, args.dim, args.classes, args.encoders

    start = time.perf_counter()
    with ProcessPoolExecutor(args.workers) as pool:
        results = sorted(pool.map(screen_one, range(n_enc), [n] * n_enc, [dim] * n_enc, [k] * n_enc))
    screen_wall = time.perf_counter() - start
    screen_cpu = sum(r[1] for r in results)

    # evenly spaced encoders: a fit's cost depends on its class signal, which grows with the encoder number
    timed = sorted({round(float(e)) for e in np.linspace(0, n_enc - 1, min(args.grid_encoders, n_enc))})
    with ProcessPoolExecutor(args.workers) as pool:  # as the pre-screen ran: the same contention
        grid = list(pool.map(grid_fits, timed, [n] * len(timed), [dim] * len(timed), [k] * len(timed)))
    fits_per_encoder = grid[0][0]
    grid_cpu = sum(g[1] for g in grid) * n_enc / len(grid)

    print(
        f"command: {Path(sys.executable).name} benchmarks/screen.py --encoders {n_enc} --images {n} --dim {dim} "
        f"--classes {k} --workers {args.workers} --grid-encoders {args.grid_encoders}"
    )
    print(f"CPU: {cpu_model()}; {backends_line()}")
    print(f"cells: {n_enc} encoders x {n} train images x D = {dim}, K = {k}, one depth")
    for name in estimator_names():
        tau = kendalltau([r[2][name] for r in results], range(n_enc)).statistic
        print(f"  {name:10s} Kendall tau with the built-in signal order: {tau:+.3f}")
    print(
        f"pre-screen ({len(estimator_names())} estimators, {args.workers} processes): {screen_wall:8.1f} s wall, "
        f"{screen_cpu:8.1f} s CPU ({screen_cpu / n_enc:.1f} s per encoder)"
    )
    print(
        f"logreg grid: {fits_per_encoder} fits per encoder, timed on encoders {timed} "
        f"({sum(g[1] for g in grid):.1f} s CPU) and scaled x{n_enc / len(grid):g}: {grid_cpu:8.1f} s CPU"
    )
    print(f"ratio (grid CPU / pre-screen CPU): {grid_cpu / screen_cpu:.1f}x")
    met = screen_wall <= 180 and grid_cpu / screen_cpu >= 50
    print(f"targets (<= 180 s wall on 2 cores, >= 50x): {'met' if met else 'not met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
