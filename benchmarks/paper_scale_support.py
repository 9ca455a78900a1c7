"""The paper's workload, the per-row and memory measurements, and the projections of
`benchmarks/paper_scale.py` (kept apart so each file stays readable)."""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import resource
import tempfile
import time
from pathlib import Path

import _tests_support  # noqa: F401  (tests/ on sys.path, for support.synthetic)
import numpy as np
import torch
from support.synthetic import make_dataset, write_features

from crsbench.core import CLEAN, FRACTION_SEEDS, LABEL_FRACTIONS
from crsbench.features.store import FeatureStore
from crsbench.ingest.types import Task
from crsbench.probes.chunking import DEFAULT_BATCH_SIZE, chunk_slices, subset_rows
from crsbench.probes.lbfgs import fit_logreg, predict_proba
from crsbench.probes.metrics import all_metrics
from crsbench.probes.reader import TrainStats, read_rows
from crsbench.probes.records import FitKey
from crsbench.probes.registry import get_probe
from crsbench.probes.tasks import EVAL_BLOCK_ROWS, Chunk, evaluate_chunk, fit_chunk

N_CONDITIONS = 16
CORES_16 = 16
WORKERS = 8
# Parallel efficiency of 16 one-thread chunks on one 16-core machine: the float64 products
# with K <= 14 outputs stream the design matrix, so they share memory bandwidth (assumed,
# not measured here: this machine has 2 cores).
EFF_16 = 0.75
GB = 1e9


@dataclasses.dataclass(frozen=True)
class PaperDataset:
    name: str
    n_train: int
    n_calib: int
    n_test: int
    n_shift: int  # rows of the shift target's test split evaluated per fit
    task: str  # "mc" (multiclass / ordinal) or "ml" (multilabel)
    k: int
    chest: bool


MIMIC_LOW, MIMIC_HIGH = 48_600, 243_000


# ISIC 2019 25,331 and APTOS 3,662 split 60/20/20; CheXpert frontal ~191,027 train.csv rows
# carved 75/25 into train/calib, test = the 202 frontal valid.csv rows; MIMIC-CXR frontal
# (~243k) is the shift target: its 20 % test split (48.6k) up to all of it (243k).
def paper_datasets(mimic_rows: int) -> list[PaperDataset]:
    return [
        PaperDataset("ISIC 2019", 15_199, 5_066, 5_066, 0, "mc", 8, False),
        PaperDataset("APTOS 2019", 2_197, 732, 733, 0, "mc", 5, False),
        PaperDataset("CheXpert frontal", 143_270, 47_757, 202, mimic_rows, "ml", 14, True),
    ]


# (encoder, widths at depths 0.25/0.5/0.75/1.0, chest-only), as docs/SCALING.md section 1
ENCODERS: list[tuple[str, tuple[int, int, int, int], bool]] = (
    [("ResNet-50", (256, 512, 1024, 2048), False), ("BioViL", (256, 512, 1024, 2048), True)]
    + [(n, (768,) * 4, False) for n in ("ViT-B/16", "DINOv2", "MAE", "RAD-DINO", "SigLIP-B")]
    + [
        ("CLIP", (768, 768, 768, 512), False),
        ("BiomedCLIP", (768, 768, 768, 512), False),
        ("CheXzero", (768, 768, 768, 512), True),
    ]
    + [(n, (1024,) * 4, False) for n in ("LLaVA-Med", "RETFound", "PanDerm")]
    + [(n, (1152,) * 4, False) for n in ("MedSigLIP-448", "MedGemma-4B")]
)


# -- per-row and memory measurements -----------------------------------------------------------


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


@dataclasses.dataclass(frozen=True)
class EvalCost:
    """CPU seconds of `evaluate_chunk` for a chunk of F fits over R stacked eval rows in S eval
    sets (the test split under each condition, calib, a shift target) at width D:

        read x R x D                                  once per chunk (read + standardise the rows)
      + F x (R x (row + row_dim x D) + S x per_set)   per fit (predict, metrics, prediction rows)

    A cost per eval row and fit alone (the earlier model) charged the chunk's one read to every
    fit and spread the metrics' fixed cost per eval set over the rows of the small timing cell:
    measured at 1.5k images it over-predicted real_size's evaluation ~20x.
    """

    read: float
    row: float
    row_dim: float
    per_set: float

    @classmethod
    def fit(cls, points: list[tuple[int, int, int, int, float]]) -> EvalCost:
        """Non-negative least squares over (F, R, S, D, seconds) timings."""
        from scipy.optimize import nnls

        design = np.array([[r * d, f * r, f * r * d, f * s] for f, r, s, d, _ in points], dtype=float)
        target = np.array([t for *_, t in points])
        scale = design.max(axis=0)
        coef, _ = nnls(design / scale, target)
        read, row, row_dim, per_set = (float(c) for c in coef / scale)
        return cls(read, row, row_dim, per_set)

    def __call__(self, fits: int, rows: int, sets: int, d: int) -> float:
        return self.read * rows * d + fits * (rows * (self.row + self.row_dim * d) + sets * self.per_set)

    def describe(self) -> str:
        return (
            f"read {self.read * 1e9:.2f} ns/(row x D) per chunk; per fit {self.row * 1e6:.2f} us/row"
            f" + {self.row_dim * 1e9:.3f} ns/(row x D) + {self.per_set * 1e3:.2f} ms/eval set"
        )


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


@dataclasses.dataclass(frozen=True)
class ClientCost:
    """CPU seconds of the client's write of one chunk's records (`Warehouse.append_runs`, the
    Parquet parts `crsbench probe` writes): a fixed cost per batch (four part files, their
    digests) plus a cost per prediction row (the conversion to Arrow, the compressed write)."""

    per_batch: float
    per_row: float

    def __call__(self, batches: int, rows: int) -> float:
        return batches * self.per_batch + rows * self.per_row


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


def chunk_bytes(n_train: int, dim: int, eval_rows: int, pred_rows: int, probe: str) -> float:
    """Analytic bytes a chunk holds at its peak (float64 unless noted).

    logreg/mlp: the training matrix + its float16 read buffer while fitting, then the largest
    eval batch + one read buffer; knn: the training matrix stays (its fits are redone at each
    evaluation) beside the eval batch, one prepared subset (float64 copy + float32 copy, at
    most the full set's float32 copy) and the 256 MiB key block. Plus the chunk's prediction
    rows (~200 bytes each with a 14-float probability list).
    """
    fit = 10.0 * n_train * dim
    evaluate = 10.0 * min(eval_rows, EVAL_BLOCK_ROWS) * dim
    if probe == "knn":
        evaluate += 8.0 * n_train * dim + 4.0 * n_train * dim + 2**28
    return max(fit, evaluate) + 200.0 * pred_rows


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


# -- projection --------------------------------------------------------------------------------


@dataclasses.dataclass
class Projection:
    lines: list[str]
    new_encoder_16core_h: float
    full_grid_8workers_h: float
    peak_worker_gb: float
    blockers: dict[str, str]


def _grid_fits() -> list[tuple[float, int]]:
    """(fraction, seed) of one cell's fits in the grid's order (`probes.grid._chunks`: largest
    fraction first, seeds together). Every seed is a fit and is evaluated; an unseeded probe
    fits fraction 1.0 once and shares it (`probes.tasks.fit_chunk`)."""
    return [(f, s) for f in sorted(LABEL_FRACTIONS, reverse=True) for s in FRACTION_SEEDS]


def encoder_chunks(
    models, evals, widths, datasets, batch: int, logreg_models=None
) -> list[tuple[str, float, float, int]]:
    """(label, CPU seconds, peak bytes, prediction rows) of every chunk of one encoder, packed
    as the grid packs them (`probes.chunking`: up to `batch` fits in the grid's order, largest
    fraction first; k-NN fits also bounded by their search work). A chunk's seconds are its fits
    (a shared unseeded fit counted once; k-NN searches at every evaluation, a shared fit too)
    plus `evals` (`EvalCost` per kind) for its fits; a chunk shares an unseeded fit only among its
    own fits. `logreg_models`: one cost model per depth
    (iterations measured on the job's own features, benchmarks/real_size.py) instead of
    `models`' logreg kind."""
    out = []
    for ds in datasets:
        eval_rows = N_CONDITIONS * ds.n_test + ds.n_calib + ds.n_shift
        sets = N_CONDITIONS + (ds.n_calib > 0) + (ds.n_shift > 0)
        block = min(EVAL_BLOCK_ROWS, max(N_CONDITIONS * ds.n_test, ds.n_calib, ds.n_shift))
        lr = "logreg_mc" if ds.task == "mc" else "logreg_ml"
        k_scale = ds.k / 8 if ds.task == "mc" else 1.0
        jobs = [("logreg", d, (logreg_models or {}).get(i) or models[lr], k_scale) for i, d in enumerate(widths)]
        jobs += [("mlp", widths[-1], models["mlp"], 1.0), ("knn", widths[-1], models["knn"], 1.0)]
        # predictor calls per evaluation: each eval batch (stacked test conditions, calib, shift)
        # in blocks of EVAL_BLOCK_ROWS stacked rows; a k-NN call prepares its training rows anew
        calls = sum(math.ceil(r / EVAL_BLOCK_ROWS) for r in (N_CONDITIONS * ds.n_test, ds.n_calib, ds.n_shift))
        prepare = models.get("knn_prepare")
        for probe, dim, model, scale in jobs:
            entry = get_probe(probe)
            evaluate = evals["mlp"] if probe == "mlp" else evals[ds.task]
            keys = _grid_fits()
            fits = []
            for fraction, _ in keys:
                n = subset_rows(fraction, ds.n_train)
                if entry.deferred:
                    # the search, redone at each evaluation
                    fits.append(model(n, dim) * eval_rows + (prepare(n, dim) * calls if prepare else 0.0))
                else:
                    fits.append(model(n, dim) * scale)
            for part in chunk_slices([f for f, _ in keys], ds.n_train, eval_rows, entry.deferred, batch):
                group = list(fits[part])
                if not (entry.seeded or entry.deferred):
                    # an unseeded fit of the full fraction is made once per chunk, shared by its seeds
                    full = [i for i, (f, _) in enumerate(keys[part]) if f == 1.0]
                    for i in full[1:]:
                        group[i] = 0.0
                pred_rows = len(group) * eval_rows
                out.append(
                    (
                        f"{ds.name} {probe} D={dim}",
                        sum(group) + evaluate(len(group), eval_rows, sets, dim),
                        chunk_bytes(ds.n_train, dim, block, pred_rows, probe),
                        pred_rows,
                    )
                )
    return out


def _setting(models, evals, client_row, memory, mimic: int, batch: int) -> dict:
    datasets = paper_datasets(mimic)
    new = encoder_chunks(models, evals, (1152,) * 4, datasets, batch)  # widest new encoder
    grid = []
    for _, widths, chest in ENCODERS:
        grid += encoder_chunks(models, evals, widths, [d for d in datasets if d.chest] if chest else datasets, batch)
    new_cpu, grid_cpu = sum(c[1] for c in new), sum(c[1] for c in grid)
    new_longest, longest = max(new, key=lambda c: c[1]), max(grid, key=lambda c: c[1])
    rows = sum(c[3] for c in grid)
    client_s = client_row(len(grid), rows)
    new_terms = {"compute": new_cpu / (CORES_16 * EFF_16), f"longest chunk ({new_longest[0]})": new_longest[1]}
    grid_terms = {
        "compute": grid_cpu / (WORKERS * CORES_16 * EFF_16),
        f"longest chunk ({longest[0]})": longest[1],
        f"client writes ({rows / 1e6:.0f} M prediction rows)": client_s,
    }
    biggest = max(grid, key=lambda c: c[2])
    threaded = CORES_16 * EFF_16
    sixteen_mt = max(new_terms["compute"], new_longest[1] / threaded)
    cluster_mt = max(grid_terms["compute"], longest[1] / threaded, client_s)
    by_kind: dict[str, float] = {}
    for label, sec, _, _ in new:
        by_kind[label.split()[-2]] = by_kind.get(label.split()[-2], 0.0) + sec
    return {
        "new_cpu": new_cpu,
        "grid_cpu": grid_cpu,
        "by_kind": by_kind,
        "two": new_cpu / 2,
        "sixteen": max(new_terms.values()),
        "new_term": max(new_terms, key=new_terms.get),
        "grid_two": grid_cpu / 2,
        "grid_sixteen": max(grid_cpu / (CORES_16 * EFF_16), longest[1]),
        "cluster": max(grid_terms.values()),
        "cluster_term": max(grid_terms, key=grid_terms.get),
        "grid_terms": grid_terms,
        "sixteen_mt": sixteen_mt,
        "cluster_mt": cluster_mt,
        "peak": memory["base_gb"] + memory["ratio"] * biggest[2] / GB,
        "biggest": biggest[0],
    }


def project(models, evals, client_row, memory) -> Projection:
    lines = [
        f"projections: hours of wall time from the model's CPU seconds (16-core efficiency {EFF_16};"
        f" one chunk = up to `--batch-size` fits of one cell and probe, one thread each):",
        "| MIMIC rows | batch | new enc. CPU h (logreg/mlp/knn) | 2-core | 16-core | grid CPU h "
        "| grid 2-core | grid 16-core | grid 8x16 | worker GB |",
    ]
    settings = {}
    for mimic in (MIMIC_LOW, MIMIC_HIGH):
        for batch in (DEFAULT_BATCH_SIZE, 1):
            st = _setting(models, evals, client_row, memory, mimic, batch)
            settings[(mimic, batch)] = st
            kinds = "/".join(f"{v / 3600:.1f}" for v in st["by_kind"].values())
            lines.append(
                f"| {mimic:,} | {batch} | {st['new_cpu'] / 3600:.1f} ({kinds}) | {st['two'] / 3600:.2f} "
                f"| {st['sixteen'] / 3600:.2f} | {st['grid_cpu'] / 3600:.0f} | {st['grid_two'] / 3600:.0f} "
                f"| {st['grid_sixteen'] / 3600:.1f} | {st['cluster'] / 3600:.2f} | {st['peak']:.2f} |"
            )
    # Headline: the upper MIMIC size at the default batch size (what `crsbench probe` does).
    batch = DEFAULT_BATCH_SIZE
    st = settings[(MIMIC_HIGH, batch)]
    lines += [
        f"headline: MIMIC {MIMIC_HIGH:,} shift rows per fit, --batch-size {batch}; 16-core bound by "
        f"{st['new_term']}; 8 workers: " + ", ".join(f"{k} {v / 3600:.2f} h" for k, v in st["grid_terms"].items()),
        f"if the longest kNN fits used all 16 threads of a machine (the search is multithreaded; "
        f"the grid gives each chunk one): 16-core {st['sixteen_mt'] / 3600:.2f} h, 8 workers "
        f"{st['cluster_mt'] / 3600:.2f} h",
        f"largest worker chunk: {st['biggest']} (analytic bytes x measured ratio "
        f"{memory['ratio']:.2f} + {memory['base_gb']:.2f} GB after imports)",
    ]
    return Projection(
        lines,
        st["sixteen"] / 3600,
        st["cluster"] / 3600,
        st["peak"],
        {
            "new_encoder_16core_hours": st["new_term"],
            "full_grid_8workers_hours": st["cluster_term"],
            "peak_worker_gb": f"the chunk {st['biggest']}",
        },
    )
