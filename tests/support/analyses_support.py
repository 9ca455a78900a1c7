"""Builders for hand-made warehouses used by the analysis tests."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from crsbench.probes.metrics import METRICS
from crsbench.probes.records import runs_schema
from crsbench.warehouse.connection import Warehouse

_ids = itertools.count()


def add_encoder(
    wh: Warehouse, encoder_id: str, scope: str = "general", domain: str = "none", family: str | None = None
) -> None:
    wh.con.execute(
        "insert into encoders (encoder_id, family, scope, domain, pretrained) values (?, ?, ?, ?, false)",
        [encoder_id, family or encoder_id, scope, domain],
    )


def add_dataset(wh: Warehouse, dataset_id: str, task: str, n_labels: int, domain: str | None = None) -> None:
    wh.con.execute(
        "insert into datasets (dataset_id, task, label_names, domain) values (?, ?, ?, ?)",
        [dataset_id, task, [f"l{i}" for i in range(n_labels)], domain],
    )


def add_labels(wh: Warehouse, dataset_id: str, image_ids: list[str], y: np.ndarray, n_labels: int) -> None:
    """Write labels in the warehouse's long one-hot form."""
    matrix = y if y.ndim == 2 else np.eye(n_labels, dtype=int)[y]
    rows = pd.DataFrame(
        [(dataset_id, img, j, int(matrix[i, j])) for i, img in enumerate(image_ids) for j in range(n_labels)],
        columns=["dataset_id", "image_id", "label_idx", "value"],
    )
    wh.con.register("new_labels", rows)
    wh.con.execute("insert into labels select dataset_id, image_id, label_idx, value from new_labels")
    wh.con.unregister("new_labels")


def run_row(
    encoder_id: str,
    dataset_id: str,
    *,
    condition: str = "clean",
    auroc: float = np.nan,
    ece: float = np.nan,
    seed: int = 0,
    depth: float = 1.0,
    fraction: float = 1.0,
    probe: str = "logreg",
    eval_dataset_id: str | None = None,
    fit_id: str | None = None,
    **metrics: float,
) -> dict:
    """One run record with every run-record column (unspecified metrics NaN)."""
    fit_id = fit_id or f"{encoder_id}|{dataset_id}|{probe}|{depth}|{fraction}|{seed}"
    row = {name: None for name in runs_schema().names}
    row.update(
        run_id=f"run{next(_ids)}",
        fit_id=fit_id,
        encoder_id=encoder_id,
        dataset_id=dataset_id,
        eval_dataset_id=eval_dataset_id or dataset_id,
        regime="frozen",
        probe=probe,
        depth=depth,
        label_fraction=fraction,
        seed=seed,
        condition=condition,
        auroc=auroc,
        ece=ece,
        n_train=10,
        n_test=10,
        fit_seconds=0.1,
        pretrained=False,
        code_version="test",
        created_at=datetime.now(UTC),
    )
    for name in METRICS.names():
        if name not in ("auroc", "ece"):  # those two are arguments
            row[name] = metrics.pop(name, np.nan)
    if metrics:
        raise TypeError(f"unknown metrics {sorted(metrics)}")
    return row


def append(wh: Warehouse, rows: Iterable[dict], predictions: pd.DataFrame | None = None) -> None:
    wh.append_runs(pd.DataFrame(list(rows)), predictions)


def prediction_rows(run: dict, image_ids: list[str], probs: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": run["run_id"],
            "fit_id": run["fit_id"],
            "eval_dataset_id": run["eval_dataset_id"],
            "condition": run["condition"],
            "row_index": np.arange(len(image_ids), dtype=np.int32),
            "image_id": image_ids,
            "probs": [np.asarray(r, dtype=np.float32) for r in probs],
        }
    )


FRACTIONS = (0.01, 0.05, 0.1, 0.25, 1.0)


def complete_cell(
    encoder_id: str,
    dataset_id: str,
    auroc: float,
    k: int,
    *,
    shift_target: str | None = None,
    shift_auroc: float | None = None,
) -> list[dict]:
    """Runs giving a cell all four axes: seed-mean clean AUROC = `auroc` (seeds 0/1 at +-0.01);
    calibration, label efficiency and robustness vary with `k` so panel anchors are not degenerate."""
    rows = []
    for seed, jitter in ((0, 0.01), (1, -0.01)):
        for f in FRACTIONS:
            rows.append(
                run_row(
                    encoder_id,
                    dataset_id,
                    fraction=f,
                    seed=seed,
                    auroc=auroc + jitter - (0.05 + 0.01 * k) * (1 - f),
                    ece=0.02 + 0.01 * k,
                )
            )
        rows.append(
            run_row(
                encoder_id,
                dataset_id,
                condition="jpeg-s1",
                seed=seed,
                auroc=auroc + jitter - (0.02 + 0.005 * k),
                ece=0.05 + 0.01 * k,
            )
        )
        if shift_target is not None:
            rows.append(
                run_row(
                    encoder_id,
                    dataset_id,
                    condition="shift",
                    eval_dataset_id=shift_target,
                    seed=seed,
                    auroc=shift_auroc + jitter,
                    ece=0.1,
                )
            )
    return rows


def add_predicted_derm_fit(wh: Warehouse, rng: np.random.Generator) -> None:
    """One fit ('zz-fit' of encoder 'zz' on 'derm', 8 classes) with 60 calib and 60 test predictions,
    right 70 % of the time, and the labels of those images (what E2's recalibration needs)."""
    runs, preds = [], []
    for condition in ("calib", "clean"):
        ids = [f"x-{condition}-{i}" for i in range(60)]
        y = np.arange(60) % 8
        p = np.full((60, 8), 0.02)
        p[np.arange(60), np.where(rng.random(60) < 0.7, y, (y + 1) % 8)] = 0.86
        add_labels(wh, "derm", ids, y, 8)
        run = run_row("zz", "derm", condition=condition, fit_id="zz-fit", auroc=0.8, ece=0.1)
        runs.append(run)
        preds.append(prediction_rows(run, ids, p))
    append(wh, runs, pd.concat(preds, ignore_index=True))
