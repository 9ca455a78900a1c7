"""Benchmark: the probe grid's hot dense calls, one at a time, under each BLAS/LAPACK path a CPU can take.

    .venv/bin/python benchmarks/backends.py [--n 4000] [--dim 768] [--repeats 7]

Every call the logistic-regression grid spends its time in (docs/METHODS.md §4.4), at the sizes of
`benchmarks/probe.py` (N = 4,000 images, D = 768, 8 classes, 14 labels, one intra-op thread as the
grid runs each fit), timed as the median of `--repeats` calls after a warm-up, in a child process
per configuration, because the libraries read their modes when they load:

* `torch, MKL AVX2 branch`: MKL_CBWR=AVX2, the branch crsbench's canonical numerics first chose
  (Intel's only: other vendors' CPUs take MKL's own path under it, METHODS §4.3);
* `torch, MKL COMPATIBLE branch`: canonical numerics now (what MKL still computes in crsbench);
* `torch, MKL own path`: CRSBENCH_NATIVE_NUMERICS=1 and no MKL_CBWR, MKL's own choice for this CPU
  (the generic path MKL is known to take on some non-Intel CPUs shows up here);
* `numpy, OpenBLAS Haswell`: the same call in numpy/scipy on OpenBLAS's Haswell kernels (canonical
  numerics' numpy; an AVX2-only AMD Zen picks kernels of the same width, its own Zen ones);
* `numpy, OpenBLAS own`: OpenBLAS's own kernels for this CPU (SkylakeX ones where it has AVX-512).

Also the float32 version of the calls where float32 would do (the k-NN candidate keys, the MLP,
the L-BFGS preconditioner's Gram). Prints one table, ms per call, and the CPU and libraries.

Then the whole logistic-regression grid of `benchmarks/probe.py` (50 fits), timed with the solvers'
skinny products on OpenBLAS (`crsbench.core.products.matmul`, what crsbench runs) and on torch's
`@` (MKL, as before), alternated `--grid-repeats` times in child processes of the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

CONFIGS = {
    "torch, MKL AVX2 branch": {"CRSBENCH_NATIVE_NUMERICS": "1", "MKL_CBWR": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "torch, MKL COMPATIBLE branch": {},
    "torch, MKL own path": {"CRSBENCH_NATIVE_NUMERICS": "1", "MKL_CBWR": None, "MKL_ENABLE_INSTRUCTIONS": None},
    "numpy, OpenBLAS Haswell": {},
    "numpy, OpenBLAS own": {"CRSBENCH_NATIVE_NUMERICS": "1", "OPENBLAS_CORETYPE": None, "OPENBLAS_NUM_THREADS": "1"},
}


def _median_ms(call: Callable[[], object], repeats: int) -> float:
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def _torch_calls(n: int, d: int) -> dict[str, Callable[[], object]]:
    import torch

    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    small = x[: n // 4]  # a 25 % label fraction's design: Newton's row space
    w = torch.randn(d, 8 * 5, generator=g, dtype=torch.float64)
    spd = small @ small.T + torch.eye(small.shape[0], dtype=torch.float64)
    wts = torch.rand(small.shape[0], generator=g, dtype=torch.float64)
    x32, q32 = x.to(torch.float32), x[:1000].to(torch.float32)
    h32 = torch.randn(d, 256, generator=g)
    return {
        "Newton: SVD of a 1,000 x D design": lambda: torch.linalg.svd(small, full_matrices=False),
        "Newton: Hessian Z' diag(w) Z, 1,000 x D": lambda: (small.T * wts) @ small,
        "Newton: Cholesky + solve, 1,000": lambda: torch.cholesky_solve(
            torch.ones(spd.shape[0], 1, dtype=torch.float64), torch.linalg.cholesky(spd)
        ),
        "L-BFGS: logits X W (N x D x 40)": lambda: x @ w,
        "L-BFGS: gradient X' R (D x N x 40)": lambda: x.T @ (x @ w),
        "L-BFGS: Gram X' X float64": lambda: x.T @ x,
        "L-BFGS: Gram X' X float32": lambda: x32.T @ x32,
        "k-NN: keys 1,000 x N float32": lambda: torch.addmm(x32[:, 0], q32, x32.T, alpha=-2.0),
        "MLP: hidden X H float32 (N x D x 256)": lambda: x32 @ h32,
        "eval: softmax over N x 8": lambda: torch.softmax(x[:, :8], dim=1),
    }


def _numpy_calls(n: int, d: int) -> dict[str, Callable[[], object]]:
    import numpy as np
    import scipy.linalg

    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d))
    small = x[: n // 4]
    w = rng.standard_normal((d, 8 * 5))
    spd = small @ small.T + np.eye(small.shape[0])
    wts = rng.random(small.shape[0])
    x32, q32 = x.astype(np.float32), x[:1000].astype(np.float32)
    h32 = rng.standard_normal((d, 256)).astype(np.float32)

    def softmax() -> object:
        z = x[:, :8] - x[:, :8].max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    return {
        "Newton: SVD of a 1,000 x D design": lambda: scipy.linalg.svd(
            small, full_matrices=False, lapack_driver="gesdd"
        ),
        "Newton: Hessian Z' diag(w) Z, 1,000 x D": lambda: (small.T * wts) @ small,
        "Newton: Cholesky + solve, 1,000": lambda: scipy.linalg.cho_solve(
            scipy.linalg.cho_factor(spd), np.ones((spd.shape[0], 1))
        ),
        "L-BFGS: logits X W (N x D x 40)": lambda: x @ w,
        "L-BFGS: gradient X' R (D x N x 40)": lambda: x.T @ (x @ w),
        "L-BFGS: Gram X' X float64": lambda: x.T @ x,
        "L-BFGS: Gram X' X float32": lambda: x32.T @ x32,
        "k-NN: keys 1,000 x N float32": lambda: x32[:, 0] - 2.0 * (q32 @ x32.T),
        "MLP: hidden X H float32 (N x D x 256)": lambda: x32 @ h32,
        "eval: softmax over N x 8": softmax,
    }


def grid_child(route: str, n: int, d: int) -> None:
    """Time the probe grid with the solvers' skinny products on `route` ('openblas' or 'torch')."""
    import operator

    import _canonical  # noqa: F401  (canonical numerics before numpy and torch load)
    from probe import grid_inputs

    import crsbench.probes.lbfgs as lbfgs
    import crsbench.probes.newton as newton
    from crsbench.probes.grid import GridContext, run_grid

    if route == "torch":
        lbfgs.matmul = newton.matmul = operator.matmul  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        datasets, store, fits = grid_inputs(Path(tmp), n, d)
        records: list[object] = []
        start = time.perf_counter()
        run_grid(fits, GridContext(datasets, store, lambda runs, preds: records.append(runs)))
        seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "fits": len(fits)}))


def child(config: str, n: int, d: int, repeats: int) -> None:
    """Runs in the configured environment: crsbench.core first (it sets or leaves the modes)."""
    import crsbench.core  # noqa: F401
    from crsbench.core.backends import backends_line

    calls = _numpy_calls(n, d) if config.startswith("numpy") else _torch_calls(n, d)
    times = {name: _median_ms(call, repeats) for name, call in calls.items()}
    print(json.dumps({"backends": backends_line(), "times": times}))


def _environment(overrides: dict[str, str | None]) -> dict[str, str]:
    env = dict(os.environ)
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--grid-repeats", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--grid-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.n, args.dim, args.repeats)
        return 0
    if args.grid_child:
        grid_child(args.grid_child, args.n, args.dim)
        return 0
    from crsbench.core.backends import cpu_model

    results = {}
    for config, overrides in CONFIGS.items():
        argv = [sys.executable, __file__, "--child", config, "--n", str(args.n), "--dim", str(args.dim)]
        argv += ["--repeats", str(args.repeats)]
        out = subprocess.run(argv, env=_environment(overrides), capture_output=True, text=True, check=True)
        results[config] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"command: {Path(sys.executable).name} benchmarks/backends.py --n {args.n} --dim {args.dim}")
    print(f"CPU: {cpu_model()}; one thread per call; median of {args.repeats} calls, ms")
    for config, result in results.items():
        print(f"  {config}: {result['backends']}")
    names = list(next(iter(results.values()))["times"])
    print(f"{'call':42s}" + "".join(f"{c:>24s}" for c in results))
    for name in names:
        print(f"{name:42s}" + "".join(f"{r['times'][name]:24.2f}" for r in results.values()))
    totals = {c: sum(r["times"].values()) for c, r in results.items()}
    print(f"{'sum':42s}" + "".join(f"{t:24.2f}" for t in totals.values()))
    grid: dict[str, list[float]] = {"openblas": [], "torch": []}
    for _ in range(args.grid_repeats):
        for route, seconds in grid.items():
            argv = [sys.executable, __file__, "--grid-child", route, "--n", str(args.n), "--dim", str(args.dim)]
            out = subprocess.run(argv, env=_environment({}), capture_output=True, text=True, check=True)
            seconds.append(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])
    ours, before = statistics.median(grid["openblas"]), statistics.median(grid["torch"])
    print(
        f"probe grid (50 logreg fits, N={args.n}, D={args.dim}), median of {args.grid_repeats} alternated runs: "
        f"skinny products on OpenBLAS {ours:.2f} s, on torch/MKL {before:.2f} s: {before / ours:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
