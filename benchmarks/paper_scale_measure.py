"""The measurements behind `benchmarks/paper_scale.py`'s evaluation, client and memory terms
(paper_scale_support.py holds the terms and the projections): `evaluate_chunk` and
`Warehouse.append_runs` timed on synthetic cells, the peak RSS of a chunk in a fresh process,
and two side measurements (the 16 conditions in one predictor call; logreg warm starts)."""

from __future__ import annotations

import math
import multiprocessing
import resource
import tempfile
import time
from pathlib import Path

import _tests_support  # noqa: F401  (tests/ on sys.path, for support.synthetic)
import numpy as np
import torch
from paper_scale_support import GB, N_CONDITIONS, ClientCost, EvalCost, chunk_bytes
from support.synthetic import make_dataset, write_features

from crsbench.core import CLEAN, FRACTION_SEEDS, LABEL_FRACTIONS
from crsbench.features.store import FeatureStore
from crsbench.ingest.types import Task
from crsbench.probes.chunking import subset_rows
from crsbench.probes.lbfgs import fit_logreg, predict_proba
from crsbench.probes.metrics import all_metrics
from crsbench.probes.reader import TrainStats, read_rows
from crsbench.probes.records import FitKey
from crsbench.probes.registry import get_probe
from crsbench.probes.tasks import Chunk, evaluate_chunk, fit_chunk


def _synthetic_cell(tmp: str, task: Task, n: int, k: int, dim: int):
    ds = make_dataset(f"d{task.value}", task, n, k, seed=3)
    ref = write_features(
        str(Path(tmp) / "f.zarr"), ds, "enc", dim, depths=(1.0,), chunk_rows=2048, latent=dim, decay=1.0, signal=0.4
    )
    store = FeatureStore(str(Path(tmp) / "f.zarr"))
    x = read_rows(store, ref, 1.0, CLEAN, ds.split_rows("train"))
    std = x.std(0)
    stats = TrainStats(x.mean(0), np.where(std > 0, std, 1.0))
    return ds, ref, store, stats


def _chunk(ref, ds, probe: str, fits: list[tuple[float, int]]) -> Chunk:
    keys = tuple(FitKey("enc", ds.name, 1.0, probe, f, s, "frozen") for f, s in fits)
    return Chunk(ref, 1.0, keys, False, "bench")


EVAL_DIMS = (192, 768)
EVAL_FITS = 6  # the second fit count timed per cell (the first is 1)


def eval_costs(quick: bool) -> dict[str, EvalCost]:
    """`EvalCost` per evaluation kind (mc: multiclass logreg and k-NN's metrics and rows, ml:
    multilabel logreg, mlp), fitted on `evaluate_chunk` timings of 1 and EVAL_FITS fits at two
    image counts and two widths, after one untimed call (first-call costs are not the grid's)."""
    sizes = (1500, 4000) if quick else (2000, 8000)
    points: dict[str, list[tuple[int, int, int, int, float]]] = {"mc": [], "ml": [], "mlp": []}
    for task, k, probes in ((Task.MULTICLASS, 8, ("logreg", "mlp")), (Task.MULTILABEL, 14, ("logreg",))):
        for n in sizes:
            for dim in EVAL_DIMS:
                with tempfile.TemporaryDirectory() as tmp:
                    ds, ref, store, stats = _synthetic_cell(tmp, task, n, k, dim)
                    rows = N_CONDITIONS * len(ds.split_rows("test")) + len(ds.split_rows("calib"))
                    sets = N_CONDITIONS + 1
                    for probe in probes:
                        # cheap fits of small subsets: what evaluation costs does not depend on them
                        fits = [(f, s) for f in (0.05, 0.01) for s in FRACTION_SEEDS][:EVAL_FITS]
                        chunk = _chunk(ref, ds, probe, fits)
                        fitted = fit_chunk(chunk, store, ds, stats)
                        evaluate_chunk(_chunk(ref, ds, probe, fits[:1]), fitted[:1], store, ds, [], stats)
                        key = "mlp" if probe == "mlp" else ("mc" if task is Task.MULTICLASS else "ml")
                        for f in (1, EVAL_FITS):
                            start = time.process_time()
                            evaluate_chunk(_chunk(ref, ds, probe, fits[:f]), fitted[:f], store, ds, [], stats)
                            points[key].append((f, rows, sets, dim, time.process_time() - start))
    return {key: EvalCost.fit(p) for key, p in points.items()}


def condition_batching(quick: bool) -> dict[str, tuple[float, float]]:
    """CPU seconds of each probe's predictor on the 16 conditions of a test split: one call on
    the stacked rows (what `evaluate_chunk` does) vs one call per condition (the previous
    evaluation), same fitted probe and rows; per probe (stacked, per condition)."""
    rng = np.random.default_rng(5)
    n_train, n_test, dim = (1500, 300, 384) if quick else (4000, 1000, 768)
    x = rng.standard_normal((n_train, dim))
    y = (x[:, :8] + rng.gumbel(size=(n_train, 8))).argmax(1)
    conditions = rng.standard_normal((N_CONDITIONS * n_test, dim))
    blocks = np.split(conditions, N_CONDITIONS)
    out = {}
    for probe in ("logreg", "mlp", "knn"):
        predictor = get_probe(probe).fit(x, y, Task.MULTICLASS, 8, 0)
        predictor(conditions[:10])  # first-call costs are not the evaluation's
        stacked, separate = math.inf, math.inf
        for _ in range(3):
            start = time.process_time()
            predictor(conditions)
            stacked = min(stacked, time.process_time() - start)
            start = time.process_time()
            for block in blocks:
                predictor(block)
            separate = min(separate, time.process_time() - start)
        out[probe] = (stacked, separate)
    return out


def warm_start_effect(quick: bool) -> dict[str, float]:
    """Logreg fits of the grid's fractions 0.5 .. 0.05 (one seed's nested subsets), cold vs
    warm-started from the fit of the next-larger fraction: CPU seconds of each, and the
    largest |delta| of any run metric (AUROC, ECE, Brier, ...) and of any predicted probability."""
    rng = np.random.default_rng(9)
    n, dim, n_eval = (3000, 256, 1000) if quick else (10_000, 768, 2000)
    w = rng.normal(size=(dim, 8)) / math.sqrt(dim) * 3.0
    x = rng.standard_normal((n + n_eval, dim))
    y = (x @ w + rng.gumbel(size=(n + n_eval, 8))).argmax(1)
    xt, xe = torch.as_tensor(x[:n]), torch.as_tensor(x[n:])
    order = rng.permutation(n)
    cold_s = warm_s = 0.0
    d_metric = d_prob = 0.0
    previous = fit_logreg(xt, torch.nn.functional.one_hot(torch.as_tensor(y[:n]), 8), True)
    for fraction in sorted((f for f in LABEL_FRACTIONS if f < 1.0), reverse=True):
        rows = np.sort(order[: subset_rows(fraction, n)])
        target = torch.nn.functional.one_hot(torch.as_tensor(y[rows]), 8)
        start = time.process_time()
        cold = fit_logreg(xt[rows], target, True)
        cold_s += time.process_time() - start
        start = time.process_time()
        warm = fit_logreg(xt[rows], target, True, init=previous)
        warm_s += time.process_time() - start
        p_cold = predict_proba(cold.coef, cold.intercept, xe, True).numpy()
        p_warm = predict_proba(warm.coef, warm.intercept, xe, True).numpy()
        d_prob = max(d_prob, float(np.abs(p_cold - p_warm).max()))
        m_cold = all_metrics(y[n:], p_cold, Task.MULTICLASS)
        m_warm = all_metrics(y[n:], p_warm, Task.MULTICLASS)
        d_metric = max([d_metric, *(abs(m_cold[k] - m_warm[k]) for k in m_cold if m_cold[k] == m_cold[k])])
        previous = cold
    return {"cold_s": cold_s, "warm_s": warm_s, "d_metric": d_metric, "d_prob": d_prob}


def client_cost(quick: bool, task: Task = Task.MULTILABEL, k: int = 14) -> ClientCost:
    """`ClientCost` from the best of 3 writes of a 1-fit and an EVAL_FITS-fit chunk's records
    (default multilabel rows: a 14-float probability list, the paper's largest)."""
    from crsbench.warehouse.connection import Warehouse

    with tempfile.TemporaryDirectory() as tmp:
        ds, ref, store, stats = _synthetic_cell(tmp, task, 1500 if quick else 4000, k, 256)
        fits = [(f, s) for f in (0.05, 0.01) for s in FRACTION_SEEDS][:EVAL_FITS]
        chunk = _chunk(ref, ds, "logreg", fits)
        fitted = fit_chunk(chunk, store, ds, stats)
        wh = Warehouse(Path(tmp) / "w.duckdb")
        timed = []
        for f in (1, EVAL_FITS):
            runs, preds = evaluate_chunk(_chunk(ref, ds, "logreg", fits[:f]), fitted[:f], store, ds, [], stats)
            best = math.inf
            for _ in range(3):
                start = time.process_time()
                wh.append_runs(runs, preds)
                best = min(best, time.process_time() - start)
            timed.append((len(preds), best))
        wh.close()
    (r1, t1), (r2, t2) = timed
    per_row = max(0.0, (t2 - t1) / (r2 - r1))
    return ClientCost(max(0.0, t1 - per_row * r1), per_row)


# A subset and the full set for knn (its deferred fits), one logreg fit: enough to reach each
# chunk's peak, cheap enough for a 2-core machine.
MEMORY_FITS = {"knn": [(1.0, 0), (0.25, 0)], "logreg": [(1.0, 0)]}


def _memory_child(n: int, dim: int, queue) -> None:
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with tempfile.TemporaryDirectory() as tmp:
        ds, ref, store, stats = _synthetic_cell(tmp, Task.MULTILABEL, n, 14, dim)
        del stats
        torch.set_num_threads(1)
        # restart the high-water mark's reference: generation above is not a probe's cost
        base = max(base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
        x = read_rows(store, ref, 1.0, CLEAN, ds.split_rows("train"))
        std = x.std(0)
        stats = TrainStats(x.mean(0), np.where(std > 0, std, 1.0))
        del x
        for probe, fits in MEMORY_FITS.items():
            chunk = _chunk(ref, ds, probe, fits)
            evaluate_chunk(chunk, fit_chunk(chunk, store, ds, stats), store, ds, [], stats)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    queue.put(
        (
            base,
            peak,
            len(ds.split_rows("train")),
            N_CONDITIONS * len(ds.split_rows("test")),
            len(ds.split_rows("calib")),
        )
    )


def measure_memory(n_images: int, dim: int) -> dict[str, float]:
    """Peak RSS of a knn chunk then a logreg chunk (MEMORY_FITS) in a fresh process, against
    `chunk_bytes`; the ratio calibrates the projection."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_memory_child, args=(n_images, dim, queue))
    proc.start()
    base, peak, n_train, n_eval, n_calib = queue.get(timeout=900)
    proc.join()
    model = max(chunk_bytes(n_train, dim, n_eval, len(fits) * (n_eval + n_calib), p) for p, fits in MEMORY_FITS.items())
    return {
        "base_gb": base / GB,
        "peak_gb": peak / GB,
        "model_gb": model / GB,
        "ratio": max(1.0, (peak - base) / model),
    }
