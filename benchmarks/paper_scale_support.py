"""The paper's workload, the cost model's evaluation, client and memory terms, and the
projections of `benchmarks/paper_scale.py`; the timings that fit those terms are
paper_scale_measure.py's."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from crsbench.core import FRACTION_SEEDS, LABEL_FRACTIONS
from crsbench.probes.chunking import DEFAULT_BATCH_SIZE, chunk_slices, subset_rows
from crsbench.probes.registry import get_probe
from crsbench.probes.tasks import EVAL_BLOCK_ROWS

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


# -- the cost model's pieces (measured in paper_scale_measure.py) ---------------------------------


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


@dataclasses.dataclass(frozen=True)
class ClientCost:
    """CPU seconds of the client's write of one chunk's records (`Warehouse.append_runs`, the
    Parquet parts `crsbench probe` writes): a fixed cost per batch (four part files, their
    digests) plus a cost per prediction row (the conversion to Arrow, the compressed write)."""

    per_batch: float
    per_row: float

    def __call__(self, batches: int, rows: int) -> float:
        return batches * self.per_batch + rows * self.per_row


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
