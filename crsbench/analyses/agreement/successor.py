"""The successor test (METHODS.md §17): will candidate B return current A's neighbours and keep
A's classifiers? One read of the warehouse; nothing is written.

Per dataset where both have features: the pair's mutual k-NN overlap with its interval and
chance level, A's overlap with the warehouse's random-initialised encoders as a floor, CKA and,
where the dataset has labels and A's probe is stored, the AUROC retention of A's probe reading
B's features through a ridge map (seed mean), then a one-line reading.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.agreement import inputs, transfer
from crsbench.analyses.agreement import matrix as am
from crsbench.analyses.agreement import measures as m
from crsbench.analyses.agreement.transfer import DEFAULT_IMAGES, DEFAULT_RIDGE
from crsbench.core import CrsbenchError, EncoderKey
from crsbench.features.store import depth_key
from crsbench.warehouse.connection import Warehouse

COLUMNS = [
    "dataset_id",
    "n_images",
    "k",
    "mutual_knn",
    "lo",
    "hi",
    "chance",
    "random_init",
    "cka",
    "retention",
    "retention_lo",
    "retention_hi",
]


@dataclasses.dataclass(frozen=True)
class SuccessorOptions:
    k: int = 10
    depth: float = 1.0
    split: str | None = None
    replicates: int = 1000
    seed: int = 0
    transfer: bool | None = None  # None: where labels exist; True: required (refused without labels)
    transfer_images: int = DEFAULT_IMAGES
    ridge: float = DEFAULT_RIDGE


@dataclasses.dataclass(frozen=True)
class SuccessorReport:
    current: str
    candidate: str
    table: pd.DataFrame  # one row per dataset, COLUMNS
    readings: list[str]  # one line per dataset
    notes: list[str]


def _datasets(wh: Warehouse, current: str, candidate: str, dataset: str | None) -> list[str]:
    if dataset is not None:
        return inputs.dataset_ids(wh, dataset)
    both = [d for d in inputs.dataset_ids(wh, None) if {current, candidate} <= set(inputs.feature_sources(wh, d))]
    if not both:
        where = {
            e: [d for d in inputs.dataset_ids(wh, None) if e in inputs.feature_sources(wh, d)]
            for e in (current, candidate)
        }
        lacking = next(e for e in (current, candidate) if not where[e]) if not all(where.values()) else None
        detail = (
            f"encoder {lacking} has no complete features on any dataset"
            if lacking
            else f"{current} has features on {', '.join(where[current])}, {candidate} on {', '.join(where[candidate])}"
        )
        raise CrsbenchError(
            f"no dataset has features of both {current} and {candidate}: {detail}; run 'crsbench extract'"
        )
    return both


def _transfer(
    wh: Warehouse, imgs: inputs.DatasetImages, sources: list[inputs.FeatureSource], opts: SuccessorOptions
) -> tuple[tuple[float, float, float] | None, list[str]]:
    """(retention, lo, hi) of the current encoder's probe reading the candidate's mapped features."""
    current, candidate = sources[0].key, sources[1].key
    labelled = inputs.has_labels(wh, imgs.dataset_id)
    if opts.transfer is False or (opts.transfer is None and not labelled):
        return None, []
    params = {"transfer_images": opts.transfer_images, "ridge": opts.ridge, "seed": opts.seed}
    frame, notes = transfer.dataset_transfer(
        wh, imgs, sources, opts.depth, params, pairs=[(candidate, current)], keep_replicates=True
    )
    if frame.empty:
        return None, notes
    # The seeds' probes are scored on the same test-image resamples: the interval of their mean.
    with warnings.catch_warnings():  # a resample where no seed's AUROC is defined stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.nanmean(np.stack(frame["replicates"].to_list()), axis=0)
    means = means[np.isfinite(means)]
    lo, hi = np.percentile(means, [2.5, 97.5]) if len(means) else (np.nan, np.nan)
    return (float(frame["retention"].mean()), float(lo), float(hi)), notes


def reading(current: str, candidate: str, row: dict[str, Any]) -> str:
    """One dataset's plain reading: the overlap with its interval, chance and random-init floor,
    and what it means when the interval reaches the floor (or chance); CKA; retention explained."""
    floor = "" if row["random_init"] is None else f"; random-init {row['random_init']:.3f}"
    text = (
        f"{row['dataset_id']}: {candidate} returns {row['mutual_knn']:.3f} of {current}'s {row['k']} nearest "
        f"neighbours (95 % CI {row['lo']:.3f}-{row['hi']:.3f}; chance {row['chance']:.3f}{floor})"
    )
    if row["random_init"] is not None and row["lo"] <= row["random_init"]:
        text += f": it agrees with {current} no more than a random network does"
    elif row["lo"] <= row["chance"]:
        text += f": it agrees with {current} no more than chance"
    text += f"; CKA {row['cka']:.3f}"
    if row["retention"] is not None:
        text += f"; a linear map keeps {row['retention']:.3f} of {current}'s AUROC" + _retention_note(current, row)
    return text


def _retention_note(current: str, row: dict[str, Any]) -> str:
    """Retention = AUROC of current's probe on the candidate's mapped features / on its own (§17)."""
    lo, hi = row.get("retention_lo"), row.get("retention_hi")
    interval = "" if lo is None or not np.isfinite(lo) else f" (95 % CI {lo:.3f}-{hi:.3f})"
    if row["retention"] <= 1.0:
        return interval
    if lo is not None and np.isfinite(lo) and lo <= 1.0:
        return f"{interval}; above 1 but within noise of 1: no measurable loss or gain"
    return (
        f"{interval}; above 1: {current}'s own probe scores better on the candidate's features mapped "
        f"into {current}'s space than on {current}'s features, so the candidate keeps what this probe "
        f"reads and the map drops variation of {current}'s that hurt it (not a verdict that the "
        "candidate is better overall)"
    )


def successor(
    wh: Warehouse, current: str, candidate: str, dataset: str | None = None, opts: SuccessorOptions = SuccessorOptions()
) -> SuccessorReport:
    """The successor test of `candidate` against `current` on one dataset or every shared one."""
    current, candidate = str(EncoderKey.parse(current)), str(EncoderKey.parse(candidate))
    if current == candidate:
        raise CrsbenchError(f"--candidate {candidate} is the --current encoder; name two different encoders")
    rows, readings, notes = [], [], []
    for dataset_id in _datasets(wh, current, candidate, dataset):
        sources = inputs.feature_sources(wh, dataset_id)
        pair = inputs.choose_sources(sources, dataset_id, [current, candidate], [opts.depth])
        floors = [s for k, s in sorted(sources.items()) if not s.pretrained and k not in (current, candidate)]
        floors = [s for s in floors if depth_key(opts.depth) in s.depths]
        imgs = inputs.images(wh, dataset_id)
        rows_used = imgs.rows(opts.split)
        m.check_k(opts.k, len(rows_used), f"dataset {dataset_id!r}" + (f" split {opts.split}" if opts.split else ""))
        if opts.transfer:
            transfer.require_labels(wh, dataset_id)
        for s in (*pair, *floors):
            inputs.check_rows(s, imgs)
        feats = {s.key: inputs.clean_features(s, opts.depth, rows_used) for s in (*pair, *floors)}
        pairs = [(current, candidate), *((current, f.key) for f in floors)]
        frame = am.agreement_matrix(feats, opts.k, replicates=opts.replicates, seed=opts.seed, pairs=pairs, cka=False)
        knn = frame.set_index("encoder_b")
        moved, why = _transfer(wh, imgs, list(pair), opts)
        notes.extend(why)
        row = {
            "dataset_id": dataset_id,
            "n_images": len(rows_used),
            "k": opts.k,
            "mutual_knn": float(knn.loc[candidate, "estimate"]),
            "lo": float(knn.loc[candidate, "lo"]),
            "hi": float(knn.loc[candidate, "hi"]),
            "chance": float(knn.loc[candidate, "chance"]),
            "random_init": float(np.mean([knn.loc[f.key, "estimate"] for f in floors])) if floors else None,
            "cka": m.linear_cka(feats[current], feats[candidate]),
            "retention": moved[0] if moved else None,
            "retention_lo": moved[1] if moved else None,
            "retention_hi": moved[2] if moved else None,
        }
        rows.append(row)
        readings.append(reading(current, candidate, row))
    return SuccessorReport(current, candidate, pd.DataFrame(rows, columns=COLUMNS), readings, notes)
