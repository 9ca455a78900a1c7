"""The status read-model (`Bench.status`, `crsbench status`): what the warehouse holds, as frames
(datasets, encoders, feature sets, runs, panels, analyses) and lines (gaps, stale results, flags)."""

from __future__ import annotations

import dataclasses

import pandas as pd

from crsbench.reads.gaps import missing_lines, outside_lines, suite_lines
from crsbench.reads.leaderboard import flagged_lines
from crsbench.reads.panel import relations
from crsbench.warehouse.connection import Warehouse


@dataclasses.dataclass
class WarehouseStatus:
    schema_version: int
    datasets: pd.DataFrame  # dataset_id, task, n_images, runs
    encoders: pd.DataFrame  # encoder_id, family, pretrained, feature_sets_complete, _incomplete, runs
    feature_sets: pd.DataFrame  # dataset_id, encoder_id, regime, complete, updated_at
    runs: pd.DataFrame  # regime, probe, fits, runs
    panels: pd.DataFrame  # panel, mode, frozen_at, n_members
    analyses: pd.DataFrame  # analysis, tables, created_at
    incomplete_cells: list[str] = dataclasses.field(default_factory=list)  # what each lacks
    outside: list[str] = dataclasses.field(default_factory=list)  # encoders outside every panel, probed in part
    suites_owed: list[str] = dataclasses.field(default_factory=list)  # cells owed a corruption suite's runs
    pending_parts: int = 0  # run parts not yet folded into the file (a plain client elsewhere cannot read them)
    sweeps_running: int = 0  # probe sweeps still writing parts
    stale: list[str] = dataclasses.field(default_factory=list)  # stored bootstraps/analyses whose runs changed
    flagged: list[str] = dataclasses.field(default_factory=list)  # degenerate feature sets, unranked until confirmed
    shortcuts: list[str] = dataclasses.field(default_factory=list)  # datasets whose labels file properties predict

    @property
    def n_runs(self) -> int:
        return int(self.runs["runs"].sum()) if len(self.runs) else 0

    def counts(self) -> dict[str, int]:
        complete = int(self.feature_sets["complete"].fillna(False).astype(bool).sum()) if len(self.feature_sets) else 0
        return {
            "datasets": len(self.datasets),
            "encoders": len(self.encoders),
            "feature_sets_complete": complete,
            "feature_sets_incomplete": len(self.feature_sets) - complete,
            "runs": self.n_runs,
            "panels": len(self.panels),
            "analyses": len(self.analyses),
        }


def read_status(wh: Warehouse) -> WarehouseStatus:
    """The whole status, incomplete cells of every regime included (run inside a freshness snapshot)."""
    state = warehouse_status(wh)
    state.incomplete_cells = missing_lines(wh, regime=None)
    state.outside = outside_lines(wh, regime=None)
    state.suites_owed = suite_lines(wh)
    return state


def warehouse_status(wh: Warehouse) -> WarehouseStatus:
    """What the warehouse holds; a relation that does not exist (yet) reads as an empty frame."""
    present = relations(wh)
    feature_sets = _frame(
        wh,
        present,
        "feature_sets",
        "select dataset_id, encoder_id, regime, complete, updated_at "
        "from feature_sets order by encoder_id, dataset_id, regime",
        ["dataset_id", "encoder_id", "regime", "complete", "updated_at"],
    )
    from crsbench.warehouse.claims import live_sweeps
    from crsbench.warehouse.parts import data_parts

    return WarehouseStatus(
        wh.schema_version(),
        _datasets(wh, present),
        _encoders(wh, present, feature_sets),
        feature_sets,
        _runs(wh, present),
        _frame(
            wh,
            present,
            "panels",
            "select p.panel, p.mode, p.frozen_at, count(r.encoder_id) as n_members "
            "from panels p left join reference_panels r using (panel) "
            "group by all order by p.frozen_at, p.panel",
            ["panel", "mode", "frozen_at", "n_members"],
        ),
        _frame(
            wh,
            present,
            "analyses",
            "select analysis, string_agg(table_name, ', ' order by table_name) as tables, "
            "max(created_at) as created_at from analyses group by analysis order by analysis",
            ["analysis", "tables", "created_at"],
        ),
        pending_parts=len(data_parts(wh.parts_dir / "runs")),
        sweeps_running=len(live_sweeps(wh.parts_dir)),
        stale=stale_lines(wh),
        flagged=flagged_lines(wh) if "feature_sets" in present else [],
        shortcuts=shortcut_lines(wh) if "shortcut_audit" in present else [],
    )


def _frame(wh: Warehouse, present: set[str], relation: str, query: str, columns: list[str]) -> pd.DataFrame:
    """The query's rows, or an empty frame with its columns when the relation does not exist (yet)."""
    return wh.sql(query) if relation in present else pd.DataFrame(columns=columns)


def _datasets(wh: Warehouse, present: set[str]) -> pd.DataFrame:
    """dataset_id, task, n_images and the runs of each dataset."""
    datasets = _frame(
        wh,
        present,
        "datasets",
        "select dataset_id, task, n_images from datasets order by dataset_id",
        ["dataset_id", "task", "n_images"],
    )
    datasets["runs"] = datasets["dataset_id"].map(_run_counts(wh, "dataset_id", present)).fillna(0).astype(int)
    return datasets


def _encoders(wh: Warehouse, present: set[str], feature_sets: pd.DataFrame) -> pd.DataFrame:
    """encoder_id, family, pretrained, its complete and incomplete feature sets, and its runs."""
    encoders = _frame(
        wh,
        present,
        "encoders",
        "select encoder_id, family, pretrained from encoders order by encoder_id",
        ["encoder_id", "family", "pretrained"],
    )
    done = feature_sets["complete"].fillna(False).astype(bool)
    encoders["feature_sets_complete"] = (
        encoders["encoder_id"].map(feature_sets.loc[done, "encoder_id"].value_counts()).fillna(0).astype(int)
    )
    encoders["feature_sets_incomplete"] = (
        encoders["encoder_id"].map(feature_sets.loc[~done, "encoder_id"].value_counts()).fillna(0).astype(int)
    )
    encoders["runs"] = encoders["encoder_id"].map(_run_counts(wh, "encoder_id", present)).fillna(0).astype(int)
    return encoders


def _runs(wh: Warehouse, present: set[str]) -> pd.DataFrame:
    """Fits and runs per (regime, probe)."""
    runs = _frame(
        wh,
        present,
        "runs",
        "select regime, probe, count(distinct fit_id) as fits, count(*) as runs from runs "
        "where regime is not null and probe is not null group by all order by regime, probe",
        ["regime", "probe", "fits", "runs"],
    )
    if runs.empty:
        runs = pd.DataFrame(columns=["regime", "probe", "fits", "runs"])
    return runs


def _run_counts(wh: Warehouse, key: str, present: set[str]) -> pd.Series:
    """Runs per `key` value (dataset_id or encoder_id); empty without a runs relation.

    Counted in DuckDB: the run records themselves never come into Python."""
    if "runs" not in present:
        return pd.Series(dtype="int64")
    counts = wh.sql(f"select {key}, count(*) as n from runs where {key} is not null group by all")
    return counts.set_index(key)["n"]


def stale_lines(wh: Warehouse) -> list[str]:
    """One line per stored bootstrap (panel, resample) and per analysis whose runs have changed."""
    present = relations(wh)
    lines = []
    if "bootstrap_freshness" in present:
        for r in wh.sql("select panel, resample from bootstrap_freshness where stale order by all").itertuples():
            lines.append(
                f"panel {r.panel}: the {r.resample} bootstrap intervals are stale (its runs changed); "
                f"rerun 'crsbench analyze bootstrap --panel {r.panel}'"
            )
    if "analysis_freshness" in present:
        stale = wh.sql("select distinct analysis from analysis_freshness where stale order by 1")["analysis"]
        lines += [
            f"analysis {a}: stale (what it read changed since it ran); rerun 'crsbench analyze {a}'" for a in stale
        ]
    return lines


def shortcut_lines(wh: Warehouse) -> list[str]:
    """One warning per dataset whose labels the shortcut audit found predictable from file properties."""
    rows = wh.sql(
        "select dataset, max(estimate) filter (where metric = 'balanced_accuracy') as ba, "
        "max(chance) filter (where metric = 'balanced_accuracy') as chance, "
        "max(estimate) filter (where metric = 'max_class_auroc') as best "
        "from shortcut_audit where warn and properties = 'header' and split = 'pool_cv' group by all order by 1"
    )
    return [
        f"dataset {r.dataset}: labels are predictable from file properties alone (pool_cv balanced accuracy "
        f"{r.ba:.3f}, chance {r.chance:.3f}; best class AUROC {r.best:.3f}): check how its files were made "
        "(crsbench analyze shortcuts, docs/METHODS.md §19)"
        for r in rows.itertuples()
    ]
