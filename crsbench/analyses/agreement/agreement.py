"""Analysis `agreement`: will the next encoder agree with this one? (METHODS.md §17)

Per dataset, for every pair of encoders with complete features on it (frozen and adapted
variants alike), on the clean condition at full depth (every extracted depth with
all_depths=true), on all images or one split:

* encoder_agreement: mutual k-NN overlap (mean over images of |N_A(i) & N_B(i)| / k, cosine
  neighbours of the L2-normalised features, self excluded, exact with ties to the lower row),
  with a 95 % percentile bootstrap over images (the same resamples for every pair) and the chance
  level k / (n - 1); and linear CKA;
* neighbour_composition: per encoder, the share of an image's k neighbours with the same label,
  the same patient / lesion group and the same value of each metadata key (image_metadata: view,
  site, sex, ...; images without a value for a key are left out of that key's share);
* classifier_transfer: B's stored logreg probe applied to A's test features mapped into B's space
  by ridge regression fitted on unlabelled training images (`transfer.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.agreement import inputs, transfer
from crsbench.analyses.agreement import matrix as am
from crsbench.analyses.agreement.measures import check_k
from crsbench.analyses.registry import AnalysisResult, register_analysis
from crsbench.core import DEPTHS, CrsbenchError
from crsbench.warehouse.connection import Warehouse

AGREEMENT_COLUMNS = ("dataset_id", "encoder_a", "encoder_b", "depth", *am.PAIR_COLUMNS[2:])
COMPOSITION_COLUMNS = ("dataset_id", "depth", *am.COMPOSITION_COLUMNS)
SUMMARY_COLUMNS = ("dataset_id", "encoder_a", "encoder_b", "depth", "mutual_knn", "lo", "hi", "chance", "cka")
PARAMS: dict[str, Any] = {
    "dataset": None,
    "encoders": None,
    "depth": 1.0,
    "all_depths": False,
    "k": 10,
    "split": None,
    "replicates": 1000,
    "seed": 0,
    "transfer": True,
    "transfer_images": transfer.DEFAULT_IMAGES,
    "ridge": transfer.DEFAULT_RIDGE,
}


def _depths(params: Mapping[str, Any]) -> list[float]:
    if params["all_depths"]:
        return list(DEPTHS)
    depth = float(params["depth"])
    if not any(np.isclose(depth, d) for d in DEPTHS):
        raise CrsbenchError(f"depth {params['depth']!r} is not one of {', '.join(map(str, DEPTHS))}")
    return [next(d for d in DEPTHS if np.isclose(depth, d))]


def _encoders(params: Mapping[str, Any]) -> list[str] | None:
    value = params["encoders"]
    if value is None:
        return None
    names = [s.strip() for s in value.split(",")] if isinstance(value, str) else [str(v) for v in value]
    return [n for n in names if n] or None


# Composition fields of their own; a metadata key spelled the same is stored as meta:<key>.
OWN_FIELDS = ("label", "group")


def _fields(wh: Warehouse, imgs: inputs.DatasetImages, rows: np.ndarray) -> dict[str, np.ndarray]:
    """The fields composition is measured on: label (labelled datasets), group (when groups repeat)
    and every metadata key of the dataset (codes -1 where an image has no value)."""
    fields: dict[str, np.ndarray] = {}
    labels = inputs.label_codes(wh, imgs, rows)
    if labels is not None:
        fields["label"] = labels
    groups = imgs.groups[rows]
    if len(np.unique(groups)) < len(groups):
        fields["group"] = np.unique(groups, return_inverse=True)[1]
    for key, codes in inputs.metadata_codes(wh, imgs, rows).items():
        fields[f"meta:{key}" if key in OWN_FIELDS else key] = codes
    return fields


def dataset_agreement(
    wh: Warehouse, dataset_id: str, params: Mapping[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, list[str]]:
    """(encoder_agreement, neighbour_composition, classifier_transfer, notes) of one dataset."""
    k, replicates, seed = int(params["k"]), int(params["replicates"]), int(params["seed"])
    depths = _depths(params)
    sources = inputs.feature_sources(wh, dataset_id)
    chosen = inputs.choose_sources(sources, dataset_id, _encoders(params), depths)
    empty = (pd.DataFrame(columns=AGREEMENT_COLUMNS), pd.DataFrame(columns=COMPOSITION_COLUMNS))
    if len(chosen) < 2:
        note = f"{dataset_id}: {len(chosen)} encoder(s) with complete features; agreement needs two"
        return *empty, transfer.empty(), [note]
    imgs = inputs.images(wh, dataset_id)
    rows = imgs.rows(params["split"])
    what = f"dataset {dataset_id!r}" + (f" split {params['split']}" if params["split"] else "")
    check_k(k, len(rows), what)
    for source in chosen:
        inputs.check_rows(source, imgs)
    fields = _fields(wh, imgs, rows)
    pairs, comps, transfers, notes = [], [], [], []
    for depth in depths:
        feats = {s.key: inputs.clean_features(s, depth, rows) for s in chosen}
        lists = am.all_neighbours(feats, k)
        frame = am.agreement_matrix(feats, k, replicates=replicates, seed=seed, neighbours=lists)
        pairs.append(frame.assign(dataset_id=dataset_id, depth=depth))
        comps.append(
            am.composition(lists, fields, replicates=replicates, seed=seed).assign(dataset_id=dataset_id, depth=depth)
        )
        if params["transfer"] and "label" in fields:
            moved, why = transfer.dataset_transfer(wh, imgs, chosen, depth, params)
            transfers.append(moved)
            notes.extend(why)
    agreement = pd.concat(pairs, ignore_index=True)[list(AGREEMENT_COLUMNS)]
    composition = pd.concat(comps, ignore_index=True)[list(COMPOSITION_COLUMNS)]
    moved_all = pd.concat(transfers, ignore_index=True) if transfers else transfer.empty()
    return agreement, composition, moved_all, notes


def summary_of(agreement: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, pair, depth): mutual k-NN with interval and chance, beside CKA."""
    keys = ["dataset_id", "encoder_a", "encoder_b", "depth"]
    knn = agreement[agreement["measure"] == am.MUTUAL_KNN]
    cka = agreement[agreement["measure"] == am.CKA][[*keys, "estimate"]].rename(columns={"estimate": "cka"})
    out = knn.rename(columns={"estimate": "mutual_knn"}).merge(cka, on=keys, how="left")
    return out[list(SUMMARY_COLUMNS)].reset_index(drop=True)


@register_analysis(
    "agreement",
    params=PARAMS,
    outputs={
        "encoder_agreement": AGREEMENT_COLUMNS,
        "neighbour_composition": COMPOSITION_COLUMNS,
        "classifier_transfer": transfer.COLUMNS,
        "summary": SUMMARY_COLUMNS,
    },
)
def run_agreement(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Representation agreement of every encoder pair: mutual k-NN, CKA, neighbour composition, transfer."""
    parts: list[tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]] = []
    notes: list[str] = []
    explicit = params["dataset"] is not None
    for dataset_id in inputs.dataset_ids(wh, params["dataset"]):
        if not explicit and not inputs.feature_sources(wh, dataset_id):
            notes.append(f"{dataset_id}: no features extracted; skipped")
            continue
        *frames, why = dataset_agreement(wh, dataset_id, params)
        parts.append((frames[0], frames[1], frames[2]))
        notes.extend(why)
    agreement = _concat([p[0] for p in parts], AGREEMENT_COLUMNS)
    composition = _concat([p[1] for p in parts], COMPOSITION_COLUMNS)
    moved = _concat([p[2] for p in parts], transfer.COLUMNS)
    tables = {"encoder_agreement": agreement, "neighbour_composition": composition, "classifier_transfer": moved}
    return AnalysisResult(tables=tables, summary=summary_of(agreement), notes=notes)


def _concat(frames: list[pd.DataFrame], columns: tuple[str, ...]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True)[list(columns)] if frames else pd.DataFrame(columns=list(columns))
