"""What the report shows, read from the warehouse; anything not there yet reads as None.

Every query names a view or table from `sql/` or the schema; a relation that does not
exist (an older warehouse, an analysis not run yet) gives None rather than an error, so
the report can say which command fills the gap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from crsbench.analyses.registry import get_analysis, table_name
from crsbench.core import FROZEN, PRIMARY_PROBE
from crsbench.reads.panel import relations, resolve_panel
from crsbench.warehouse.connection import Warehouse

GLOBAL_SCOPE = "global"


@dataclasses.dataclass
class ReportData:
    """Everything the sections read. Frames are None when their relation is missing."""

    wh: Warehouse
    generated_at: str
    relations: set[str]
    panel: str | None
    panels: pd.DataFrame
    encoders: pd.DataFrame
    datasets: pd.DataFrame
    n_runs: int
    members: list[str]
    random_init: set[str]
    crs_encoder: pd.DataFrame | None
    crs_cell: pd.DataFrame | None
    axes_encoder: pd.DataFrame | None
    axes_cell: pd.DataFrame | None
    anchors: pd.DataFrame | None
    axes_norm: pd.DataFrame | None
    rank_agreement: pd.DataFrame | None
    curves: pd.DataFrame | None
    analysis_tables: dict[str, list[str]]

    @property
    def db(self) -> Path:
        return self.wh.path

    def has(self, relation: str) -> bool:
        return relation in self.relations

    def analysis(self, analysis: str, part: str, *columns: str) -> pd.DataFrame | None:
        """Table `analysis_<analysis>_<part>`, or None when it has not been stored.

        `part` and `columns` are names the analysis declares (`register_analysis(outputs=...)`);
        asking for any other name is a bug in the report (KeyError). A table stored by an older
        version that lacks a requested column counts as not stored.
        """
        get_analysis(analysis).columns(part, *columns)
        name = table_name(analysis, part)
        if name not in self.relations:
            return None
        # The name passed this existence check against the catalog and is quoted.
        frame = self.wh.sql(f'select * from "{name}"')
        return frame if set(columns) <= set(frame.columns) else None

    def role(self, encoder_id: str) -> str:
        """How figures colour an encoder: random-init, candidate (not in the shown panel) or member."""
        if encoder_id in self.random_init:
            return "random-init"
        return "candidate" if self.panel is not None and encoder_id not in self.members else "member"

    def roles(self, encoder_ids: Iterable[object]) -> dict[str, str]:
        """Figure label -> role for each of `encoder_ids`."""
        return {self.label(str(e)): self.role(str(e)) for e in encoder_ids}

    def label(self, encoder_id: str, regime: str | None = None) -> str:
        """How an encoder is named in figures: random-init ones carry the mark in their name."""
        name = encoder_id if regime in (None, FROZEN) else f"{encoder_id} [{regime}]"
        return f"{name} (random-init)" if encoder_id in self.random_init else name


def _if_present(
    wh: Warehouse, present: set[str], relation: str, query: str, params: list[Any] | None = None
) -> pd.DataFrame | None:
    if relation not in present:
        return None
    return wh.sql(query, params or [])


def _random_init(wh: Warehouse, present: set[str]) -> set[str]:
    """Encoders from a random-init checkpoint according to any table that records it."""
    found: set[str] = set()
    sources = [
        ("encoders", "select encoder_id from encoders where pretrained = false"),
        ("feature_sets", "select distinct encoder_id from feature_sets where pretrained = false"),
        ("runs", "select distinct encoder_id from runs where pretrained = false"),
    ]
    for relation, query in sources:
        if relation in present:
            found |= {r[0] for r in wh.con.execute(query).fetchall()}
    return found


def _frozen_only(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    # Views may grow a `regime` column; the headline numbers are the frozen regime's.
    if frame is None or "regime" not in frame.columns:
        return frame
    return frame[frame["regime"].fillna(FROZEN) == FROZEN].reset_index(drop=True)


def gather(wh: Warehouse, panel: str | None = None) -> ReportData:
    """Read everything the report needs from an open warehouse."""
    present = relations(wh)
    chosen, panels = resolve_panel(wh, present, panel)
    encoders = _if_present(
        wh,
        present,
        "encoders",
        "select encoder_id, family, scope, domain, pretrained from encoders order by encoder_id",
    )
    datasets = _if_present(
        wh, present, "datasets", "select dataset_id, task, n_images from datasets order by dataset_id"
    )

    def for_panel(relation: str, query: str) -> pd.DataFrame | None:
        """The relation's rows of the chosen panel (`query` takes it as its one parameter); None without one."""
        return _if_present(wh, present, relation, query, [chosen]) if chosen is not None else None

    return ReportData(
        wh=wh,
        relations=present,
        panel=chosen,
        panels=panels,
        encoders=encoders if encoders is not None else pd.DataFrame(columns=["encoder_id", "pretrained"]),
        datasets=datasets if datasets is not None else pd.DataFrame(columns=["dataset_id", "task"]),
        n_runs=_run_count(wh, present),
        members=_members(wh, present, chosen),
        random_init=_random_init(wh, present),
        crs_encoder=_frozen_only(
            for_panel(
                "crs_encoder", "select * from crs_encoder where panel = ? order by crs desc nulls last, encoder_id"
            )
        ),
        crs_cell=_frozen_only(
            for_panel("crs_cell", "select * from crs_cell where panel = ? order by dataset_id, crs desc, encoder_id")
        ),
        axes_encoder=_frozen_only(
            _if_present(wh, present, "axes_encoder", "select * from axes_encoder order by encoder_id")
        ),
        axes_cell=_frozen_only(
            _if_present(wh, present, "axes_cell", "select * from axes_cell order by dataset_id, encoder_id")
        ),
        anchors=for_panel(
            "reference_anchors",
            "select scope, axis, lo, hi from reference_anchors where panel = ? order by scope, axis",
        ),
        axes_norm=_frozen_only(
            for_panel(
                "axes_normalised",
                "select * from axes_normalised where panel = ? and scope = 'global' order by encoder_id",
            )
        ),
        rank_agreement=for_panel("rank_agreement", "select * from rank_agreement where panel = ?"),
        curves=_learning_curves(wh, present),
        analysis_tables=_analysis_tables(wh, present),
        generated_at=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),  # stamped once the reads are done
    )


def _run_count(wh: Warehouse, present: set[str]) -> int:
    if "runs" not in present:
        return 0
    count = wh.con.execute("select count(*) from runs").fetchone()
    assert count is not None  # count(*) always returns a row
    return int(count[0])


def _members(wh: Warehouse, present: set[str], panel: str | None) -> list[str]:
    """The encoders of the shown panel; none when no panel is shown."""
    if panel is None or "reference_panels" not in present:
        return []
    return [
        r[0]
        for r in wh.con.execute(
            "select encoder_id from reference_panels where panel = ? order by encoder_id", [panel]
        ).fetchall()
    ]


def _learning_curves(wh: Warehouse, present: set[str]) -> pd.DataFrame | None:
    """Seed-mean clean AUROC and ECE of the primary probe, frozen, by depth and label fraction; None if empty."""
    curves = _if_present(
        wh,
        present,
        "metrics_seed",
        "select encoder_id, dataset_id, depth, label_fraction, auroc_mean as auroc, ece_mean as ece, "
        "n_seeds from metrics_seed where probe = ? and regime = ? and condition = 'clean' "
        "and eval_dataset_id = dataset_id order by encoder_id, dataset_id, depth, label_fraction",
        [PRIMARY_PROBE, FROZEN],
    )
    return curves if curves is not None and len(curves) else None


def _analysis_tables(wh: Warehouse, present: set[str]) -> dict[str, list[str]]:
    """Analysis -> the tables it stored."""
    tables: dict[str, list[str]] = {}
    if "analyses" in present:
        for name, table in wh.con.execute(
            "select analysis, table_name from analyses order by analysis, table_name"
        ).fetchall():
            tables.setdefault(name, []).append(table)
    return tables
