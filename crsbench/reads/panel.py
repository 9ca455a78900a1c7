"""Which panel a read shows: the one asked for, else the latest frozen, and which relations exist
(an older warehouse, or an analysis not run yet, lacks some; a read then says which command fills it)."""

from __future__ import annotations

import pandas as pd

from crsbench.core import CrsbenchError
from crsbench.warehouse.connection import Warehouse


def relations(wh: Warehouse) -> set[str]:
    """The tables and views the file holds."""
    rows = wh.con.execute("select table_name from information_schema.tables").fetchall()
    return {r[0] for r in rows}


def resolve_panel(wh: Warehouse, present: set[str], requested: str | None) -> tuple[str | None, pd.DataFrame]:
    """The panel to show (the requested one, else the latest frozen) and every panel's summary."""
    if "panels" not in present:
        return None, pd.DataFrame(columns=["panel", "mode", "frozen_at", "n_members"])
    panels = wh.sql(
        "select p.panel, p.mode, p.frozen_at, count(r.encoder_id) as n_members "
        "from panels p left join reference_panels r using (panel) "
        "group by p.panel, p.mode, p.frozen_at order by p.frozen_at desc nulls last, p.panel"
    )
    if requested is not None:
        if requested not in set(panels["panel"]):
            known = ", ".join(panels["panel"]) or "none frozen yet"
            raise CrsbenchError(f"panel {requested!r} not found in the warehouse (known: {known})")
        return requested, panels
    return (str(panels["panel"].iloc[0]) if len(panels) else None), panels
