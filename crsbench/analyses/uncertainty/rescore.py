"""Run metrics under the image draws of the bootstrap, recomputed from the stored predictions.

No probe is refitted: each replicate weights the stored test predictions of every run the CRS
reads (primary probe, full depth, frozen regime: clean at every label fraction, each perturbed
condition and shift target at 100 %) and scores them with `probes.weighted_metrics`, the run
metrics under integer case weights. Runs whose predictions are identical (a deterministic probe
fitted on all labels gives the same predictions for every seed) are scored once.
"""

from __future__ import annotations

import hashlib
import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from crsbench.analyses.common import load_predictions
from crsbench.analyses.uncertainty.resample import EvalImages
from crsbench.core import FROZEN, PRIMARY_PROBE, CrsbenchError
from crsbench.probes.weighted_metrics import RunScorer
from crsbench.warehouse.connection import Warehouse

# The runs of the declared grid (runs_grid.in_grid) crs_axes_cell reads, of the cells axes_cell
# counts complete (every fraction, seed and condition of the grid): one row per run, numbered `key`.
_RUNS_SQL = """
    select r.run_id, r.encoder_id, r.dataset_id, r.eval_dataset_id, r.regime, r.probe, r.depth,
           r.label_fraction, r.seed, r.condition, r.auroc, r.ece, r.pretrained
    from runs_grid r
    join axes_cell c on c.encoder_id = r.encoder_id and c.dataset_id = r.dataset_id
         and c.regime = r.regime and c.complete
    where r.in_grid and r.probe = ? and r.depth = 1.0 and r.regime = ? and list_contains(?, r.encoder_id)
      and r.condition <> 'calib'
      and (r.condition = 'clean' and r.eval_dataset_id = r.dataset_id or r.label_fraction = 1.0)
    order by r.encoder_id, r.dataset_id, r.eval_dataset_id, r.condition, r.label_fraction, r.seed
"""


def scored_runs(wh: Warehouse, members: Sequence[str]) -> pd.DataFrame:
    """The runs the CRS of `members` reads, numbered by `key`."""
    runs = wh.sql(_RUNS_SQL, [PRIMARY_PROBE, FROZEN, list(members)])
    runs.insert(0, "key", np.arange(len(runs), dtype=np.int64))
    return runs


def _needs_ece(runs: pd.DataFrame) -> np.ndarray:
    # Only the full-label clean ECE reaches an axis (calibration).
    needs: np.ndarray = (
        (runs["condition"] == "clean")
        & (runs["eval_dataset_id"] == runs["dataset_id"])
        & np.isclose(runs["label_fraction"].to_numpy(float), 1.0)
    ).to_numpy()
    return needs


def missing_cells(runs: pd.DataFrame, have: set[int]) -> list[str]:
    """One line per (encoder, dataset) cell with runs that have no stored predictions."""
    lacking = runs[~runs["key"].isin(list(have))]
    lines = []
    for (encoder, dataset), group in lacking.groupby(["encoder_id", "dataset_id"], sort=True):
        first = group.iloc[0]
        lines.append(
            f"{dataset} x {encoder}: {len(group)} runs without stored predictions "
            f"(e.g. {first.condition}, fraction {first.label_fraction:g}, seed {first.seed})"
        )
    return lines


def rescore(
    wh: Warehouse,
    runs: pd.DataFrame,
    tests: Mapping[str, EvalImages],
    weights: Mapping[str, np.ndarray],
    workers: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(auroc, ece), each (n_runs, R + 1): run `key` scored under each eval dataset's weight
    columns (column 0 = every image once). ECE is NaN where no axis reads it. Predictions are
    read one eval dataset at a time, so memory holds one dataset's predictions, not all."""
    width = next(iter(weights.values())).shape[1]
    auroc = np.full((len(runs), width), np.nan)
    ece = np.full((len(runs), width), np.nan)
    needs_ece = _needs_ece(runs)
    gaps: list[str] = []
    for eval_id, group in runs.groupby("eval_dataset_id", sort=True):
        predictions = load_predictions(wh, group)
        gaps += missing_cells(group, set(predictions))
        if gaps:
            continue
        _score_eval_set(eval_id, group, predictions, tests[eval_id], weights[eval_id], needs_ece, auroc, ece, workers)
    if gaps:
        raise CrsbenchError(
            "bootstrap: predictions missing for "
            + "; ".join(sorted(set(gaps)))
            + " (rerun 'crsbench probe' for these cells, or use --resample seeds)"
        )
    ece[~needs_ece] = np.nan
    return auroc, ece


def _score_eval_set(
    eval_id: str,
    runs: pd.DataFrame,
    predictions: Mapping[int, tuple[np.ndarray, np.ndarray]],
    test: EvalImages,
    weights: np.ndarray,
    needs_ece: np.ndarray,
    auroc: np.ndarray,
    ece: np.ndarray,
    workers: int | None,
) -> None:
    # Identical predictions score identically: one job per distinct prediction set.
    jobs: dict[bytes, list[int]] = defaultdict(list)
    for run in runs.itertuples():
        rows, probs = predictions[int(run.key)]
        if len(rows) != len(test.row_index) or not np.array_equal(rows, test.row_index):
            raise CrsbenchError(
                f"bootstrap: run {run.run_id} ({run.dataset_id} x {run.encoder_id}, {run.condition}) "
                f"has predictions for {len(rows)} rows, not the {len(test.row_index)} test images of "
                f"{eval_id}"
            )
        jobs[hashlib.blake2b(probs.tobytes(), digest_size=16).digest()].append(int(run.key))

    def score(keys: list[int]) -> None:
        want_ece = bool(needs_ece[keys].any())
        scorer = RunScorer(test.labels, predictions[keys[0]][1], test.task, ece=want_ece)
        auroc[keys] = scorer.auroc(weights)
        if want_ece:
            ece[keys] = scorer.ece(weights)

    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        list(pool.map(score, jobs.values()))
