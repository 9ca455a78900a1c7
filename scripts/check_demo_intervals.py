"""Check a warehouse's image-level bootstrap against an independent one (issue: honest uncertainty).

For every (encoder, dataset) cell of the panel, the stored clean full-label predictions of
the primary probe are resampled here with numpy and scored with scikit-learn: test images
drawn with replacement by patient group (the image itself where a dataset has none) within
class strata, R replicates, 95 % percentile interval of the macro AUROC. That interval is
compared with the `discrimination` row of `bootstrap_intervals` (resample images+seeds), whose
seed resampling does not move the 100 % fit. Prints the largest deviation of either end.

    .venv/bin/python scripts/check_demo_intervals.py --db demo-out/crsbench.duckdb --panel ref2026
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score

from crsbench.warehouse.connection import Warehouse


def strata_of_units(labels: np.ndarray, unit: np.ndarray, multilabel: bool) -> np.ndarray:
    """A unit's stratum: the rarest class it holds (held by the fewest units, ties to the lowest
    index), or (multilabel) its lowest-index positive label, 'none' apart; strata of fewer than 2
    units are pooled."""
    n_units = unit.max() + 1
    onehot = labels if multilabel else np.eye(labels.max() + 1, dtype=int)[labels]
    per_unit = np.zeros((n_units, onehot.shape[1]), dtype=int)
    np.add.at(per_unit, unit, onehot)
    if multilabel:
        stratum = np.where(per_unit.any(axis=1), np.argmax(per_unit > 0, axis=1), onehot.shape[1])
    else:
        held_by = (per_unit > 0).sum(axis=0)
        stratum = np.array([min(np.flatnonzero(row), key=lambda k: (held_by[k], k)) for row in per_unit])
    counts = np.bincount(stratum)
    rare = counts[stratum] < 2
    if rare.sum() >= 2:
        return np.where(rare, onehot.shape[1] + 1, stratum)
    return np.where(rare, counts.argmax(), stratum)


def macro_auroc(y: np.ndarray, p: np.ndarray, multilabel: bool) -> float:
    target = y if multilabel else np.eye(p.shape[1], dtype=int)[y]
    scores = [roc_auc_score(target[:, k], p[:, k]) for k in range(p.shape[1]) if 0 < target[:, k].sum() < len(y)]
    return float(np.mean(scores))


def independent_interval(y, p, unit, multilabel, replicates, rng) -> tuple[float, float]:
    stratum = strata_of_units(y, unit, multilabel)
    members = [np.flatnonzero(unit == u) for u in range(unit.max() + 1)]
    by_stratum = [np.flatnonzero(stratum == s) for s in np.unique(stratum)]
    values = []
    for _ in range(replicates):
        units = np.concatenate([rng.choice(g, size=len(g), replace=True) for g in by_stratum])
        idx = np.concatenate([members[u] for u in units])
        values.append(macro_auroc(y[idx], p[idx], multilabel))
    lo, hi = np.percentile(values, [2.5, 97.5])
    return float(lo), float(hi)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--panel", required=True)
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--tolerance", type=float, default=0.01)
    args = ap.parse_args(argv)
    with Warehouse.open(args.db, read_only=True) as wh:  # resolves the file's relative part paths
        return _check(wh.con, args)


def _check(con, args) -> int:
    got = con.execute(
        "select encoder_id, dataset_id, lo, hi from bootstrap_intervals where panel = ? "
        "and resample = 'images+seeds' and metric = 'discrimination' and dataset_id is not null",
        [args.panel],
    ).df()
    if got.empty:
        print(f"{args.db}: no image-level discrimination intervals for panel {args.panel!r}", file=sys.stderr)
        return 1
    rng = np.random.default_rng(0)
    rows = []
    for cell in got.itertuples():
        task, names = con.execute(
            "select task, label_names from datasets where dataset_id = ?", [cell.dataset_id]
        ).fetchone()
        images = con.execute(
            "select row_index, image_id, coalesce(group_id, image_id) as grp from images "
            "where dataset_id = ? and split = 'test' order by row_index",
            [cell.dataset_id],
        ).df()
        labels = con.execute(
            "select image_id, label_idx from labels where dataset_id = ? and value = 1", [cell.dataset_id]
        ).df()
        onehot = np.zeros((len(images), len(names)), dtype=int)
        pos = pd.Series(np.arange(len(images)), index=images["image_id"])
        labels = labels[labels["image_id"].isin(pos.index)]
        onehot[pos.loc[labels["image_id"]].to_numpy(), labels["label_idx"].to_numpy()] = 1
        multilabel = task == "multilabel"
        y = onehot if multilabel else onehot.argmax(axis=1)
        stored = con.execute(
            "select p.row_index, p.probs from predictions p join runs r using (run_id) "
            "where r.encoder_id = ? and r.dataset_id = ? and r.eval_dataset_id = r.dataset_id "
            "and r.condition = 'clean' and r.label_fraction = 1.0 and r.probe = 'logreg' and r.depth = 1.0 "
            "and r.regime = 'frozen' order by r.seed, p.row_index",
            [cell.encoder_id, cell.dataset_id],
        ).df()
        stored = stored.iloc[: len(images)]
        if stored["row_index"].tolist() != images["row_index"].tolist():
            print(f"{cell.encoder_id} x {cell.dataset_id}: predictions do not cover the test split", file=sys.stderr)
            return 1
        p = np.vstack(stored["probs"].to_numpy()).astype(np.float64)
        unit = pd.factorize(images["grp"])[0]
        lo, hi = independent_interval(y, p, unit, multilabel, args.replicates, rng)
        rows.append((cell.encoder_id, cell.dataset_id, cell.lo, lo, cell.hi, hi))
    table = pd.DataFrame(rows, columns=["encoder_id", "dataset_id", "lo", "lo_independent", "hi", "hi_independent"])
    table["max_dev"] = np.maximum((table.lo - table.lo_independent).abs(), (table.hi - table.hi_independent).abs())
    pd.set_option("display.width", 160)
    print(table.round(4).to_string(index=False))
    worst = table["max_dev"].max()
    ok = worst <= args.tolerance
    print(
        f"{len(table)} cells, {args.replicates} independent replicates each: largest deviation of an interval end "
        f"{worst:.4f} (tolerance {args.tolerance}): {'OK' if ok else 'FAILED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
