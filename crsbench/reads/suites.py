"""Corruption suites as users read them (METHODS.md §25): each suite's robustness view, titled as its
registry entry says ("robustness (MedMNIST-C, derm)"), and one plain sentence per suite and dataset."""

from __future__ import annotations

import pandas as pd

from crsbench.warehouse.connection import Warehouse

COLUMNS = ["suite", "dataset_id", "encoder_id", "regime", "robustness", "paper_robustness", "n_conditions",
           "n_declared", "complete", "rank", "pretrained"]  # fmt: skip


def suite_robustness(wh: Warehouse) -> pd.DataFrame:
    """View suite_robustness, ranked per (suite, dataset, regime), with each suite's `title`
    (empty before any dataset's grid declares a suite)."""
    frame = wh.sql(f"select {', '.join(COLUMNS)} from suite_robustness order by suite, dataset_id, regime, rank")
    if frame.empty:
        return frame.assign(title=pd.Series(dtype=str))
    from crsbench.features.suites import SUITES

    titles = {name: SUITES.get(name).title if name in SUITES else f"robustness ({name})" for name in frame["suite"]}
    return frame.assign(title=frame["suite"].map(titles))


def suite_verdicts(frame: pd.DataFrame) -> list[str]:
    """Per suite and dataset: who is most robust to it, against the paper's robustness axis, and what
    is still owed."""
    lines = []
    for (title, dataset, regime), rows in frame.groupby(["title", "dataset_id", "regime"], sort=True):
        where = dataset if regime == "frozen" else f"{dataset} ({regime})"
        done = rows[rows["complete"]].sort_values(["rank", "encoder_id"])
        owed = rows[~rows["complete"]]["encoder_id"].tolist()
        if done.empty:
            lines.append(f"{title}, {where}: no encoder holds every condition yet ({', '.join(owed)}).")
            continue
        best = done.iloc[0]
        line = f"{title}, {where}: {best['encoder_id']} is the most robust ({best['robustness']:.3f}"
        if pd.notna(best["paper_robustness"]):
            line += f"; the paper's robustness axis {best['paper_robustness']:.3f}"
        line += ")"
        others = [f"{r.encoder_id} {r.robustness:.3f}" for r in done.iloc[1:].itertuples()]
        if others:
            line += f"; then {', '.join(others)}"
        if owed:
            line += f"; not yet complete: {', '.join(owed)}"
        lines.append(line + ".")
    return lines
