"""`crsbench analyze partition`: can a classifier tell the training pool from the test split?
(METHODS.md §18.1)

Per dataset with a test split and per encoder with complete frozen features on it (clean
condition, depth 1.0, the stored values): the pool (train + calib images) against the test split
(`pair` pool_vs_test), and, for each declared shift target, the pool against the target's test
split (`pair` shift). The primary logreg probe is cross-validated over group-safe stratified folds
(`partition_cv`); the out-of-fold scores give the AUROC (0.5 = indistinguishable) with a clustered
DeLong interval. Rows go to table partition_shift (sql/views/290; a rerun replaces them, a run with
`dataset` only that dataset's). No run
record is read or written: the classifier is fitted here, on features only, never on labels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.agreement import inputs
from crsbench.analyses.common import label_matrix
from crsbench.analyses.merge import rows_scope
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis
from crsbench.analyses.side_tables import replace_rows
from crsbench.analyses.splits.partition_cv import (
    check_folds,
    clustered_delong,
    group_folds,
    one_thread,
    out_of_fold_scores,
)
from crsbench.analyses.subgroups.subgroups import listed
from crsbench.core import CrsbenchError, EncoderKey
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.datasets import shift_targets

POOL_VS_TEST = "pool_vs_test"
SHIFT_PAIR = "shift"
POOL = ("train", "calib")
COLUMNS = (
    "dataset",
    "encoder_id",
    "pair",
    "other_dataset",
    "auroc",
    "auroc_lo",
    "auroc_hi",
    "n_pool",
    "n_other",
    "folds",
)
DEPTH = 1.0
DOCS = {
    "dataset": "Dataset whose training pool (train + calib images) is one side of the pair.",
    "pair": "pool_vs_test (the pool against the dataset's own test split) or shift (the pool against a "
    "declared shift target's test split).",
    "other_dataset": "Dataset of the other side: the dataset itself (pool_vs_test) or the shift target.",
    "auroc": "Cross-validated AUROC of the partition classifier telling the other side from the pool; "
    "0.5 = indistinguishable, 1 = fully separable.",
    "auroc_lo": "Lower end of the 95 % clustered DeLong interval of auroc (patient/lesion groups as units).",
    "auroc_hi": "Upper end of the 95 % clustered DeLong interval of auroc.",
    "n_pool": "Images of the pool (train + calib); count.",
    "n_other": "Images of the other side (a test split); count.",
    "folds": "Cross-validation folds (group-safe, stratified by side).",
}


def listed_encoders(params: Mapping[str, Any]) -> list[str]:
    return [str(EncoderKey.parse(e)) for e in listed(params["encoders"])]


def frozen_sources(wh: Warehouse, dataset_id: str) -> dict[str, inputs.FeatureSource]:
    return {k: s for k, s in inputs.feature_sources(wh, dataset_id).items() if "@" not in k}


def _pool_rows(imgs: inputs.DatasetImages) -> np.ndarray:
    return np.flatnonzero(np.isin(imgs.split, POOL))


def check_dataset(imgs: inputs.DatasetImages) -> None:
    """One line when the dataset has no test split or no training pool."""
    if not len(imgs.rows("test")):
        raise CrsbenchError(
            f"dataset {imgs.dataset_id!r} has no test split: the partition classifier tells the training pool "
            "from the test split (re-ingest it with test images, e.g. a split column with 'test' rows)"
        )
    if not len(_pool_rows(imgs)):
        raise CrsbenchError(f"dataset {imgs.dataset_id!r} has no train or calib images: there is no pool to compare")


@dataclasses.dataclass(frozen=True)
class Side:
    """One side of a pair: features, patient/lesion groups and 0/1 labels (n, L) of its images."""

    x: np.ndarray
    groups: np.ndarray
    labels: np.ndarray


@dataclasses.dataclass(frozen=True)
class Images:
    """A dataset's images with their 0/1 label matrix (n_images, L) in store row order."""

    imgs: inputs.DatasetImages
    labels: np.ndarray

    @classmethod
    def read(cls, wh: Warehouse, dataset_id: str) -> Images:
        imgs = inputs.images(wh, dataset_id)
        matrix = label_matrix(wh, dataset_id, imgs.n_labels).reindex(index=imgs.image_ids, fill_value=0)
        return cls(imgs, matrix.to_numpy(dtype=np.int64))

    def sides(self, source: inputs.FeatureSource, splits: list[list[str]]) -> list[Side]:
        """One Side per list of splits, from one read of the features."""
        inputs.check_rows(source, self.imgs)
        chosen = [np.flatnonzero(np.isin(self.imgs.split, names)) for names in splits]
        every = np.unique(np.concatenate(chosen))
        x = inputs.clean_features(source, DEPTH, every)
        return [Side(x[np.searchsorted(every, rows)], self.imgs.groups[rows], self.labels[rows]) for rows in chosen]


def pair_row(pool: Side, other: Side, params: Mapping[str, Any], what: str) -> dict[str, Any]:
    """auroc, interval, counts and folds of one pair (pool = side 0, other = side 1)."""
    k = int(params["folds"])
    side = np.concatenate([np.zeros(len(pool.x), dtype=np.int64), np.ones(len(other.x), dtype=np.int64)])
    groups = np.concatenate(
        [np.char.add("pool\0", pool.groups.astype(str)), np.char.add("other\0", other.groups.astype(str))]
    )
    labels = np.concatenate([pool.labels, other.labels]) if pool.labels.shape[1] == other.labels.shape[1] else None
    check_folds(side, groups, k, what)
    folds = group_folds(side, groups, k, params["seed"], labels)
    scores = out_of_fold_scores(np.concatenate([pool.x, other.x]), side, folds)
    auc, lo, hi = clustered_delong(side == 1, scores, groups, float(params["level"]))
    return {"auroc": auc, "auroc_lo": lo, "auroc_hi": hi, "n_pool": len(pool.x), "n_other": len(other.x), "folds": k}


def dataset_rows(
    wh: Warehouse, dataset_id: str, encoders: list[str], explicit: bool, params: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of one dataset (its pool against its test split and every shift target's)."""
    images = Images.read(wh, dataset_id)
    check_dataset(images.imgs)
    sources = frozen_sources(wh, dataset_id)
    # Named encoders must be on a named dataset; over every dataset, each keeps those it has.
    wanted = encoders if explicit else [e for e in encoders if e in sources]
    if encoders and not wanted:
        return [], [f"{dataset_id}: none of the named encoders has frozen features there; skipped"]
    chosen = inputs.choose_sources(sources, dataset_id, wanted or None, [DEPTH])
    targets = [(t, Images.read(wh, t), frozen_sources(wh, t)) for t in shift_targets(wh, dataset_id)]
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for source in chosen:
        pool, test = images.sides(source, [list(POOL), ["test"]])
        base = {"dataset": dataset_id, "encoder_id": source.key}
        row = pair_row(pool, test, params, f"{dataset_id} {source.key} pool vs test")
        rows.append({**base, "pair": POOL_VS_TEST, "other_dataset": dataset_id, **row})
        for target, timages, tsources in targets:
            tsource = tsources.get(source.key)
            if tsource is None or not len(timages.imgs.rows("test")):
                why = "no test split" if tsource is not None else f"no features of {source.key}"
                notes.append(f"{dataset_id} -> {target}: {why}; shift pair skipped")
                continue
            (other,) = timages.sides(tsource, [["test"]])
            row = pair_row(pool, other, params, f"{dataset_id} {source.key} pool vs {target} test")
            rows.append({**base, "pair": SHIFT_PAIR, "other_dataset": target, **row})
    return rows, notes


@register_analysis(
    "partition",
    params={
        "dataset": Param(None, "Dataset name (default every one): adds or replaces its rows only.", str, short="-d"),
        "encoders": Param(
            None, "Encoder to include (repeatable; default every one with features).", list[str], "--encoder", "-e"
        ),
        "folds": Param(5, "Cross-validation folds (group-safe, stratified)."),
        "seed": Param(0, "Random seed of the folds."),
        "level": Param(0.95, "Confidence level of the clustered DeLong intervals; (0, 1)."),
    },
    outputs={"summary": COLUMNS},
    columns=DOCS,
    section="§18.1",
)
def partition(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Partition classifier: cross-validated AUROC telling the training pool from the test split (and shift target)."""
    if not 0.0 < float(params["level"]) < 1.0:
        raise CrsbenchError(f"level must be in (0, 1), got {params['level']}")
    explicit = params["dataset"] is not None
    encoders = listed_encoders(params)
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    with one_thread():
        for dataset_id in inputs.dataset_ids(wh, params["dataset"]):
            has_test = len(inputs.images(wh, dataset_id).rows("test")) > 0
            if not explicit and not (has_test and frozen_sources(wh, dataset_id)):
                notes.append(f"{dataset_id}: {'no frozen features' if has_test else 'no test split'}; skipped")
                continue
            found, why = dataset_rows(wh, dataset_id, encoders, explicit, params)
            rows += found
            notes += why
    if not rows:
        raise CrsbenchError(
            "no dataset with a test split and complete frozen features to compare"
            + (f" for encoder(s) {', '.join(encoders)}" if encoders else "")
            + ": run 'crsbench extract' first"
        )
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame = frame.astype({"n_pool": "int64", "n_other": "int64", "folds": "int32"})
    replace_rows(wh, {"partition_shift": frame}, rows_scope(params))
    notes.append(
        f"folds: {int(params['folds'])} (group-safe, stratified; seed {params['seed']}); "
        f"intervals: {float(params['level']):.0%} clustered DeLong"
    )
    notes.append(f"stored: partition_shift ({len(frame)} rows)")
    return AnalysisResult({}, frame, notes)
