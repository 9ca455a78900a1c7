"""`crsbench analyze resplit --repeats R`: split-level uncertainty and locked selection (METHODS.md §18.2).

A REFIT analysis: unlike the others it fits probes again instead of reading stored runs. Per
dataset, the training pool (train + calib) is re-drawn R times into train and calib, group-safe
and stratified by label (`ingest.splits.stratified_group_split`, the ingest splitter, with the
official split's train : calib ratio and seed `resplit|<seed>|<repeat>`); the test split stays
fixed, and each draw is shared by every encoder (paired). Per draw and encoder the primary logreg
probe is refitted at full label fraction on the clean depth-1.0 features (standardised with the
new train split's statistics, fit seed 0) and scored on the new calib split and the fixed test
split. The encoder selected first is the one with the highest

* `calib_auroc`: macro AUROC on the re-drawn calib split, or
* `calib_crs`: the per-dataset CRS (fn_crs_scores, protocol weights) in cohort mode over the
  encoders compared, from discrimination = calib AUROC and calibration = 1 - calib ECE of the
  refit, with label efficiency and robustness the stored axes of the official split (axes_cell):
  those two are not refitted (they take 4 fractions x 5 seeds and 15 conditions per draw).

Ties go to the lower encoder id. Rows: table resplit_selection (sql/views/291; a rerun replaces
them) and analysis_resplit_repeats (one row per draw and encoder). The stored runs are untouched.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.agreement import inputs
from crsbench.analyses.common import dataset_task, label_matrix
from crsbench.analyses.merge import rows_scope
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis
from crsbench.analyses.side_tables import replace_rows
from crsbench.analyses.splits.partition import DEPTH, POOL, frozen_sources, listed_encoders
from crsbench.analyses.splits.partition_cv import one_thread, standardise
from crsbench.analyses.validity.criterion import score_groups
from crsbench.core import FROZEN, PRIMARY_PROBE, CrsbenchError
from crsbench.ingest.splits import check_group_safe, stratified_group_split
from crsbench.ingest.types import Task
from crsbench.probes.metrics import ece, macro_auroc
from crsbench.probes.registry import get_probe
from crsbench.warehouse.connection import Warehouse

CRITERIA = ("calib_auroc", "calib_crs")
SELECTION_COLUMNS = (
    "dataset",
    "criterion",
    "encoder_id",
    "frequency",
    "repeats",
    "test_auroc_mean",
    "test_auroc_sd",
    "test_auroc_min",
    "test_auroc_max",
)
REPEAT_COLUMNS = (
    "dataset",
    "repeat",
    "encoder_id",
    "n_train",
    "n_calib",
    "calib_auroc",
    "calib_ece",
    "calib_crs",
    "test_auroc",
    "selected_calib_auroc",
    "selected_calib_crs",
)
SUMMARY_COLUMNS = (
    "dataset",
    "criterion",
    "repeats",
    "n_encoders",
    "most_selected",
    "frequency",
    "selected_test_auroc",
    "best_test_auroc",
    "regret",
    "refit",
)
DOCS = {
    "dataset": "Dataset whose training pool (train + calib) was re-drawn; its test split is fixed.",
    "criterion": "Selection criterion on the re-drawn calib split: calib_auroc or calib_crs (METHODS §18.2).",
    "frequency": "Share of the draws in which the encoder is selected first; sums to 1 per dataset and criterion.",
    "repeats": "Draws of the train/calib partition (--repeats).",
    "test_auroc_mean": "Mean over the draws of the refitted probe's macro AUROC on the fixed test split.",
    "test_auroc_sd": "Standard deviation (ddof 1) over the draws of the test AUROC: the split-level uncertainty.",
    "test_auroc_min": "Lowest test AUROC over the draws.",
    "test_auroc_max": "Highest test AUROC over the draws.",
    "repeat": "Draw number, 0 .. repeats - 1 (split seed resplit|<seed>|<repeat>).",
    "n_train": "Images of the re-drawn train split; count.",
    "n_calib": "Images of the re-drawn calib split; count.",
    "calib_auroc": "Macro AUROC of the refitted probe on the re-drawn calib split.",
    "calib_ece": "ECE (15 equal-width bins) of the refitted probe on the re-drawn calib split.",
    "calib_crs": "Cohort-mode per-dataset CRS from calib discrimination and calibration and the stored label "
    "efficiency and robustness; NULL where those axes are missing.",
    "test_auroc": "Macro AUROC of the refitted probe on the fixed test split.",
    "selected_calib_auroc": "Whether the encoder has the highest calib AUROC of the draw (ties: lower id).",
    "selected_calib_crs": "Whether the encoder has the highest calib CRS of the draw (ties: lower id).",
    "n_encoders": "Encoders compared on the dataset; count.",
    "most_selected": "Encoder selected first most often (ties: lower id).",
    "summary.frequency": "Share of the draws that select most_selected.",
    "selected_test_auroc": "Mean over the draws of the test AUROC of the encoder each draw selects (locked selection).",
    "best_test_auroc": "Mean over the draws of the highest test AUROC of any encoder (an oracle, for the regret).",
    "regret": "best_test_auroc - selected_test_auroc; >= 0, lower is better.",
    "refit": "Always true: this analysis refits probes on re-drawn partitions instead of reading stored runs.",
}


@dataclasses.dataclass(frozen=True)
class Pool:
    """A dataset's pool and test rows with the labels a fit needs and the official split sizes."""

    dataset_id: str
    task: Task
    n_outputs: int
    pool: np.ndarray  # store rows of train + calib
    test: np.ndarray
    onehot: np.ndarray  # (n_images, L) 0/1 stratification matrix
    labels: np.ndarray  # class index (n_images,) or 0/1 (n_images, L)
    groups: np.ndarray
    ratios: tuple[int, int]  # official (n_train, n_calib)


def read_pool(wh: Warehouse, dataset_id: str) -> Pool:
    imgs = inputs.images(wh, dataset_id)
    task, n = dataset_task(wh, dataset_id)
    counts = {s: int((imgs.split == s).sum()) for s in ("train", "calib", "test")}
    empty = [s for s, c in counts.items() if c == 0]
    if empty:
        raise CrsbenchError(
            f"dataset {dataset_id!r} has no {empty[0]!r} split: resplit re-draws train and calib from the pool "
            "and scores the fixed test split (re-ingest it with all three splits)"
        )
    onehot = label_matrix(wh, dataset_id, n).reindex(index=imgs.image_ids, fill_value=0).to_numpy(dtype=np.int64)
    labels = onehot if task is Task.MULTILABEL else onehot.argmax(axis=1)
    pool = np.flatnonzero(np.isin(imgs.split, POOL))
    return Pool(
        dataset_id, task, n, pool, imgs.rows("test"), onehot, labels, imgs.groups, (counts["train"], counts["calib"])
    )


def draws(pool: Pool, repeats: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """R (train rows, calib rows) partitions of the pool: group-safe, stratified by label."""
    out = []
    for r in range(repeats):
        part = stratified_group_split(
            pool.onehot[pool.pool], pool.groups[pool.pool], pool.ratios, seed=f"resplit|{seed}|{r}"
        )
        check_group_safe(pool.groups[pool.pool], part.astype(str))
        out.append((pool.pool[part == 0], pool.pool[part == 1]))
    return out


def refit_scores(
    pool: Pool, x: np.ndarray, at: np.ndarray, train: np.ndarray, calib: np.ndarray
) -> tuple[float, float, float]:
    """(calib AUROC, calib ECE, test AUROC) of the primary probe refitted on `train`.
    `x` holds the features of the store rows `at` (sorted)."""
    rows = {name: np.searchsorted(at, r) for name, r in (("train", train), ("calib", calib), ("test", pool.test))}
    x_train, x_rest = standardise(x[rows["train"]], x[np.concatenate([rows["calib"], rows["test"]])])
    predictor = get_probe(PRIMARY_PROBE).fit(x_train, pool.labels[train], pool.task, pool.n_outputs, 0)
    probs = predictor(x_rest)
    p_calib, p_test = probs[: len(calib)], probs[len(calib) :]
    y_calib, y_test = pool.labels[calib], pool.labels[pool.test]
    return (
        macro_auroc(y_calib, p_calib, pool.task),
        ece(y_calib, p_calib, pool.task),
        macro_auroc(y_test, p_test, pool.task),
    )


def dataset_repeats(
    wh: Warehouse, dataset_id: str, encoders: list[str], explicit: bool, params: Mapping[str, Any]
) -> tuple[pd.DataFrame, list[str]]:
    """The REPEAT_COLUMNS rows of one dataset (calib CRS and selections still empty)."""
    pool = read_pool(wh, dataset_id)
    sources = frozen_sources(wh, dataset_id)
    wanted = encoders if explicit else [e for e in encoders if e in sources]
    if encoders and not wanted:
        return pd.DataFrame(columns=list(REPEAT_COLUMNS)), [f"{dataset_id}: none of the named encoders; skipped"]
    chosen = inputs.choose_sources(sources, dataset_id, wanted or None, [DEPTH])
    imgs = inputs.images(wh, dataset_id)
    partitions = draws(pool, int(params["repeats"]), int(params["seed"]))
    at = np.sort(np.concatenate([pool.pool, pool.test]))
    rows: list[dict[str, Any]] = []
    for source in chosen:
        inputs.check_rows(source, imgs)
        x = inputs.clean_features(source, DEPTH, at)
        for r, (train, calib) in enumerate(partitions):
            calib_auroc, calib_ece, test_auroc = refit_scores(pool, x, at, train, calib)
            rows.append(
                {
                    "dataset": dataset_id,
                    "repeat": r,
                    "encoder_id": source.key,
                    "n_train": len(train),
                    "n_calib": len(calib),
                    "calib_auroc": calib_auroc,
                    "calib_ece": calib_ece,
                    "test_auroc": test_auroc,
                }
            )
    notes = [f"{dataset_id}: one encoder, selected in every draw"] if len(chosen) == 1 else []
    return pd.DataFrame(rows), notes


def with_calib_crs(wh: Warehouse, repeats: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """`calib_crs` per row: cohort CRS per (dataset, draw) through fn_crs_scores (criterion.score_groups)."""
    stored = wh.sql(
        "select encoder_id, dataset_id as dataset, label_efficiency, robustness from axes_cell where regime = ?",
        [FROZEN],
    )
    frame = repeats.merge(stored, on=["encoder_id", "dataset"], how="left")
    usable = frame[frame["label_efficiency"].notna() & frame["robustness"].notna() & frame["calib_auroc"].notna()]
    # A shift target is never fitted on (its source's probes are evaluated on it): no advice to probe it.
    targets = set(wh.sql("select distinct target_id from shift_pairs")["target_id"])
    held = set(usable["encoder_id"] + " on " + usable["dataset"])
    gaps = frame[~(frame["encoder_id"] + " on " + frame["dataset"]).isin(held)]
    notes = [
        f"calib_crs: {d} is a shift target (probes are fitted on its source, not on it), so it has no label "
        "efficiency / robustness of its own: selection there is on calib AUROC only"
        for d in sorted(set(gaps["dataset"]) & targets)
    ]
    probed = gaps[~gaps["dataset"].isin(targets)]
    lacking = sorted(set(probed["encoder_id"] + " on " + probed["dataset"]))
    if lacking:
        more = f" and {len(lacking) - 3} more" if len(lacking) > 3 else ""
        notes.append(
            f"calib_crs: no stored label efficiency / robustness for {', '.join(lacking[:3])}{more} "
            "(run 'crsbench probe -e ENCODER -d DATASET' for them); not selectable on CRS"
        )
    out = repeats.assign(calib_crs=np.nan)
    if usable.empty:
        return out, notes
    axes = pd.DataFrame(
        {
            "grp": usable["dataset"] + "|" + usable["repeat"].astype(str),
            "scope": usable["dataset"],
            "encoder_id": usable["encoder_id"],
            "in_panel": True,
            "discrimination": usable["calib_auroc"].astype(float),
            "calibration": 1.0 - usable["calib_ece"].astype(float),
            "label_efficiency": usable["label_efficiency"].astype(float),
            "robustness": usable["robustness"].astype(float),
        }
    )
    scores = score_groups(wh, axes)
    crs = {(g, e): c for g, e, c in zip(scores["grp"], scores["encoder_id"], scores["crs"], strict=True)}
    keys = zip(out["dataset"] + "|" + out["repeat"].astype(str), out["encoder_id"], strict=True)
    out["calib_crs"] = [float(crs.get(k, np.nan)) for k in keys]
    return out, notes


def mark_selected(repeats: pd.DataFrame) -> pd.DataFrame:
    """selected_<criterion>: the highest value of each (dataset, draw), ties to the lower encoder id;
    a draw where no encoder has a value selects none."""
    out = repeats.sort_values(["dataset", "repeat", "encoder_id"], kind="stable").reset_index(drop=True)
    for criterion in CRITERIA:
        valid = out[out[criterion].notna()]
        best = valid.sort_values(criterion, ascending=False, kind="stable").groupby(["dataset", "repeat"]).head(1)
        out[f"selected_{criterion}"] = out.index.isin(best.index)
    return out


def selection(repeats: pd.DataFrame) -> pd.DataFrame:
    """SELECTION_COLUMNS: per (dataset, criterion, encoder) the share of draws selecting it and the
    spread of its test AUROC; criteria no draw of a dataset could select on are left out."""
    spread = repeats.groupby(["dataset", "encoder_id"]).agg(
        repeats=("repeat", "nunique"),
        test_auroc_mean=("test_auroc", "mean"),
        test_auroc_sd=("test_auroc", "std"),
        test_auroc_min=("test_auroc", "min"),
        test_auroc_max=("test_auroc", "max"),
    )
    frames = []
    for criterion in CRITERIA:
        flag = f"selected_{criterion}"
        decided = repeats[repeats.groupby(["dataset", "repeat"])[flag].transform("any")]
        if decided.empty:
            continue
        share = decided.groupby(["dataset", "encoder_id"])[flag].sum() / decided.groupby("dataset")["repeat"].nunique()
        frames.append(spread.assign(criterion=criterion, frequency=share.astype(float)).reset_index())
    if not frames:
        return pd.DataFrame(columns=list(SELECTION_COLUMNS))
    out = pd.concat(frames, ignore_index=True)
    out = out[out["frequency"].notna()].astype({"repeats": "int32"})
    return out.sort_values(["dataset", "criterion", "encoder_id"])[list(SELECTION_COLUMNS)].reset_index(drop=True)


def summary(repeats: pd.DataFrame, chosen: pd.DataFrame) -> pd.DataFrame:
    rows = []
    best = repeats.groupby(["dataset", "repeat"])["test_auroc"].max()
    for (dataset, criterion), group in chosen.groupby(["dataset", "criterion"], sort=True):
        top = group.sort_values(["frequency", "encoder_id"], ascending=[False, True]).iloc[0]
        picked = repeats[(repeats["dataset"] == dataset) & repeats[f"selected_{criterion}"]]
        selected = float(picked["test_auroc"].mean())
        oracle = float(best.loc[dataset].loc[picked["repeat"]].mean())
        rows.append(
            {
                "dataset": dataset,
                "criterion": criterion,
                "repeats": int(top["repeats"]),
                "n_encoders": len(group),
                "most_selected": top["encoder_id"],
                "frequency": float(top["frequency"]),
                "selected_test_auroc": selected,
                "best_test_auroc": oracle,
                "regret": oracle - selected,
                "refit": True,
            }
        )
    return pd.DataFrame(rows, columns=list(SUMMARY_COLUMNS))


def check_repeats(value: Any) -> int:
    try:
        repeats = int(value)
    except (TypeError, ValueError):
        raise CrsbenchError(f"--repeats must be a whole number >= 2, got {value!r}") from None
    if repeats < 2 or repeats != float(value):
        raise CrsbenchError(
            f"--repeats must be at least 2, got {value}: one draw of the partition has no spread (try --repeats 20)"
        )
    return repeats


@register_analysis(
    "resplit",
    params={
        "repeats": Param(20, "Re-drawn train/calib partitions; at least 2."),
        "dataset": Param(None, "Dataset name (default every one): adds or replaces its rows only.", str, short="-d"),
        "encoders": Param(
            None, "Encoder to include (repeatable; default every one with features).", list[str], "--encoder", "-e"
        ),
        "seed": Param(0, "Random seed of the re-drawn partitions."),
    },
    outputs={"repeats": REPEAT_COLUMNS, "summary": SUMMARY_COLUMNS},
    columns=DOCS,
    section="§18.2",
)
def resplit(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """REFIT: re-drawn train/calib partitions (test fixed); locked selection on calib AUROC and calib CRS."""
    check_repeats(params["repeats"])
    explicit = params["dataset"] is not None
    encoders = listed_encoders(params)
    frames: list[pd.DataFrame] = []
    notes: list[str] = []
    with one_thread():
        for dataset_id in inputs.dataset_ids(wh, params["dataset"]):
            if not explicit and not frozen_sources(wh, dataset_id):
                notes.append(f"{dataset_id}: no frozen features; skipped")
                continue
            frame, why = dataset_repeats(wh, dataset_id, encoders, explicit, params)
            frames += [frame] if len(frame) else []
            notes += why
    if not frames:
        raise CrsbenchError("no dataset with complete frozen features to re-split: run 'crsbench extract' first")
    repeats, why = with_calib_crs(wh, pd.concat(frames, ignore_index=True))
    repeats = mark_selected(repeats)[list(REPEAT_COLUMNS)]
    chosen = selection(repeats)
    replace_rows(wh, {"resplit_selection": chosen}, rows_scope(params))
    notes += why
    notes.append(
        f"REFIT analysis: the primary probe was refitted on {int(params['repeats'])} group-safe stratified "
        f"re-draws of train/calib per dataset (test fixed, seed {params['seed']}); stored runs are untouched"
    )
    notes.append(f"stored: resplit_selection ({len(chosen)} rows)")
    return AnalysisResult({"repeats": repeats}, summary(repeats, chosen), notes)
