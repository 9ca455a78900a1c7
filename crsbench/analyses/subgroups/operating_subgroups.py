"""Sensitivity and specificity per metadata subgroup at each operating point (METHODS.md §16.3).

For the clean and shift runs `operating_points` scores, every rule's calls (the threshold chosen
on calib, or the user's fixed one) are split by the values of the eval dataset's image_metadata
keys: one row per (run, rule, class or label, key, value). Images without a value for a key are
left out of that key's groups. Stored as the analysis's part `subgroups`
(table analysis_operating_points_subgroups).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.subgroups.thresholds import rates
from crsbench.warehouse.connection import Warehouse

SUBGROUP_CONDITIONS = ("clean", "shift")
GROUP_COLUMNS = ["key", "value", "n_images", "n_positive", "sensitivity", "specificity"]


def metadata_by_row(wh: Warehouse, dataset: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
    """key -> value per row_index of `dataset` (None where an image has no value); only keys it has."""
    frame = wh.sql(
        "select m.key, i.row_index, m.value from image_metadata m join images i "
        "on i.dataset_id = m.dataset_id and i.image_id = m.image_id "
        "where m.dataset_id = ? and (? or list_contains(?, m.key))",
        [dataset, not keys, list(keys)],
    )
    n_rows = wh.con.execute("select coalesce(max(row_index), -1) + 1 from images where dataset_id = ?", [dataset])
    size = int((n_rows.fetchone() or (0,))[0])
    out: dict[str, np.ndarray] = {}
    for key, group in frame.groupby("key", sort=True):
        values = np.full(size, None, dtype=object)
        values[group["row_index"].to_numpy(np.int64)] = group["value"].astype(str).to_numpy()
        out[str(key)] = values
    return out


def group_rows(
    base: dict[str, Any], groups: dict[str, np.ndarray], rows: np.ndarray, positive: np.ndarray, called: np.ndarray
) -> list[dict[str, Any]]:
    """One row per (key, value) of the evaluated images `rows` (row indices): sensitivity, specificity."""
    out = []
    for key, by_row in groups.items():
        values = by_row[rows]
        for value in sorted({v for v in values if v is not None}):
            mask = values == value
            r = rates(positive[mask], called[mask])
            out.append(
                {
                    **base,
                    "key": key,
                    "value": value,
                    "n_images": int(mask.sum()),
                    "n_positive": int(positive[mask].sum()),
                    "sensitivity": r["sensitivity"],
                    "specificity": r["specificity"],
                }
            )
    return out


def fixed_lines(frame: pd.DataFrame, limit: int = 20) -> list[str]:
    """Seed means at the fixed threshold on the clean test split, one line per (encoder, dataset,
    class or label, key): each group's sensitivity and specificity."""
    fixed = frame[(frame["rule"] == "fixed") & (frame["condition"] == "clean")]
    if fixed.empty:
        return []
    means = fixed.groupby(["encoder_id", "eval_dataset_id", "label", "threshold", "key", "value"], sort=True)[
        ["sensitivity", "specificity"]
    ].mean()
    lines = []
    for (encoder, dataset, label, threshold, key), group in means.groupby(level=[0, 1, 2, 3, 4], sort=True):
        cells = "; ".join(
            f"{idx[-1]} sens {row.sensitivity:.3f} spec {row.specificity:.3f}" for idx, row in group.iterrows()
        )
        lines.append(f"{encoder} on {dataset}, {label} at p >= {threshold:g}, by {key}: {cells}")
    return lines[:limit] + (
        [f"... {len(lines) - limit} more in analysis_operating_points_subgroups"] if len(lines) > limit else []
    )
