"""`crsbench analyze shortcuts`: can the labels be predicted from file properties alone? (METHODS.md §19)

Per dataset, every image file's header properties (bytes on disk, width, height, aspect ratio,
mode, bit depth, format, JPEG quality estimate, chroma subsampling, EXIF and ICC present; read
once and cached in image_properties) feed a logistic regression on one-hot categories and
standardised numbers, which predicts the labels (multiclass/ordinal: one multinomial model;
multilabel: one binary model per label). It is scored two ways:

* `pool_cv`: out-of-fold predictions of a group-safe k-fold cross-validation inside the
  training pool (train + calib splits);
* `test`: fitted on the whole pool, scored on the test split.

Metrics: balanced accuracy (mean per-class recall of the top class; for multilabel the mean
over labels of the balanced accuracy at p >= 0.5), macro AUROC and the AUROC of the single most
predictable class or label (`max_class_auroc`), each with its chance level; within the pool each
is computed per fold and averaged over the folds. A dataset warns when
its pool_cv scores are far above chance (`warn_rule`). Rows go to table shortcut_audit
(sql/views/290); a rerun replaces the audited datasets' rows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.common import label_targets
from crsbench.analyses.registry import AnalysisResult, Param, register_analysis
from crsbench.core import CrsbenchError
from crsbench.ingest.types import Task
from crsbench.warehouse.connection import Warehouse
from crsbench.warehouse.file_properties import check_files, dataset_properties

NUMERIC = ("log_bytes", "width", "height", "aspect", "bit_depth", "jpeg_quality", "exif", "icc")
CATEGORICAL = ("mode", "format", "chroma_subsampling")
METRICS = ("balanced_accuracy", "auroc", "max_class_auroc")
# header: every property but the file size (the warning rule reads it); header_and_size adds the
# size, which also reflects how compressible the pixels are, i.e. the image content (§19).
PROPERTIES = ("header", "header_and_size")
AUDIT_SPLITS = ("pool_cv", "test")
# The warning rule (METHODS.md §19): within-pool balanced accuracy more than BA_MARGIN above chance
# with macro AUROC above AUROC_WARN, or any one class/label separated at MAX_CLASS_WARN.
BA_MARGIN, AUROC_WARN, MAX_CLASS_WARN = 0.25, 0.80, 0.95
AUDIT_COLUMNS = ["dataset", "properties", "split", "metric", "estimate", "chance", "warn", "n_images", "folds"]
SUMMARY_COLUMNS = [
    "dataset",
    "split",
    "balanced_accuracy",
    "auroc",
    "max_class_auroc",
    "auroc_with_size",
    "chance_ba",
    "warn",
]


def design(props: pd.DataFrame, with_size: bool) -> np.ndarray:
    """The classifier's inputs: numeric properties (log bytes with `with_size`; NaN quality -> 0)
    and one-hot categories."""
    numeric = pd.DataFrame({c: props[c].astype(float) for c in NUMERIC[1:]})
    if with_size:
        numeric.insert(0, "log_bytes", np.log(props["bytes"].astype(float).clip(lower=1)))
    onehot = pd.get_dummies(props[list(CATEGORICAL)].astype(str), dtype=float)
    return np.hstack([numeric.fillna(0.0).to_numpy(float), onehot.to_numpy(float)])


def logistic(x: np.ndarray, t: np.ndarray, lam: float = 1.0, iterations: int = 50) -> np.ndarray:
    """Weights (intercept first) of an L2-penalised binary logistic regression (Newton steps).

    Minimises sum log-loss + lam / 2 * ||w||^2 over the non-intercept weights (scikit-learn's
    LogisticRegression with C = 1 / lam); `x` is standardised by the caller.
    """
    z = np.hstack([np.ones((len(x), 1)), x])
    penalty = np.full(z.shape[1], lam)
    penalty[0] = 0.0
    w = np.zeros(z.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-np.clip(z @ w, -30, 30)))
        gradient = z.T @ (p - t) + penalty * w
        hessian = (z * (p * (1 - p))[:, None]).T @ z + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w


def _fit_predict(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, multilabel: bool) -> np.ndarray:
    """Scores (n_test, K): one standardised logistic regression per class (one-vs-rest; for
    multiclass normalised to sum 1) or per label; a column with one outcome gets its frequency."""
    mean, sd = x_train.mean(axis=0), x_train.std(axis=0)
    sd[sd == 0] = 1.0
    a, b = (x_train - mean) / sd, (x_test - mean) / sd
    out = np.zeros((len(x_test), y_train.shape[1]))
    for j in range(y_train.shape[1]):
        t = y_train[:, j].astype(float)
        if 0 < t.sum() < len(t):
            w = logistic(a, t)
            out[:, j] = 1.0 / (1.0 + np.exp(-np.clip(w[0] + b @ w[1:], -30, 30)))
        else:
            out[:, j] = t.mean() if len(t) else 0.0
    if not multilabel:
        out /= np.clip(out.sum(axis=1, keepdims=True), 1e-12, None)
    return out


def _folds(y: np.ndarray, groups: np.ndarray, n_folds: int, seed: int, multilabel: bool) -> list[np.ndarray]:
    """Test-row indices of each group-safe fold (stratified on the class for multiclass)."""
    from sklearn.model_selection import GroupKFold, StratifiedGroupKFold

    k = min(n_folds, len(np.unique(groups)))
    if k < 2:
        raise CrsbenchError("the training pool has fewer than 2 groups: cannot cross-validate")
    if multilabel:
        splitter: Any = GroupKFold(n_splits=k)
        return [test for _, test in splitter.split(y, groups=groups)]
    splitter = StratifiedGroupKFold(n_splits=k, shuffle=True, random_state=seed)
    return [test for _, test in splitter.split(y, y.argmax(axis=1), groups)]


def class_aurocs(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """One-vs-rest AUROC of each column; NaN where it holds one outcome only (ties count half)."""
    from scipy.stats import rankdata

    out = np.full(y.shape[1], np.nan)
    for j in range(y.shape[1]):
        pos = y[:, j] == 1
        n_pos, n_neg = int(pos.sum()), int((~pos).sum())
        if n_pos and n_neg:
            ranks = rankdata(p[:, j])
            out[j] = (ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return out


def _balanced_accuracy(truth: np.ndarray, called: np.ndarray) -> float:
    """Mean recall over the classes present in `truth`."""
    return float(np.mean([np.mean(called[truth == c] == c) for c in np.unique(truth)]))


def _ba(y: np.ndarray, p: np.ndarray, multilabel: bool) -> float:
    if not multilabel:
        return _balanced_accuracy(y.argmax(axis=1), p.argmax(axis=1))
    defined = [j for j in range(y.shape[1]) if 0 < y[:, j].sum() < len(y)]
    return float(np.mean([_balanced_accuracy(y[:, j], (p[:, j] >= 0.5).astype(int)) for j in defined]))


def scores(parts: list[tuple[np.ndarray, np.ndarray]], multilabel: bool) -> dict[str, tuple[float, float]]:
    """metric -> (estimate, chance) over (labels, scores) parts: each metric is computed per part
    (a CV fold, or the test split as one part) and averaged over the parts, per class for AUROC,
    so fold-to-fold shifts of a constant score cannot pass for (anti-)discrimination."""
    import warnings

    aurocs = np.array([class_aurocs(y, p) for y, p in parts])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a class with one outcome in every part
        per_class = np.nanmean(aurocs, axis=0)
    per_class = per_class[~np.isnan(per_class)]
    ba = float(np.mean([_ba(y, p, multilabel) for y, p in parts]))
    classes = np.concatenate([y for y, _ in parts]).sum(axis=0) > 0
    chance_ba = 0.5 if multilabel else 1.0 / int(classes.sum())
    return {
        "balanced_accuracy": (ba, chance_ba),
        "auroc": (float(per_class.mean()) if len(per_class) else float("nan"), 0.5),
        "max_class_auroc": (float(per_class.max()) if len(per_class) else float("nan"), 0.5),
    }


def warn_rule(result: Mapping[str, tuple[float, float]]) -> bool:
    """Labels predictable from file properties: BA > chance + 0.25 and AUROC > 0.8, or one class at 0.95."""
    ba, chance = result["balanced_accuracy"]
    broad = ba > chance + BA_MARGIN and result["auroc"][0] > AUROC_WARN
    return bool(broad or result["max_class_auroc"][0] >= MAX_CLASS_WARN)


def _audit(
    x: np.ndarray, y: np.ndarray, pool: np.ndarray, test: np.ndarray, folds: list[np.ndarray], multilabel: bool
) -> dict[str, dict[str, tuple[float, float]]]:
    """split -> metric -> (estimate, chance) for one design matrix."""
    xp, yp = x[pool], y[pool]
    parts = []
    for held in folds:
        kept = np.setdiff1d(np.arange(len(pool)), held)
        parts.append((yp[held], _fit_predict(xp[kept], yp[kept], xp[held], multilabel)))
    on_test = _fit_predict(xp, yp, x[test], multilabel)
    return {"pool_cv": scores(parts, multilabel), "test": scores([(y[test], on_test)], multilabel)}


def audit_dataset(wh: Warehouse, dataset: str, n_folds: int, seed: int) -> pd.DataFrame:
    """The shortcut_audit rows of one dataset: both property sets, both splits, every metric."""
    task, _, truth, _ = label_targets(wh, dataset)
    props = dataset_properties(wh, dataset)
    multilabel = task is Task.MULTILABEL
    y = truth[props["row_index"].to_numpy()].astype(int)
    split = props["split"].to_numpy()
    pool, test = np.flatnonzero(split != "test"), np.flatnonzero(split == "test")
    if len(test) == 0:
        raise CrsbenchError(f"dataset {dataset!r} has no test split: the shortcut audit scores one")
    groups = props["group_id"].fillna(props["image_id"]).to_numpy()[pool]
    folds = _folds(y[pool], groups, n_folds, seed, multilabel)
    results = {name: _audit(design(props, name != "header"), y, pool, test, folds, multilabel) for name in PROPERTIES}
    warn = warn_rule(results["header"]["pool_cv"])
    sizes = {"pool_cv": len(pool), "test": len(test)}
    rows = [
        [dataset, name, where, metric, *result[metric], warn, sizes[where], len(folds)]
        for name, by_split in results.items()
        for where, result in by_split.items()
        for metric in METRICS
    ]
    return pd.DataFrame(rows, columns=AUDIT_COLUMNS)


def _datasets(wh: Warehouse, requested: object) -> tuple[list[str], list[str]]:
    """(datasets to audit, notes on those skipped)."""
    known = wh.sql(
        "select d.dataset_id, min(i.rel_path) as rel from datasets d join images i using (dataset_id) group by all order by 1"
    )
    if requested is not None:
        if str(requested) not in set(known["dataset_id"]):
            raise CrsbenchError(
                f"dataset {requested!r} is not in the warehouse (known: {', '.join(known['dataset_id']) or 'none'})"
            )
        return [str(requested)], []
    arrays = known["rel"].str.contains(".npz#", regex=False)
    notes = [f"{d}: images are .npz arrays, no file properties (skipped)" for d in known.loc[arrays, "dataset_id"]]
    return list(known.loc[~arrays, "dataset_id"]), notes


@register_analysis(
    "shortcuts",
    params={
        "dataset": Param(None, "Dataset name (default every one): adds or replaces its rows only.", str, short="-d"),
        "folds": Param(5, "Cross-validation folds of the pool."),
        "seed": Param(0, "Random seed of the folds."),
    },
    outputs={"summary": SUMMARY_COLUMNS},
    section="§19",
    reads=("images",),  # file properties and labels, never runs: probing leaves it fresh
    columns={
        "dataset": "Dataset whose image files were audited (datasets.dataset_id).",
        "split": "pool_cv (out-of-fold inside train + calib) or test (fitted on the pool, scored on test).",
        "balanced_accuracy": "Balanced accuracy of the file-property classifier.",
        "auroc": "Macro one-vs-rest AUROC of the file-property classifier; 0.5 = chance.",
        "max_class_auroc": "AUROC of the single class or label the file properties predict best.",
        "auroc_with_size": "Macro AUROC when the file size is added to the header properties (not in the rule).",
        "chance_ba": "Balanced accuracy of chance: 1 / classes (multiclass, ordinal) or 0.5 (multilabel).",
        "warn": "True when the pool_cv scores meet the warning rule: labels predictable from file properties.",
    },
)
def shortcuts(wh: Warehouse, params: Mapping[str, Any]) -> AnalysisResult:
    """Shortcut audit: labels predicted from image file properties alone (no pixels), CV in the pool and on test."""
    n_folds, seed = int(params["folds"]), int(params["seed"])
    if n_folds < 2:
        raise CrsbenchError(f"folds must be at least 2, got {n_folds}")
    datasets, notes = _datasets(wh, params["dataset"])
    if not datasets:
        raise CrsbenchError("no dataset with image files to audit: ingest one first ('crsbench ingest')")
    check_files(wh, datasets)  # before anything is read or written
    audit = pd.concat([audit_dataset(wh, d, n_folds, seed) for d in datasets], ignore_index=True)
    with wh.transaction() as con:
        con.execute("delete from shortcut_audit where list_contains(?, dataset)", [datasets])
        con.register("_new_shortcut_audit", audit)
        try:
            con.execute(f"insert into shortcut_audit ({', '.join(AUDIT_COLUMNS)}) select * from _new_shortcut_audit")
        finally:
            con.unregister("_new_shortcut_audit")
    warned = sorted(audit.loc[audit["warn"], "dataset"].unique())
    notes += [f"{d}: WARNING labels are predictable from file properties alone (pool_cv)" for d in warned]
    notes.append(f"stored: shortcut_audit ({len(audit)} rows, {len(datasets)} datasets)")
    return AnalysisResult({}, _summary(audit), notes)


def _summary(audit: pd.DataFrame) -> pd.DataFrame:
    header = audit[audit["properties"] == "header"]
    wide = header.pivot_table(index=["dataset", "split"], columns="metric", values="estimate").reset_index()
    sized = audit[(audit["properties"] == "header_and_size") & (audit["metric"] == "auroc")]
    wide = wide.merge(
        sized[["dataset", "split", "estimate"]].rename(columns={"estimate": "auroc_with_size"}), on=["dataset", "split"]
    )
    chance = header[header["metric"] == "balanced_accuracy"][["dataset", "split", "chance", "warn"]]
    out = wide.merge(chance.rename(columns={"chance": "chance_ba"}), on=["dataset", "split"])
    return out[SUMMARY_COLUMNS]
