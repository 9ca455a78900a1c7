"""The cost axis as the leaderboard and the report read it: each encoder's measured cost beside
its CRS (view encoder_cost; crsbench.features.cost measures it), shown as text ("not measured",
never zero, for sets extracted before cost was measured), and the Pareto front of CRS against cost."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from crsbench.core import NOT_MEASURED
from crsbench.warehouse.connection import Warehouse

# The board's cost columns (from view encoder_cost), in order.
COST_COLUMNS = [
    "gflops_per_image",
    "images_per_s",
    "params",
    "peak_memory_bytes",
    "stored_bytes_per_image",
    "cost_device",
    "cost_dtype",
]


def encoder_costs(wh: Warehouse, regime: str = "frozen") -> pd.DataFrame:
    """One row per encoder of `regime` with a measured cost: encoder_id and COST_COLUMNS. An encoder
    measured on several devices keeps the device most of its sets were measured on (ties: by name)."""
    rows = wh.sql(
        f"select encoder_id, {', '.join(COST_COLUMNS)} from encoder_cost "
        "where regime = ? and cost_device is not null order by encoder_id, n_sets desc, cost_device, cost_dtype",
        [regime],
    )
    return rows.drop_duplicates("encoder_id", keep="first").reset_index(drop=True)


def with_cost(wh: Warehouse, board: pd.DataFrame) -> pd.DataFrame:
    """The board with COST_COLUMNS (NaN/None where the encoder's cost was not measured)."""
    return board.merge(encoder_costs(wh), on="encoder_id", how="left")


def cost_text(value: object, scale: float = 1.0, digits: int = 3) -> str:
    """A cost value as shown: `value / scale` to `digits` significant digits; "not measured" when
    missing (a measured cost is never shown for an unmeasured one, and never as zero)."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return NOT_MEASURED
    if isinstance(value, str):
        return value
    return f"{float(value) / scale:.{digits}g}"  # type: ignore[arg-type]


def pareto_front(cost: Sequence[float], score: Sequence[float]) -> list[bool]:
    """Whether each point is on the Pareto front of lower cost and higher score: no other point
    has cost <= and score >= with one of them strict. Points with a missing value are never on it."""
    c, s = np.asarray(cost, dtype=float), np.asarray(score, dtype=float)
    ok = ~(np.isnan(c) | np.isnan(s))
    front = []
    for i in range(len(c)):
        if not ok[i]:
            front.append(False)
            continue
        dominated = ok & (c <= c[i]) & (s >= s[i]) & ((c < c[i]) | (s > s[i]))
        front.append(not bool(dominated.any()))
    return front
