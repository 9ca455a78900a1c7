"""Reading what the analyses need from the warehouse: run records, seed means, labels, predictions.

Encoder analyses follow the convention of METHODS.md §6: primary probe (`logreg`), frozen regime,
and every metric is averaged over seeds first; differences and ratios are taken
between those seed means.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from crsbench.analyses.validity.criterion import registered
from crsbench.core import FROZEN, PRIMARY_PROBE, CrsbenchError
from crsbench.ingest.types import Task
from crsbench.probes.metrics import METRICS
from crsbench.warehouse.connection import Warehouse

__all__ = [
    "datasets_frame",
    "encoders_frame",
    "fit_predictions",
    "label_matrix",
    "labels_of",
    "load_runs",
    "metric_names",
    "same_value",
    "seed_metrics",
]


def metric_names() -> tuple[str, ...]:
    """The run-record metric columns: every metric registered so far (`probes.metrics.METRICS`)."""
    return tuple(METRICS.names())


def same_value(values: pd.Series, target: float) -> pd.Series:
    """Float equality that tolerates 0.1 stored as 0.1000000001 (depths, fractions)."""
    return pd.Series(np.isclose(values.to_numpy(dtype=float), target), index=values.index)


def load_runs(
    wh: Warehouse,
    *,
    probe: str = PRIMARY_PROBE,
    regime: str = FROZEN,
    depth: float | None = None,
    fraction: float | None = None,
) -> pd.DataFrame:
    """Run records (one row per seed) of one probe and regime, optionally at one depth / fraction."""
    runs = wh.sql(
        "select encoder_id, dataset_id, eval_dataset_id, fit_id, run_id, depth, label_fraction, "
        "seed, condition from runs_grid where in_grid and probe = ? and regime = ?",
        [probe, regime],
    )
    return _at(runs, depth, fraction)


def seed_metrics(
    wh: Warehouse,
    metrics: Sequence[str] = ("auroc", "ece"),
    *,
    probe: str = PRIMARY_PROBE,
    regime: str = FROZEN,
    depth: float | None = None,
    fraction: float | None = None,
    conditions: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Seed means from the `metrics_seed` view (the one seed aggregation), metric columns unsuffixed.

    One row per (encoder, dataset, eval dataset, depth, label fraction, condition) with `n_seeds`.
    """
    unknown = [m for m in metrics if m not in metric_names()]
    if unknown:
        raise ValueError(f"unknown run metric(s) {unknown}")
    means = ", ".join(f"{m}_mean as {m}" for m in metrics)
    frame = wh.sql(
        "select encoder_id, dataset_id, eval_dataset_id, depth, label_fraction, condition, n_seeds, "
        f"{means} from metrics_seed where probe = ? and regime = ? "
        "order by encoder_id, dataset_id, eval_dataset_id, depth, label_fraction, condition",
        [probe, regime],
    )
    frame = _at(frame, depth, fraction)
    if conditions is not None:
        frame = frame[frame["condition"].isin(list(conditions))]
    return frame.reset_index(drop=True)


def _at(frame: pd.DataFrame, depth: float | None, fraction: float | None) -> pd.DataFrame:
    if depth is not None:
        frame = frame[same_value(frame["depth"], depth)]
    if fraction is not None:
        frame = frame[same_value(frame["label_fraction"], fraction)]
    return frame.reset_index(drop=True)


def encoders_frame(wh: Warehouse) -> pd.DataFrame:
    return wh.sql("select encoder_id, family, scope, domain, pretrained from encoders order by encoder_id")


def datasets_frame(wh: Warehouse) -> pd.DataFrame:
    return wh.sql("select dataset_id, task, label_names, domain from datasets order by dataset_id")


def dataset_task(wh: Warehouse, dataset_id: str) -> tuple[Task, int]:
    """The task kind and number of classes/labels of a dataset."""
    row = wh.con.execute("select task, len(label_names) from datasets where dataset_id = ?", [dataset_id]).fetchone()
    if row is None:
        raise CrsbenchError(f"dataset {dataset_id!r} is not in the warehouse")
    return Task.parse(row[0]), int(row[1])


def label_matrix(wh: Warehouse, dataset_id: str, n_labels: int) -> pd.DataFrame:
    """All labels of a dataset as a 0/1 frame: one row per image_id, one column per label index."""
    long = wh.sql("select image_id, label_idx, value from labels where dataset_id = ?", [dataset_id])
    return long.pivot_table(index="image_id", columns="label_idx", values="value", aggfunc="max", fill_value=0).reindex(
        columns=range(n_labels), fill_value=0
    )


def labels_of(matrix: pd.DataFrame, image_ids: Sequence[str], task: Task, dataset_id: str) -> np.ndarray:
    """Labels of `image_ids` in that order: class index (n,) or 0/1 matrix (n, L) for multilabel."""
    missing = pd.Index(image_ids).difference(matrix.index)
    if len(missing):
        raise CrsbenchError(f"dataset {dataset_id}: no labels for image {missing[0]!r} (and {len(missing) - 1} more)")
    values: np.ndarray = matrix.loc[list(image_ids)].to_numpy(dtype=np.int64)
    if task is Task.MULTILABEL:
        return values
    if not np.all(values.sum(axis=1) == 1):
        raise CrsbenchError(f"dataset {dataset_id}: a {task} label row is not one-hot")
    indices: np.ndarray = values.argmax(axis=1)
    return indices


def fit_predictions(wh: Warehouse, fit_id: str) -> dict[tuple[str, str], tuple[list[str], np.ndarray]]:
    """Stored predictions of one fit: (condition, eval_dataset_id) -> (image_ids, probs (n, K))."""
    table = wh.con.sql(
        "select condition, eval_dataset_id, image_id, probs from predictions "
        "where fit_id = ? order by condition, eval_dataset_id, row_index",
        params=[fit_id],
    ).to_arrow_table()
    frame = table.select(["condition", "eval_dataset_id", "image_id"]).to_pandas()
    probs_col = table.column("probs").combine_chunks()
    width = probs_col.value_lengths().to_numpy()
    out: dict[tuple[str, str], tuple[list[str], np.ndarray]] = {}
    if len(frame) == 0:
        return out
    if not np.all(width == width[0]):
        raise CrsbenchError(f"fit {fit_id}: prediction rows have different numbers of probabilities")
    flat = probs_col.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
    probs = flat.reshape(len(frame), int(width[0]))
    for (condition, eval_id), rows in frame.groupby(["condition", "eval_dataset_id"], sort=True).indices.items():
        out[(condition, eval_id)] = (frame["image_id"].iloc[rows].tolist(), probs[rows])
    return out


PREDICTIONS_SQL = """
    select k.key, p.row_index, p.probs
    from predictions p
    join {keys} k on k.run_id = p.run_id
    order by k.key, p.row_index
"""


def load_predictions(wh: Warehouse, runs: pd.DataFrame) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """key -> (row_index, probs (n, K) float64) for the given runs."""
    with registered(wh, {"keys": runs[["key", "run_id"]]}) as names:
        table = wh.con.sql(PREDICTIONS_SQL.format(keys=names["keys"])).to_arrow_table()
    out: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    if table.num_rows == 0:
        return out
    keys = table.column("key").to_numpy()
    rows = table.column("row_index").to_numpy()
    probs_col = table.column("probs").combine_chunks()
    flat = probs_col.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
    widths = probs_col.value_lengths().to_numpy()
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], len(keys)]
    offsets = np.r_[0, np.cumsum(widths)]
    for a, b in zip(starts, ends, strict=True):
        width = int(widths[a])
        if not np.all(widths[a:b] == width):
            raise CrsbenchError(f"run key {int(keys[a])}: prediction rows differ in length")
        out[int(keys[a])] = (rows[a:b], flat[offsets[a] : offsets[b]].reshape(b - a, width))
    return out


def label_targets(wh: Warehouse, dataset: str) -> tuple[Task, list[str], np.ndarray, np.ndarray]:
    """(task, label names, 0/1 matrix (n_images, K) by row_index, split per row_index)."""
    row = wh.con.execute("select task, label_names from datasets where dataset_id = ?", [dataset]).fetchone()
    if row is None:
        raise CrsbenchError(f"dataset {dataset!r} is not in the warehouse")
    task, names = row
    images = wh.sql("select row_index, split from images where dataset_id = ? order by row_index", [dataset])
    long = wh.sql(
        "select i.row_index, l.label_idx from labels l join images i on i.dataset_id = l.dataset_id "
        "and i.image_id = l.image_id where l.dataset_id = ? and l.value = 1",
        [dataset],
    )
    matrix = np.zeros((int(images["row_index"].max()) + 1, len(names)), dtype=bool)
    matrix[long["row_index"].to_numpy(), long["label_idx"].to_numpy()] = True
    return Task(task), list(names), matrix, images["split"].to_numpy()
