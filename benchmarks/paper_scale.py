"""Benchmark: the probe cost model at paper scale, checked against itself, and its projections.

    .venv/bin/python benchmarks/paper_scale.py                 # ~10-15 min on 2 cores
    .venv/bin/python benchmarks/paper_scale.py --write-docs    # also rewrites docs/SCALING.md section 6
    .venv/bin/python benchmarks/paper_scale.py --quick         # smaller sizes, a smoke run

Every probe kind (logreg multiclass K=8 and multilabel L=14, mlp, knn) is timed on synthetic
standardised features with a power-law spectrum (eigenvalues ~ 1/j, randomly rotated, like
real embeddings) at N = 10k, 25k, 50k training rows and D = 768, 1152. Times are CPU seconds
of this process with one torch/BLAS thread (`time.process_time`): a shared machine slows the
wall clock, much less the CPU time a computation needs. Per kind a power law
t = a N^alpha D^beta is fitted (knn: per query, its preparation per call apart; logreg: a
setup plus a cost per L-BFGS iteration times the measured iteration count, see
paper_scale_model.py); the model fitted on N <= 25k must predict the measured N = 50k times
within 25 % (the self-check). Evaluation (`evaluate_chunk`: one read per chunk, then per fit
the predictions, metrics and prediction rows) is timed at 1 and 6 fits, two sizes and two
widths (`EvalCost`), the warehouse client's write (`Warehouse.append_runs`) per batch and per
row (`ClientCost`). Logreg iterations come from these synthetic features, which need 5-10x
fewer than real encoder features (benchmarks/real_size.py): its logreg term is a lower bound.
The fitted model, with all points, then projects "one new encoder on the paper's four
datasets" and the full 15-encoder frozen grid on this 2-core machine, a 16-core machine and
8 such machines as dask workers, and the peak memory of one worker (the analytic bytes of
the largest chunk, scaled by the peak RSS measured for a 25k chunk in a fresh process).
Ends with one JSON line.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"  # CPU-time measurements: one thread everywhere

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import multiprocessing  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from crsbench.ingest.types import Task  # noqa: E402
from crsbench.probes import knn as knn_search  # noqa: E402
from crsbench.probes.lbfgs import fit_logreg  # noqa: E402
from crsbench.probes.registry import get_probe  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import paper_scale_docs as docs  # noqa: E402
import paper_scale_measure as measure  # noqa: E402
import paper_scale_support as support  # noqa: E402
from paper_scale_model import fit_model  # noqa: E402

N_CONDITIONS = 16
TARGETS = {"new_encoder_16core_hours": 1.0, "full_grid_8workers_hours": 4.0, "peak_worker_gb": 8.0}
KINDS = ("logreg_mc", "logreg_ml", "mlp", "knn")
KNN_QUERIES = 512  # queries per k-NN timing point
WARM_START_TOLERANCE = 1e-7  # run tables must agree to this (warm against cold start)


def cpu_seconds(fn: Callable[[], object], repeats: int = 1) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def spectrum_features(rng: np.random.Generator, n: int, d: int, rotation: np.ndarray) -> np.ndarray:
    """(n, d) float64 with eigenvalues ~ 1/j, rotated; generated in blocks (bounded temporaries)."""
    scales = ((np.arange(d) + 1.0) ** -0.5).astype(np.float32)
    out = np.empty((n, d))
    for s in range(0, n, 8192):
        z = rng.standard_normal((min(8192, n - s), d), dtype=np.float32) * scales
        out[s : s + len(z)] = z @ rotation
    return out


LABEL_DRAWS = 2  # logreg iteration counts vary with the labels: each point averages two draws


@dataclasses.dataclass
class Problem:
    x: np.ndarray  # (n_max, D) standardised train rows
    queries: np.ndarray  # (Q, D) standardised eval rows
    y_mc: list[np.ndarray]  # LABEL_DRAWS x (n_max,) 8 classes
    y_ml: list[np.ndarray]  # LABEL_DRAWS x (n_max, 14) labels


def make_problem(n: int, d: int, n_queries: int, seed: int) -> Problem:
    """Deterministic in (n, d, n_queries, seed): every process measuring a width sees the same data."""
    rng = np.random.default_rng([seed, d])
    rotation = np.linalg.qr(rng.normal(size=(d, d)))[0].astype(np.float32)
    x = spectrum_features(rng, n + n_queries, d, rotation)
    x -= x[:n].mean(0)
    x /= x[:n].std(0)
    # Labels from a few directions with noise: AUROC ~0.8-0.9, like the paper's probes.
    y_mc, y_ml = [], []
    for _ in range(LABEL_DRAWS):
        w = rng.normal(size=(d, 8 + 14)) / math.sqrt(d)
        score = x[:n] @ w * 3.0
        y_mc.append((score[:, :8] + rng.gumbel(size=(n, 8))).argmax(1))
        y_ml.append((score[:, 8:] + rng.logistic(size=(n, 14)) > 1.2).astype(np.int8))
    return Problem(x[:n], x[n:], y_mc, y_ml)


def _logreg(xt: torch.Tensor, y: np.ndarray, softmax: bool, repeats: int) -> tuple[float, int, float]:
    """CPU seconds of one fit, its L-BFGS iterations, and the CPU seconds of its setup alone
    (`max_iter=0`: the preconditioner and the gradient at 0, what no iteration count scales)."""
    target = torch.nn.functional.one_hot(torch.as_tensor(y), 8) if softmax else torch.as_tensor(y)
    iters = []
    seconds = cpu_seconds(lambda: iters.append(fit_logreg(xt, target, softmax).n_iter), repeats)
    setup = cpu_seconds(lambda: fit_logreg(xt, target, softmax, max_iter=0), repeats)
    return seconds, iters[-1], setup


def time_point(p: Problem, n: int, repeats: int, knn_queries: int = KNN_QUERIES) -> dict[str, float]:
    """CPU seconds per kind at (n, D): logreg fits (mean of the label draws, their mean
    L-BFGS iterations and setup), mlp fit, knn per query (search) and its preparation."""
    x, q = p.x[:n], torch.as_tensor(p.queries[:knn_queries])
    xt = torch.as_tensor(x)
    out: dict[str, float] = {}
    for kind, labels, softmax in (("logreg_mc", p.y_mc, True), ("logreg_ml", p.y_ml, False)):
        runs = [_logreg(xt, y[:n], softmax, repeats) for y in labels]
        out[kind] = float(np.mean([r[0] for r in runs]))
        out[kind + "_iters"] = float(np.mean([r[1] for r in runs]))
        out[kind + "_setup"] = float(np.mean([r[2] for r in runs]))
    out["mlp"] = cpu_seconds(lambda: get_probe("mlp").fit(x, p.y_mc[0][:n], Task.MULTICLASS, 8, 0), repeats)
    # knn: the training rows' preparation is paid once per predictor call (per fit and eval
    # block), the search per query; timed apart, as few queries would spread the first over them.
    out["knn_prepare"] = cpu_seconds(lambda: knn_search.prepare(xt), repeats)
    search = cpu_seconds(lambda: knn_search.neighbours(knn_search.prepare(xt), q, 5), repeats)
    out["knn"] = max(search - out["knn_prepare"], 0.5 * search) / len(q)
    return out


def previous_knn(train: torch.Tensor, queries: torch.Tensor, k: int) -> torch.Tensor:
    """The k-NN search before this benchmark: float64 brute force, 1024-query blocks."""
    train_sq = (train * train).sum(dim=1)
    out = []
    for start in range(0, queries.shape[0], 1024):
        dist = train_sq[None, :] - 2.0 * queries[start : start + 1024] @ train.T
        out.append(torch.topk(dist, k, dim=1, largest=False).indices)
    return torch.cat(out)


def measure_width(
    d: int,
    n_max: int,
    sizes: tuple[int, ...],
    n_queries: int,
    repeats: int,
    knn_baseline_n: int | None,
    knn_queries: int = KNN_QUERIES,
):
    """Some sizes at one width (runs in its own process); optionally the previous k-NN too.
    `knn_queries` (<= n_queries): queries per k-NN timing point."""
    torch.set_num_threads(1)
    problem = make_problem(n_max, d, n_queries, seed=0)
    time_point(problem, 500, 1)  # warm-up: first-call costs are not a probe's
    points = [(n, time_point(problem, n, repeats, knn_queries)) for n in sizes]
    knn_pair = None
    if knn_baseline_n:
        xt, q = torch.as_tensor(problem.x[:knn_baseline_n]), torch.as_tensor(problem.queries)
        old = cpu_seconds(lambda: previous_knn(xt, q, 5), repeats)
        new = cpu_seconds(lambda: knn_search.neighbours(knn_search.prepare(xt), q, 5), repeats)
        same = bool(
            (
                np.sort(previous_knn(xt, q, 5).numpy(), 1)
                == np.sort(knn_search.neighbours(knn_search.prepare(xt), q, 5).numpy(), 1)
            ).all()
        )
        knn_pair = (old, new, same)
    return points, knn_pair


def measure_extras(quick: bool, n_memory: int, dim: int):
    torch.set_num_threads(1)
    return (
        measure.eval_costs(quick),
        measure.client_cost(quick),
        measure.measure_memory(n_memory, dim),
        measure.condition_batching(quick),
        measure.warm_start_effect(quick),
    )


Point = tuple[int, int, float]  # (N, D, value)


@dataclasses.dataclass
class Points:
    """Timing points (N, D, value) from `time_point` at every measured size and width: CPU seconds
    per kind, logreg's L-BFGS iterations and setup, and the k-NN preparation."""

    measured: dict[str, list[Point]] = dataclasses.field(default_factory=lambda: {k: [] for k in KINDS})
    iterations: dict[str, list[Point]] = dataclasses.field(default_factory=lambda: {"logreg_mc": [], "logreg_ml": []})
    setups: dict[str, list[Point]] = dataclasses.field(default_factory=lambda: {"logreg_mc": [], "logreg_ml": []})
    prepares: list[Point] = dataclasses.field(default_factory=list)

    def add(self, n: int, d: int, t: dict[str, float]) -> None:
        for kind in KINDS:
            self.measured[kind].append((n, d, t[kind]))
        for kind in self.iterations:
            self.iterations[kind].append((n, d, t[kind + "_iters"]))
            self.setups[kind].append((n, d, t[kind + "_setup"]))
        self.prepares.append((n, d, t["knn_prepare"]))

    def models(self) -> dict:
        """The cost model of every kind fitted on all points, and of the k-NN preparation."""
        models = {
            kind: fit_model(self.measured[kind], self.iterations.get(kind), self.setups.get(kind)) for kind in KINDS
        }
        models["knn_prepare"] = fit_model(self.prepares, None)
        return models


class Log:
    """Prints each line and keeps it (the docs quote the run's output)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, *parts: object, flush: bool = True) -> None:
        line = " ".join(str(p) for p in parts)
        self.lines.append(line)
        print(line, flush=flush)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 1.5k, 3k, 6k and fewer queries (smoke run)")
    ap.add_argument("--repeats", type=int, default=1, help="repeats per measurement, the least kept")
    ap.add_argument("--write-docs", action="store_true", help="rewrite section 6 of docs/SCALING.md")
    return ap.parse_args()


def say_point(say: Log, n: int, d: int, t: dict[str, float]) -> None:
    say(
        f"  N={n:>6} D={d:>5}: "
        + "  ".join(f"{k} {t[k] * (1e3 if k == 'knn' else 1):.2f}{'ms/query' if k == 'knn' else 's'}" for k in KINDS)
        + f"  (L-BFGS iterations mc {t['logreg_mc_iters']:.0f}, "
        f"ml {t['logreg_ml_iters']:.0f})",
        flush=True,
    )


def measure_all(args: argparse.Namespace, sizes: tuple[int, ...], dims: tuple[int, ...], n_queries: int, say: Log):
    """Every timing point, the previous k-NN's (old s, new s, same neighbours) and `measure_extras`."""
    # One process per (width, size group) and one for the per-row and memory figures: CPU
    # seconds do not depend on how many run at once, and on a shared machine four processes
    # get more of it than one.
    ctx = multiprocessing.get_context("spawn")
    groups = [(dims[0], sizes, None), (dims[1], sizes[:2], None), (dims[1], sizes[2:], sizes[1])]
    with ProcessPoolExecutor(max_workers=len(groups) + 1, mp_context=ctx) as pool:
        jobs = [
            (d, pool.submit(measure_width, d, sizes[-1], group, n_queries, args.repeats, base))
            for d, group, base in groups
        ]
        extras = pool.submit(measure_extras, args.quick, 3000 if args.quick else 8000, dims[-1])
        points, knn = Points(), None
        for d, job in jobs:
            measured, knn_pair = job.result()
            for n, t in measured:
                points.add(n, d, t)
                say_point(say, n, d, t)
            if knn_pair is not None:
                knn = knn_pair
        return points, knn, extras.result()


def fit_and_check(points: Points, sizes: tuple[int, ...], say: Log):
    """The models on all points, and per kind (predicted, measured) at the largest N from the
    models fitted on N <= sizes[1]; returns the models, those pairs and the total error in %."""
    say(
        "\ncost model (CPU seconds, one thread; knn: per query): t = a * N^alpha * D^beta, for logreg"
        " per L-BFGS iteration x the measured iterations (interpolated in log N, held beyond):"
    )
    models, check = points.models(), {}
    for kind in KINDS:
        its, before = points.iterations.get(kind), points.setups.get(kind)
        early = fit_model(
            [p for p in points.measured[kind] if p[0] <= sizes[1]],
            [p for p in its if p[0] <= sizes[1]] if its else None,
            [p for p in before if p[0] <= sizes[1]] if before else None,
        )
        big = [p for p in points.measured[kind] if p[0] == sizes[-1]]
        check[kind] = (sum(early(n, d) for n, d, _ in big), sum(t for _, _, t in big))
        say(
            f"  {kind:<10} {models[kind].describe()}\n"
            f"             N={sizes[-1]} from the N<=25k model: predicted {check[kind][0]:.3g} vs measured "
            f"{check[kind][1]:.3g}, {100 * (check[kind][0] / check[kind][1] - 1):+.1f} %"
        )
    say(f"  knn prepare (per predictor call) {models['knn_prepare'].describe()}")
    predicted = sum(c[0] * (KNN_QUERIES if k == "knn" else 1) for k, c in check.items())
    actual = sum(c[1] * (KNN_QUERIES if k == "knn" else 1) for k, c in check.items())
    selfcheck = 100 * abs(predicted / actual - 1)
    worst = max(100 * abs(c[0] / c[1] - 1) for c in check.values())
    say(
        f"self-check, all kinds at N={sizes[-1]} (both D) from N <= {sizes[1]}: predicted {predicted:.1f} s, "
        f"measured {actual:.1f} s, error {selfcheck:.1f} % (worst single kind {worst:.1f} %) "
        f"-> {'OK' if selfcheck <= 25 else 'FAILED'} (<= 25 %)"
    )
    return models, check, selfcheck


def say_extras(say: Log, quick: bool, dim: int, extras) -> None:
    """Evaluation, the warehouse client, peak memory, condition batching and warm starts."""
    evals, client_row, memory, batching, warm = extras
    say(
        "evaluation (evaluate_chunk: read, predict, metrics, prediction rows), CPU s: "
        + "; ".join(f"{k} {v.describe()}" for k, v in evals.items())
    )
    say(
        f"warehouse client (Warehouse.append_runs, Parquet parts), CPU s: {client_row.per_batch * 1e3:.1f} ms per"
        f" batch + {client_row.per_row * 1e6:.2f} us per prediction row"
    )
    say(
        f"peak RSS of knn + logreg chunks ({3000 if quick else 8000} images x {dim}) in a fresh process: "
        f"{memory['peak_gb']:.2f} GB = {memory['ratio']:.2f} x the analytic bytes "
        f"({memory['model_gb']:.2f} GB) + {memory['base_gb']:.2f} GB after imports"
    )
    say(
        "16 conditions in one predictor call vs one call per condition (the previous evaluation), "
        "CPU s, one thread: " + ", ".join(f"{p} {b:.3f} vs {s:.3f} = {s / b:.2f}x" for p, (b, s) in batching.items())
    )
    warm_ok = warm["d_metric"] <= WARM_START_TOLERANCE
    say(
        f"logreg warm start from the next-larger fraction's fit vs cold start (fractions 0.5-0.05): CPU "
        f"{warm['warm_s']:.2f} s vs {warm['cold_s']:.2f} s = {warm['cold_s'] / warm['warm_s']:.2f}x; max |delta| of a run "
        f"metric {warm['d_metric']:.1e}, max |delta probability| {warm['d_prob']:.1e} -> "
        + ("within" if warm_ok else "outside")
        + f" the {WARM_START_TOLERANCE:g} reproducibility tolerance, so the grid "
        + ("may warm-start" if warm_ok else "keeps cold starts")
    )


def say_targets(say: Log, proj: support.Projection, selfcheck: float, knn_speedup: float) -> dict[str, float]:
    """The projection, and the result (the JSON line) against the targets."""
    say()
    for line in proj.lines:
        say(line)
    result = {
        "new_encoder_16core_hours": round(proj.new_encoder_16core_h, 3),
        "full_grid_8workers_hours": round(proj.full_grid_8workers_h, 3),
        "selfcheck_error_pct": round(selfcheck, 2),
        "peak_worker_gb": round(proj.peak_worker_gb, 2),
        "knn_speedup": round(knn_speedup, 2),
    }
    say("\ntargets:")
    for key, target in TARGETS.items():
        say(
            f"  {key} = {result[key]:.2f} (target <= {target:g}): "
            f"{'met' if result[key] <= target else 'NOT met, stopped by ' + proj.blockers[key]}"
        )
    return result


def main() -> int:
    args = parse_args()
    say = Log()
    torch.set_num_threads(1)
    wall0 = time.perf_counter()
    sizes = (1_500, 3_000, 6_000) if args.quick else (10_000, 25_000, 50_000)
    dims = (768, 1152)
    n_queries = 256 if args.quick else 1024  # the k-NN baseline comparison; points use KNN_QUERIES
    say(
        f"command: python benchmarks/paper_scale.py{' --quick' if args.quick else ''}"
        f"{' --write-docs' if args.write_docs else ''}"
    )
    say(
        f"load average at start: {' '.join(f'{v:.1f}' for v in os.getloadavg())} "
        f"on {os.cpu_count()} cores (CPU seconds, one thread, are robust to it; wall is not)"
    )
    points, (knn_old, knn_new, same), extras = measure_all(args, sizes, dims, n_queries, say)
    models, check, selfcheck = fit_and_check(points, sizes, say)
    say_extras(say, args.quick, dims[-1], extras)
    knn_speedup = knn_old / knn_new
    say(
        f"knn vs the previous float64 brute force (N={sizes[1]}, D={dims[-1]}, {n_queries} queries, "
        f"one thread): {knn_old:.2f} s vs {knn_new:.2f} s = {knn_speedup:.2f}x, "
        f"neighbours identical: {same}"
    )
    evals, client_row, memory, _, _ = extras
    proj = support.project(models, evals, client_row, memory)
    result = say_targets(say, proj, selfcheck, knn_speedup)
    wall = time.perf_counter() - wall0
    say(f"benchmark wall time {wall / 60:.1f} min; load average at end {' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    if args.write_docs:
        docs.write_docs(
            Path(__file__).resolve().parents[1] / "docs" / "SCALING.md",
            points.measured,
            models,
            check,
            selfcheck,
            proj,
            result,
            knn_old,
            knn_new,
            evals,
            client_row,
            memory,
            wall,
            n_queries,
            "\n".join(say.lines),
        )
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    multiprocessing.set_start_method("spawn", force=True)
    raise SystemExit(main())
