"""Condition sets: robustness and the CRS compare encoders only over one set (METHODS.md §6, §8.1).

The robustness axis of a cell averages AUROC drops over the perturbed conditions its seed means
hold (view `cell_conditions`): 15 in the protocol, more when a registered plugin perturbation was
extracted and is in the dataset's grid. Within one warehouse, complete cells of a dataset hold
exactly its grid's conditions, so they share one set; a frozen panel's anchors, though, were
taken over the set of its time. Freezing records that set per dataset (`panel_conditions`) and
refuses members whose sets differ; the leaderboard warns, naming the encoders and the
conditions, where a scored cell's set differs from the panel's (view `panel_condition_check`).
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb
import pandas as pd

from crsbench.core import CrsbenchError, EncoderKey
from crsbench.core.schema import Column, Schema
from crsbench.warehouse.schema_columns import METHODS as _M
from crsbench.warehouse.schema_columns import PANEL as _PANEL

PANEL_CONDITIONS = Schema(
    "panel_conditions",
    "One row per (panel, dataset scope): the perturbed conditions behind its members' robustness when "
    "the panel was frozen (view cell_conditions); a cell scored against the panel over another set is "
    f"flagged (view panel_condition_check). Empty for panels frozen before schema v13. {_M} §8.1.",
    (
        _PANEL,
        Column("scope", "VARCHAR", f"Dataset id of the per-dataset anchors the set belongs to. {_M} §8.4."),
        Column(
            "conditions",
            "VARCHAR[]",
            "Perturbed conditions ('<perturbation>-s<severity>', sorted) of the members' cells on the "
            f"dataset at freeze: the protocol's 15, or more with plugin perturbations. {_M} §2.3.",
        ),
    ),
    since=13,
)

_MEMBER_SETS_SQL = """
    select c.dataset_id, c.encoder_id, c.conditions
    from cell_conditions c
    join axes_cell a using (encoder_id, dataset_id, regime)
    where c.regime = 'frozen' and a.complete and list_contains(?, c.encoder_id)
    order by c.dataset_id, c.encoder_id
"""


def member_condition_sets(con: duckdb.DuckDBPyConnection, panel: str, members: Sequence[str]) -> pd.DataFrame:
    """(scope, conditions) of the members' complete frozen cells, one row per dataset; members whose
    sets differ on a dataset are refused, naming them and the differing conditions."""
    cells = con.execute(_MEMBER_SETS_SQL, [list(members)]).fetchall()
    by_dataset: dict[str, dict[tuple[str, ...], list[str]]] = {}
    for dataset_id, encoder_id, conditions in cells:
        by_dataset.setdefault(str(dataset_id), {}).setdefault(tuple(conditions), []).append(str(encoder_id))
    rows: list[tuple[str, list[str]]] = []
    for dataset_id, sets in sorted(by_dataset.items()):
        if len(sets) > 1:
            raise CrsbenchError(mixed_sets_message(f"panel {panel!r}", str(dataset_id), sets))
        rows.append((str(dataset_id), list(next(iter(sets)))))
    return pd.DataFrame(rows, columns=["scope", "conditions"])


def mixed_sets_message(what: str, dataset_id: str, sets: dict[tuple[str, ...], list[str]]) -> str:
    """One line: which encoders hold which conditions the others lack, on one dataset."""
    common = set.intersection(*(set(s) for s in sets))
    parts = [
        f"{', '.join(encoders)} ({len(s)}; also {', '.join(sorted(set(s) - common)) or 'none'})"
        for s, encoders in sorted(sets.items(), key=lambda kv: kv[1])
    ]
    return (
        f"{what} mixes condition sets on dataset {dataset_id!r}: {'; '.join(parts)}; robustness and CRS "
        "compare encoders only over one set: extract and probe them with the same perturbations"
    )


def record_panel_conditions(con: duckdb.DuckDBPyConnection, panel: str, sets: pd.DataFrame) -> None:
    """Store the panel's per-dataset condition sets (inside the freeze's transaction)."""
    con.executemany(
        "insert into panel_conditions values (?, ?, ?)",
        [[panel, r.scope, list(r.conditions)] for r in sets.itertuples()],
    )


def condition_warnings(con: duckdb.DuckDBPyConnection, panel: str) -> list[str]:
    """One line per complete cell scored against `panel` over another condition set than the
    panel's members had on that dataset: the encoder, the dataset and the differing conditions."""
    rows = con.execute(
        "select encoder_id, regime, dataset_id, missing, extra from panel_condition_check "
        "where panel = ? order by encoder_id, regime, dataset_id",
        [panel],
    ).fetchall()
    lines = []
    for encoder_id, regime, dataset_id, missing, extra in rows:
        who = str(EncoderKey(encoder_id, regime))
        diff = "; ".join(
            part
            for part in (
                f"lacks {', '.join(missing)}" if missing else "",
                f"adds {', '.join(extra)}" if extra else "",
            )
            if part
        )
        lines.append(
            f"condition set: {who} on {dataset_id} {diff} against panel {panel}'s members; its robustness "
            "and CRS are not comparable with theirs"
        )
    return lines
