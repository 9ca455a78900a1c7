"""Hand-built run records for the warehouse/SQL tests, and an independent reference computation
of METHODS.md §6-§8 in pandas/numpy (written from docs/METHODS.md, never calling the SQL views)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from crsbench.core import CLEAN
from crsbench.features.conditions import registered_conditions
from crsbench.probes.records import runs_schema

FRACTIONS = (0.01, 0.05, 0.10, 0.25, 1.0)
# Every registered perturbation x its severities (the protocol's 15 unless a plugin adds more).
PERTURBED = tuple(c for c in registered_conditions() if c != CLEAN)
AXES = ("discrimination", "calibration", "label_efficiency", "robustness")


def run_row(
    encoder: str,
    dataset: str,
    eval_dataset: str,
    condition: str,
    fraction: float,
    seed: int,
    auroc: float,
    ece: float,
    probe: str = "logreg",
    depth: float = 1.0,
    regime: str = "frozen",
    pretrained: bool = False,
) -> dict:
    """One run record with every column of `runs_schema()`: the values below, NULL in any other
    column (qwk and ordinal_mae, ordinal-only, and any metric registered beyond the built-ins)."""
    fit_id = f"{encoder}|{dataset}|{regime}|{probe}|{depth}|{fraction}|{seed}"
    return schema_row(
        {
            "run_id": uuid.uuid4().hex,
            "fit_id": fit_id,
            "encoder_id": encoder,
            "dataset_id": dataset,
            "eval_dataset_id": eval_dataset,
            "regime": regime,
            "probe": probe,
            "depth": depth,
            "label_fraction": fraction,
            "seed": seed,
            "condition": condition,
            "auroc": auroc,
            "ece": ece,
            "ece_adaptive": ece * 1.1,
            "brier": 0.2,
            "nll": 0.5,
            "accuracy": auroc - 0.1,
            "mean_confidence": 0.7,
            "n_train": int(1000 * fraction),
            "n_test": 200,
            "fit_seconds": 0.1,
            "pretrained": pretrained,
            "code_version": "test",
            "created_at": datetime(2025, 1, 1, tzinfo=UTC),
        }
    )


def schema_row(values: Mapping[str, object]) -> dict:
    """`values` laid out as a run record: every column of `runs_schema()` in order, NULL where not
    given. A key the schema lacks is a builder's bug (a renamed column), so it raises."""
    names = runs_schema().names
    extra = sorted(set(values) - set(names))
    if extra:
        raise KeyError(f"not run-record columns: {', '.join(extra)}")
    return {name: values.get(name) for name in names}


def cell_runs(
    encoder: str,
    dataset: str,
    rng: np.random.Generator,
    *,
    quality: float = 0.8,
    shift_target: str | None = None,
    seeds: Iterable[int] = range(5),
    conditions: Sequence[str] = PERTURBED,
    regime: str = "frozen",
    with_noise_rows: bool = True,
    ece_shift: float = 0.0,
    fragility: float = 1.0,
    le_power: float = 0.3,
) -> list[dict]:
    """Every run the protocol grid (METHODS.md §14) gives one (encoder, dataset) cell, with seed-to-seed noise.

    quality moves every metric together; ece_shift, fragility and le_power move calibration,
    robustness and label efficiency on their own; the noise makes seed averaging matter. Rows the axes
    must ignore (other probes and depths, the calib split) are added when with_noise_rows.
    """
    rows: list[dict] = []
    for seed in seeds:
        for fraction in FRACTIONS:
            base = quality * (0.75 + 0.25 * fraction**le_power)
            auroc = float(np.clip(base + rng.normal(0, 0.02), 0.5, 1.0))
            ece = float(np.clip(0.05 + ece_shift + (1 - quality) * 0.3 + rng.normal(0, 0.01), 0.0, 1.0))
            rows.append(run_row(encoder, dataset, dataset, "clean", fraction, seed, auroc, ece, regime=regime))
            if with_noise_rows:
                rows.append(run_row(encoder, dataset, dataset, "calib", fraction, seed, 0.99, 0.0, regime=regime))
                rows.append(
                    run_row(encoder, dataset, dataset, "clean", fraction, seed, 0.99, 0.0, probe="mlp", regime=regime)
                )
                rows.append(
                    run_row(encoder, dataset, dataset, "clean", fraction, seed, 0.99, 0.0, depth=0.5, regime=regime)
                )
            if fraction != 1.0:
                continue
            for condition in conditions:
                drop = rng.uniform(0.0, 0.15) * (1.2 - quality) * fragility
                rows.append(
                    run_row(
                        encoder,
                        dataset,
                        dataset,
                        condition,
                        fraction,
                        seed,
                        auroc - drop + rng.normal(0, 0.01),
                        ece + drop / 3,
                        regime=regime,
                    )
                )
            if shift_target is not None:
                rows.append(
                    run_row(
                        encoder,
                        dataset,
                        shift_target,
                        "shift",
                        fraction,
                        seed,
                        auroc - rng.uniform(0.0, 0.1),
                        ece + 0.02,
                        regime=regime,
                    )
                )
    return rows


def frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows)


# -- independent reference computation (METHODS.md §6-§8) --------------------------------------


def reference_axes_cell(runs: pd.DataFrame, regime: str = "frozen") -> pd.DataFrame:
    """METHODS.md §6 in pandas: seed means first, then ratios and drops between them."""
    prim = runs[(runs.probe == "logreg") & (runs.depth == 1.0) & (runs.regime == regime)]
    out = []
    for (enc, ds), g in prim.groupby(["encoder_id", "dataset_id"]):
        clean = g[(g.condition == "clean") & (g.eval_dataset_id == ds)]
        by_fraction = clean.groupby("label_fraction")["auroc"].mean()
        full = by_fraction.loc[1.0]
        ece_full = clean[clean.label_fraction == 1.0]["ece"].mean()
        low = [f for f in by_fraction.index if f < 1.0]
        le = float(np.mean([by_fraction[f] / full for f in low])) if low else np.nan
        at_full = g[g.label_fraction == 1.0]
        deltas = []
        for cond in sorted(set(at_full.condition)):
            if cond in ("clean", "calib"):
                continue
            for _, h in at_full[at_full.condition == cond].groupby("eval_dataset_id"):
                deltas.append(max(0.0, full - h["auroc"].mean()))
        rob = 1 - (0.5 * np.mean(deltas) + 0.5 * np.max(deltas)) if deltas else np.nan
        xs = np.log10(np.array(by_fraction.index, dtype=float))
        aulc = float(np.trapezoid(by_fraction.to_numpy(), xs) / (xs.max() - xs.min()))
        out.append(
            {
                "encoder_id": enc,
                "dataset_id": ds,
                "discrimination": full,
                "calibration": 1 - ece_full,
                "label_efficiency": le,
                "robustness": rob,
                "aulc": aulc,
            }
        )
    return pd.DataFrame(out)


def reference_axes_encoder(cells: pd.DataFrame) -> pd.DataFrame:
    complete = cells.dropna(subset=list(AXES))
    agg = complete.groupby("encoder_id")[[*list(AXES), "aulc"]].mean()
    agg["n_datasets"] = complete.groupby("encoder_id").size()
    return agg.reset_index()


def reference_anchors(table: pd.DataFrame, members: Sequence[str]) -> dict[str, tuple[float, float]]:
    sub = table[table.encoder_id.isin(members)]
    return {a: (float(sub[a].min()), float(sub[a].max())) for a in AXES}


def reference_crs(
    table: pd.DataFrame,
    members: Sequence[str],
    anchors: dict[str, tuple[float, float]],
    w_axes: Sequence[float] = (0.25, 0.25, 0.25, 0.25),
    w_terms: Sequence[float] = (0.60, 0.25, 0.15),
) -> pd.DataFrame:
    """METHODS.md §8 for one scope: `table` has one row per encoder (axes columns)."""
    lo = np.array([anchors[a][0] for a in AXES])
    hi = np.array([anchors[a][1] for a in AXES])
    norm = {
        r.encoder_id: np.clip((np.array([getattr(r, a) for a in AXES]) - lo) / (hi - lo), 0, 1)
        for r in table.itertuples()
    }
    ref = [m for m in members if m in norm]
    rows = []
    for enc, x in norm.items():
        others = [p for p in ref if p != enc]
        dominated = sum(bool(np.all(x >= norm[p]) and np.any(x > norm[p])) for p in others)
        dom = dominated / len(others)
        ideal = 1 - np.sqrt(np.sum(np.asarray(w_axes) * (1 - x) ** 2))
        worst = float(np.min(x))
        crs = w_terms[0] * dom + w_terms[1] * ideal + w_terms[2] * worst
        rows.append({"encoder_id": enc, "dominance": dom, "ideal": ideal, "worst": worst, "crs": crs})
    return pd.DataFrame(rows)


def all_pairs(items: Sequence[str]) -> list[tuple[str, str]]:
    return list(itertools.combinations(items, 2))


# -- the standard hand-built scenario ---------------------------------------------------------

DATASETS = ("derm", "fundus", "cxr")  # multiclass, ordinal, multilabel (cxr -> mimic shift)
SHIFT = {"cxr": "mimic"}
# encoder -> (quality, ece_shift, fragility, le_power): AUROC and the other axes disagree.
PROFILES = {
    "e1": (0.70, 0.00, 0.5, 0.15),
    "e2": (0.80, 0.05, 1.0, 0.30),
    "e3": (0.90, 0.12, 2.5, 0.60),
    "e4": (0.75, -0.03, 0.8, 0.20),
    "e5": (0.85, 0.02, 1.5, 0.45),
}
MISSING = {("e5", "fundus")}  # like BioViL: a chest-only encoder has no fundus cell


def encoder_runs(
    encoder: str,
    seed: int = 0,
    quality: float | None = None,
    datasets: Sequence[str] = DATASETS,
    regime: str = "frozen",
) -> list[dict]:
    """All runs of one encoder on the standard datasets (deterministic in encoder and seed)."""
    rows: list[dict] = []
    q, ece_shift, fragility, le_power = PROFILES.get(encoder, (0.8, 0.0, 1.0, 0.3))
    q = q if quality is None else quality
    for k, ds in enumerate(datasets):
        if (encoder, ds) in MISSING:
            continue
        rng = np.random.default_rng([seed, k, sum(map(ord, encoder + regime))])
        # Datasets rank encoders differently, so the aggregate is not one encoder on top everywhere.
        cell_q = q + (0.08 * np.sin(3.0 * q * (k + 1) + k))
        rows += cell_runs(
            encoder,
            ds,
            rng,
            quality=float(cell_q),
            shift_target=SHIFT.get(ds),
            regime=regime,
            ece_shift=ece_shift,
            fragility=fragility,
            le_power=le_power,
        )
    return rows


def clone_encoder(rows: list[dict], source: str, target: str) -> list[dict]:
    """The same metrics under another encoder id: exact ties on every axis."""
    out = []
    for r in rows:
        if r["encoder_id"] == source:
            c = dict(r, encoder_id=target, run_id=uuid.uuid4().hex)
            c["fit_id"] = c["fit_id"].replace(source, target, 1)
            out.append(c)
    return out
