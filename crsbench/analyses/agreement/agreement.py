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
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis
from crsbench.core import DEPTHS, CrsbenchError
from crsbench.warehouse.connection import Warehouse

AGREEMENT_COLUMNS = ("dataset_id", "encoder_a", "encoder_b", "depth", *am.PAIR_COLUMNS[2:])
COMPOSITION_COLUMNS = ("dataset_id", "depth", *am.COMPOSITION_COLUMNS)
SUMMARY_COLUMNS = ("dataset_id", "encoder_a", "encoder_b", "depth", "mutual_knn", "lo", "hi", "chance", "cka")
PARAMS: dict[str, Param] = {
    "dataset": Param(None, "Dataset name (default every one): adds or replaces its rows only.", str, short="-d"),
    "encoders": Param(
        None, "Encoder to include (repeatable; default every one with features).", list[str], "--encoder", "-e"
    ),
    "depth": Param(1.0, "Relative depth of both encoders' features: 0.25, 0.5, 0.75 or 1.0."),
    "all_depths": Param(False, "Every extracted depth instead of --depth."),
    "k": Param(10, "Neighbours per image."),
    "split": Param(None, "Compare on this split's images only (default all images).", str),
    "replicates": Param(1000, "Image bootstrap replicates of the intervals."),
    "seed": Param(0, "Random seed of the bootstrap and of the transfer map's images."),
    "transfer": Param(True, "Also measure classifier transfer (labelled datasets)."),
    "transfer_images": Param(transfer.DEFAULT_IMAGES, "Most unlabelled training images the transfer map is fitted on."),
    "ridge": Param(transfer.DEFAULT_RIDGE, "Ridge penalty of the transfer map, relative to the mean eigenvalue."),
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


DOCS: Mapping[str, str] = {
    "dataset_id": "Dataset whose images both encoders' features describe (all images, or the split asked for).",
    "encoder_a": "First encoder of the pair (encoder key: id, or id@regime for an adapted variant); "
    "pairs are unordered, encoder_a < encoder_b.",
    "encoder_b": "Second encoder of the pair (encoder key); pairs are unordered, encoder_a < encoder_b.",
    "classifier_transfer.encoder_b": "Encoder whose stored full-label logreg probe is applied to encoder_a's "
    "mapped test features (encoder key).",
    "classifier_transfer.dataset_id": "Labelled dataset whose training images fit the map and whose test "
    "images score the transferred probe.",
    "neighbour_composition.dataset_id": "Dataset whose images the neighbour lists range over (all images, or "
    "the split asked for).",
    "neighbour_composition.k": "Neighbours per image (cosine similarity of the L2-normalised features, the "
    "image itself excluded, ties to the lower row).",
    "classifier_transfer.encoder_a": "Encoder whose test features are mapped into encoder_b's space (the "
    "current encoder whose probe is reused is encoder_b).",
    "depth": "Relative depth of both encoders' features: 0.25, 0.5, 0.75 or 1.0; clean condition.",
    "k": "Neighbours per image (cosine similarity of the L2-normalised features, the image itself excluded, "
    "ties to the lower row); NULL for CKA.",
    "measure": "mutual_knn (mean over images of |N_A(i) & N_B(i)| / k) or cka (linear CKA of the centred "
    "features, Kornblith et al. 2019).",
    "estimate": "The measure on all images; [0, 1], 1 = the same neighbours (mutual_knn) or the same "
    "representation up to rotation and scale (cka).",
    "encoder_agreement.lo": "2.5th percentile of the mean over bootstrap resamples of the images (the same "
    "resamples for every pair of the dataset); NULL for CKA.",
    "encoder_agreement.hi": "97.5th percentile of the mean over the same image resamples; NULL for CKA.",
    "encoder_agreement.chance": "Mutual k-NN overlap expected of unrelated neighbour lists, k / (n - 1); NULL for CKA.",
    "n_images": "Images the measure was computed on; count.",
    "encoder_id": "Encoder whose neighbour lists are described (encoder key).",
    "field": "What neighbours are compared on: label (the same class, or the same set of labels for a "
    "multilabel image), group (the same patient or lesion id), or a metadata key of the dataset "
    "(image_metadata.key: view, site, sex, age bin, ...; a key named label or group is meta:label, meta:group).",
    "neighbour_composition.estimate": "Mean over the images with a value of the field of the share of its k "
    "neighbours with the image's own value; images without a value for a metadata key are left out of that "
    "key's share, and as neighbours never share it; [0, 1].",
    "neighbour_composition.n_images": "Images the share is averaged over: those with a value of the field "
    "(all images for label and group); count.",
    "neighbour_composition.lo": "2.5th percentile over bootstrap resamples of the images.",
    "neighbour_composition.hi": "97.5th percentile over bootstrap resamples of the images.",
    "neighbour_composition.chance": "Share expected of neighbours drawn at random from the n - 1 other images: "
    "sum_v c_v (c_v - 1) / (n_v (n - 1)) over the field's values v with c_v images, n_v = sum_v c_v the "
    "images with a value (n_v = n for label and group).",
    "seed": "Seed of encoder_b's full-label logreg probe (its label-fraction family, 0..4).",
    "m_images": "Unlabelled training images the ridge map from encoder_a to encoder_b was fitted on; "
    "min(transfer_images, n_train).",
    "auroc_b": "Macro-AUROC of encoder_b's probe on encoder_b's own clean test features.",
    "auroc_mapped": "Macro-AUROC of encoder_b's probe on encoder_a's clean test features mapped by the ridge map.",
    "retention": "auroc_mapped / auroc_b: the share of encoder_b's AUROC kept when its probe reads encoder_a; "
    "1 = nothing lost.",
    "classifier_transfer.lo": "2.5th percentile of the retention over bootstrap resamples of the test images "
    "(both AUROCs on the same resample).",
    "classifier_transfer.hi": "97.5th percentile of the retention over the same test-image resamples.",
    "ece_b": "ECE (15 equal-width bins) of encoder_b's probe on its own clean test features.",
    "ece_mapped": "ECE (15 equal-width bins) of encoder_b's probe on encoder_a's mapped test features.",
    "n_test": "Test images both AUROCs were computed on; count.",
    "summary.mutual_knn": "Mutual k-NN overlap of the pair (= encoder_agreement.estimate).",
    "summary.lo": "2.5th percentile of the mutual k-NN overlap over image resamples.",
    "summary.hi": "97.5th percentile of the mutual k-NN overlap over image resamples.",
    "summary.chance": "Chance level of the mutual k-NN overlap, k / (n - 1).",
    "summary.cka": "Linear CKA of the pair.",
}


@register_analysis(
    "agreement",
    columns=DOCS,
    section="§17",
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
