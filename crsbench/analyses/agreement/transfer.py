"""Classifier transfer between encoders (METHODS.md §17): B's stored probe on A's mapped features.

For an ordered pair (A, B) on a labelled dataset: a ridge map from A's standardised features to
B's (each standardised with its own train-split statistics) is fitted on m = min(M, n_train)
training images, no labels used; B's stored full-label logreg probe (table coefficients) is
applied to A's mapped clean test features and to B's own. Retention = AUROC(mapped) / AUROC(B),
per seed of B's probe, with a percentile bootstrap over test images (both AUROCs on the same
resamples); ECE after transfer beside it.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.agreement import inputs
from crsbench.analyses.agreement.measures import resample_counts
from crsbench.core import CrsbenchError, EncoderKey
from crsbench.ingest.types import Task
from crsbench.probes.metrics import ece, macro_auroc
from crsbench.probes.weighted_metrics import RunScorer
from crsbench.warehouse.connection import Warehouse

DEFAULT_IMAGES = 4096
DEFAULT_RIDGE = 1e-6  # lambda, relative to the mean eigenvalue of the centred Gram matrix
REPLICATES = 200
COLUMNS = (
    "dataset_id",
    "encoder_a",
    "encoder_b",
    "depth",
    "seed",
    "m_images",
    "auroc_b",
    "auroc_mapped",
    "retention",
    "lo",
    "hi",
    "ece_b",
    "ece_mapped",
    "n_test",
)


def empty() -> pd.DataFrame:
    return pd.DataFrame(columns=list(COLUMNS))


@dataclasses.dataclass(frozen=True)
class StoredProbe:
    seed: int
    weights: np.ndarray  # (D, K)
    bias: np.ndarray  # (K,)
    mean: np.ndarray  # (D,)
    std: np.ndarray  # (D,)

    def standardise(self, x: np.ndarray) -> np.ndarray:
        out: np.ndarray = (np.asarray(x, dtype=np.float64) - self.mean) / self.std
        return out

    def predict(self, z: np.ndarray, task: Task) -> np.ndarray:
        logits = z @ self.weights + self.bias
        if task is Task.MULTILABEL:
            out: np.ndarray = 1.0 / (1.0 + np.exp(-logits))
            return out
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        return np.asarray(e / e.sum(axis=1, keepdims=True))


def stored_probes(wh: Warehouse, dataset_id: str, depth: float) -> dict[str, list[StoredProbe]]:
    """Encoder key -> its stored full-label logreg probes at `depth`, by seed."""
    frame = wh.sql(
        "select encoder_id, regime, seed, dim, n_outputs, weights, bias, mean, std from coefficients "
        "where dataset_id = ? and abs(depth - ?) < 1e-9 and abs(label_fraction - 1.0) < 1e-9 "
        "order by encoder_id, regime, seed",
        [dataset_id, depth],
    )
    out: dict[str, list[StoredProbe]] = {}
    for r in frame.itertuples(index=False):
        key = str(EncoderKey(str(r.encoder_id), str(r.regime)))
        w = np.asarray(r.weights, dtype=np.float64).reshape(int(r.dim), int(r.n_outputs))
        probe = StoredProbe(
            int(r.seed), w, np.asarray(r.bias, float), np.asarray(r.mean, float), np.asarray(r.std, float)
        )
        if all(p.seed != probe.seed for p in out.get(key, [])):
            out.setdefault(key, []).append(probe)
    return out


def ridge_map(x: np.ndarray, z: np.ndarray, ridge: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x_mean, M, z_mean) minimising |(x - x_mean) M - (z - z_mean)|^2 + lam |M|^2, with
    lam = ridge * trace(Xc^T Xc) / D (so the penalty does not depend on the features' scale)."""
    x_mean, z_mean = x.mean(axis=0), z.mean(axis=0)
    xc, zc = x - x_mean, z - z_mean
    gram = xc.T @ xc
    lam = ridge * max(float(np.trace(gram)) / gram.shape[0], 1e-300)
    m = np.linalg.solve(gram + lam * np.eye(gram.shape[0]), xc.T @ zc)
    return x_mean, m, z_mean


def _train_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    std = x.std(axis=0)
    return x.mean(axis=0), np.where(std > 0, std, 1.0)


def transfer_rows(
    a: str,
    b: str,
    feats: Mapping[str, tuple[np.ndarray, np.ndarray]],
    probes: Sequence[StoredProbe],
    y_test: np.ndarray,
    task: Task,
    *,
    m_images: int,
    ridge: float,
    seed: int,
    replicates: int = REPLICATES,
) -> list[dict[str, Any]]:
    """Rows for B's probes reading A's mapped test features; feats[e] = (train rows, test rows)."""
    a_train, a_test = feats[a]
    b_train, b_test = feats[b]
    mean_a, std_a = _train_stats(a_train)
    za_fit = (a_train[:m_images] - mean_a) / std_a
    rows = []
    weights = np.concatenate([c.T for c in resample_counts(len(y_test), replicates, seed)], axis=1).astype(np.int64)
    for probe in probes:
        x_mean, mapping, z_mean = ridge_map(za_fit, probe.standardise(b_train[:m_images]), ridge)
        mapped = ((a_test - mean_a) / std_a - x_mean) @ mapping + z_mean
        p_mapped = probe.predict(mapped, task)
        p_own = probe.predict(probe.standardise(b_test), task)
        own, moved = RunScorer(y_test, p_own, task), RunScorer(y_test, p_mapped, task)
        with np.errstate(invalid="ignore", divide="ignore"):
            replicates_ratio = moved.auroc(weights) / own.auroc(weights)
        ratios = replicates_ratio[np.isfinite(replicates_ratio)]
        auroc_b, auroc_mapped = macro_auroc(y_test, p_own, task), macro_auroc(y_test, p_mapped, task)
        rows.append(
            {
                "encoder_a": a,
                "encoder_b": b,
                "seed": probe.seed,
                "m_images": m_images,
                "auroc_b": auroc_b,
                "auroc_mapped": auroc_mapped,
                "retention": auroc_mapped / auroc_b,
                "lo": float(np.percentile(ratios, 2.5)) if len(ratios) else np.nan,
                "hi": float(np.percentile(ratios, 97.5)) if len(ratios) else np.nan,
                "ece_b": ece(y_test, p_own, task),
                "ece_mapped": ece(y_test, p_mapped, task),
                "n_test": len(y_test),
                "replicates": replicates_ratio,  # per test-image resample (NaN: AUROC undefined there)
            }
        )
    return rows


def labels_for(wh: Warehouse, imgs: inputs.DatasetImages, rows: np.ndarray) -> np.ndarray:
    from crsbench.analyses.common import label_matrix, labels_of

    task = Task.parse(imgs.task)
    matrix = label_matrix(wh, imgs.dataset_id, imgs.n_labels)
    return labels_of(matrix, list(imgs.image_ids[rows]), task, imgs.dataset_id)


def require_labels(wh: Warehouse, dataset_id: str) -> None:
    if not inputs.has_labels(wh, dataset_id):
        raise CrsbenchError(
            f"dataset {dataset_id!r} has no labels, so there is no probe to transfer; "
            f"agreement (mutual k-NN, CKA) still works without labels (leave out --transfer)"
        )


def dataset_transfer(
    wh: Warehouse,
    imgs: inputs.DatasetImages,
    sources: Sequence[inputs.FeatureSource],
    depth: float,
    params: Mapping[str, Any],
    pairs: Sequence[tuple[str, str]] | None = None,
    keep_replicates: bool = False,
) -> tuple[pd.DataFrame, list[str]]:
    """classifier_transfer rows of every ordered pair (A, B) whose B has stored probes (or `pairs`);
    `keep_replicates` adds column `replicates` (each row's retention per test-image resample)."""
    require_labels(wh, imgs.dataset_id)
    probes = stored_probes(wh, imgs.dataset_id, depth)
    by_key = {s.key: s for s in sources}
    chosen = list(pairs) if pairs is not None else list(itertools.permutations(by_key, 2))
    owners = sorted({b for _, b in chosen})
    lacking = [b for b in owners if b not in probes]
    target = len(wh.sql("select 1 from shift_pairs where target_id = ? limit 1", [imgs.dataset_id])) > 0
    if lacking and target and not probes:
        notes = [
            f"{imgs.dataset_id}: a shift target (probes are fitted on its source, not on it): no classifier transfer"
        ]
    elif lacking:
        notes = [
            f"{imgs.dataset_id}: no stored logreg probe at depth {depth} of {', '.join(lacking)}, so no transfer to "
            f"them: coefficients are kept by 'crsbench probe' (full labels) since schema 7; fits made before have none"
        ]
    else:
        notes = []
    chosen = [(a, b) for a, b in chosen if b in probes]
    train, test = imgs.rows("train"), imgs.rows("test")
    if not chosen or not len(train) or not len(test):
        return empty(), notes
    m_images = min(int(params["transfer_images"]), len(train))
    needed = sorted({e for pair in chosen for e in pair})
    feats = {
        e: (
            inputs.clean_features(by_key[e], depth, train).astype(np.float64),
            inputs.clean_features(by_key[e], depth, test).astype(np.float64),
        )
        for e in needed
    }
    y_test, task = labels_for(wh, imgs, test), Task.parse(imgs.task)
    rows = [
        row
        for a, b in chosen
        for row in transfer_rows(
            a,
            b,
            feats,
            probes[b],
            y_test,
            task,
            m_images=m_images,
            ridge=float(params["ridge"]),
            seed=int(params["seed"]),
        )
    ]
    frame = pd.DataFrame(rows).assign(dataset_id=imgs.dataset_id, depth=depth)
    return frame[[*COLUMNS, *(["replicates"] if keep_replicates else [])]], notes
