"""The full grid's AUROC under the image-level bootstrap: the intervals of the pre-screen's trust
(METHODS.md §21.5).

For one dataset, the test images are drawn as the CRS bootstrap draws them (`uncertainty.resample`:
stratified by class, grouped by patient), and every encoder's full-label logreg runs on the clean
test split, at every depth, are rescored from their stored predictions under each draw
(`probes.weighted_metrics.RunScorer`, no refit) and averaged over seeds. Replicate 0 is every
image once: the grid's own seed-mean AUROC.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from crsbench.analyses.common import load_predictions
from crsbench.analyses.screening.columns import REPLICATE_COLUMNS
from crsbench.analyses.uncertainty.resample import draw_images, eval_images
from crsbench.core import PRIMARY_PROBE, CrsbenchError, EncoderKey
from crsbench.probes.weighted_metrics import RunScorer
from crsbench.warehouse.connection import Warehouse

# The grid's full-label clean runs of the primary probe, at every depth, trained and scored on one dataset.
_RUNS_SQL = """
    select run_id, encoder_id, regime, depth, seed
    from runs_grid
    where in_grid and probe = ? and dataset_id = ? and eval_dataset_id = dataset_id
      and condition = 'clean' and label_fraction = 1.0
    order by encoder_id, regime, depth, seed
"""


def grid_runs(wh: Warehouse, dataset_id: str, encoders: list[str]) -> pd.DataFrame:
    """The runs of `encoders` (keys: id or id@regime) replicates are computed from, numbered by `key`."""
    runs = wh.sql(_RUNS_SQL, [PRIMARY_PROBE, dataset_id])
    runs["encoder_key"] = [
        str(EncoderKey(str(e), str(r))) for e, r in zip(runs["encoder_id"], runs["regime"], strict=True)
    ]
    runs = runs[runs["encoder_key"].isin(encoders)].reset_index(drop=True)
    runs.insert(0, "key", np.arange(len(runs), dtype=np.int64))
    return runs


def grid_auroc(
    wh: Warehouse, dataset_id: str, encoders: list[str], replicates: int, params: Mapping[str, Any], notes: list[str]
) -> pd.DataFrame:
    """Rows (dataset_id, encoder_id, depth, replicate, auroc) for replicates 0..R; none (with a note)
    when the grid has no such runs yet or the test split cannot be resampled."""
    runs = grid_runs(wh, dataset_id, encoders)
    if runs.empty:
        return pd.DataFrame(columns=list(REPLICATE_COLUMNS))
    test = eval_images(wh, dataset_id)
    try:
        weights = draw_images(test, replicates, np.random.default_rng(int(params["seed"])))
    except CrsbenchError as exc:
        notes.append(f"{dataset_id}: no trust intervals: {exc}")
        weights = np.ones((len(test.row_index), 1), dtype=np.int16)
    predictions = load_predictions(wh, runs)
    per_run = {
        key: _run_auroc(test.row_index, test.labels, test.task, rows, probs, weights)
        for key, (rows, probs) in predictions.items()
    }
    runs = runs[runs["key"].isin(per_run)]
    out = []
    for (encoder, depth), group in runs.groupby(["encoder_key", "depth"], sort=True):
        mean = np.mean(np.stack([per_run[k] for k in group["key"]]), axis=0)
        out.append(
            pd.DataFrame(
                {
                    "dataset_id": dataset_id,
                    "encoder_id": encoder,
                    "depth": float(depth),
                    "replicate": np.arange(len(mean), dtype=np.int64),
                    "auroc": mean,
                }
            )
        )
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=list(REPLICATE_COLUMNS))


def _run_auroc(
    test_rows: np.ndarray, labels: np.ndarray, task: Any, rows: np.ndarray, probs: np.ndarray, weights: np.ndarray
) -> np.ndarray:
    """One run's macro AUROC per replicate, its predictions aligned to the test images."""
    position = np.searchsorted(test_rows, rows)
    if len(rows) != len(test_rows) or not np.array_equal(test_rows[np.minimum(position, len(test_rows) - 1)], rows):
        raise CrsbenchError("stored predictions do not cover the test split; re-run crsbench probe")
    order = np.argsort(position)
    return RunScorer(labels, probs[order], task).auroc(weights)
